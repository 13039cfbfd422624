"""Scale-out and remove in the lab: a 4th host appended to ray_workers is first dry-run
(`site.yml --check --diff` names it as the node Ray would start on, restarts nothing and leaves
it bare), then joins without restarting Ray on the first three (same node IDs, same ranks);
remove-node.yml of the highest rank stops Ray on it and restarts nothing else, and the lab shrinks back to 3 hosts
(a middle worker: test_remove_node.py).

Grows the lab named by LAB_NAME (default: the lab of the inventory under test, so
RLINF_LAB_INVENTORY=.lab/rlinf-lab6/inventory grows rlinf-lab6) and always restores it."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys

import pytest
from lab_helpers import ROOT, assert_node_state_unchanged, lab_hosts, node_state, run_playbook, ssh, wait_for_alive

# Each test starts on the lab inventory's healthy cluster (conftest.py), whatever ran before.
pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]


# Prints what site.yml would have made on a host: nothing on a bare one.
BARE = (
    "for p in /opt/rlinf /etc/rlinf /etc/systemd/system/rlinf-ray.service; do test -e $p && echo $p; done;"
    " systemctl cat rlinf-ray >/dev/null 2>&1 && echo unit rlinf-ray; true"
)


def lab_env(hosts: dict[str, str]) -> dict[str, str]:
    head_name, head_ip = next(iter(hosts.items()))
    lab = os.environ.get("LAB_NAME") or head_name.removesuffix("-head")
    assert head_name == f"{lab}-head", f"LAB_NAME={lab} does not match the inventory under test ({head_name})"
    subnet = os.environ.get("LAB_SUBNET") or str(ipaddress.ip_network(f"{head_ip}/24", strict=False))
    return {**os.environ, "LAB_NAME": lab, "LAB_SUBNET": subnet}


def lab_up(nodes: int, env: dict[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "lab" / "lab.py"), "up", "--nodes", str(nodes)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_fourth_host_joins_untouched_then_is_removed(tmp_path):
    hosts = lab_hosts()
    assert len(hosts) == 3, f"expects the 3-node lab, found {list(hosts)}"
    env = lab_env(hosts)
    head = next(iter(hosts.values()))
    before = wait_for_alive(head, 3)
    try:
        lab_up(4, env)
        grown = lab_hosts()
        new_name, new_ip = list(grown.items())[-1]
        assert list(grown)[:3] == list(hosts) and new_ip not in before

        # The dry run of the append: the new node is the one Ray would start on, the first
        # three keep their Ray and files, and the new host is left as bare as lab.py made it.
        state = node_state(hosts)
        dry = run_playbook("site.yml", tmp_path, cmdline="--check --diff")
        assert dry.rc == 0, dry.stdout[-4000:]
        said = " ".join(dry.stdout.split())
        assert f"check mode: Ray would start on {new_name} (" in said, dry.stdout[-4000:]
        assert dry.changed().get(new_name, 0) > 0
        # The closing check describes the running three as healthy, not as nodes to restart.
        assert "cannot run work" not in said, dry.stdout[-4000:]
        for name in hosts:
            assert f"Ray would restart on {name}" not in said and f"Ray would start on {name} " not in said
            assert dry.changed().get(name, 0) == 0, dry.changed()
        assert_node_state_unchanged(hosts, state)
        assert ssh(new_ip, BARE).stdout == ""

        run = run_playbook("site.yml", tmp_path)
        assert run.rc == 0, run.stdout[-4000:]
        after = wait_for_alive(head, 4)
        # The first three kept their Ray (same node IDs) and their ranks; the new one is rank 3.
        assert {ip: after[ip]["node_id"] for ip in before} == {ip: n["node_id"] for ip, n in before.items()}
        assert {ip: after[ip]["env"]["RLINF_NODE_RANK"] for ip in before} == {
            ip: n["env"]["RLINF_NODE_RANK"] for ip, n in before.items()
        }
        assert after[new_ip]["env"]["RLINF_NODE_RANK"] == "3"

        removed = run_playbook("remove-node.yml", tmp_path, extravars={"node": new_name, "remove_node_confirm": "yes"})
        assert removed.rc == 0, removed.stdout[-4000:]
        assert ssh(new_ip, "systemctl is-active rlinf-ray", check=False).stdout.strip() != "active"
        remaining = wait_for_alive(head, 3)
        assert {ip: n["node_id"] for ip, n in remaining.items()} == {ip: n["node_id"] for ip, n in before.items()}
    finally:
        lab_up(3, env)
    assert list(lab_hosts()) == list(hosts)
    status = run_playbook("status.yml", tmp_path, extravars={"cluster_report_path": str(tmp_path / "report.json")})
    assert status.rc == 0, status.stdout[-4000:]
