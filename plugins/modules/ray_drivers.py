#!/usr/bin/python
# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ray_drivers
short_description: List the drivers attached to the Ray cluster, before anything restarts Ray
description:
  - Lists the RLinf runs launch.yml started that still run (C(rlinf-launch-*) units, with their
    record - entry, start time, log) and every live driver of the Ray head's job table (one GCS RPC,
    no driver joins the cluster), a driver started by a launch unit shown once, with its unit.
  - Used by the restart guard (site.yml, rebuild.yml, remove-node.yml) only when the run would restart
    Ray somewhere, so a run that restarts nothing never calls it.
  - Read-only. Run it on the head with the node venv's Python, where C(import ray) works.
version_added: 0.2.0
author:
  - rlinf-ansible maintainers (!UNKNOWN)
extends_documentation_fragment:
  - rlinf.cluster.attributes.read_only
options:
  address:
    description: GCS address of the head, C(ip:port).
    type: str
    required: true
  node_ip:
    description: This host's Ray address; drivers running here are matched to their launch unit.
    type: str
    default: ""
  env_file:
    description:
      - Env file of the Ray unit; its C(RAY_*) variables (C(RAY_AUTH_MODE), C(RAY_AUTH_TOKEN_PATH)) are set
        before Ray is imported. A missing file is ignored.
    type: path
  state_dir:
    description: Where launch.yml keeps the runs' records.
    type: path
    default: /etc/rlinf/state/launches
  head_active:
    description:
      - Whether the head's Ray unit runs. Then a job table that cannot be read is reported as a driver of
        unknown kind (a driver may be attached); otherwise there is no cluster to be attached to.
    type: bool
    default: true
  timeout:
    description: Seconds the GCS may take to answer.
    type: int
    default: 10
notes:
  - Uses C(ray._raylet.GcsClient).get_all_job_info, the call C(ray list jobs) builds on.
requirements:
  - ray >= 2.47
"""

EXAMPLES = r"""
- name: Who is attached to the cluster?
  rlinf.cluster.ray_drivers:
    address: 10.89.77.10:6379
    node_ip: 10.89.77.10
    env_file: /etc/rlinf/rlinf.env
  vars:
    ansible_python_interpreter: /opt/rlinf/venv/bin/python
  register: drivers
"""

RETURN = r"""
drivers:
  description: The drivers, running launch units first.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description: C(launch) (a run of launch.yml), C(ray) (another driver in the job table) or C(unreadable).
      type: str
    unit:
      description: The systemd unit of the driver, when known.
      type: str
    entry:
      description: For C(launch), the command the run started.
      type: str
    job_id:
      description: The Ray job ID (hex).
      type: str
    driver_ip:
      description: For C(ray), the host the driver runs on.
      type: str
    driver_pid:
      description: For C(ray), the driver's process ID there.
      type: int
    command:
      description: For C(ray), the driver's command line (shortened).
      type: str
    namespace:
      description: For C(ray), the driver's Ray namespace (RLinf's is C(RLinf)).
      type: str
gcs_error:
  description: Why the job table could not be read, or empty.
  returned: always
  type: str
"""

import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.rlinf.cluster.plugins.module_utils.launch_runs import records  # noqa: E402
from ansible_collections.rlinf.cluster.plugins.module_utils.ray_drivers import (  # noqa: E402
    drivers,
    live_jobs,
    unit_of_cgroup,
)
from ansible_collections.rlinf.cluster.plugins.module_utils.ray_env import read_ray_env  # noqa: E402

RUNNING = "active,activating,deactivating,reloading"


def gcs_client(address):
    """A GCS client for ``address``; the unit tests replace this function."""
    from ray._raylet import GcsClient

    return GcsClient(address=address)


def job_records(table):
    """JobTableData messages as plain dicts."""
    found = []
    for job_id, data in table.items():
        found.append(
            {
                "job_id": job_id.hex() if hasattr(job_id, "hex") else str(job_id),
                "is_dead": bool(data.is_dead),
                "driver_ip": data.driver_ip_address,
                "driver_pid": int(data.driver_pid),
                "namespace": data.config.ray_namespace,
                "entrypoint": data.entrypoint,
            }
        )
    return found


def running_launch_units(module, state_dir):
    rc, out, _err = module.run_command(
        ["systemctl", "list-units", "--type=service", f"--state={RUNNING}", "--plain", "--no-legend", "rlinf-launch-*"]
    )
    names = [line.split()[0].removesuffix(".service") for line in out.splitlines() if line.strip()] if rc == 0 else []
    known = {r["unit"]: r for r in records(state_dir)}
    units = []
    for name in names:
        record = known.get(name, {})
        units.append(
            {
                "unit": name,
                "entry": record.get("entry", ""),
                "started_at": record.get("started_at", ""),
                "log": record.get("log", ""),
            }
        )
    return units


def unit_of_pid_here(node_ip):
    def unit_of_pid(ip, pid):
        if not pid or (node_ip and ip != node_ip):
            return ""
        try:
            with open(f"/proc/{int(pid)}/cgroup", encoding="utf-8") as handle:
                return unit_of_cgroup(handle.read())
        except (OSError, ValueError):
            return ""

    return unit_of_pid


ARGUMENT_SPEC = {
    "address": {"type": "str", "required": True},
    "node_ip": {"type": "str", "default": ""},
    "env_file": {"type": "path"},
    "state_dir": {"type": "path", "default": "/etc/rlinf/state/launches"},
    "head_active": {"type": "bool", "default": True},
    "timeout": {"type": "int", "default": 10},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    units = running_launch_units(module, params["state_dir"])
    os.environ.update(read_ray_env(params["env_file"]))
    jobs, error = [], ""
    try:
        table = gcs_client(params["address"]).get_all_job_info(timeout=params["timeout"])
        jobs = live_jobs(job_records(table))
    except Exception as err:  # ImportError, connection, authentication: one sentence
        error = f"{type(err).__name__}: {str(err).strip()[:300]}"
    found = drivers(units, jobs, unit_of_pid_here(params["node_ip"]))
    if error and params["head_active"]:
        found.append({"kind": "unreadable", "error": error, "address": params["address"]})
    module.exit_json(changed=False, drivers=found, gcs_error=error)


if __name__ == "__main__":
    main()
