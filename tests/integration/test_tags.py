"""One phase at a time: `--tags ray` on a healthy cluster changes and restarts nothing, and
restarts a Ray that stopped; `--skip-tags overlay` runs the rest. The plan and the node read
(tagged always) run whatever the tags say."""

from __future__ import annotations

import pytest
from lab_helpers import probe_cluster, run_playbook, ssh, wait_for_alive

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]


def node_ids(hosts):
    return {ip: n["node_id"] for ip, n in wait_for_alive(next(iter(hosts.values())), len(hosts)).items()}


def test_tags_ray_on_a_healthy_cluster_is_a_no_op(tmp_path, hosts):
    before = node_ids(hosts)
    run = run_playbook("site.yml", tmp_path, events=True, tags="ray")
    assert run.rc == 0, run.stdout[-3000:]
    assert run.changed() == {}, run.changed()
    ran = run.roles_reached
    assert {"validate_inventory", "preflight", "ray_node"} <= ran, ran
    assert not ran & {"python_env", "code_sync", "firewall", "easytier", "ray_check"}, ran
    assert node_ids(hosts) == before


def test_tags_ray_starts_a_ray_that_stopped(tmp_path, hosts):
    worker = list(hosts.values())[-1]
    ssh(worker, "systemctl stop rlinf-ray")
    run = run_playbook("site.yml", tmp_path, tags="ray")
    assert run.rc == 0, run.stdout[-3000:]
    assert ssh(worker, "systemctl is-active rlinf-ray").stdout.strip() == "active"
    assert worker in wait_for_alive(next(iter(hosts.values())), len(hosts))


def test_skip_tags_overlay_runs_the_rest(tmp_path, hosts):
    before = node_ids(hosts)
    run = run_playbook("site.yml", tmp_path, events=True, skip_tags="overlay")
    assert run.rc == 0, run.stdout[-3000:]
    assert run.changed() == {}, run.changed()
    ran = run.roles_reached
    assert "easytier" not in ran and {"python_env", "ray_node", "ray_check"} <= ran, ran
    assert {ip: n["node_id"] for ip, n in probe_cluster(next(iter(hosts.values()))).items()} == before
