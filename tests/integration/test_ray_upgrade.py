"""A Ray version change in the lab, between two versions of the package index: a pin the index
does not have is refused on the controller before any node changes; a dry run of a new pin
(site.yml --check) builds its wheelhouse on the controller, names every node's restart and changes
nothing; the pin then installs on every node by the lock's hashes (python_env_require_hashes),
restarts each node's Ray exactly once (head, then workers), and the check proves every node runs it; the
nodes' wheelhouse then holds that pin's set alone (the controller keeps both);
back to the lab's pin the same way. A wheel changed on a node after the push is refused there by pip.
Leaves the lab on its own pin."""

from __future__ import annotations

import time

import pytest
from lab_helpers import lab_hosts, run_playbook, run_status, ssh, wait_for_alive
from test_check_mode import dry_run_of_a_change

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

OTHER = "2.59.0"
LAB_PIN = "2.60.0"
VERSION = "/opt/rlinf/venv/bin/python -c 'import ray; print(ray.__version__)'"
INSTALL_TASK = "Install the pinned packages into the venv"
WHEELHOUSE = "/opt/rlinf/wheelhouse"


def ray_starts_since(address: str, since: int) -> list[str]:
    """The times the Ray unit was started on a host since ``since`` (epoch seconds)."""
    journal = f"journalctl -u rlinf-ray --since @{since} --no-pager -o short-unix"
    proc = ssh(address, f"{journal} | grep -E 'Started rlinf-ray' || true")
    return proc.stdout.splitlines()


def assert_on(hosts, version, tmp_path):
    for name, address in hosts.items():
        assert ssh(address, VERSION).stdout.strip() == version, name
    # status.yml checks against the pin it is given, as site.yml was (the inventory's otherwise).
    status, report = run_status(tmp_path, rlinf_ray_version=version)
    assert status.rc == 0 and report["ok"], report["problems"]
    assert {n["ray_version"] for n in report["nodes"]} == {version}


def change_pin(hosts, version, tmp_path):
    head = next(iter(hosts.values()))
    before = {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()}
    since = int(time.time()) - 1
    run = run_playbook(
        "site.yml", tmp_path, events=True, extravars={"rlinf_ray_version": version, "python_env_require_hashes": True}
    )
    assert run.rc == 0, run.stdout[-4000:]
    # pip installed the lock the controller wrote and pushed, by its hashes, not the bare requirements.
    for name, address in hosts.items():
        argv = run.results[name][INSTALL_TASK]["cmd"]
        assert argv[-3:-1] == ["--require-hashes", "-r"] and argv[-1].startswith(f"{WHEELHOUSE}/requirements-"), argv
        lock = ssh(address, f"cat {argv[-1]}").stdout
        assert f"\nray=={version} --hash=sha256:" in lock, (name, lock[:500])
        # The node's wheelhouse holds this set alone: the lock and its wheels, not the other pin's.
        held = set(ssh(address, f"ls -A {WHEELHOUSE}").stdout.split())
        listed = {line.rsplit("  # ", 1)[1] for line in lock.splitlines() if "  # " in line}
        assert held == {argv[-1].rsplit("/", 1)[1], *listed}, (name, sorted(held ^ listed))
    # One restart per node, every node on a new Ray node ID.
    for name, address in hosts.items():
        assert len(ray_starts_since(address, since)) == 1, (name, ray_starts_since(address, since))
    after = {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()}
    assert set(after) == set(before) and all(after[ip] != before[ip] for ip in before)
    return run


def test_a_missing_pin_is_refused_before_any_node_changes(tmp_path):
    hosts = lab_hosts()
    head = next(iter(hosts.values()))
    before = {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()}
    run = run_playbook("site.yml", tmp_path, extravars={"rlinf_ray_version": "2.58.99"})
    assert run.rc != 0
    out = " ".join(run.stdout.split())
    assert "rlinf_ray_version=2.58.99: the controller could not download the pinned set" in out, out[-3000:]
    assert "No node was changed." in out
    assert sum(run.changed().values()) == 0
    assert {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()} == before
    for address in hosts.values():
        assert ssh(address, VERSION).stdout.strip() == LAB_PIN


def test_dry_run_of_a_new_pin_names_the_restarts_and_changes_nothing(tmp_path):
    dry_run_of_a_change(tmp_path, lab_hosts(), rlinf_ray_version=OTHER)


def test_a_new_pin_installs_everywhere_and_restarts_each_node_once(tmp_path):
    hosts = lab_hosts()
    try:
        change_pin(hosts, OTHER, tmp_path)
        assert_on(hosts, OTHER, tmp_path)
    finally:
        change_pin(hosts, LAB_PIN, tmp_path)
    assert_on(hosts, LAB_PIN, tmp_path)
    # Back on the lab's pin a re-run changes nothing.
    run = run_playbook("site.yml", tmp_path)
    assert run.rc == 0 and sum(run.changed().values()) == 0, run.stdout[-3000:]


def test_a_wheel_changed_on_a_node_after_the_push_is_refused_by_pip_there(tmp_path):
    """The node's copy of a wheel its venv lacks is changed in place (same size and time, so the next
    push's rsync keeps it): pip's --require-hashes refuses it on that node alone, naming the wheel."""
    hosts = lab_hosts()
    worker, address = list(hosts.items())[-1]
    wheel = ssh(address, f"ls {WHEELHOUSE}/aiohttp_cors-*.whl").stdout.strip()
    ssh(address, "/opt/rlinf/venv/bin/pip uninstall -q -y aiohttp_cors")
    one_byte = f"printf 'X' | dd of={wheel} bs=1 seek=100 conv=notrunc status=none"
    ssh(address, f"cp -p {wheel} /tmp/wheel.orig && {one_byte} && touch -r /tmp/wheel.orig {wheel}")
    try:
        run = run_playbook("site.yml", tmp_path, events=True, extravars={"python_env_require_hashes": True})
        assert run.rc != 0, run.stdout[-3000:]
        failed = run.results[worker][INSTALL_TASK]
        assert failed.get("rc") not in (None, 0), failed
        assert "THESE PACKAGES DO NOT MATCH THE HASHES" in failed["stderr"], failed["stderr"][-2000:]
        assert "aiohttp" in failed["stderr"].lower().split("do not match the hashes", 1)[1], failed["stderr"][-2000:]
        # Only that node installed: the others' venvs held the pin.
        assert [name for name, tasks in run.results.items() if INSTALL_TASK in tasks] == [worker]
    finally:
        ssh(address, f"rm -f {wheel} /tmp/wheel.orig")
    # The next push brings the wheel back, pip installs it by its hash, the node rejoins.
    run = run_playbook("site.yml", tmp_path, extravars={"python_env_require_hashes": True})
    assert run.rc == 0, run.stdout[-3000:]
    ssh(address, "/opt/rlinf/venv/bin/python -c 'import aiohttp_cors'")
    wait_for_alive(next(iter(hosts.values())), len(hosts))
