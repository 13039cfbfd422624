"""Secrets audit: after a full site.yml run with token auth on, the Ray token is only in 0600
files, on the nodes and on the controller, and nowhere in process lists, journals or the
Ansible output (stdout and the runner's job events); rlinf_secret_env_vars reach Ray's
environment and no file but root's 0600 one. Leaves the lab healthy.
(The EasyTier network secret gets the same audit in test_drills.py, where an overlay runs.)
"""

from __future__ import annotations

import secrets
from concurrent.futures import ThreadPoolExecutor

import pytest
from lab_helpers import CONTROLLER_TOKEN, LAB_STATE, ROOT, run_playbook, ssh, write_inventory
from secret_audit import controller_files_holding, controller_processes_holding, node_audit, node_leaks

# Each test starts on the lab inventory's healthy cluster (conftest.py), whatever ran before.
pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

NODE_TOKEN = "/etc/rlinf/ray-auth-token"


def test_after_a_full_run_the_token_is_only_in_0600_files(tmp_path, hosts):
    token = CONTROLLER_TOKEN.read_text().strip()
    assert len(token) >= 32, "the controller's token file is missing: run site.yml once first"
    secret = token.encode()
    worker = list(hosts)[1]
    # Make the run write the token again (and restart that node's Ray with it), so the secret
    # really travels through the run; verbose with diffs, as someone debugging would run it.
    ssh(hosts[worker], f"rm -f {NODE_TOKEN}")
    seen_on_controller = []

    def on_event(event):
        if event.get("event") == "runner_on_ok" and not seen_on_controller:
            seen_on_controller.extend(controller_processes_holding(secret))
        return True

    run = run_playbook("site.yml", tmp_path, events=True, event_handler=on_event, verbosity=3, cmdline="--diff")
    assert run.rc == 0, run.stdout[-3000:]
    assert run.changed().get(worker, 0) >= 1, "the token was not written again"

    leaks = {}
    # The whole Ansible output: stdout and every file ansible-runner kept (job_events...).
    assert token not in run.stdout
    runner_files = controller_files_holding(secret, *tmp_path.glob("runner-*"))
    if runner_files:
        leaks["ansible-runner output"] = runner_files
    if seen_on_controller:
        leaks["controller processes during the run"] = seen_on_controller
    # What the project keeps on the controller: only the 0600 token file may hold it.
    controller = controller_files_holding(secret, ROOT / "artifacts", ROOT / ".lab", LAB_STATE)
    loose = {path: mode for path, mode in controller.items() if mode != "600"}
    if loose:
        leaks["controller files not 0600"] = loose
    assert controller.get(str(CONTROLLER_TOKEN)) == "600", controller

    # Every node: process arguments and environments, the journal, every file.
    with ThreadPoolExecutor(len(hosts)) as pool:
        audits = dict(zip(hosts, pool.map(lambda a: node_audit(a, token), hosts.values()), strict=True))
    for name, audit in audits.items():
        assert audit["files"].get(NODE_TOKEN) == "600", f"{name}: {audit}"
        leaks.update(node_leaks(name, audit))
    holders = {name: sorted(audit["files"]) for name, audit in audits.items()}
    assert not leaks, f"the token leaked: {leaks} (0600 holders: {holders}, controller: {sorted(controller)})"


SECRET_ENV_FILE = "/etc/rlinf/rlinf.secret.env"


def test_secret_env_vars_reach_ray_on_every_node_and_only_a_0600_file(tmp_path, hosts):
    """rlinf_secret_env_vars: in the environment Ray runs with on every node (its actors inherit it),
    on disk only in root's 0600 file, in no output of a verbose --diff run; gone again without it."""
    value = f"rlinf-secret-env-TEST-ONLY-{secrets.token_hex(16)}"

    def with_secret(groups):
        for group in groups.values():
            group["vars"] = dict(group.get("vars") or {}, rlinf_secret_env_vars={"RLINF_TEST_SECRET": value})

    inventory = write_inventory(tmp_path, with_secret)
    try:
        run = run_playbook("site.yml", tmp_path, inventory=inventory, events=True, verbosity=3, cmdline="--diff")
        assert run.rc == 0, run.stdout[-3000:]
        assert value not in run.stdout
        assert controller_files_holding(value.encode(), *tmp_path.glob("runner-*")) == {}
        # Plans and reports the run kept on the controller hold the name only.
        assert controller_files_holding(value.encode(), ROOT / "artifacts", LAB_STATE) == {}
        for name, address in hosts.items():
            ray_env = ssh(address, "tr '\\0' '\\n' < /proc/$(systemctl show -p MainPID --value rlinf-ray)/environ")
            assert f"RLINF_TEST_SECRET={value}" in ray_env.stdout.splitlines(), f"{name}: Ray lacks the secret"
            audit = node_audit(address, value)
            assert audit["files"] == {SECRET_ENV_FILE: "600"}, f"{name}: {audit['files']}"
            owner = ssh(address, f"stat -c %U:%G {SECRET_ENV_FILE}").stdout.strip()
            assert owner == "root:root", f"{name}: {SECRET_ENV_FILE} is {owner}"
            # Ray's processes carry it in their environment (that is the point), never in a command line.
            assert not [p for p in audit["processes"] if p.endswith("/cmdline")], f"{name}: {audit['processes']}"
            assert audit["journal"] == 0, f"{name}: the journal holds the secret"
    finally:
        back = run_playbook("site.yml", tmp_path)
    assert back.rc == 0, back.stdout[-3000:]
    for name, address in hosts.items():
        assert ssh(address, f"test -e {SECRET_ENV_FILE}", check=False).returncode != 0, f"{name}: the file stayed"
        unit = ssh(address, "cat /etc/systemd/system/rlinf-ray.service").stdout
        assert "secret" not in unit, f"{name}: the unit still reads a secret file"
