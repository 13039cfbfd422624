"""RLinf's own workload under our defaults (issue 24): not just ALIVE, training; and the
readiness check (status.yml -e rlinf_readiness=true) with torch and rlinf installed.

From the nodes' venv (a CPU torch and the RLinf release, installed through python_env_extra_packages
as a user would), a driver on the head runs what an RLinf job does (data/rlinf_workload.py): one RLinf
Worker per node reads weights from a home directory, passes a tensor to the next node (send/recv),
puts an item in a Channel, saves checkpoints into the checkout's logs dir and a user's data dir, and
writes a cache. Flavours, in the file's order, on one install (Ray's ports pinned by the firewall, eth0
named as the collectives' NIC): the firewall on, then on that same install the readiness checks (gloo
and RLinf's attach healthy; RLinf waiting for a node that never comes; a worker cut off from its peers),
the default unit. Then what must fail, and how: a read-only checkpoint dir (workload and readiness name the
node and the operation), a head and then a worker whose Ray has no CPU (status and readiness name them).
Last ray_node_user. At the end the venvs are put back as they were before torch (restore_venv) and
site.yml with the lab's inventory restores the lab.
"""

from __future__ import annotations

import json
import time

import pytest
from lab_helpers import (
    DATA,
    TORCH_VARS,
    fake_checkout,
    gcs_cpus,
    keep_venv,
    lab_cluster,
    restore_venv,
    run_playbook,
    run_status,
    ssh,
    write_inventory,
)
from readiness_helpers import (
    CUT_OFF_RLINF_TIMEOUT,
    DRILL_TABLE,
    TIMEOUT,
    cut_off,
    readiness_vars,
    timed_status,
)

pytestmark = pytest.mark.lab

CHECKOUT = "/srv/RLinf"
LOGS = f"{CHECKOUT}/logs"
DATA_DIR = "/srv/rlinf-data"
# ray_node_user's data dir: one the role creates for that user (an existing one is the operator's).
USER_DATA_DIR = "/srv/rlinf-data-ray"
# A weights file root put in its own home (0600), and one in a user's private home (0700): root reads
# both outside a unit. A dedicated ray_node_user reads a user's file others may read.
ROOT_WEIGHTS = "/root/models/w.pt"
PRIVATE_WEIGHTS = "/home/alice/private/w.pt"
SHARED_WEIGHTS = "/home/alice/shared/w.pt"
OPS = (
    "recv from the previous node",
    "put into the channel",
    "save a checkpoint under the checkout's logs",
    "save a checkpoint into the user's data dir",
    "write a cache",
)
WEIGHTS_SCRIPT = """
set -e
id alice >/dev/null 2>&1 || useradd --create-home --shell /bin/bash alice
install -d -m 0700 /root/models
install -d -m 0700 -o alice -g alice /home/alice/private
install -d -m 0755 -o alice -g alice /home/alice/shared
chmod 0755 /home/alice
/opt/rlinf/venv/bin/python -c 'import sys, torch; [torch.save({"w": torch.arange(4.0)}, p) for p in sys.argv[1:]]' \
  /root/models/w.pt /home/alice/private/w.pt /home/alice/shared/w.pt
chmod 0600 /root/models/w.pt /home/alice/private/w.pt
chown alice:alice /home/alice/private/w.pt /home/alice/shared/w.pt
chmod 0644 /home/alice/shared/w.pt
"""


