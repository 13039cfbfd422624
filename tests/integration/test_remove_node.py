"""Removing a worker from the middle of a 4-node lab: remove-node.yml stops Ray there, moves the
ranks above it down (ranks stay 0..n-1, as RLinf's rank map reads them in a task pinned to
each node), restarts only the renumbered nodes (the others keep their Ray node IDs), and the
inventory change it names makes the next site.yml change nothing. Grows the lab named by
LAB_NAME to 4 hosts and always shrinks it back to 3 (as test_scale.py does)."""

from __future__ import annotations

import pytest
from lab_helpers import lab_hosts, run_playbook, run_status, ssh, wait_for_alive, write_inventory
from test_scale import lab_env, lab_up

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]


def ranks(nodes: dict[str, dict]) -> dict[str, str]:
    return {ip: n["env"]["RLINF_NODE_RANK"] for ip, n in nodes.items()}


def test_removing_rank_1_renumbers_only_the_ranks_above_it(tmp_path):
    hosts = lab_hosts()
    assert len(hosts) == 3, f"expects the 3-node lab, found {list(hosts)}"
    env = lab_env(hosts)
    head = next(iter(hosts.values()))
    try:
        lab_up(4, env)
        grown = lab_hosts()
        names = list(grown)
        run = run_playbook("site.yml", tmp_path)
        assert run.rc == 0, run.stdout[-4000:]
        before = wait_for_alive(head, 4)
        assert ranks(before) == {grown[n]: str(i) for i, n in enumerate(names)}

        removed = names[1]
        run = run_playbook("remove-node.yml", tmp_path, extravars={"node": removed, "remove_node_confirm": "yes"})
        assert run.rc == 0, run.stdout[-4000:]
        out = " ".join(run.stdout.split())
        assert f"{removed} (rank 1) leaves the cluster" in out
        assert f"{names[2]} 2 -> 1, {names[3]} 3 -> 2" in out
        assert f"delete {removed} from ray_workers" in out and "cluster.num_nodes: 3" in out
        assert "num_nodes: 3" in out

        assert ssh(grown[removed], "systemctl is-active rlinf-ray", check=False).stdout.strip() != "active"
        after = wait_for_alive(head, 3)
        assert grown[removed] not in after
        # RLinf's rank map: continuous 0..2, in the order of the inventory without the node.
        assert ranks(after) == {grown[names[0]]: "0", grown[names[2]]: "1", grown[names[3]]: "2"}
        # Only the renumbered nodes restarted.
        assert after[head]["node_id"] == before[head]["node_id"]
        for name in names[2:]:
            assert after[grown[name]]["node_id"] != before[grown[name]]["node_id"], name

        # The inventory change it asks for: then site.yml and status agree with the cluster.
        edited = write_inventory(tmp_path, lambda groups: groups["ray_workers"]["hosts"].pop(removed))
        again = run_playbook("site.yml", tmp_path, inventory=edited)
        assert again.rc == 0, again.stdout[-4000:]
        assert sum(again.changed().values()) == 0, again.changed()
        status, report = run_status(tmp_path, edited)
        assert status.rc == 0 and report["ok"], report["problems"]
    finally:
        lab_up(3, env)
    assert list(lab_hosts()) == list(hosts)
    # Back to the 3-node lab: its own ranks again (the removed worker starts, the others renumber back).
    restored = run_playbook("site.yml", tmp_path)
    assert restored.rc == 0, restored.stdout[-4000:]
    assert ranks(wait_for_alive(head, 3)) == {ip: str(i) for i, ip in enumerate(hosts.values())}
