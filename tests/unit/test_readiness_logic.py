"""The pure half of ray_readiness: RLinf's interface copy, addresses, figures, blame, RLinf's map."""

from __future__ import annotations

import pytest

from ansible_collections.rlinf.cluster.plugins.module_utils import readiness as r

NODES = [
    {"name": "head", "rank": 0, "ip": "10.0.0.10", "comm_device": "eth0", "temp_dir": None},
    {"name": "w1", "rank": 1, "ip": "10.0.0.11", "comm_device": "eth0", "temp_dir": None},
    {"name": "w2", "rank": 2, "ip": "10.0.0.12", "comm_device": "eth0", "temp_dir": None},
]
IFACES = {"lo": ["127.0.0.1"], "eth0": ["10.0.0.12"], "eth1": ["192.168.5.12"]}


# --------------------------------------------------------------------------- RLinf's copy


def test_comm_devices_unset_changes_nothing():
    sock = r.socket_env({"RLINF_NODE_RANK": "1"})
    assert sock["updates"] == {} and sock["gloo_ifname"] is None and sock["warnings"] == []


def test_comm_devices_fill_gloo_on_a_cpu_node_only():
    sock = r.socket_env({r.COMM_KEY: "eth1"}, r.ccl_socket_var(0))
    assert sock["updates"] == {r.GLOO_KEY: "eth1"}
    assert sock["gloo_ifname"] == "eth1" and sock["ccl_var"] == r.GLOO_KEY


def test_comm_devices_fill_gloo_and_nccl_on_a_cuda_node():
    sock = r.socket_env({r.COMM_KEY: "eth1"}, r.ccl_socket_var(8))
    assert sock["updates"] == {r.GLOO_KEY: "eth1", r.NCCL_KEY: "eth1"}
    assert sock["ccl_ifname"] == "eth1"


def test_a_preset_interface_wins_with_rlinfs_warning():
    sock = r.socket_env({r.COMM_KEY: "eth1", r.GLOO_KEY: "eth0", r.NCCL_KEY: "eth1"}, r.NCCL_KEY)
    assert sock["updates"] == {}
    assert sock["gloo_ifname"] == "eth0"
    assert len(sock["warnings"]) == 1 and "GLOO_SOCKET_IFNAME is already set to 'eth0'" in sock["warnings"][0]


def test_a_preset_equal_interface_is_silent_and_an_empty_one_is_copied():
    assert r.socket_env({r.COMM_KEY: "eth1", r.GLOO_KEY: "eth1"})["warnings"] == []
    # RLinf tests `is not None`: an empty RLINF_COMM_NET_DEVICES is copied as it is.
    assert r.socket_env({r.COMM_KEY: ""})["updates"] == {r.GLOO_KEY: ""}


# --------------------------------------------------------------------------- addresses


def test_address_is_the_first_ipv4_of_the_first_named_interface():
    where = r.collective_address("eth1,eth0", IFACES, [])
    assert (where["interface"], where["address"], where["problem"]) == ("eth1,eth0", "192.168.5.12", None)


def test_a_missing_interface_is_named_with_those_there():
    where = r.collective_address("ib0", IFACES, ["10.0.0.12"])
    assert where["address"] is None
    assert "'ib0'" in where["problem"] and "eth0, eth1, lo" in where["problem"]
    assert "rlinf_comm_net_device" in where["problem"]


def test_an_interface_without_ipv4_is_a_problem():
    assert "no IPv4" in r.collective_address("eth2", {"eth2": []}, [])["problem"]
    assert "empty" in r.collective_address("", IFACES, [])["problem"]


def test_unset_uses_the_hostname_and_refuses_loopback():
    where = r.collective_address(None, IFACES, ["127.0.1.1", "10.0.0.12"])
    assert (where["address"], where["interface"], where["source"]) == ("10.0.0.12", "eth0", "hostname")
    where = r.collective_address(None, IFACES, ["127.0.1.1"])
    assert where["address"] is None and "loopback" in where["problem"] and "127.0.1.1" in where["problem"]


