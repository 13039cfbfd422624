"""Faults made behind Ansible's back on the lab: status names them, site.yml repairs them.

Each test starts on the lab's healthy cluster (the cluster fixture) and repairs what it broke.
"""

from __future__ import annotations

import time

import pytest
from lab_helpers import (
    gcs_alive,
    probe_cluster,
    repaired_by_site,
    run_site,
    run_status,
    ssh,
    wait_for_alive,
    write_inventory,
)

# Each test starts on the lab inventory's healthy cluster (conftest.py), whatever ran before.
pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]


def test_stopped_worker_is_named_with_its_rank_and_site_brings_it_back(tmp_path, hosts):
    name, address = list(hosts.items())[2]
    ssh(address, "systemctl stop rlinf-ray")
    status, report = run_status(tmp_path, ray_check_timeout=10)
    assert status.rc != 0
    # The stopped node's own sentence, naming it with its rank and what is wrong (not just its name,
    # which the table always prints).
    stopped = [p for p in report["problems"] if p.startswith(f"host '{name}' (rank 2, ")]
    assert any("no ALIVE Ray node" in p for p in stopped), report["problems"]
    repaired_by_site(tmp_path, hosts)


def test_killed_raylet_is_restarted_by_systemd_without_ansible(tmp_path, hosts):
    head = next(iter(hosts.values()))
    name, address = list(hosts.items())[1]
    before = probe_cluster(head)[address]["node_id"]
    restarts = "systemctl show -p NRestarts --value rlinf-ray"
    restarts_before = int(ssh(address, restarts).stdout)
    # Inside the worker's own PID namespace: only that node's raylet.
    ssh(address, "kill -9 $(pgrep -x raylet)")
    deadline = time.monotonic() + 120
    nodes = {}
    while time.monotonic() < deadline:
        # The probe (a Ray worker on every node) once the head's GCS lists a new raylet at the address.
        listed = gcs_alive(head)
        if {i for i, ip in listed.items() if ip == address} - {before} and set(listed.values()) == set(hosts.values()):
            nodes = probe_cluster(head)
            if address in nodes and nodes[address]["node_id"] != before and len(nodes) == len(hosts):
                break
        time.sleep(3)
    assert nodes.get(address, {}).get("node_id") not in (None, before), f"{name} did not come back: {nodes}"
    # systemd saw `ray start --block` exit and restarted the unit (a new node ID, same host).
    assert int(ssh(address, restarts).stdout) > restarts_before
    # The drill's end: one site.yml run finds nothing to repair, every host ALIVE, ranks right.
    repaired_by_site(tmp_path, hosts)


def test_rank_changed_behind_ansibles_back_is_reported_and_repaired(tmp_path, hosts):
    name, address = list(hosts.items())[1]
    edit = "sed -i \"s/^RLINF_NODE_RANK=.*/RLINF_NODE_RANK='7'/\" /etc/rlinf/rlinf.env"
    ssh(address, f"{edit} && systemctl restart rlinf-ray")
    head = next(iter(hosts.values()))
    wait_for_alive(head, len(hosts))
    status, report = run_status(tmp_path)
    assert status.rc != 0
    wrong = [p for p in report["problems"] if p.startswith(f"host '{name}'") and "RLINF_NODE_RANK=7" in p]
    assert wrong, report["problems"]
    repaired_by_site(tmp_path, hosts)
    assert probe_cluster(head)[address]["env"]["RLINF_NODE_RANK"] == "1"


def test_custom_resources_reach_ray_start_and_the_check(tmp_path, hosts):
    name = list(hosts)[2]

    def robot_on_worker2(groups):
        groups["ray_workers"]["hosts"][name].update({"ray_resources": {"robot": 1}, "ray_num_cpus": 1})

    inventory = write_inventory(tmp_path, robot_on_worker2)
    run, report = run_site(tmp_path, inventory)
    assert run.rc == 0, run.stdout[-3000:]
    assert report["ok"], report["problems"]
    by_name = {n["name"]: n for n in report["nodes"]}
    assert by_name[name]["custom_resources"] == {"robot": 1}
    assert by_name[name]["resources"]["CPU"] == 1
    assert all("robot" not in n.get("custom_resources", {}) for n in report["nodes"] if n["name"] != name)
    repaired_by_site(tmp_path, hosts)
