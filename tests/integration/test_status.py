"""status.yml against the real lab: the table, the JSON report, the exit code. Read-only.

Needs a lab where site.yml brought Ray up (`make lab`). These tests never start, stop or
restart anything: the mismatches below are made in a copy of the inventory, not on hosts.
"""

from __future__ import annotations

import copy
import json
import os
import re
import sys
import time
from pathlib import Path

import ansible_runner
import pytest
import yaml

pytestmark = pytest.mark.lab

ROOT = Path(__file__).resolve().parents[2]
LAB_INVENTORY = ROOT / "inventories" / "lab" / "hosts.yml"
STATUS = ROOT / "status.yml"


def lab_inventory() -> dict:
    if not LAB_INVENTORY.exists():
        pytest.fail("the lab is not up: run `make lab` first (inventories/lab/hosts.yml is missing)")
    return yaml.safe_load(LAB_INVENTORY.read_text())


def groups_of(inventory: dict) -> dict:
    return inventory["all"]["children"]["rlinf_cluster"]["children"]


def lab_nodes(inventory: dict) -> list[tuple[str, str]]:
    """(name, address) of the lab hosts in rank order: the head, then the workers."""
    groups = groups_of(inventory)
    return [
        (name, hostvars["ansible_host"])
        for group in ("ray_head", "ray_workers")
        for name, hostvars in (groups[group].get("hosts") or {}).items()
    ]


def run_status(tmp_path: Path, inventory: Path = LAB_INVENTORY, **extravars):
    """Run status.yml like `ansible-playbook status.yml -i <inventory>` from the repo root."""
    report = tmp_path / f"report-{time.monotonic_ns()}.json"
    private_data_dir = tmp_path / f"runner-{time.monotonic_ns()}"
    private_data_dir.mkdir()
    runner = ansible_runner.run(
        private_data_dir=str(private_data_dir),
        project_dir=str(ROOT),
        playbook=str(STATUS),
        inventory=str(inventory),
        extravars={"cluster_report_path": str(report), **extravars},
        envvars={
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
            # ansible-playbook from the controller venv, however pytest was started.
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        },
        quiet=True,
    )
    stdout = runner.stdout.read()
    data = json.loads(report.read_text()) if report.exists() else None
    return runner, stdout, data


def write_inventory(tmp_path: Path, inventory: dict, name: str) -> Path:
    path = tmp_path / f"{name}.yml"
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))  # keep inventory (rank) order
    return path


def test_status_on_the_healthy_lab_prints_the_table_and_writes_the_report(tmp_path):
    nodes = lab_nodes(lab_inventory())
    runner, stdout, report = run_status(tmp_path)
    assert runner.rc == 0, stdout[-4000:]
    assert report is not None, f"no report written:\n{stdout[-4000:]}"
    # Read-only: nothing changed anywhere, the report write included.
    assert not (runner.stats or {}).get("changed"), runner.stats

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

    # The table: a header and one row per node with rank, host, IP and state.
    assert re.search(r"RANK\s+HOST\s+IP\s+STATE\s+CPUS\s+GPUS\s+CUSTOM\s+RAY\s+PYTHON", stdout)
    for rank, (name, address) in enumerate(nodes):
        assert re.search(rf"{rank}\s+{re.escape(name)}\s+{re.escape(address)}\s+ALIVE", stdout), stdout


def test_status_default_report_path_is_the_repo_artifacts_dir(tmp_path):
    """Without -e cluster_report_path the report lands in <repo>/artifacts/, from the wrapper."""
    target = ROOT / "artifacts" / "cluster-report.json"
    private_data_dir = tmp_path / "runner"
    private_data_dir.mkdir()
    started = time.time()
    runner = ansible_runner.run(
        private_data_dir=str(private_data_dir),
        project_dir=str(ROOT),
        playbook=str(STATUS),
        inventory=str(LAB_INVENTORY),
        envvars={
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        },
        quiet=True,
    )
    assert runner.rc == 0, runner.stdout.read()[-3000:]
    assert target.exists() and target.stat().st_mtime >= started - 1
    assert json.loads(target.read_text())["ok"] is True


def _swap_worker_ranks(inventory):
    workers = groups_of(inventory)["ray_workers"]["hosts"]
    first, second = list(workers)[:2]
    workers[first]["rlinf_node_rank"], workers[second]["rlinf_node_rank"] = 2, 1
    return [(first, 2, "RLINF_NODE_RANK=1"), (second, 1, "RLINF_NODE_RANK=2")]


def _drop_last_worker(inventory):
    workers = groups_of(inventory)["ray_workers"]["hosts"]
    name = list(workers)[-1]
    address = workers.pop(name)["ansible_host"]
    return [(None, None, f"Ray node {address}:"), (None, None, "is not in the inventory")]


def _ghost_worker(inventory):
    # A second Ray node declared on a worker's machine (its own port, temp dir, env file and
    # unit, as the topology requires) that nobody started: SSH goes only to real lab hosts.
    workers = groups_of(inventory)["ray_workers"]["hosts"]
    rank = len(workers) + 1
    first = next(iter(workers))
    workers[first]["rlinf_gpus_per_node"] = 0
    workers["rlinf-lab-ghost"] = {
        "ansible_host": workers[first]["ansible_host"],
        "ray_port": 6390,
        "ray_temp_dir": "/tmp/ray-ghost",
        "rlinf_env_file": "/etc/rlinf/rlinf-ghost.env",
        "ray_node_unit_name": "rlinf-ray-ghost",
        "rlinf_gpus_per_node": 0,
    }
    return [("rlinf-lab-ghost", rank, "no ALIVE Ray node of its own"), ("rlinf-lab-ghost", rank, f"'{first}'")]


def _gpus_expected(inventory):
    workers = groups_of(inventory)["ray_workers"]["hosts"]
    name = next(iter(workers))
    workers[name]["ray_num_gpus"] = 4
    workers[name]["ray_resources"] = {"robot": 1}
    return [(name, 1, "at least 4 (ray_num_gpus"), (name, 1, "custom resource 'robot'")]


@pytest.mark.parametrize(
    "mismatch", [_swap_worker_ranks, _drop_last_worker, _ghost_worker, _gpus_expected], ids=lambda f: f.__name__
)
def test_status_fails_naming_host_and_rank_when_the_inventory_does_not_match(tmp_path, mismatch):
    """The cluster stays as it is; a copy of the inventory disagrees with it."""
    inventory = copy.deepcopy(lab_inventory())
    expectations = mismatch(inventory)
    runner, stdout, report = run_status(
        tmp_path, write_inventory(tmp_path, inventory, mismatch.__name__), ray_check_timeout=5
    )
    assert runner.rc != 0, stdout[-4000:]
    assert not (runner.stats or {}).get("changed"), runner.stats
    assert report is not None and report["ok"] is False
    assert report["summary"].startswith("FAILED")
    for host, rank, text in expectations:
        matching = [p for p in report["problems"] if text in p]
        assert matching, (text, report["problems"])
        if host is not None:
            assert any(p.startswith(f"host '{host}' (rank {rank},") for p in matching), matching
        assert text in stdout
