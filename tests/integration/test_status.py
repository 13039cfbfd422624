"""status.yml against the real lab: the table, the JSON report, the exit code. Read-only.

Needs a lab where site.yml brought Ray up (`make lab`). These tests never start, stop or
restart anything: the mismatches below are made in a copy of the inventory, not on hosts.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from lab_helpers import LAB_INVENTORY, ROOT, lab_hosts, run_playbook, write_inventory

# Each test starts on the lab inventory's healthy cluster (conftest.py), whatever ran before.
pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]


def run_status(tmp_path: Path, inventory: Path = LAB_INVENTORY, **extravars):
    """status.yml (as `ansible-playbook status.yml -i <inventory>`) and the JSON report it wrote."""
    report = tmp_path / f"report-{time.monotonic_ns()}.json"
    run = run_playbook(
        "status.yml", tmp_path, inventory=inventory, extravars={"cluster_report_path": str(report), **extravars}
    )
    return run, json.loads(report.read_text()) if report.exists() else None


def test_status_on_the_healthy_lab_prints_the_table_and_writes_the_report(tmp_path):
    nodes = list(lab_hosts().items())
    run, report = run_status(tmp_path)
    stdout = run.stdout
    assert run.rc == 0, stdout[-4000:]
    assert report is not None, f"no report written:\n{stdout[-4000:]}"
    # Read-only: nothing changed anywhere, the report write included.
    assert not run.changed(), run.stats

    assert report["ok"] is True
    assert report["problems"] == [] and report["missing"] == [] and report["extra"] == []
    assert report["summary"].startswith(f"OK: {len(nodes)}/{len(nodes)} nodes ALIVE")
    assert [(n["name"], n["ip"]) for n in report["nodes"]] == nodes
    assert [n["rank"] for n in report["nodes"]] == list(range(len(nodes)))
    assert [n["state"] for n in report["nodes"]] == ["ALIVE"] * len(nodes)
    # The rank is what a Ray task pinned to each node reads, as RLinf does.
    assert [n["env"]["RLINF_NODE_RANK"] for n in report["nodes"]] == [str(r) for r in range(len(nodes))]
    assert len({n["node_id"] for n in report["nodes"]}) == len(nodes)
    assert report["nodes"][0]["is_head"] is True

    rays = {n["ray_version"] for n in report["nodes"]}
    pythons = {n["python"] for n in report["nodes"]}
    assert len(rays) == 1 and None not in rays, rays
    assert len(pythons) == 1 and None not in pythons, pythons
    assert all(n["resources"]["CPU"] >= 1 for n in report["nodes"])

    # Per-node manifest, read over SSH: same Python, Ray and venv packages everywhere.
    manifests = [n["manifest"] for n in report["nodes"]]
    assert {m["ray"] for m in manifests} == rays
    assert {m["python"] for m in manifests} == pythons
    hashes = {m["pip_freeze_sha256"] for m in manifests}
    assert len(hashes) == 1 and re.fullmatch(r"[0-9a-f]{64}", next(iter(hashes))), manifests
    # GPU facts: the lab has no NVIDIA driver, so Ray's own pynvml (loaded in the node venv) cannot
    # find libnvidia-ml: 0 GPUs, no driver, and that is an answer, not an error.
    for name, gpus in ((n["name"], n["manifest"]["gpus"]) for n in report["nodes"]):
        assert gpus["count"] == 0 and gpus["nvml_count"] == 0, (name, gpus)
        assert gpus["driver_version"] is None and gpus["cuda_driver_version"] is None and gpus["models"] == {}, gpus
        assert gpus["nvml_error"] == "NVML Shared Library Not Found" and "error" not in gpus, (name, gpus)

    # The table: a header and one row per node with rank, host, IP and state.
    assert re.search(r"RANK\s+HOST\s+IP\s+STATE\s+CPUS\s+GPUS\s+CUSTOM\s+RAY\s+PYTHON", stdout)
    for rank, (name, address) in enumerate(nodes):
        assert re.search(rf"{rank}\s+{re.escape(name)}\s+{re.escape(address)}\s+ALIVE", stdout), stdout


def test_status_default_report_path_is_the_checkouts_artifacts_dir(tmp_path):
    """Without -e cluster_report_path the report lands in artifacts/ next to the checkout's playbooks.

    Run from a checkout of its own (the wrapper and a link to playbooks/), so the report read is this
    run's: every site.yml of the other lab writes the repository's artifacts/cluster-report.json."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "playbooks").symlink_to(ROOT / "playbooks")
    (checkout / "status.yml").write_text((ROOT / "status.yml").read_text())
    target = checkout / "artifacts" / "cluster-report.json"
    run = run_playbook(str(checkout / "status.yml"), tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    report = json.loads(target.read_text())
    assert report["ok"] is True, report["problems"]
    assert [n["name"] for n in report["nodes"]] == list(lab_hosts()), report["nodes"]


def _swap_worker_ranks(groups):
    workers = groups["ray_workers"]["hosts"]
    first, second = list(workers)[:2]
    workers[first]["rlinf_node_rank"], workers[second]["rlinf_node_rank"] = 2, 1
    return [(first, 2, "RLINF_NODE_RANK=1"), (second, 1, "RLINF_NODE_RANK=2")]


def _drop_last_worker(groups):
    workers = groups["ray_workers"]["hosts"]
    name = list(workers)[-1]
    address = workers.pop(name)["ansible_host"]
    return [(None, None, f"Ray node {address}:"), (None, None, "is not in the inventory")]


def _ghost_worker(groups):
    # A second Ray node declared on a worker's machine (its own port, temp dir, env file and
    # unit, as the topology requires) that nobody started: SSH goes only to real lab hosts.
    workers = groups["ray_workers"]["hosts"]
    rank = len(workers) + 1
    first = next(iter(workers))
    workers[first]["rlinf_gpus_per_node"] = 0
    workers["rlinf-lab-ghost"] = {
        "ansible_host": workers[first]["ansible_host"],
        "ray_port": 6390,
        "ray_temp_dir": "/tmp/ray-ghost",
        "rlinf_env_file": "/etc/rlinf/rlinf-ghost.env",
        "rlinf_env_profile_script": "/etc/profile.d/rlinf-ghost.sh",
        "ray_node_unit_name": "rlinf-ray-ghost",
        "rlinf_gpus_per_node": 0,
    }
    # site.yml never brought it up: it keeps no record of a Ray address to look for.
    return [("rlinf-lab-ghost", rank, "its Ray address is unknown"), ("rlinf-lab-ghost", rank, "run site.yml")]


def _gpus_expected(groups):
    workers = groups["ray_workers"]["hosts"]
    name = next(iter(workers))
    workers[name]["ray_num_gpus"] = 4
    workers[name]["ray_resources"] = {"robot": 1}
    return [(name, 1, "at least 4 (ray_num_gpus"), (name, 1, "custom resource 'robot'")]


def _nic_expected(groups):
    # The lab's nodes run with RLINF_COMM_NET_DEVICES=eth0 (the NIC of their address); this
    # copy names another, not yet applied by site.yml.
    workers = groups["ray_workers"]["hosts"]
    name = next(iter(workers))
    workers[name]["rlinf_comm_net_device"] = "eth9"
    return [(name, 1, "read RLINF_COMM_NET_DEVICES='eth0' but the inventory expects 'eth9'")]


@pytest.mark.parametrize(
    "mismatch",
    [_swap_worker_ranks, _drop_last_worker, _ghost_worker, _gpus_expected, _nic_expected],
    ids=lambda f: f.__name__,
)
def test_status_fails_naming_host_and_rank_when_the_inventory_does_not_match(tmp_path, mismatch):
    """The cluster stays as it is; a copy of the inventory disagrees with it."""
    expectations = []
    inventory = write_inventory(tmp_path, lambda groups: expectations.extend(mismatch(groups)))
    # The check's timeout also bounds the task pinned to each node: on a loaded machine (2 cores,
    # load 18 here) a first task takes more than 5 s, and a node whose task timed out is never
    # compared, so its mismatch would go unseen.
    run, report = run_status(tmp_path, inventory, ray_check_timeout=20)
    stdout = run.stdout
    assert run.rc != 0, stdout[-4000:]
    assert not run.changed(), run.stats
    assert report is not None and report["ok"] is False
    assert report["summary"].startswith("FAILED")
    for host, rank, text in expectations:
        matching = [p for p in report["problems"] if text in p]
        assert matching, (text, report["problems"])
        if host is not None:
            assert any(p.startswith(f"host '{host}' (rank {rank},") for p in matching), matching
        assert text in stdout
