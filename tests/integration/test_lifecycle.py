"""site.yml, a no-op re-run, an env change, teardown, rebuild and purge on the real lab.

Independent of each other and of file order: a test that needs a running cluster asks for the
cluster fixture (checked, repaired only when broken); site.yml and rebuild.yml start from
whatever the lab is.
"""

from __future__ import annotations

import base64
import io
import re
import zipfile

import pytest
from firewall_helpers import TABLE, THEIR_RULES, THEIR_TABLE, assert_firewall_gone, with_firewall
from lab_helpers import (
    fake_checkout,
    probe_cluster,
    ray_processes,
    run_playbook,
    ssh,
    wait_for_alive,
    write_inventory,
)

pytestmark = pytest.mark.lab

INSTALLED = (
    "/opt/rlinf/venv /etc/rlinf/rlinf.env /etc/rlinf/ray-auth-token /etc/systemd/system/rlinf-ray.service"
    " /opt/rlinf/code-sync-checkouts"
)
# A checkout rlinf_code_sync=rsync copies for the purge test.
SYNCED = "/srv/rlinf-purge-checkout"


@pytest.fixture(scope="module")
def head(hosts):
    return next(iter(hosts.values()))


@pytest.fixture
def synced_checkout(hosts):
    yield SYNCED
    for address in hosts.values():
        ssh(address, f"rm -rf {SYNCED}", check=False)


def assert_ranks_follow_inventory(nodes, hosts):
    ranks = {ip: node["env"].get("RLINF_NODE_RANK") for ip, node in nodes.items()}
    assert ranks == {ip: str(rank) for rank, ip in enumerate(hosts.values())}


