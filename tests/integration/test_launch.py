"""launch.yml in the lab: a test driver (ray.init(address="auto"), a task pinned to every
node, a result file) runs detached on the head under the venv's python, to completion,
with its log where launch.yml says; status.yml shows a running driver; a second launch
is refused while one runs."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from lab_helpers import lab_hosts, run_playbook, ssh

# Each test starts on the lab inventory's healthy cluster (conftest.py), whatever ran before.
pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

DATA = Path(__file__).parent / "data"
VENV_PY = "/opt/rlinf/venv/bin/python"


def wait_for(address: str, command: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = ssh(address, command, check=False)
        if proc.returncode == 0:
            return proc.stdout
        time.sleep(1)
    raise AssertionError(f"`{command}` on {address} did not succeed within {timeout}s")


def test_launch_runs_the_driver_to_completion_and_status_shows_it(tmp_path):
    hosts = lab_hosts()
    head = next(iter(hosts.values()))
    stamp = time.time_ns()
    workdir = f"/srv/rlinf-launch-test-{stamp}"
    log_dir = f"/var/log/rlinf-launch-test-{stamp}"
    result_file = f"{workdir}/result.json"
    base = {"rlinf_src": workdir, "rlinf_launch_log_dir": log_dir}
    ssh(head, f"mkdir -p {workdir} && cat > {workdir}/launch_driver.py", stdin=(DATA / "launch_driver.py").read_text())
    try:
        run = run_playbook(
            "launch.yml",
            tmp_path,
            extravars={**base, "rlinf_entry": f"python launch_driver.py {result_file}"},
        )
        assert run.rc == 0, run.stdout[-3000:]
        unit = re.search(r"unit: (rlinf-launch-\S+) on ", run.stdout).group(1)
        log = re.search(r"log:  (\S+\.log)", run.stdout).group(1)
        assert log == f"{log_dir}/{unit}.log"

        result = json.loads(wait_for(head, f"cat {result_file}", 90))
        # The driver and every Ray worker run the same interpreter (RLinf warns otherwise).
        assert result["driver_python"] == VENV_PY
        assert result["path0"] == "/opt/rlinf/venv/bin"
        assert result["cwd"] == workdir
        assert sorted(n["ip"] for n in result["nodes"]) == sorted(hosts.values())
        assert {n["python"] for n in result["nodes"]} == {VENV_PY}
        assert sorted(n["rank"] for n in result["nodes"]) == [str(r) for r in range(len(hosts))]
        text = wait_for(head, f"grep -q 'exited with status 0' {log} && cat {log}", 30)
        assert f"launch_driver: done, {len(hosts)} nodes" in text

        # A long-running driver: status shows it, a second launch is refused.
        sleeper = f"sleeper-{stamp}"
        run = run_playbook(
            "launch.yml", tmp_path, extravars={**base, "rlinf_entry": "sleep 60", "rlinf_launch_name": sleeper}
        )
        assert run.rc == 0, run.stdout[-3000:]
        status = run_playbook("status.yml", tmp_path, extravars={"cluster_report_path": str(tmp_path / "r.json")})
        assert status.rc == 0, status.stdout[-3000:]
        assert f"driver rlinf-launch-{sleeper}: RUNNING, log {log_dir}/rlinf-launch-{sleeper}.log" in status.stdout
        assert sum(status.changed().values()) == 0
        second = run_playbook("launch.yml", tmp_path, extravars={**base, "rlinf_entry": "true"})
        assert second.rc != 0
        assert f"an RLinf driver is already running on {next(iter(hosts))}" in " ".join(second.stdout.split())
        ssh(head, f"systemctl stop rlinf-launch-{sleeper}")
        status = run_playbook("status.yml", tmp_path, extravars={"cluster_report_path": str(tmp_path / "r.json")})
        assert "no RLinf driver is running" in status.stdout
    finally:
        ssh(
            head,
            f"systemctl stop 'rlinf-launch-sleeper-{stamp}' 2>/dev/null; systemctl reset-failed 'rlinf-launch-*'; "
            f"rm -rf {workdir} {log_dir}",
            check=False,
        )
