"""launch.yml in the lab: a test driver (ray.init(address="auto"), a task pinned to every
node, a result file) runs detached on the head under the venv's python, to completion,
with its log where launch.yml says; status.yml shows a running driver; a second launch
is refused while one runs. Each run's real outcome: an entry that fails inside a `| tee`
pipeline (as RLinf's scripts end) is FAILED with its exit status, one that succeeds is
SUCCEEDED, and a driver whose exit status lies the way RLinf main's does after a Hydra error
is FAILED."""

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


def run_lines(stdout: str) -> dict[str, str]:
    """status.yml's run lines: name (after rlinf-launch-) -> 'STATE (...), log PATH'."""
    found = {}
    text = " ".join(stdout.split()).replace("''", "'")  # YAML output doubles quotes inside quotes
    for match in re.finditer(r"run rlinf-launch-(\S+): (.+?, log \S+?\.log)", text):
        found[match.group(1)] = match.group(2)
    return found


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
        wait_for(head, f"test -s /etc/rlinf/state/launches/{unit}.outcome.json", 30)

        # A long-running driver: status shows it, a second launch is refused.
        sleeper = f"sleeper-{stamp}"
        run = run_playbook(
            "launch.yml", tmp_path, extravars={**base, "rlinf_entry": "sleep 600", "rlinf_launch_name": sleeper}
        )
        assert run.rc == 0, run.stdout[-3000:]
        status = run_playbook("status.yml", tmp_path, extravars={"cluster_report_path": str(tmp_path / "r.json")})
        assert status.rc == 0, status.stdout[-3000:]
        lines = run_lines(status.stdout)
        assert re.fullmatch(rf"RUNNING \(since \S+\), log {log_dir}/rlinf-launch-{sleeper}\.log", lines[sleeper])
        assert lines[unit.removeprefix("rlinf-launch-")] == f"SUCCEEDED (exit 0), log {log}"
        assert sum(status.changed().values()) == 0
        second = run_playbook("launch.yml", tmp_path, extravars={**base, "rlinf_entry": "true"})
        assert second.rc != 0
        assert f"an RLinf driver is already running on {next(iter(hosts))}" in " ".join(second.stdout.split())
        ssh(head, f"systemctl stop rlinf-launch-{sleeper}")
        status = run_playbook("status.yml", tmp_path, extravars={"cluster_report_path": str(tmp_path / "r.json")})
        # Stopped: SIGTERM ended `sleep`, and the wrapper still recorded it.
        assert run_lines(status.stdout)[sleeper] == (
            f"FAILED (exit 143, killed by SIGTERM), log {log_dir}/rlinf-launch-{sleeper}.log"
        )
    finally:
        ssh(
            head,
            f"systemctl stop 'rlinf-launch-sleeper-{stamp}' 2>/dev/null; systemctl reset-failed 'rlinf-launch-*'; "
            f"rm -rf {workdir} {log_dir}",
            check=False,
        )


def test_each_run_is_shown_with_its_real_outcome(tmp_path):
    hosts = lab_hosts()
    head = next(iter(hosts.values()))
    stamp = time.time_ns()
    workdir = f"/srv/rlinf-outcome-test-{stamp}"
    log_dir = f"/var/log/rlinf-outcome-test-{stamp}"
    driver = (DATA / "outcome_driver.py").read_text()
    ssh(head, f"mkdir -p {workdir} && cat > {workdir}/outcome_driver.py", stdin=driver)
    ssh(head, f"cat > {workdir}/run_like_rlinf.sh", stdin=(DATA / "run_like_rlinf.sh").read_text())
    base = {"rlinf_src": workdir, "rlinf_launch_log_dir": log_dir, "rlinf_launch_allow_concurrent": True}
    cases = {
        # name: (entry, rlinf_launch_env, expected status line before ", log")
        "ok": ("bash run_like_rlinf.sh ok", {}, "SUCCEEDED (exit 0)"),
        # tee exits 0; pipefail (handed to the script through SHELLOPTS) keeps python's 3.
        "tee-fail": ("bash run_like_rlinf.sh fail", {}, "FAILED (exit 3)"),
        # HYDRA_FULL_ERROR=1 (the wrapper's default) lets the failure reach RLinf's hook: exit 1.
        "hydra": (
            "bash run_like_rlinf.sh hydra",
            {},
            "FAILED (exit 1; Hydra reported an exception in the driver "
            "('Error executing job with overrides:' in the log))",
        ),
        # Without it the status is 0, as with RLinf main: Hydra's line in the log says FAILED.
        "hydra-exit0": (
            "bash run_like_rlinf.sh hydra",
            {"HYDRA_FULL_ERROR": "0"},
            "FAILED (exit 0, but Hydra reported an exception in the driver "
            "('Error executing job with overrides:' in the log))",
        ),
    }
    names = {case: f"outcome-{case}-{stamp}" for case in cases}
    try:
        for case, (entry, env, _) in cases.items():
            run = run_playbook(
                "launch.yml",
                tmp_path,
                extravars={**base, "rlinf_entry": entry, "rlinf_launch_env": env, "rlinf_launch_name": names[case]},
            )
            assert run.rc == 0, run.stdout[-3000:]
        for name in names.values():
            wait_for(head, f"test -s /etc/rlinf/state/launches/rlinf-launch-{name}.outcome.json", 90)
        status = run_playbook("status.yml", tmp_path, extravars={"cluster_report_path": str(tmp_path / "r.json")})
        assert status.rc == 0, status.stdout[-3000:]
        lines = run_lines(status.stdout)
        for case, (_, _, want) in cases.items():
            assert lines[names[case]] == f"{want}, log {log_dir}/rlinf-launch-{names[case]}.log", case
        # The script tee'd the driver into its own log, and the run's log has it too.
        text = ssh(head, f"cat {log_dir}/rlinf-launch-{names['tee-fail']}.log").stdout
        assert "outcome_driver: fail" in text and "exited with status 3" in text
    finally:
        ssh(
            head,
            "systemctl reset-failed 'rlinf-launch-outcome-*' 2>/dev/null; "
            f"rm -rf {workdir} {log_dir} /etc/rlinf/state/launches/rlinf-launch-outcome-*-{stamp}.*",
            check=False,
        )
