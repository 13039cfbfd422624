"""The readiness check's drills and settings, shared by test_readiness.py (no torch) and
test_rlinf_workload.py (torch and rlinf installed once, for the workload and the readiness checks)."""

from __future__ import annotations

import json
import time

from lab_helpers import LAB_INVENTORY, run_playbook, ssh

from ansible_collections.rlinf.cluster.plugins.module_utils.firewall import (
    DEFAULT_CLIENT_PORT,
    DEFAULT_WORKER_RANGE,
    HEAD_FIXED_PORTS,
    HEAD_PORTS,
    NODE_PORTS,
)

VENV = "/opt/rlinf/venv"
# The role's default: starting the actors (torch imported) alone took up to 17 s on this loaded machine.
TIMEOUT = 60
RLINF_TIMEOUT = 60
# The cut-off drill must get past the start of RLinf's workers (each imports torch) to reach its
# send/recv: 60 s ran out during the start on a loaded two-core machine (make test's two labs).
CUT_OFF_RLINF_TIMEOUT = 120
DRILL_TABLE = "rlinf_readiness_drill"
SSH_PORT = 22


def timed_status(tmp_path, inventory=LAB_INVENTORY, **extravars):
    """status.yml: its run, its report and how long it took."""
    report = tmp_path / f"report-{time.monotonic_ns()}.json"
    started = time.monotonic()
    run = run_playbook(
        "status.yml", tmp_path, inventory=inventory, extravars={"cluster_report_path": str(report), **extravars}
    )
    elapsed = time.monotonic() - started
    return run, (json.loads(report.read_text()) if report.exists() else None), elapsed


def readiness_vars(**extra):
    return {"rlinf_readiness": True, "readiness_timeout": TIMEOUT, "readiness_rlinf_timeout": RLINF_TIMEOUT, **extra}


def venv_imports(address: str, module: str) -> bool:
    return ssh(address, f"{VENV}/bin/python -c 'import {module}'", check=False).returncode == 0


def ray_ports() -> str:
    """Every port Ray listens on once rlinf_firewall_enabled pinned them, as an nft set."""
    single = sorted({*NODE_PORTS.values(), *HEAD_PORTS.values(), *HEAD_FIXED_PORTS.values(), DEFAULT_CLIENT_PORT})
    return ", ".join([str(SSH_PORT), *map(str, single), f"{DEFAULT_WORKER_RANGE[0]}-{DEFAULT_WORKER_RANGE[1]}"])


def cut_off(address: str, peers: list[str]) -> None:
    """Inside that host: its new TCP connections to its peers are dropped on every port but SSH and Ray's."""
    rules = (
        f"table inet {DRILL_TABLE} {{\n"
        "  chain output {\n"
        "    type filter hook output priority 0; policy accept;\n"
        "    ct state established,related accept\n"
        f"    ip daddr {{ {', '.join(peers)} }} tcp dport {{ {ray_ports()} }} accept\n"
        f"    ip daddr {{ {', '.join(peers)} }} ct state new drop\n"
        "  }\n"
        "}\n"
    )
    ssh(address, "nft -f -", stdin=rules)
