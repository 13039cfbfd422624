"""`site.yml --check --diff`: on a healthy cluster it changes and restarts nothing (changed=0);
after a change it shows the diff, names the nodes Ray would restart, and still changes nothing."""

from __future__ import annotations

import json
import re

import pytest
from lab_helpers import assert_node_state_unchanged, node_state, probe_cluster, run_playbook, ssh

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]


# What a purge removes from every lab node (among the rest of its manifest).
PURGED = ("/etc/rlinf", "/etc/rlinf/rlinf.env", "/etc/systemd/system/rlinf-ray.service", "/opt/rlinf/venv")


def check_run(tmp_path, **extravars):
    return run_playbook("site.yml", tmp_path, cmdline="--check --diff", extravars=extravars)


def test_dry_run_on_a_healthy_cluster_changes_nothing(tmp_path, hosts):
    before = node_state(hosts)
    run = check_run(tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    assert run.changed() == {}, run.changed()
    assert "Ray would" not in run.stdout
    assert "cannot run work" not in run.stdout, run.stdout[-3000:]
    assert_node_state_unchanged(hosts, before)


def dry_run_of_a_change(tmp_path, hosts, **change):
    """site.yml --check --diff with ``change``: it names every node's restart and changes nothing.
    Returns the run (test_ray_upgrade.py dry-runs a new Ray pin with it)."""
    before = node_state(hosts)
    run = check_run(tmp_path, **change)
    assert run.rc == 0, run.stdout[-3000:]
    said = " ".join(run.stdout.split())
    for name in hosts:
        assert f"check mode: Ray would restart on {name}" in said, run.stdout[-3000:]
        assert run.changed().get(name, 0) > 0
    assert_node_state_unchanged(hosts, before)
    assert len(probe_cluster(next(iter(hosts.values())))) == len(hosts)
    return run


# A new Ray pin's dry run is test_ray_upgrade.py's: the set it downloads is the one that test installs.
def test_dry_run_of_a_change_shows_it_names_the_restarts_and_changes_nothing(tmp_path, hosts):
    run = dry_run_of_a_change(tmp_path, hosts, rlinf_env_vars={"RLINF_LOG_LEVEL": "DEBUG"})
    assert "+RLINF_LOG_LEVEL='DEBUG'" in run.stdout  # the diff of the env file


@pytest.mark.parametrize("purge", [False, True], ids=["teardown", "purge"])
def test_dry_run_of_teardown_names_what_it_would_stop_and_remove_and_changes_nothing(tmp_path, hosts, purge):
    before = node_state(hosts)
    extravars = {"teardown_purge": True} if purge else {}
    run = run_playbook("teardown.yml", tmp_path, cmdline="--check --diff", extravars=extravars)
    assert run.rc == 0, run.stdout[-3000:]
    said = " ".join(run.stdout.split())
    for name in hosts:
        assert f"check mode: Ray would stop on {name} (unit rlinf-ray" in said, run.stdout[-3000:]
        assert run.changed().get(name, 0) > 0
    if purge:
        for name in hosts:
            would = said.partition(f"check mode: purge would remove from {name}: ")[2].partition("; nothing")[0]
            assert set(PURGED) <= set(would.split(", ")), run.stdout[-3000:]
        # A dry purge keeps back as user data only directories that really hold files we did not
        # make (an earlier module's launched runs leave their logs), never one of ours.
        for name, address in hosts.items():
            for kept in re.findall(rf"{name}: would keep (.+?): they hold", said):
                for path in kept.split(", "):
                    assert path not in PURGED, run.stdout[-3000:]
                    assert ssh(address, f"find {path} -type f -print -quit").stdout.strip(), path
    else:
        assert "purge would remove" not in said
    assert_node_state_unchanged(hosts, before)


@pytest.mark.parametrize("playbook", ["playbooks/status.yml", "playbooks/validate.yml"])
def test_read_only_playbooks_run_in_check_mode_and_change_nothing(tmp_path, hosts, playbook):
    before = node_state(hosts)
    report = tmp_path / "report.json"
    run = run_playbook(playbook, tmp_path, cmdline="--check", extravars={"cluster_report_path": str(report)})
    assert run.rc == 0, run.stdout[-3000:]
    assert run.changed() == {}, run.changed()
    said = " ".join(run.stdout.split())
    if playbook.endswith("status.yml"):
        # The check ran for real: every node ALIVE in the report, not skipped.
        assert f"OK: {len(hosts)}/{len(hosts)} nodes ALIVE" in said, run.stdout[-3000:]
        assert [n["state"] for n in json.loads(report.read_text())["nodes"]] == ["ALIVE"] * len(hosts)
    else:
        assert f"num_nodes: {len(hosts)}" in said, run.stdout[-3000:]
    assert_node_state_unchanged(hosts, before)