def test_plan_flags_an_env_that_differs_from_the_inventory():
    facts = {"env": {r.COMM_KEY: "eth1"}, "interfaces": IFACES, "hostname_addresses": ["10.0.0.12"]}
    plan = r.plan_node(NODES[2], facts)
    assert plan["updates"] == {r.GLOO_KEY: "eth1"} and plan["address"] == "192.168.5.12"
    assert len(plan["problems"]) == 1
    assert "host 'w2' (rank 2)" in plan["problems"][0] and "RLINF_COMM_NET_DEVICES=eth1" in plan["problems"][0]
    assert "re-run site.yml" in plan["problems"][0]
    # No comm_device given: whatever the node says is accepted.
    assert r.plan_node({**NODES[2], "comm_device": None}, facts)["problems"] == []
    # Unset in the inventory and on the node.
    unset = r.plan_node(
        {**NODES[2], "comm_device": ""}, {"env": {}, "interfaces": IFACES, "hostname_addresses": ["10.0.0.12"]}
    )
    assert unset["problems"] == [] and unset["source"] == "hostname"


# --------------------------------------------------------------------------- inputs


def test_expected_nodes_are_validated_and_sorted():
    nodes = r.normalize_expected([NODES[2], NODES[0], {"name": "w1", "rank": "1", "ip": "10.0.0.11"}])
    assert [n["name"] for n in nodes] == ["head", "w1", "w2"]
    assert nodes[1]["comm_device"] == "" and nodes[1]["rank"] == 1
    with pytest.raises(r.ReadinessInputError) as err:
        r.normalize_expected(
            [NODES[0], {**NODES[1], "rank": 0}, {"name": "x", "rank": "a", "ip": "1.2.3.4"}, {"name": "y", "rank": 3}]
        )
    text = " ".join(err.value.problems)
    assert "share rank 0" in text and "'x'" in text and "host 'y' (rank 3): no Ray address" in text
    with pytest.raises(r.ReadinessInputError):
        r.normalize_expected([])


def test_sizes_are_whole_floats_ascending():
    assert r.normalize_sizes([1048576, 1024, 1026, 1024]) == [1024, 1048576]
    assert r.normalize_sizes([]) == list(r.DEFAULT_SIZES)
    with pytest.raises(r.ReadinessInputError):
        r.normalize_sizes([2])


# --------------------------------------------------------------------------- figures


def test_size_figures_are_nccl_tests_bandwidths():
    fig = r.size_figures(16 << 20, [0.2, 0.1, 0.3], 3)
    assert fig["seconds"] == 0.2
    assert fig["algbw_gbps"] == pytest.approx((16 << 20) / 0.2 / 1e9, rel=1e-3)
    assert fig["busbw_gbps"] == pytest.approx(fig["algbw_gbps"] * 4 / 3, rel=1e-3)
    assert r.size_figures(1024, [], 3)["seconds"] is None


def sizes_result(values=(6.0, 6.0), correct=(True, True)):
    return [
        {"bytes": 1024, "seconds": [0.0004, 0.0005, 0.0003], "correct": correct[0], "value": values[0]},
        {"bytes": 1 << 20, "seconds": [0.01, 0.01, 0.02], "correct": correct[1], "value": values[1]},
    ]


def test_a_node_that_joined_and_summed_right():
    out = r.node_group_result(
        NODES[1], {"phase": "all_reduce", "sizes": sizes_result(), "join_seconds": 0.3}, 3, "gloo", 30
    )
    assert out["ok"] and out["joined"] and out["problems"] == []
    assert out["latency_s"] == 0.0004
    assert out["busbw_gbps"] == pytest.approx((1 << 20) / 0.01 / 1e9 * 4 / 3, rel=1e-3)


def test_a_wrong_sum_names_the_node_and_the_size():
    out = r.node_group_result(NODES[1], {"sizes": sizes_result((6.0, 5.0), (True, False))}, 3, "gloo", 30)
    assert not out["ok"]
    assert out["problems"] == [
        "gloo: the all-reduce of 1 MiB on host 'w1' (rank 1) returned 5.0, not 6; the collective "
        "library or the network corrupts data there."
    ]


def test_did_not_join_and_did_not_answer_are_told_apart():
    joined = r.node_group_result(NODES[2], {"phase": "join", "error": "DistStoreError: timed out"}, 3, "gloo", 30)
    assert not joined["joined"] and "did not join the group: DistStoreError" in joined["problems"][0]
    silent = r.node_group_result(NODES[2], None, 3, "nccl", 42)
    assert "nccl: host 'w2' (rank 2) did not answer within 42 s" in silent["problems"][0]
    late = r.node_group_result(NODES[2], {"phase": "all_reduce", "error": "RuntimeError: x", "sizes": []}, 3, "gloo", 9)
    assert late["joined"] and "joined but the all-reduce failed" in late["problems"][0]


