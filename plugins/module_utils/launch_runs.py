"""What became of each run launch.yml started: RUNNING, SUCCEEDED or FAILED, and why.

launch.yml keeps a record of every run on the head (``<state>/launches/<unit>.json``: the unit,
the entry, the log); the run's wrapper writes ``<unit>.outcome.json`` when the entry ends: the
exit status of the whole pipeline (the wrapper runs it with pipefail, and hands pipefail to the
bash scripts it starts) and the log's size when the run began.

An exit status of 0 does not prove success with RLinf: main's ``atexit`` handler calls
``os._exit(0)`` unless its failure flag is set, and Hydra turns an exception of the driver into
``sys.exit(1)`` without setting it (unless ``HYDRA_FULL_ERROR=1``, which the wrapper sets). So a
run whose log shows Hydra's or RLinf's own failure line is FAILED whatever its status said.

Runs on the head (Python 3.9+): no Ansible import, no third-party module.
"""

from __future__ import annotations

import json
import os
import signal

# Lines only a failed run writes (read in Hydra 1.3 hydra/core/utils.py JobReturn.return_value
# and RLinf main rlinf/scheduler/cluster/cluster.py, the driver's SIGUSR1 handler).
FAILURE_MARKERS = (
    ("Error executing job with overrides:", "Hydra reported an exception in the driver"),
    (
        "Exiting main process due to a failure upon worker execution.",
        "RLinf reported a failure of its workers",
    ),
)
# The markers are printed as the driver ends: the log's last MiB holds them.
LOG_TAIL_BYTES = 1 << 20
RUNNING_STATES = ("active", "activating", "deactivating", "reloading")
RECORD_SUFFIX = ".json"
OUTCOME_SUFFIX = ".outcome.json"


def read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def records(state_dir: str) -> list[dict]:
    """Every run's record, oldest first (by start time, then unit name)."""
    try:
        names = os.listdir(state_dir)
    except OSError:
        return []
    found = []
    for name in names:
        if not name.endswith(RECORD_SUFFIX) or name.endswith(OUTCOME_SUFFIX):
            continue
        record = read_json(os.path.join(state_dir, name))
        if record.get("unit"):
            record.setdefault("outcome", os.path.join(state_dir, record["unit"] + OUTCOME_SUFFIX))
            found.append(record)
    return sorted(found, key=lambda r: (str(r.get("started_at", "")), str(r["unit"])))


def log_tail(path: str, start: int = 0, limit: int = LOG_TAIL_BYTES) -> str:
    """The end of this run's part of the log (from byte ``start``), at most ``limit`` bytes."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(int(start or 0), size - limit, 0))
            return handle.read().decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return ""


def failure_marker(text: str) -> str | None:
    """Why the log says the run failed, or None."""
    for marker, meaning in FAILURE_MARKERS:
        if marker in text:
            return f"{meaning} ({marker!r} in the log)"
    return None


def _status_text(status: int) -> str:
    if status > 128:
        try:
            return f"exit {status}, killed by {signal.Signals(status - 128).name}"
        except ValueError:
            return f"exit {status}"
    return f"exit {status}"


def classify(record: dict, outcome: dict, unit_state: str, log_text: str) -> dict:
    """One run's state: RUNNING while its unit runs, else SUCCEEDED only with exit status 0 and
    no failure line in its log, else FAILED; ``exit_status`` (None when unknown) and ``reason``."""
    run = {
        "unit": record["unit"],
        "entry": record.get("entry", ""),
        "log": record.get("log", ""),
        "started_at": record.get("started_at", ""),
        "finished_at": outcome.get("finished_at", ""),
        "exit_status": None,
    }
    if unit_state in RUNNING_STATES:
        return dict(run, state="RUNNING", reason="its unit is " + unit_state)
    status = outcome.get("exit_status")
    if isinstance(status, bool) or not isinstance(status, int):
        return dict(
            run,
            state="FAILED",
            reason="it ended without recording its exit status (killed with SIGKILL, out of memory, or the head "
            "rebooted); see its log",
        )
    run["exit_status"] = status
    marker = failure_marker(log_text)
    if status != 0:
        return dict(run, state="FAILED", reason=_status_text(status) + (f"; {marker}" if marker else ""))
    if marker:
        return dict(run, state="FAILED", reason=f"exit 0, but {marker}")
    return dict(run, state="SUCCEEDED", reason="exit 0")


def run_line(run: dict) -> str:
    """``run UNIT: STATE (exit N: reason), log PATH`` for status.yml."""
    detail = run["reason"]
    if run["state"] == "RUNNING" and run.get("started_at"):
        detail = f"since {run['started_at']}"
    return f"run {run['unit']}: {run['state']} ({detail}), log {run['log'] or '?'}"
