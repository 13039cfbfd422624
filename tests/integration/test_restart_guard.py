"""The restart guard in the lab: with RLinf drivers attached (one started by launch.yml, one a
plain `ray.init` script on a worker), a change that would restart a worker's Ray is refused,
in check mode too, naming both drivers, the node and why; nothing on the node changes and
the drivers keep running (same node IDs). A run that restarts nothing goes through. With
-e rlinf_allow_restart=true the change goes through. Leaves the lab as it found it."""

from __future__ import annotations

import re
import time

import pytest
from lab_helpers import lab_hosts, run_playbook, ssh, wait_for_alive, write_inventory

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

VENV_PY = "/opt/rlinf/venv/bin/python"
# A driver that stays attached: ray.init as RLinf does, then waits.
SLEEPER = f'{VENV_PY} -c \'import ray, time; ray.init(address="auto"); print("attached", flush=True); time.sleep(900)\''


def wait_for(address: str, command: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = ssh(address, command, check=False)
        if proc.returncode == 0:
            return proc.stdout
        time.sleep(1)
    raise AssertionError(f"`{command}` on {address} did not succeed within {timeout}s")


def flat(text: str) -> str:
    return " ".join(text.split())


def test_a_restart_is_refused_while_a_driver_runs_and_allowed_on_request(tmp_path):
    hosts = lab_hosts()
    names = list(hosts)
    head, worker = hosts[names[0]], names[-1]
    stamp = time.time_ns()
    launch_name = f"guard-{stamp}"
    other_unit = f"guard-test-driver-{stamp}"
    workdir = f"/srv/rlinf-guard-test-{stamp}"

    def with_env_var(groups):
        groups["ray_workers"]["hosts"][worker]["rlinf_env_vars"] = {"RLINF_GUARD_TEST": str(stamp)}

    changed_inventory = write_inventory(tmp_path, with_env_var)
    before = {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()}
    env_before = ssh(hosts[worker], "cat /etc/rlinf/rlinf.env").stdout
    ssh(head, f"mkdir -p {workdir}")
    try:
        launch = {"rlinf_src": workdir, "rlinf_entry": SLEEPER, "rlinf_launch_name": launch_name}
        run = run_playbook("launch.yml", tmp_path, extravars=launch)
        assert run.rc == 0, run.stdout[-3000:]
        # A second driver, not started by launch.yml, on a worker.
        env_file = "--property=EnvironmentFile=/etc/rlinf/rlinf.env"
        ssh(hosts[names[1]], f"systemd-run --unit={other_unit} {env_file} {SLEEPER}")
        log = f"/var/log/rlinf/rlinf-launch-{launch_name}.log"
        wait_for(head, f"grep -q attached {log}", 120)
        wait_for(hosts[names[1]], f"journalctl -u {other_unit} | grep -q attached", 120)

        # Nothing to restart: never blocked.
        noop = run_playbook("site.yml", tmp_path)
        assert noop.rc == 0, noop.stdout[-3000:]
        assert sum(noop.changed().values()) == 0

        for check in (True, False):
            refused = run_playbook(
                "site.yml", tmp_path, inventory=changed_inventory, cmdline="--check" if check else None
            )
            assert refused.rc != 0, refused.stdout[-3000:]
            out = flat(refused.stdout)
            assert "2 drivers are attached to the cluster" in out, out[-3000:]
            assert f"RLinf driver rlinf-launch-{launch_name} (running" in out
            assert re.search(rf"Ray job [0-9a-f]+ \(driver pid \d+ on {re.escape(hosts[names[1]])}: ", out)
            assert f"{worker}: its files change (/etc/rlinf/rlinf.env" in out
            assert "-e rlinf_allow_restart=true" in out
            # The refusal itself says whether it is check mode's (Ansible also prints the task's source).
            said = "msg: 'check mode: 2 drivers are attached" if check else "msg: '2 drivers are attached"
            assert said in out
            # Refused before anything was written or restarted.
            assert ssh(hosts[worker], "cat /etc/rlinf/rlinf.env").stdout == env_before
            assert ssh(head, f"systemctl is-active rlinf-launch-{launch_name}").stdout.strip() == "active"
            assert ssh(hosts[names[1]], f"systemctl is-active {other_unit}").stdout.strip() == "active"
            assert {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()} == before

        allowed = run_playbook(
            "site.yml", tmp_path, inventory=changed_inventory, extravars={"rlinf_allow_restart": True}
        )
        assert allowed.rc == 0, allowed.stdout[-3000:]
        assert "rlinf_allow_restart=true: restarting Ray although" in flat(allowed.stdout)
        after = {ip: n for ip, n in wait_for_alive(head, len(hosts)).items()}
        assert after[hosts[worker]]["env"].get("RLINF_GUARD_TEST") == str(stamp)
        # Only that worker restarted.
        assert {ip: n["node_id"] for ip, n in after.items() if ip != hosts[worker]} == {
            ip: node_id for ip, node_id in before.items() if ip != hosts[worker]
        }
        assert after[hosts[worker]]["node_id"] != before[hosts[worker]]
    finally:
        ssh(head, f"systemctl stop rlinf-launch-{launch_name}; rm -rf {workdir}", check=False)
        ssh(hosts[names[1]], f"systemctl stop {other_unit}; systemctl reset-failed {other_unit}", check=False)
    # Without drivers the lab's own inventory goes back through (the worker restarts, unrefused).
    restored = run_playbook("site.yml", tmp_path)
    assert restored.rc == 0, restored.stdout[-3000:]
    assert "no RLinf driver runs; restarting Ray on" in flat(restored.stdout)
    assert "RLINF_GUARD_TEST" not in ssh(hosts[worker], "cat /etc/rlinf/rlinf.env").stdout