def test_expected_sum():
    assert r.expected_sum(3) == 6 and r.expected_sum(1) == 1


# --------------------------------------------------------------------------- TCP


def listeners():
    return {n["name"]: {"address": n["ip"], "port": 40000 + n["rank"]} for n in NODES}


def attempt(to, ok=True, error=None):
    return {
        "to": to,
        "ok": ok,
        "connect_s": 0.001 if ok else None,
        "bytes": 4 << 20 if ok else None,
        "transfer_s": 0.01 if ok else None,
        "error": error,
    }


def test_a_worker_whose_connections_out_fail_is_blamed_alone():
    connects = {
        "head": [attempt("w1"), attempt("w2")],
        "w1": [attempt("head"), attempt("w2")],
        "w2": [attempt("head", False, "timed out after 5.0 s"), attempt("w1", False, "timed out after 5.0 s")],
    }
    pairs = r.tcp_pairs(NODES, listeners(), connects)
    assert len(pairs) == 6 and sum(p["ok"] for p in pairs) == 4
    assert r.broken_nodes(NODES, pairs) == ["w2"]
    plans = {"w2": {"interface": "eth0", "address": "10.0.0.12"}}
    problems = r.tcp_problems(NODES, pairs, plans)
    assert len(problems) == 1
    assert problems[0].startswith("TCP: host 'w2' (rank 2) cannot reach 'head' (rank 0, 10.0.0.10:40000): timed out")
    assert "'w1' (rank 1, 10.0.0.11:40001)" in problems[0] and "from eth0 (10.0.0.12)" in problems[0]
    assert r.tcp_node_figures("w2", pairs)["unreachable"] == ["head", "w1"]
    head = r.tcp_node_figures("head", pairs)
    assert head["ok"] and head["latency_s"] == 0.001 and head["gbps"] == pytest.approx(0.4194, rel=1e-3)


def test_one_broken_path_names_both_ends():
    connects = {
        "head": [attempt("w1"), attempt("w2")],
        "w1": [attempt("head"), attempt("w2", False, "refused")],
        "w2": [attempt("head"), attempt("w1")],
    }
    assert r.broken_nodes(NODES, r.tcp_pairs(NODES, listeners(), connects)) == ["w1", "w2"]


def test_a_node_without_listener_or_answer_fails_its_pairs():
    lst = listeners()
    lst["w1"] = {"address": "10.0.0.11", "error": "OSError: cannot assign requested address"}
    connects = {"head": [attempt("w2")], "w1": None, "w2": [attempt("head")]}
    pairs = r.tcp_pairs(NODES, lst, connects)
    to_w1 = [p for p in pairs if p["to"] == "w1"]
    assert all(not p["ok"] and "w1 has no listener" in p["error"] for p in to_w1)
    assert all(not p["ok"] and "actor did not answer" in p["error"] for p in pairs if p["from"] == "w1")
    assert r.broken_nodes(NODES, pairs) == ["w1"]
    assert (
        r.broken_nodes(
            NODES,
            r.tcp_pairs(NODES, listeners(), {n["name"]: [attempt(o["name"]) for o in NODES if o != n] for n in NODES}),
        )
        == []
    )


# --------------------------------------------------------------------------- RLinf's map


def attached(ips, **extra):
    return {
        "state": "attached",
        "version": "0.3.0",
        "nodes": [{"rank": i, "ip": ip} for i, ip in enumerate(ips)],
        **extra,
    }


def test_rlinfs_map_equal_to_the_inventory_passes():
    out = r.evaluate_rlinf(NODES, 3, attached(["10.0.0.10", "10.0.0.11", "10.0.0.12"]))
    assert out["ok"] and out["problems"] == [] and [row["ok"] for row in out["ranks"]] == [True] * 3


def test_swapped_ranks_are_named_with_their_owners():
    out = r.evaluate_rlinf(NODES, 3, attached(["10.0.0.10", "10.0.0.12", "10.0.0.11"]))
    assert not out["ok"]
    assert out["problems"][0].startswith(
        "RLinf: rank 1 is 10.0.0.12 (the inventory's host 'w2' (rank 2)) in RLinf's Cluster "
        "but 10.0.0.11 (host 'w1' (rank 1))"
    )
    assert "rank 2 is 10.0.0.11" in out["problems"][1]


