"""status.yml -e rlinf_readiness=true on the real lab: ready to train, not just ALIVE.

Order matters and is the file's: the TCP fallback runs first on the lab's own venv (no
torch), then one site.yml installs a CPU torch and rlinf (from the pushed wheelhouse),
pins Ray's ports (rlinf_firewall_enabled) and names eth0 as the collective NIC; the
healthy check and the cut-off drill share that one install. At the end torch and rlinf
leave the venvs and site.yml with the lab's inventory restores the lab (firewall off).
"""

from __future__ import annotations

import json
import time

import pytest
from lab_helpers import LAB_INVENTORY, TORCH_VARS, remove_torch, run_playbook, ssh, write_inventory

from ansible_collections.rlinf.cluster.plugins.module_utils.firewall import (
    DEFAULT_CLIENT_PORT,
    DEFAULT_WORKER_RANGE,
    HEAD_FIXED_PORTS,
    HEAD_PORTS,
    NODE_PORTS,
)

pytestmark = pytest.mark.lab

VENV = "/opt/rlinf/venv"
# The role's default: starting the actors (torch imported) alone took up to 17 s on this loaded machine.
TIMEOUT = 60
RLINF_TIMEOUT = 60
# The cut-off drill must get past the start of RLinf's workers (each imports torch) to reach its
# send/recv: 60 s ran out during the start on a loaded two-core machine (make test's two labs).
CUT_OFF_RLINF_TIMEOUT = 120
DRILL_TABLE = "rlinf_readiness_drill"
SSH_PORT = 22


def run_status(tmp_path, inventory=LAB_INVENTORY, **extravars):
    report = tmp_path / f"report-{time.monotonic_ns()}.json"
    started = time.monotonic()
    run = run_playbook(
        "status.yml", tmp_path, inventory=inventory, extravars={"cluster_report_path": str(report), **extravars}
    )
    elapsed = time.monotonic() - started
    return run, (json.loads(report.read_text()) if report.exists() else None), elapsed


def readiness_vars(**extra):
    return {"rlinf_readiness": True, "readiness_timeout": TIMEOUT, "readiness_rlinf_timeout": RLINF_TIMEOUT, **extra}


def venv_imports(address: str, module: str) -> bool:
    return ssh(address, f"{VENV}/bin/python -c 'import {module}'", check=False).returncode == 0


def with_torch(groups):
    for group in ("ray_head", "ray_workers"):
        groups[group].setdefault("vars", {}).update(
            TORCH_VARS,
            rlinf_firewall_enabled=True,
            rlinf_comm_net_device="eth0",
        )


def ray_ports() -> str:
    """Every port Ray listens on once rlinf_firewall_enabled pinned them, as an nft set."""
    single = sorted({*NODE_PORTS.values(), *HEAD_PORTS.values(), *HEAD_FIXED_PORTS.values(), DEFAULT_CLIENT_PORT})
    return ", ".join([str(SSH_PORT), *map(str, single), f"{DEFAULT_WORKER_RANGE[0]}-{DEFAULT_WORKER_RANGE[1]}"])


def cut_off(address: str, peers: list[str]) -> None:
    """Inside that host: its new TCP connections to its peers are dropped on every port but SSH and Ray's."""
    rules = (
        f"table inet {DRILL_TABLE} {{\n"
        "  chain output {\n"
        "    type filter hook output priority 0; policy accept;\n"
        "    ct state established,related accept\n"
        f"    ip daddr {{ {', '.join(peers)} }} tcp dport {{ {ray_ports()} }} accept\n"
        f"    ip daddr {{ {', '.join(peers)} }} ct state new drop\n"
        "  }\n"
        "}\n"
    )
    ssh(address, "nft -f -", stdin=rules)


