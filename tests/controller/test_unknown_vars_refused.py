"""A typo'd variable (our prefix, in no table) is refused by validate.yml and site.yml before any
host is contacted, naming where it was set and the variable it was meant to be.

Hosts point at loopback listeners that count connections (test_refused_before_contact.py):
a run that tried SSH would be seen there.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from test_refused_before_contact import Listeners, run

TYPO = ["-e", "rlinf_firewal_enabled=true"]


@pytest.fixture(scope="module")
def listener():
    server = Listeners()
    yield server
    server.close()


def inventory(path: Path, listeners: Listeners, top: dict, head: dict, worker: dict) -> Path:
    def where(index):
        host, port = listeners.address(index)
        return {"ansible_host": host, "ansible_port": port}

    hosts = {
        "ray_head": {"hosts": {"head": {**where(0), **head}}},
        "ray_workers": {"hosts": {"w1": {**where(1), **worker}}},
    }
    settings = {
        "ansible_user": "root",
        "ansible_ssh_common_args": "-o ConnectTimeout=2 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
        **top,
    }
    data = {"all": {"vars": settings, "children": {"rlinf_cluster": {"children": hosts}}}}
    path.mkdir(parents=True, exist_ok=True)
    (path / "hosts.yml").write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("playbook", ["validate.yml", "site.yml"])
def test_a_typo_in_extra_vars_is_refused_naming_the_variable_it_meant(tmp_path, listener, playbook):
    result = run([playbook, *TYPO], inventory(tmp_path / "inv", listener, {}, {}, {}))
    out = result.stdout + result.stderr
    assert result.returncode != 0, out[-3000:]
    assert "Traceback" not in out
    assert "problem(s), before any host was contacted" in out, out[-3000:]
    assert "extra vars: rlinf_firewal_enabled is not a variable of rlinf.cluster" in out, out[-3000:]
    assert "did you mean rlinf_firewall_enabled?" in out, out[-3000:]
    assert listener.accepted == 0, f"{listener.accepted} connection(s) reached the hosts' SSH port"


def test_typos_in_group_and_host_vars_are_refused_and_a_users_own_variable_passes(tmp_path, listener):
    inv = inventory(
        tmp_path / "inv",
        listener,
        {"ray_prot": 6379, "rlinf_user_vars": ["metrics_team_*"], "metrics_team_owner": "ops"},
        {},
        {"rlinf_venv_dri": "/opt/rlinf/venv"},
    )
    result = run(["validate.yml", "-e", f"cluster_plan_path={tmp_path}/plan.json"], inv)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out[-3000:]
    problems = out.split("problem(s)")[1]
    assert "hosts head, w1: ray_prot is not a variable of rlinf.cluster" in problems
    assert "did you mean ray_port?" in problems
    assert "host 'w1': rlinf_venv_dri is not a variable of rlinf.cluster" in problems
    assert "did you mean rlinf_venv_dir?" in problems
    assert "metrics_team_owner" not in problems
    assert listener.accepted == 0


def test_a_users_own_variable_listed_in_rlinf_user_vars_passes(tmp_path, listener):
    inv = inventory(tmp_path / "inv", listener, {"rlinf_user_vars": ["rlinf_team"], "rlinf_team": "vision"}, {}, {})
    result = run(["validate.yml", "-e", f"cluster_plan_path={tmp_path}/plan.json"], inv)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert listener.accepted == 0