def test_a_missing_or_extra_rank_is_named():
    short = r.evaluate_rlinf(NODES, 2, attached(["10.0.0.10", "10.0.0.11"]))
    assert len(short["problems"]) == 1 and short["problems"][0].startswith(
        "RLinf: rank 2 (host 'w2' (rank 2), 10.0.0.12) is not among"
    )
    extra = r.evaluate_rlinf(NODES[:2], 3, attached(["10.0.0.10", "10.0.0.11", "10.0.0.99"]))
    assert "rank 2 at 10.0.0.99 that the inventory does not" in extra["problems"][0]


def test_a_hang_or_failure_names_every_rank():
    hung = r.evaluate_rlinf(
        NODES, 3, {"state": "timeout", "timeout": 60, "log_tail": "Waiting for 3 nodes to be ready, currently 2"}
    )
    assert not hung["ok"] and "did not attach within 60 s, so ranks 0-2 are unconfirmed" in hung["problems"][0]
    assert "Waiting for 3 nodes" in hung["problems"][0]
    failed = r.evaluate_rlinf(
        NODES, 3, {"state": "failed", "error": "AssertionError: RLINF_NODE_RANK should be smaller"}
    )
    assert not failed["ok"] and "ranks 0-2 are unconfirmed: AssertionError" in failed["problems"][0]
    assert r.evaluate_rlinf(NODES, 3, {"state": "not_installed"})["ok"]


# --------------------------------------------------------------------------- RLinf's workers


def ran(nodes, **extra):
    return {"state": "ran", "cpus": {str(n): 2.0 for n in range(3)}, "nodes": nodes, "seconds": 3.0, **extra}


def healthy_node(rank, dirs=("/srv/RLinf/logs",)):
    return {
        "worker": {"rank": rank, "node_rank": rank, "ip": NODES[rank]["ip"]},
        "writes": [{"dir": d, "ok": True, "op": None} for d in dirs],
        "ring": {"from": (rank - 1) % 3, "bytes": 1048576, "seconds": 0.3},
    }


def test_workers_that_wrote_and_passed_the_ring_pass_and_say_so():
    rlinf = r.evaluate_rlinf(
        NODES, 3, attached([n["ip"] for n in NODES], workers=ran({str(k): healthy_node(k) for k in range(3)}))
    )
    assert rlinf["ok"] and rlinf["workers"]["problems"] == []
    assert [n["name"] for n in rlinf["workers"]["nodes"]] == ["head", "w1", "w2"]
    summary = r.summarize({"ok": True, "rlinf": rlinf, "nodes": []})
    assert "RLinf workers (1 CPU each) on 3/3 nodes passed the round trip and wrote 3 job dirs" in summary


def test_a_node_without_cpus_is_named_with_the_variable_to_fix():
    found = {"state": "no_cpu", "cpus": {"0": 0.0, "1": 2.0, "2": 2.0}, "ranks": [0]}
    rlinf = r.evaluate_rlinf(NODES, 3, {"state": "no_cpu", "workers": found})
    assert not rlinf["ok"] and rlinf["state"] == "no_cpu" and rlinf["workers"]["state"] == "no_cpu"
    (problem,) = rlinf["problems"]
    assert problem.startswith("RLinf: host 'head' (rank 0) offers Ray 0 CPUs, and every RLinf actor asks for 1")
    assert "wait forever" in problem and "ray_num_cpus: 0" in problem
    assert "RLinf not started: a node offers Ray no CPU" in r.summarize({"rlinf": rlinf, "nodes": []})


def test_a_write_that_failed_names_the_node_the_directory_and_the_operation():
    nodes = {str(k): healthy_node(k) for k in range(3)}
    nodes["2"]["writes"] = [
        {
            "dir": "/srv/ckpt",
            "ok": False,
            "op": "write a file in it",
            "error": "OSError: [Errno 30] Read-only file system",
        }
    ]
    rlinf = r.evaluate_rlinf(NODES, 3, attached([n["ip"] for n in NODES], workers=ran(nodes)))
    (problem,) = rlinf["problems"]
    assert problem.startswith("RLinf: host 'w2' (rank 2): its RLinf worker could not write a file in it '/srv/ckpt'")
    assert "Read-only file system" in problem and "ray_node_writable_paths" in problem
    assert [n["ok"] for n in rlinf["workers"]["nodes"]] == [True, True, False]