def test_site_brings_up_every_node_with_its_inventory_rank(tmp_path, hosts, head):
    run = run_playbook("site.yml", tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    nodes = wait_for_alive(head, len(hosts))
    assert_ranks_follow_inventory(nodes, hosts)
    # The run ends with the check's table: one row per host with its rank, address and state.
    for rank, (name, address) in enumerate(hosts.items()):
        row = rf"\b{rank}\s+{re.escape(name)}\s+{re.escape(address)}\s+ALIVE\b"
        assert re.search(row, run.stdout), run.stdout[-3000:]
    summary = f"OK: {len(hosts)}/{len(hosts)} nodes ALIVE at {head}:6379, ranks 0-{len(hosts) - 1} match the inventory"
    assert summary in " ".join(run.stdout.split()), run.stdout[-3000:]


def test_second_run_changes_nothing_and_restarts_nothing(tmp_path, cluster, hosts, head):
    before = {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()}
    run = run_playbook("site.yml", tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    assert run.changed() == {}, f"a re-run on a healthy cluster changed: {run.changed()}"
    after = {ip: n["node_id"] for ip, n in probe_cluster(head).items()}
    assert after == before


def test_env_change_restarts_ray_and_reaches_the_workers(tmp_path, cluster, hosts, head):
    run = run_playbook("site.yml", tmp_path, extravars={"rlinf_env_vars": {"RLINF_LOG_LEVEL": "DEBUG"}})
    assert run.rc == 0, run.stdout[-3000:]
    nodes = wait_for_alive(head, len(hosts))
    assert {n["env"].get("RLINF_LOG_LEVEL") for n in nodes.values()} == {"DEBUG"}
    assert_ranks_follow_inventory(nodes, hosts)

    run = run_playbook("site.yml", tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    nodes = wait_for_alive(head, len(hosts))
    assert all("RLINF_LOG_LEVEL" not in n["env"] for n in nodes.values())


def test_teardown_stops_ray_everywhere_and_keeps_files(tmp_path, cluster, hosts):
    run = run_playbook("teardown.yml", tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    for name, address in hosts.items():
        assert ray_processes(address) == [], f"Ray still runs on {name}"
        kept = ssh(address, "test -x /opt/rlinf/venv/bin/ray && test -f /etc/rlinf/rlinf.env", check=False)
        assert kept.returncode == 0, f"plain teardown removed files on {name}"


def test_rebuild_restores_the_cluster(tmp_path, hosts, head):
    run = run_playbook("rebuild.yml", tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    assert_ranks_follow_inventory(wait_for_alive(head, len(hosts)), hosts)


def user_wheel() -> str:
    """A wheel of a package of the user's (base64), as RLinf's install steps pip-install into the venv."""
    files = {
        "userpkg/__init__.py": "VERSION = '1.0'\n",
        "userpkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: userpkg\nVersion: 1.0\n",
        "userpkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files["userpkg-1.0.dist-info/RECORD"] = "".join(f"{name},,\n" for name in [*files, "userpkg-1.0.dist-info/RECORD"])
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
    return base64.b64encode(buffer.getvalue()).decode()


def test_purge_removes_what_we_installed_and_keeps_user_data(tmp_path, cluster, hosts, head, synced_checkout):
    """With the firewall on, and an operator's own nft table beside ours: purge removes ours, keeps theirs."""
    inventory = write_inventory(tmp_path, with_firewall([]))
    run = run_playbook("site.yml", tmp_path, inventory=inventory)
    assert run.rc == 0, run.stdout[-3000:]
    assert ssh(head, TABLE, check=False).returncode == 0
    # nft is there now (the role installed it): the operator adds a table of their own.
    ssh(head, "nft -f -", stdin=THEIR_RULES)
    try:
        theirs = ssh(head, f"nft list table {THEIR_TABLE}").stdout
        after_purge = purge_and_deploy_again(tmp_path, inventory, hosts, head, synced_checkout)
        assert after_purge == theirs, "purge changed the operator's table"
        kept = ssh(head, f"nft list table {THEIR_TABLE}", check=False).stdout
    finally:
        ssh(head, f"nft delete table {THEIR_TABLE}", check=False)
    assert kept == theirs, "purge, or site.yml with the firewall off again, changed the operator's table"
    assert_firewall_gone(hosts)


def purge_and_deploy_again(tmp_path, inventory, hosts, head, synced_checkout) -> str:
    """The purge (refused, then confirmed) and site.yml on top of it; the operator's table as purge left it."""
    worker = list(hosts.values())[1]
    ssh(worker, "mkdir -p /opt/rlinf/checkpoints && echo step-100 > /opt/rlinf/checkpoints/ckpt.txt")
    # A package the user pip-installed into our venv: not user data (issue 25), the venv goes whole.
    wheel = "/tmp/userpkg-1.0-py3-none-any.whl"
    ssh(
        worker,
        f"base64 -d > {wheel} && /opt/rlinf/venv/bin/pip install -q --no-index --no-deps {wheel}",
        stdin=user_wheel(),
    )
    assert ssh(worker, "/opt/rlinf/venv/bin/python -c 'import userpkg'", check=False).returncode == 0
    # The synced checkout: code_sync created it on every node but the last, where the
    # operator's own clone was already there (with a log), so that one is not the project's.
    own = list(hosts.values())[-1]
    ssh(own, f"mkdir -p {synced_checkout}/logs && echo mine > {synced_checkout}/logs/own.log")
    src = fake_checkout(tmp_path / "RLinf", "purge")
    extra = {"rlinf_code_sync": "rsync", "rlinf_src": str(src), "rlinf_code_dest": synced_checkout}
    sync = run_playbook("tests/integration/data/code_sync.yml", tmp_path, inventory=inventory, extravars=extra)
    assert sync.rc == 0, sync.stdout[-3000:]
    created = [address for address in hosts.values() if address != own]
    for address in created:
        # Training writes logs into the checkout: user data that purge must keep.
        ssh(address, f"mkdir -p {synced_checkout}/logs && echo step-100 > {synced_checkout}/logs/train.log")
    # ansible-runner answers the typed confirmation (a pty, as for a person) with "no".
    refused = run_playbook(
        "teardown.yml",
        tmp_path,
        inventory=inventory,
        extravars={"teardown_purge": True},
        events=True,
        passwords={r"Type 'yes' to go on": "no"},
    )
    assert refused.rc != 0, "purge went on without a typed 'yes'"
    assert "Purge not confirmed" in refused.stdout
    assert ssh(worker, "test -x /opt/rlinf/venv/bin/ray", check=False).returncode == 0

    run = run_playbook(
        "teardown.yml", tmp_path, inventory=inventory, extravars={"teardown_purge": True, "teardown_confirm": "yes"}
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert_firewall_gone(hosts)
    after_purge = ssh(head, f"nft list table {THEIR_TABLE}", check=False).stdout
    for name, address in hosts.items():
        assert ray_processes(address) == [], f"Ray still runs on {name}"
        gone = ssh(address, f"ls {INSTALLED}", check=False)
        assert gone.returncode != 0 and gone.stdout == "", f"purge left files on {name}: {gone.stdout}"
    assert ssh(worker, "cat /opt/rlinf/checkpoints/ckpt.txt").stdout.strip() == "step-100"
    said = " ".join(run.stdout.split())
    assert "removed the venv /opt/rlinf/venv whole, with what was installed into it after site.yml: " in said
    assert "userpkg" in said and "userpkg-1.0.dist-info" in said
    ssh(worker, "rm -rf /opt/rlinf/checkpoints")
    synced_files = ["logs/own.log", "marker_driver.py", "pyproject.toml", "rlinf/__init__.py"]
    for address in hosts.values():
        left = ssh(address, f"cd {synced_checkout} && find . -type f | sort").stdout.split()
        # The synced checkout is gone where code_sync created it; the logs stay.
        expected = ["./logs/train.log"] if address in created else [f"./{f}" for f in synced_files]
        assert left == expected, (address, left)

    # Deploy again on top of the purge (ceph-ansible's purge test).
    run = run_playbook("site.yml", tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    assert_ranks_follow_inventory(wait_for_alive(head, len(hosts)), hosts)
    return after_purge