def test_tcp_fallback_without_torch(tmp_path, hosts):
    remove_torch({name: a for name, a in hosts.items() if venv_imports(a, "torch") or venv_imports(a, "rlinf")})
    run, report, _ = run_status(tmp_path, **readiness_vars())
    assert run.rc == 0, run.stdout[-4000:]
    assert not run.changed(), run.stats
    ready = report["readiness"]
    assert report["ok"] is True and ready["ok"] is True, ready["problems"]
    assert ready["mode"] == "tcp" and ready["torch"] is None and ready["backends"] == []
    assert "torch is not installed in the venv" in ready["tcp"]["reason"]
    assert ready["summary"].startswith(f"OK: torch not installed, all-pairs TCP {len(hosts) * (len(hosts) - 1)}/")
    # Every node listened on its collective address and every other one connected there.
    names = list(hosts)
    pairs = {(p["from"], p["to"]): p for p in ready["tcp"]["pairs"]}
    assert set(pairs) == {(a, b) for a in names for b in names if a != b}
    for (_, dst), pair in pairs.items():
        assert pair["ok"] and pair["address"] == hosts[dst] and pair["port"] > 0, pair
        assert pair["connect_s"] > 0 and pair["gbps"] > 0, pair
    for node in ready["nodes"]:
        # RLINF_COMM_NET_DEVICES is always written (the default route's NIC here), so the address
        # is the one RLinf's GLOO_SOCKET_IFNAME names, not the hostname's.
        assert (node["interface"], node["address"], node["source"]) == (
            "eth0",
            hosts[node["name"]],
            "GLOO_SOCKET_IFNAME",
        ), node
        assert node["tcp"]["ok"] and sorted(node["tcp"]["reached"]) == sorted(set(names) - {node["name"]})
    assert ready["rlinf"]["state"] == "not_installed"


@pytest.fixture(scope="module")
def torch_lab(tmp_path_factory, hosts):
    """One site.yml: CPU torch + rlinf from the pushed wheelhouse, Ray's ports pinned, eth0 named."""
    tmp = tmp_path_factory.mktemp("readiness")
    inventory = write_inventory(tmp, with_torch)
    started = time.monotonic()
    run = run_playbook("site.yml", tmp, inventory=inventory)
    print(f"readiness: site.yml with torch and rlinf took {time.monotonic() - started:.0f} s")
    assert run.rc == 0, run.stdout[-4000:]
    try:
        yield inventory
    finally:
        remove_torch(hosts)
        restore = run_playbook("site.yml", tmp)
        assert restore.rc == 0, restore.stdout[-3000:]
        assert all(not venv_imports(a, "torch") for a in hosts.values())


def test_ready_with_torch_and_rlinf(torch_lab, tmp_path, hosts):
    # A healthy run's bound: RLinf's workers (each importing torch) start slowly on a loaded machine.
    run, report, _ = run_status(tmp_path, inventory=torch_lab, **readiness_vars(readiness_rlinf_timeout=180))
    assert run.rc == 0, run.stdout[-4000:]
    assert not run.changed(), run.stats
    ready = report["readiness"]
    assert report["ok"] is True and ready["ok"] is True, ready["problems"]
    assert ready["mode"] == "torch" and ready["backends"] == ["gloo"]
    assert ready["torch"] == "2.13.0+cpu"
    assert ready["groups"]["gloo"]["ok"] and ready["groups"]["gloo"]["members"] == list(hosts), ready["problems"]
    assert ready["groups"]["gloo"]["master"] == next(iter(hosts.values()))
    for node in ready["nodes"]:
        # RLinf's copy: RLINF_COMM_NET_DEVICES=eth0 from the env file, GLOO_SOCKET_IFNAME unset there.
        assert node["env"]["RLINF_COMM_NET_DEVICES"] == "eth0" and node["env"]["GLOO_SOCKET_IFNAME"] is None
        assert (node["interface"], node["address"], node["source"]) == (
            "eth0",
            hosts[node["name"]],
            "GLOO_SOCKET_IFNAME",
        )
        gloo = node["gloo"]
        assert gloo["joined"] and gloo["ok"], gloo
        assert [s["bytes"] for s in gloo["sizes"]] == ready["sizes"] == [1024, 1048576, 16777216]
        assert all(s["correct"] and s["seconds"] > 0 and s["runs"] == 5 for s in gloo["sizes"]), gloo
        assert gloo["latency_s"] > 0 and gloo["busbw_gbps"] > 0
    assert ready["tcp"]["ran"] is False
    rlinf = ready["rlinf"]
    assert rlinf["state"] == "attached" and rlinf["version"] == "0.3.0" and rlinf["ok"], rlinf
    assert [(r["rank"], r["ip"]) for r in rlinf["ranks"]] == list(enumerate(hosts.values()))
    # The table: one gloo row per node with RLinf's address of that rank.
    for rank, (name, address) in enumerate(hosts.items()):
        row = next(line for line in run.stdout.splitlines() if f" {name} " in line and "gloo:ok" in line).split()
        assert row[row.index(name) - 1] == str(rank) and row[-1] == address, row


