"""Which drivers are attached to a Ray cluster: the runs launch.yml started and Ray's job table.

Pure logic for the ``ray_drivers`` module: it feeds the running launch units (with their
records) and the live entries of the GCS job table (one per connected driver: ``ray.init``
scripts, RLinf's entry points, ``ray job submit`` jobs); the result names each driver once. A
job whose driver process belongs to a launch unit is shown with that unit.

Runs on the head (Python 3.9+): no Ansible import, no ``ray`` import.
"""

from __future__ import annotations

import re

# cgroup v2 has one line, v1 one per controller: any line naming the unit.
_LAUNCH_UNIT = re.compile(r"/(rlinf-launch-[A-Za-z0-9_.@-]+)\.service(?:/|$)", re.MULTILINE)
_COMMAND_LIMIT = 160


def unit_of_cgroup(text: str) -> str:
    """The launch unit in a ``/proc/PID/cgroup`` text, or ""."""
    match = _LAUNCH_UNIT.search(text or "")
    return match.group(1) if match else ""


def shorten(text: str, limit: int = _COMMAND_LIMIT) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def live_jobs(jobs) -> list[dict]:
    """Live jobs of the GCS table (dicts: job_id, is_dead, driver_ip, driver_pid, namespace, entrypoint)."""
    return [job for job in jobs if not job.get("is_dead")]


def drivers(launch_units, jobs, unit_of_pid) -> list[dict]:
    """Every driver once: running launch units first (each with the Ray job it runs, if any),
    then the other live jobs.

    ``launch_units``: dicts with ``unit`` and, from the run's record, ``entry``, ``started_at``,
    ``log``. ``jobs``: live job dicts. ``unit_of_pid(ip, pid)``: the launch unit a driver process
    belongs to ("" when unknown or not on this host)."""
    found = [dict(unit, kind="launch") for unit in launch_units]
    by_unit = {unit["unit"]: unit for unit in found}
    for job in jobs:
        unit = unit_of_pid(job.get("driver_ip", ""), job.get("driver_pid"))
        if unit and unit in by_unit:
            by_unit[unit].setdefault("job_id", job.get("job_id"))
            continue
        found.append(
            {
                "kind": "ray",
                "job_id": job.get("job_id"),
                "driver_ip": job.get("driver_ip", ""),
                "driver_pid": job.get("driver_pid"),
                "namespace": job.get("namespace", ""),
                "command": shorten(job.get("entrypoint", "")),
                "unit": unit,
            }
        )
    return found
