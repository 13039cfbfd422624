"""`site.yml --check --diff`: on a healthy cluster it changes and restarts nothing (changed=0);
after a change it shows the diff, names the nodes Ray would restart, and still changes nothing."""

from __future__ import annotations

import pytest
from lab_helpers import probe_cluster, run_playbook, ssh, wait_for_alive

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

WATCHED = "/etc/rlinf/rlinf.env /etc/systemd/system/rlinf-ray.service /etc/rlinf/state/rlinf-ray.json"


def node_state(hosts):
    """Per host: the sha256 of the files site.yml writes, the venv's Ray, and the node ID Ray runs."""
    head = next(iter(hosts.values()))
    ids = {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()}
    files = {
        name: ssh(
            address, f"sha256sum {WATCHED}; /opt/rlinf/venv/bin/python -c 'import ray; print(ray.__version__)'"
        ).stdout
        for name, address in hosts.items()
    }
    return ids, files


def check_run(tmp_path, **extravars):
    return run_playbook("site.yml", tmp_path, cmdline="--check --diff", extravars=extravars)


def test_dry_run_on_a_healthy_cluster_changes_nothing(tmp_path, hosts):
    before = node_state(hosts)
    run = check_run(tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    assert run.changed() == {}, run.changed()
    assert "Ray would" not in run.stdout
    assert node_state(hosts) == before


@pytest.mark.parametrize(
    "change",
    [{"rlinf_env_vars": {"RLINF_LOG_LEVEL": "DEBUG"}}, {"rlinf_ray_version": "2.59.0"}],
    ids=["env-var", "ray-pin"],
)
def test_dry_run_of_a_change_shows_it_names_the_restarts_and_changes_nothing(tmp_path, hosts, change):
    before = node_state(hosts)
    run = check_run(tmp_path, **change)
    assert run.rc == 0, run.stdout[-3000:]
    said = " ".join(run.stdout.split())
    for name in hosts:
        assert f"check mode: Ray would restart on {name}" in said, run.stdout[-3000:]
        assert run.changed().get(name, 0) > 0
    if "rlinf_env_vars" in change:
        assert "+RLINF_LOG_LEVEL='DEBUG'" in run.stdout  # the diff of the env file
    assert node_state(hosts) == before
    assert len(probe_cluster(next(iter(hosts.values())))) == len(hosts)