def test_a_message_that_did_not_arrive_names_both_nodes():
    nodes = {str(k): healthy_node(k) for k in range(3)}
    nodes["1"]["ring"] = None
    rlinf = r.evaluate_rlinf(NODES, 3, attached([n["ip"] for n in NODES], workers=ran(nodes)))
    (problem,) = rlinf["problems"]
    assert problem.startswith("RLinf: host 'w1' (rank 1) did not receive the message host 'head' (rank 0)'s")


def test_a_node_that_ran_no_worker_is_named():
    nodes = {str(k): healthy_node(k) for k in range(2)}
    rlinf = r.evaluate_rlinf(NODES, 3, attached([n["ip"] for n in NODES], workers=ran(nodes)))
    assert any(p.startswith("RLinf: host 'w2' (rank 2) ran no RLinf worker") for p in rlinf["problems"]), rlinf


def test_a_hang_after_the_attach_names_the_step_not_the_attach():
    found = {"state": "attached_unconfirmed", "workers": {"state": "timeout", "phase": "launch", "timeout": 30}}
    rlinf = r.evaluate_rlinf(NODES, 3, {**found, "log_tail": "Waiting for resources"})
    assert rlinf["state"] == "attached" and not rlinf["ok"]
    (problem,) = rlinf["problems"]
    assert "attached, then did not finish placing RLinf's workers (1 CPU each) on every node within 30 s" in problem


# --------------------------------------------------------------------------- report


def test_summary_and_table_of_a_healthy_gloo_check():
    node_result = r.node_group_result(NODES[0], {"sizes": sizes_result()}, 3, "gloo", 30)
    nodes = [{**n, "interface": "eth0", "address": n["ip"], "source": r.GLOO_KEY, "gloo": node_result} for n in NODES]
    rlinf = r.evaluate_rlinf(NODES, 3, attached([n["ip"] for n in NODES]))
    report = {
        "ok": True,
        "mode": "torch",
        "backends": ["gloo"],
        "groups": {"gloo": {"ok": True, "members": ["head", "w1", "w2"]}},
        "sizes": [1024, 1 << 20],
        "nodes": nodes,
        "tcp": {"ran": False, "pairs": [], "broken": []},
        "rlinf": rlinf,
    }
    summary = r.summarize(report)
    assert summary.startswith("OK: gloo all-reduce across 3/3 nodes correct (1 KiB-1 MiB, slowest ")
    assert summary.endswith("; RLinf 0.3.0 attached, ranks 0-2 at the inventory's addresses")
    table = r.render_table(report)
    assert table[0].split() == ["RANK", "HOST", "IFACE", "ADDRESS", "CHECK", "LATENCY", "BANDWIDTH", "RLINF"]
    assert table[1].split() == ["0", "head", "eth0", "10.0.0.10", "gloo:ok", "400us", "0.14GB/s", "10.0.0.10"]


def test_summary_of_a_failed_check_names_the_broken_node():
    report = {
        "ok": False,
        "mode": "torch",
        "backends": ["gloo"],
        "groups": {"gloo": {"ok": False, "members": ["head", "w1", "w2"]}},
        "nodes": [{**n, "gloo": {"joined": False}} for n in NODES],
        "tcp": {"ran": True, "pairs": [], "broken": ["w2"]},
        "rlinf": {"state": "not_installed"},
    }
    assert r.summarize(report) == (
        "FAILED: gloo failed: 0/3 nodes joined; cannot reach peers: w2; RLinf not installed in the venv (not attached)"
    )


def test_small_formatters():
    assert r.rank_ranges([2, 0, 1, 5, 7, 6]) == "0-2, 5-7"
    assert r.rank_ranges([]) == ""
    assert r.human_bytes(16 << 20) == "16 MiB" and r.human_bytes(1000) == "1000 B"
    assert r.format_seconds(0.00042) == "420 us" and r.format_seconds(0.0031) == "3.1 ms"
    assert r.format_rate(0.05) == "50.0 MB/s" and r.format_rate(None) == "-"


def test_a_hang_in_the_ring_points_at_a_firewall_between_the_nodes():
    found = {"state": "attached_unconfirmed", "workers": {"state": "timeout", "phase": "ring", "timeout": 30}}
    (problem,) = r.evaluate_rlinf(NODES, 3, found)["problems"]
    assert "did not finish passing a message from each node to the next (RLinf's send/recv) within 30 s" in problem
    assert "check a firewall between the nodes" in problem and "free CPU" not in problem