def test_rlinf_waiting_for_a_node_that_never_comes_is_ended_and_named(torch_lab, tmp_path, hosts):
    """num_nodes one more than the cluster has: RLinf's Cluster waits forever; the check does not."""
    hang = 20
    run, report, _ = run_status(
        tmp_path,
        inventory=torch_lab,
        **readiness_vars(readiness_num_nodes=len(hosts) + 1, readiness_rlinf_timeout=hang),
    )
    assert run.rc != 0, run.stdout[-4000:]
    ready = report["readiness"]
    assert "gloo" in ready["groups"] and ready["groups"]["gloo"]["ok"] is True, ready["problems"]
    rlinf = ready["rlinf"]
    assert rlinf["state"] == "timeout" and not rlinf["ok"], rlinf
    assert hang <= rlinf["wall_s"] < hang + 10, rlinf
    (problem,) = rlinf["problems"]
    assert f"did not attach within {hang} s, so ranks 0-{len(hosts) - 1} are unconfirmed" in problem, problem
    assert f"Waiting for {len(hosts) + 1} nodes" in problem, problem
    assert ready["problems"] == rlinf["problems"]


def test_a_worker_cut_off_from_its_peers_fails_readiness_only(torch_lab, tmp_path, hosts):
    names = list(hosts)
    worker = names[-1]
    peers = [hosts[n] for n in names if n != worker]
    cut_off(hosts[worker], peers)
    try:
        plain, plain_report, _ = run_status(tmp_path, inventory=torch_lab)
        assert plain.rc == 0 and plain_report["ok"] is True, plain.stdout[-3000:]
        assert "readiness" not in plain_report

        run, report, elapsed = run_status(
            tmp_path, inventory=torch_lab, **readiness_vars(readiness_rlinf_timeout=CUT_OFF_RLINF_TIMEOUT)
        )
    finally:
        ssh(hosts[worker], f"nft delete table inet {DRILL_TABLE}")
    assert run.rc != 0, run.stdout[-4000:]
    ready = report["readiness"]
    assert report["ok"] is False and ready["ok"] is False
    # Bounded: the collectives within their timeout, RLinf's attach within its own.
    assert ready["elapsed_s"] < TIMEOUT + CUT_OFF_RLINF_TIMEOUT, ready["elapsed_s"]
    assert elapsed < TIMEOUT + CUT_OFF_RLINF_TIMEOUT + 90, elapsed
    assert "gloo" in ready["groups"] and ready["groups"]["gloo"]["ok"] is False, ready["problems"]
    # The TCP check names the worker and what it cannot reach, over which interface.
    assert ready["tcp"]["ran"] and ready["tcp"]["broken"] == [worker], ready["tcp"]
    failed = [(p["from"], p["to"]) for p in ready["tcp"]["pairs"] if not p["ok"]]
    assert sorted(failed) == sorted((worker, n) for n in names if n != worker)
    cut = next(p for p in ready["problems"] if p.startswith(f"TCP: host '{worker}'"))
    assert all(f"'{n}'" in cut for n in names if n != worker) and f"from eth0 ({hosts[worker]})" in cut, cut
    assert f"cannot reach peers: {worker}" in ready["summary"]
    assert "eth0" in run.stdout and f"cannot reach peers: {worker}" in run.stdout
    # Ray's own ports were left open: RLinf's scheduler still attached with the right map, but its
    # workers' send/recv (ports of RLinf's own, like the collectives') did not get through.
    rlinf = ready["rlinf"]
    assert rlinf["state"] == "attached" and not rlinf["ok"], rlinf
    assert rlinf["workers"]["state"] == "timeout", rlinf["workers"]
    (problem,) = rlinf["workers"]["problems"]
    assert "did not finish passing a message from each node to the next (RLinf's send/recv)" in problem, problem
    assert "a firewall between the nodes" in problem, problem