def workload(head: str, run: str, weights: tuple[str, ...], num_nodes: int, data_dir: str = DATA_DIR) -> dict:
    """The driver, as a user runs it on the head (a login shell), and its per-node outcome."""
    script = (DATA / "rlinf_workload.py").read_text()
    argv = f"{num_nodes} {','.join(weights)} {LOGS} {data_dir} {run}"
    proc = ssh(head, f"cd /tmp && bash -lc 'python - {argv}'", stdin=script, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, f"the RLinf workload did not finish on the head: {proc.stderr[-3000:]}"
    return json.loads(lines[-1])


def failures(result: dict, names: list[str]) -> dict[str, dict[str, str]]:
    """host -> {operation: error} of every operation that failed."""
    out: dict[str, dict[str, str]] = {}
    for step in result["steps"]:
        for op, outcome in step["ops"].items():
            if not outcome["ok"]:
                out.setdefault(names[step["node_rank"]], {})[op] = outcome["error"]
    return out


def assert_trains(result: dict, hosts: dict[str, str], weights: tuple[str, ...]) -> None:
    names = list(hosts)
    assert failures(result, names) == {}, failures(result, names)
    assert sorted(s["node_rank"] for s in result["steps"]) == list(range(len(hosts)))
    for step in result["steps"]:
        assert set(step["ops"]) == {*OPS, *(f"read weights {w}" for w in weights)}, step
    assert result["channel"] == list(range(len(hosts)))


def checkpoints(hosts: dict[str, str], run: str, data_dir: str = DATA_DIR) -> dict[str, str]:
    """host -> the checkpoints of ``run`` on it (owner and path), as the node sees them."""
    return {
        name: ssh(address, f"find {LOGS}/{run} {data_dir}/{run} -name '*.pt' -printf '%u %p\\n' | sort").stdout
        for name, address in hosts.items()
    }


@pytest.fixture(scope="module")
def rlinf_lab(tmp_path_factory, hosts):
    """One site.yml: torch and rlinf from the pushed wheelhouse, the checkout synced to /srv/RLinf, a
    user data dir; the weights files put on every node. Returns a function making the inventory."""
    tmp = tmp_path_factory.mktemp("workload")
    checkout = fake_checkout(tmp / "RLinf", "workload")

    def inventory(host_mutate=lambda groups: None, **extra):
        settings = {
            **TORCH_VARS,
            "rlinf_code_sync": "rsync",
            "rlinf_src": str(checkout),
            "rlinf_code_dest": CHECKOUT,
            "ray_node_writable_paths": [DATA_DIR],
            # The collectives' NIC named, as RLinf's RLINF_COMM_NET_DEVICES (the readiness checks).
            "rlinf_comm_net_device": "eth0",
            **extra,
        }

        def mutate(groups):
            for group in ("ray_head", "ray_workers"):
                groups[group].setdefault("vars", {}).update(settings)
            host_mutate(groups)

        return write_inventory(tmp, mutate)

    # From the lab's own cluster (site.yml installs the venv compiled), whatever this lab ran before:
    # torch's install on a bare lab would leave Ray's own modules without bytecode (--no-compile).
    lab_cluster(hosts, tmp_path_factory)
    keep_venv(hosts)
    try:
        started = time.monotonic()
        run = run_playbook("site.yml", tmp, inventory=inventory(rlinf_firewall_enabled=True))
        print(f"workload: site.yml with torch, rlinf and the firewall took {time.monotonic() - started:.0f} s")
        assert run.rc == 0, run.stdout[-4000:]
        for address in hosts.values():
            ssh(address, WEIGHTS_SCRIPT)
        yield inventory
    finally:
        restore_venv(hosts)
        leftovers = f"{CHECKOUT} {DATA_DIR} {USER_DATA_DIR} /root/models /root/.cache/rlinf-workload"
        for address in hosts.values():
            ssh(address, f"rm -rf {leftovers}; userdel -r alice 2>/dev/null; true")
        restore = run_playbook("site.yml", tmp)
        assert restore.rc == 0, restore.stdout[-3000:]


def test_rlinf_trains_with_the_firewall_on(rlinf_lab, hosts):
    head = next(iter(hosts.values()))
    # Ray's ports only are open between the nodes: RLinf's send/recv and Channel go through them.
    assert "table inet rlinf" in ssh(head, "nft list tables").stdout
    weights = (ROOT_WEIGHTS, PRIVATE_WEIGHTS)
    result = workload(head, "firewall", weights, len(hosts))
    assert_trains(result, hosts, weights)
    for name, found in checkpoints(hosts, "firewall").items():
        assert found.count("root ") == 2, (name, found)


def test_ready_with_torch_and_rlinf(rlinf_lab, tmp_path, hosts):
    # A healthy run's bound: RLinf's workers (each importing torch) start slowly on a loaded machine.
    run, report, _ = timed_status(
        tmp_path, inventory=rlinf_lab(rlinf_firewall_enabled=True), **readiness_vars(readiness_rlinf_timeout=180)
    )
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


def test_rlinf_waiting_for_a_node_that_never_comes_is_ended_and_named(rlinf_lab, tmp_path, hosts):
    """num_nodes one more than the cluster has: RLinf's Cluster waits forever; the check does not."""
    hang = 20
    run, report, _ = timed_status(
        tmp_path,
        inventory=rlinf_lab(rlinf_firewall_enabled=True),
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


def test_a_worker_cut_off_from_its_peers_fails_readiness_only(rlinf_lab, tmp_path, hosts):
    names = list(hosts)
    worker = names[-1]
    peers = [hosts[n] for n in names if n != worker]
    cut_off(hosts[worker], peers)
    try:
        plain, plain_report, _ = timed_status(tmp_path, inventory=rlinf_lab(rlinf_firewall_enabled=True))
        assert plain.rc == 0 and plain_report["ok"] is True, plain.stdout[-3000:]
        assert "readiness" not in plain_report

        run, report, elapsed = timed_status(
            tmp_path,
            inventory=rlinf_lab(rlinf_firewall_enabled=True),
            **readiness_vars(readiness_rlinf_timeout=CUT_OFF_RLINF_TIMEOUT),
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


def test_rlinf_trains_under_the_default_unit(rlinf_lab, hosts, tmp_path):
    inventory = rlinf_lab
    run = run_playbook("site.yml", tmp_path, inventory=inventory())
    assert run.rc == 0, run.stdout[-3000:]
    head = next(iter(hosts.values()))
    assert "table inet rlinf" not in ssh(head, "nft list tables").stdout
    weights = (ROOT_WEIGHTS, PRIVATE_WEIGHTS)
    result = workload(head, "default", weights, len(hosts))
    assert_trains(result, hosts, weights)
    # The driver's HOME (root's) reached every worker; the cache is where root's tools put theirs.
    assert {s["home"] for s in result["steps"]} == {"/root"}
    assert {s["cache"] for s in result["steps"]} == {"/root/.cache/rlinf-workload/default"}
    # A researcher reads the checkpoints the job wrote as root (UMask=0022).
    mode = ssh(head, f"stat -c %a {DATA_DIR}/default/rank_0.pt").stdout.strip()
    assert mode == "644", mode


def test_a_read_only_checkpoint_dir_fails_naming_node_and_operation(rlinf_lab, hosts, tmp_path):
    inventory = rlinf_lab
    names = list(hosts)
    worker = names[-1]
    # Read-only for Ray on that node alone, inside its unit's mount namespace (whoever runs Ray: root's
    # capabilities do not pass a read-only mount).
    in_ray = "nsenter -t $(systemctl show -p MainPID --value rlinf-ray) -m"
    read_only = f"mount --bind {LOGS} {LOGS} && mount -o remount,bind,ro {LOGS}"
    ssh(hosts[worker], f"mkdir -p {LOGS} && {in_ray} sh -c '{read_only}'")
    try:
        result = workload(hosts[names[0]], "readonly", (ROOT_WEIGHTS,), len(hosts))
        status, report = run_status(tmp_path, inventory=inventory(), rlinf_readiness=True)
    finally:
        ssh(hosts[worker], f"{in_ray} umount {LOGS}")
    failed = failures(result, names)
    assert list(failed) == [worker], failed
    assert list(failed[worker]) == ["save a checkpoint under the checkout's logs"], failed
    assert "Read-only file system" in failed[worker]["save a checkpoint under the checkout's logs"]
    assert status.rc != 0, status.stdout[-3000:]
    problems = report["readiness"]["problems"]
    rank = names.index(worker)
    expected = f"RLinf: host '{worker}' (rank {rank}): its RLinf worker could not create the directory '{LOGS}'"
    alt = f"RLinf: host '{worker}' (rank {rank}): its RLinf worker could not write a file in it '{LOGS}'"
    assert [p for p in problems if p.startswith((expected, alt))], problems
    assert all(worker in p for p in problems), problems
    assert "Read-only file system" in " ".join(problems)


def test_nodes_without_cpus_are_named_by_readiness_and_by_status(rlinf_lab, hosts, tmp_path):
    """Every RLinf actor asks 1 CPU: a head with none (refused by the plan, started so by hand) fails status
    itself; a worker started with none (accepted without an RLinf config) fails readiness. One site.yml run
    goes from the first to the second: it puts the head's unit back as the plan renders it."""
    inventory = rlinf_lab
    names = list(hosts)
    worker = names[-1]

    # The head by hand: its unit's ExecStart gets --num-cpus=0, then Ray restarts head first.
    head = hosts[names[0]]
    unit = "/etc/systemd/system/rlinf-ray.service"
    ssh(head, f"sed -i 's| --head | --head --num-cpus=0 |' {unit} && grep -q -- '--num-cpus=0' {unit}")
    ssh(head, "systemctl daemon-reload && systemctl restart rlinf-ray")
    for address in list(hosts.values())[1:]:
        ssh(address, "systemctl restart rlinf-ray")
    # Workers restarted after the head rejoin within seconds alone, minutes on make test's loaded machine.
    deadline = time.monotonic() + 300
    while True:
        # The head's GCS alone (no driver): every node ALIVE, the head's with no CPU.
        try:
            listed = sorted(gcs_cpus(head).values())
        except AssertionError as err:
            listed = [str(err)[-500:]]
        if len(listed) == len(hosts) and [cpus for ip, cpus in listed if ip == head] == [0]:
            break
        assert time.monotonic() < deadline, f"not {len(hosts)} nodes ALIVE with a head without CPUs: {listed}"
        time.sleep(3)
    status, report = run_status(tmp_path, inventory=inventory(), rlinf_readiness=True)
    assert status.rc != 0, status.stdout[-3000:]
    found = [p for p in report["problems"] if "RLinf would wait forever" in p]
    assert len(found) == 1 and f"host '{names[0]}'" in found[0] and "CPU=0" in found[0], report["problems"]

    def worker_without_cpus(groups):
        groups["ray_workers"]["hosts"][worker]["ray_num_cpus"] = 0

    starved = inventory(host_mutate=worker_without_cpus)
    run = run_playbook("site.yml", tmp_path, inventory=starved)
    assert run.rc == 0, run.stdout[-3000:]
    # site.yml put the head's unit back as the plan renders it.
    assert "--num-cpus=0" not in ssh(head, f"cat {unit}").stdout
    status, report = run_status(tmp_path, inventory=starved, rlinf_readiness=True)
    assert status.rc != 0, status.stdout[-3000:]
    rlinf = report["readiness"]["rlinf"]
    assert rlinf["state"] == "no_cpu" and rlinf["workers"]["state"] == "no_cpu", rlinf
    (problem,) = rlinf["problems"]
    rank = names.index(worker)
    assert problem.startswith(f"RLinf: host '{worker}' (rank {rank}) offers Ray 0 CPUs, and every RLinf actor asks"), (
        problem
    )
    # The next site.yml (the next test's, or the module's restore) gives the worker its CPUs back.


def test_rlinf_trains_as_ray_node_user(rlinf_lab, hosts, tmp_path):
    inventory = rlinf_lab
    as_user = inventory(ray_node_user="ray", ray_node_writable_paths=[USER_DATA_DIR])
    run = run_playbook("site.yml", tmp_path, inventory=as_user)
    assert run.rc == 0, run.stdout[-3000:]
    head = next(iter(hosts.values()))
    weights = (SHARED_WEIGHTS,)
    result = workload(head, "user", weights, len(hosts), USER_DATA_DIR)
    assert_trains(result, hosts, weights)
    # Its caches go to Ray's own home (XDG_CACHE_HOME), even with the driver's HOME=/root copied over.
    assert {s["cache"] for s in result["steps"]} == {"/var/lib/rlinf-ray/.cache/rlinf-workload/user"}
    for name, found in checkpoints(hosts, "user", USER_DATA_DIR).items():
        assert found.count("ray ") == 2, (name, found)
    status, report = run_status(tmp_path, inventory=as_user, rlinf_readiness=True)
    assert status.rc == 0 and report["readiness"]["ok"], report["readiness"]["problems"]
    workers = report["readiness"]["rlinf"]["workers"]
    assert workers["state"] == "ran" and [len(n["writes"]) for n in workers["nodes"]] == [2] * len(hosts)
    # Last in the file: the module's restore (rlinf_lab) switches Ray back to root; test_ray_node_user.py
    # asserts that switch on its own.
