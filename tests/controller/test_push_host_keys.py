"""The pushes (wheelhouse, code) check host keys exactly when Ansible's ssh does for that host:
the plan resolves host_key_checking as Ansible does (host variables, then the environment, then
ansible.cfg) into each node's ``ssh_verify_host``, which synchronize is given (it skips the
check by default). Nothing is contacted (loopback listeners count connections)."""

from __future__ import annotations

import pytest
import yaml
from test_refused_before_contact import Listeners, run, write_inventory

PLAYBOOK = """
- name: Plan and show each node's host-key decision
  hosts: all
  gather_facts: false
  tasks:
    - name: Plan
      ansible.builtin.import_role:
        name: rlinf.cluster.validate_inventory
      vars:
        validate_inventory_show: false
    - name: Show
      ansible.builtin.debug:
        msg: "VERIFY {{ inventory_hostname }}={{ rlinf_plan.nodes[inventory_hostname].ssh_verify_host }}"
"""


@pytest.fixture(scope="module")
def listener():
    server = Listeners()
    yield server
    server.close()


def decisions(tmp_path, listener, monkeypatch, env_value=None):
    inventory = write_inventory(tmp_path / "inv", [], listener, overlay=False)
    hosts = inventory / "hosts.yml"
    data = yaml.safe_load(hosts.read_text())
    data["all"]["children"]["rlinf_cluster"]["children"]["ray_workers"]["hosts"]["w-good"][
        "ansible_ssh_host_key_checking"
    ] = False
    hosts.write_text(yaml.safe_dump(data))
    playbook = tmp_path / "verify.yml"
    playbook.write_text(PLAYBOOK)
    if env_value is None:
        monkeypatch.delenv("ANSIBLE_HOST_KEY_CHECKING", raising=False)
    else:
        monkeypatch.setenv("ANSIBLE_HOST_KEY_CHECKING", env_value)
    result = run([str(playbook)], inventory)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    found = {}
    for line in result.stdout.splitlines():
        if "VERIFY " in line:
            host, value = line.split("VERIFY ", 1)[1].strip().strip('"').split("=")
            found[host] = value
    return found


def test_the_push_checks_host_keys_as_ansible_does_for_each_host(tmp_path, listener, monkeypatch):
    # ansible.cfg says True; the one host that turns it off in its variables gets no check.
    assert decisions(tmp_path, listener, monkeypatch) == {"head": "True", "w-good": "False"}
    assert listener.accepted == 0


def test_the_environment_overrides_ansible_cfg_and_a_host_variable_the_environment(tmp_path, listener, monkeypatch):
    assert decisions(tmp_path, listener, monkeypatch, env_value="False") == {"head": "False", "w-good": "False"}
    assert decisions(tmp_path, listener, monkeypatch, env_value="True") == {"head": "True", "w-good": "False"}
    assert listener.accepted == 0
