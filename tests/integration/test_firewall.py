"""The opt-in nftables firewall on the lab: Ray's ports only from the cluster's nodes, the
Ray client port closed unless listed, idempotent, removed by switching it off (and by a purge:
test_lifecycle.py's purge runs with it on, beside an operator's own table). The controller is
the podman bridge's gateway, not a cluster address, so it stands for an outsider. Leaves the
lab healthy, with the firewall off (the default).
"""

from __future__ import annotations

import socket
import time

import pytest
from firewall_helpers import TABLE, assert_firewall_gone, with_firewall
from lab_helpers import run_playbook, ssh, wait_for_alive, write_inventory

# Each test starts on the lab inventory's healthy cluster (conftest.py), whatever ran before.
pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

GCS, CLIENT, SSH = 6379, 10001, 22


def controller_connects(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=3):
            return True
    except OSError:
        return False


def node_connects(node: str, address: str, port: int) -> bool:
    probe = f"import socket; socket.create_connection(('{address}', {port}), timeout=3)"
    return ssh(node, f'python3 -c "{probe}"', check=False).returncode == 0


def controller_connects_soon(address: str, port: int, attempts: int = 30) -> bool:
    """The client server starts a few seconds after the head is ALIVE."""
    for _ in range(attempts):
        if controller_connects(address, port):
            return True
        time.sleep(1)
    return False


def restore_default_lab(tmp_path, hosts):
    run = run_playbook("site.yml", tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    wait_for_alive(next(iter(hosts.values())), len(hosts))
    return run


def test_ray_ports_only_from_cluster_nodes(tmp_path, hosts):
    addresses = list(hosts.values())
    head, worker1, worker2 = addresses[0], addresses[1], addresses[-1]
    inventory = write_inventory(tmp_path, with_firewall([worker2]))
    try:
        run = run_playbook("site.yml", tmp_path, inventory=inventory)
        assert run.rc == 0, run.stdout[-3000:]
        wait_for_alive(head, len(hosts))
        for name, address in hosts.items():
            loaded = ssh(address, f"{TABLE}; systemctl is-active rlinf-firewall", check=False)
            assert loaded.returncode == 0 and "table inet rlinf" in loaded.stdout, f"{name}: {loaded.stderr}"

        assert not controller_connects(head, GCS), "an outsider reached the head's GCS port"
        assert not controller_connects(head, CLIENT), "an outsider reached the Ray client port"
        assert controller_connects(head, SSH), "SSH must stay untouched"
        assert node_connects(worker1, head, GCS), "a worker must reach the head's GCS port"
        assert not node_connects(worker1, head, CLIENT), "the client port is open to a node not listed"
        assert node_connects(worker2, head, CLIENT), "rlinf_firewall_client_sources must open the client port"

        again = run_playbook("site.yml", tmp_path, inventory=inventory)
        assert again.rc == 0, again.stdout[-3000:]
        assert sum(again.changed().values()) == 0, again.changed()

        # New rules are reloaded in place: the client port closes, Ray keeps running.
        before = {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()}
        closed = run_playbook("site.yml", tmp_path, inventory=write_inventory(tmp_path, with_firewall([])))
        assert closed.rc == 0, closed.stdout[-3000:]
        assert not node_connects(worker2, head, CLIENT), "the client port stayed open to a source no longer listed"
        assert node_connects(worker2, head, GCS)
        after = {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()}
        assert after == before, "changing the firewall's rules restarted Ray"

        # Debian's nftables.service flushes the whole ruleset; the table comes back with it
        # (the unit's own restart job may still be running when systemctl returns).
        reloaded = ssh(
            worker1,
            f"systemctl restart nftables; for i in $(seq 20); do {TABLE} >/dev/null 2>&1 && break; sleep 0.5; done;"
            f" {TABLE}",
            check=False,
        )
        assert reloaded.returncode == 0 and "table inet rlinf" in reloaded.stdout, reloaded.stderr
        ssh(worker1, "systemctl stop nftables")
    finally:
        # Switched off (the lab's default inventory): the table, the file and the unit go.
        restore_default_lab(tmp_path, hosts)
    assert_firewall_gone(hosts)
    assert controller_connects_soon(head, CLIENT), "with the firewall off the client port is Ray's again"


def test_a_limit_that_leaves_nodes_out_is_refused(tmp_path, hosts):
    head_name, head = next(iter(hosts.items()))
    run = run_playbook("site.yml", tmp_path, inventory=write_inventory(tmp_path, with_firewall([])), limit=head_name)
    assert run.rc != 0
    assert "the firewall needs every Ray node's address" in run.stdout, run.stdout[-3000:]
    assert run.changed() == {}, run.changed()
    assert ssh(head, TABLE, check=False).returncode != 0, "the head got rules without the workers' addresses"
