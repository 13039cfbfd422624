"""Two Ray nodes on one machine (issue 15): a second host entry on the last lab host, with its
own unit, env file, shell snippet and temp dir, joins as the next rank and lists the machine's venv
(which the first installed) in its manifest; status shows both ranks. Purging the first node, the
venv's installer, keeps the venv and the token the second one runs with, and the second node still
starts Ray workers from that venv; site.yml puts the first back. Tearing down the second node leaves
the first running; purging it removes its own files and none of the first node's (the venv and the
token, which both list, stay until the last of them is purged)."""

from __future__ import annotations

import json

import pytest
from lab_helpers import (
    VENV,
    lab_hosts,
    purge_node,
    run_playbook,
    run_status,
    ssh,
    wait_for_alive,
    write_inventory,
)

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

# Ray nodes share a machine only without GPUs (RLinf would count all of them on each), and
# each needs its own ports, paths and unit: validation refuses the pair otherwise.
SECOND = {
    "rlinf_gpus_per_node": 0,
    "ray_port": 6390,
    "ray_node_unit_name": "rlinf-ray-b",
    "rlinf_env_file": "/etc/rlinf/rlinf-b.env",
    "rlinf_env_profile_script": "/etc/profile.d/rlinf-b.sh",
    "ray_temp_dir": "/tmp/ray-b",
}


def units_active(address: str) -> dict[str, str]:
    out = ssh(address, "systemctl is-active rlinf-ray rlinf-ray-b", check=False).stdout.split()
    return dict(zip(("rlinf-ray", "rlinf-ray-b"), out, strict=True))


def manifest_paths(address: str, unit: str) -> list[str]:
    """The paths a Ray node's manifest lists."""
    found = ssh(address, f"cat /etc/rlinf/state/{unit}.manifest.json").stdout
    return [entry["path"] for entry in json.loads(found)["entries"]]


def purge(tmp_path, inventory, host: str) -> tuple[set[str], str]:
    """teardown.yml -e teardown_purge=true on one Ray node: the paths it kept because another Ray node of the
    machine lists them, and its output on one line."""
    said = " ".join(purge_node(tmp_path, inventory, host).stdout.split())
    kept = said.split(f"{host}: kept ", 1)[-1].split(": another Ray node of this machine lists them too")[0]
    return set(kept.split(", ")), said


def test_two_ray_nodes_on_one_machine(tmp_path):
    hosts = lab_hosts()
    names = list(hosts)
    shared_name, shared = names[-1], hosts[names[-1]]
    second = f"{shared_name}-b"

    def add_second(groups):
        groups["ray_workers"]["hosts"][shared_name]["rlinf_gpus_per_node"] = 0
        groups["ray_workers"]["hosts"][second] = {"ansible_host": shared, **SECOND}

    inventory = write_inventory(tmp_path, add_second)
    token_digest = "sha256sum /etc/rlinf/ray-auth-token"
    try:
        run = run_playbook("site.yml", tmp_path, inventory=inventory)
        assert run.rc == 0, run.stdout[-3000:]
        # Ray's table holds both nodes at the machine's one address: status tells them apart by rank.
        assert units_active(shared) == {"rlinf-ray": "active", "rlinf-ray-b": "active"}
        token_before = ssh(shared, token_digest).stdout
        env_b = ssh(shared, "cat /etc/rlinf/rlinf-b.env").stdout
        assert f"RLINF_NODE_RANK={len(hosts)}" in env_b.replace("'", ""), env_b

        # The second node runs from the venv the first installed, and lists it as the first does.
        assert VENV in manifest_paths(shared, "rlinf-ray-b"), manifest_paths(shared, "rlinf-ray-b")

        status, report = run_status(tmp_path, inventory=inventory)
        assert status.rc == 0 and report["ok"], report["problems"]
        assert [(n["name"], n["rank"], n["state"]) for n in report["nodes"]] == [
            *((name, rank, "ALIVE") for rank, name in enumerate(names)),
            (second, len(hosts), "ALIVE"),
        ]

        # Purge the venv's installer first: the second node keeps the venv and the token, and its raylet
        # still starts a Ray worker from that venv (an actor pinned to each node of the machines' addresses).
        kept, said = purge(tmp_path, inventory, shared_name)
        assert kept == {VENV, "/etc/rlinf/ray-auth-token"}, said[-3000:]
        assert units_active(shared) == {"rlinf-ray": "inactive", "rlinf-ray-b": "active"}
        assert ssh(shared, f"test -x {VENV}/bin/ray && ls /etc/rlinf/rlinf.env", check=False).stdout == ""
        wait_for_alive(hosts[names[0]], len(hosts))
        back = run_playbook("site.yml", tmp_path, inventory=inventory)
        assert back.rc == 0, back.stdout[-3000:]
        assert units_active(shared) == {"rlinf-ray": "active", "rlinf-ray-b": "active"}
        assert VENV in manifest_paths(shared, "rlinf-ray"), manifest_paths(shared, "rlinf-ray")

        # Tear down the second node alone: the machine's first Ray node keeps running.
        down = run_playbook("teardown.yml", tmp_path, inventory=inventory, limit=second)
        assert down.rc == 0, down.stdout[-3000:]
        assert units_active(shared) == {"rlinf-ray": "active", "rlinf-ray-b": "inactive"}
        # The lab's own cluster is whole, and the second node is not in Ray's table any more.
        status, report = run_status(tmp_path)
        assert status.rc == 0 and report["ok"], report["problems"]
        assert report["extra"] == [], report["extra"]
    finally:
        kept, said = purge(tmp_path, inventory, second)
    assert kept == {VENV, "/etc/rlinf/ray-auth-token"}, said[-3000:]
    assert ssh(shared, token_digest).stdout == token_before
    left = ssh(
        shared,
        "ls -d /etc/rlinf/rlinf-b.env /etc/profile.d/rlinf-b.sh /etc/systemd/system/rlinf-ray-b.service",
        check=False,
    )
    assert left.stdout == "", f"purge left the second node's files: {left.stdout}"
    kept = ssh(shared, "ls /etc/rlinf/rlinf.env /etc/systemd/system/rlinf-ray.service /opt/rlinf/venv/bin/ray")
    assert kept.returncode == 0
    assert units_active(shared)["rlinf-ray"] == "active"
