"""site.yml refuses bad input with a message naming what to fix, before touching hosts."""

from __future__ import annotations

import ipaddress

import pytest
from lab_helpers import lab_hosts, run_playbook, ssh, write_inventory

pytestmark = pytest.mark.lab

FIRST_PLAY_ON_NODES = "PLAY [Read every node once and resolve the plan against it"


def said(run) -> str:
    """The run's output with Ansible's line wrapping undone."""
    return " ".join(run.stdout.split())


def assert_stopped_at_validation(run):
    assert run.rc != 0
    assert FIRST_PLAY_ON_NODES not in run.stdout, "site.yml went past validation"
    assert run.changed() == {}
    assert run.stats.get("dark", {}) == {}, "validation must not connect to any node"


def test_old_ray_is_refused_before_any_host_is_touched(tmp_path):
    lab_hosts()
    run = run_playbook("site.yml", tmp_path, extravars={"rlinf_ray_version": "2.46.0"})
    assert_stopped_at_validation(run)
    assert "rlinf_ray_version='2.46.0' is older than 2.47.0" in said(run), run.stdout[-3000:]


def test_two_heads_are_refused_before_any_host_is_touched(tmp_path):
    heads = []

    def two_heads(groups):
        name, hostvars = next(iter(groups["ray_workers"]["hosts"].items()))
        groups["ray_head"]["hosts"][name] = hostvars
        del groups["ray_workers"]["hosts"][name]
        heads.extend(groups["ray_head"]["hosts"])

    run = run_playbook("site.yml", tmp_path, inventory=write_inventory(tmp_path, two_heads))
    assert_stopped_at_validation(run)
    refusal = (
        f"inventory: group 'ray_head' has 2 hosts ({', '.join(heads)}); a Ray cluster has exactly one head: "
        "keep one and move the others to 'ray_workers'."
    )
    assert refusal in said(run), run.stdout[-3000:]


def test_missing_head_is_refused(tmp_path):
    def no_head(groups):
        groups["ray_head"]["hosts"] = {}

    run = run_playbook("site.yml", tmp_path, inventory=write_inventory(tmp_path, no_head))
    assert_stopped_at_validation(run)
    refusal = "inventory: group 'ray_head' is missing or empty; put exactly one host in 'ray_head'."
    assert refusal in said(run), run.stdout[-3000:]


def test_unreachable_host_is_named_and_nothing_is_started(tmp_path, hosts):
    # .250 of the lab's own network (lab/lab.py numbers hosts from .10): nothing answers there.
    head = next(iter(hosts.values()))
    ghost = str(ipaddress.ip_network(f"{head}/24", strict=False).network_address + 250)

    def ghost_worker(groups):
        groups["ray_workers"]["hosts"]["ghost-worker"] = {"ansible_host": ghost}

    run = run_playbook(
        "site.yml",
        tmp_path,
        inventory=write_inventory(tmp_path, ghost_worker),
        extravars={"ansible_ssh_timeout": 3},
    )
    assert run.rc != 0
    assert "fatal: [ghost-worker]: UNREACHABLE!" in run.stdout, run.stdout[-3000:]
    assert "ghost-worker" in run.stats.get("dark", {})
    assert run.changed() == {}, f"hosts were changed although one node was unreachable: {run.changed()}"


def test_a_users_directory_at_the_wheelhouse_path_is_refused_and_left_as_it_was(tmp_path, hosts):
    """Never adopt (issue 25): a wheelhouse path that holds a user's files is refused at preflight,
    naming host and variable, before anything is synced into it (rsync --delete would empty it)."""
    name, address = list(hosts.items())[-1]
    theirs = "/opt/rlinf/models"
    listing = f"find {theirs} -printf '%p %m %s %T@\\n' | sort; md5sum {theirs}/*"
    ssh(address, f"mkdir -p {theirs} && echo weights > {theirs}/w.pt && echo notes > {theirs}/README")
    before = ssh(address, listing).stdout

    def wheelhouse_there(groups):
        groups["ray_workers"]["hosts"][name]["python_env_node_wheelhouse_dir"] = theirs

    try:
        run = run_playbook("site.yml", tmp_path, inventory=write_inventory(tmp_path, wheelhouse_there))
        after = ssh(address, listing).stdout
    finally:
        ssh(address, f"rm -rf {theirs}", check=False)
    assert run.rc != 0
    assert run.changed() == {}, run.changed()
    refusal = (
        f"host '{name}': python_env_node_wheelhouse_dir: {theirs} exists, is a directory with files in it, "
        "and rlinf-ansible did not create it (not in its manifest)"
    )
    assert refusal in said(run), run.stdout[-3000:]
    assert after == before
