"""Pure comparison logic of ray_cluster_check, on fabricated ray.nodes() data."""

from __future__ import annotations

import pytest

from ansible_collections.rlinf.cluster.plugins.module_utils.ray_cluster_state import (
    ExpectedNodesError,
    alive_nodes,
    evaluate,
    format_amount,
    match_nodes,
    normalize_expected,
    short_python_version,
)

PY = "3.11.2 (main, Mar 13 2023, 12:18:29) [GCC 12.2.0]"
EXE = "/opt/rlinf/venv/bin/python"
ADDR = "10.0.0.10:6379"


def raw_node(ip, node_id, alive=True, port=40000, resources=None, hostname=None, head=False, temp_dir=None):
    res = {"CPU": 2.0, "memory": 1e9, "object_store_memory": 5e8, f"node:{ip}": 1.0}
    if head:
        res["node:__internal_head__"] = 1.0
    res.update(resources or {})
    return {
        "NodeID": node_id,
        "Alive": alive,
        "State": "ALIVE" if alive else "DEAD",
        "NodeManagerAddress": ip,
        "NodeManagerPort": port,
        "NodeManagerHostname": hostname or f"host-{ip}",
        "Resources": res,
        "RayletSocketName": f"{temp_dir or '/tmp/ray'}/session_2026_1/sockets/raylet",
    }


def probe(rank, ray="2.60.0", python=PY, exe=EXE, dev="eth0"):
    return {
        "env": {"RLINF_NODE_RANK": None if rank is None else str(rank), "RLINF_COMM_NET_DEVICES": dev},
        "python": python,
        "python_executable": exe,
        "ray_version": ray,
    }


def expected(resources=None, env=None):
    resources = resources or {}
    env = env or {}
    return normalize_expected(
        [
            {"name": "head", "rank": 0, "ip": "10.0.0.10", "resources": resources.get("head", {})},
            {
                "name": "w1",
                "rank": 1,
                "ip": "10.0.0.11",
                "resources": resources.get("w1", {}),
                "env": env.get("w1", {}),
            },
            {"name": "w2", "rank": 2, "ip": "10.0.0.12", "resources": resources.get("w2", {})},
        ]
    )


def healthy(extra_res=None):
    extra_res = extra_res or {}
    nodes = [
        raw_node("10.0.0.10", "n0", head=True, resources=extra_res.get("n0")),
        raw_node("10.0.0.11", "n1", resources=extra_res.get("n1")),
        raw_node("10.0.0.12", "n2", resources=extra_res.get("n2")),
    ]
    probes = {"n0": probe(0), "n1": probe(1), "n2": probe(2)}
    return nodes, probes


def run(exp, nodes, probes, **kw):
    return evaluate(exp, nodes, probes, address=ADDR, **kw)


def test_healthy_cluster_is_ok():
    nodes, probes = healthy()
    result = run(expected(), nodes, probes)
    assert result["ok"], result["problems"]
    assert result["problems"] == []
    assert [n["state"] for n in result["nodes"]] == ["ALIVE"] * 3
    assert [n["rank"] for n in result["nodes"]] == [0, 1, 2]
    assert result["nodes"][1]["env"]["RLINF_NODE_RANK"] == "1"
    assert result["nodes"][0]["python"] == "3.11.2"
    assert result["nodes"][0]["is_head"] is True
    assert "node:10.0.0.10" not in result["nodes"][0]["resources"]
    assert result["summary"].startswith("OK: 3/3 nodes ALIVE at 10.0.0.10:6379, ranks 0-2")
    assert "Ray 2.60.0" in result["summary"] and "Python 3.11.2" in result["summary"]


def test_missing_worker_is_named_with_rank_and_fix():
    nodes, probes = healthy()
    result = run(expected(), nodes[:2], probes)
    assert not result["ok"]
    assert result["missing"] == ["w2"]
    assert result["nodes"][2]["state"] == "MISSING"
    (problem,) = result["problems"]
    assert "host 'w2' (rank 2, 10.0.0.12)" in problem and "never joined" in problem
    assert "site.yml" in problem
    assert result["summary"].startswith("FAILED: 2/3 expected nodes ALIVE")


def test_dead_duplicates_are_filtered_and_dead_only_host_is_reported_dead():
    nodes, probes = healthy()
    dead_old_w1 = raw_node("10.0.0.11", "old1", alive=False)
    dead_w2 = raw_node("10.0.0.12", "old2", alive=False)
    result = run(expected(), [dead_old_w1, *nodes[:2], dead_w2], probes)
    assert result["missing"] == ["w2"]
    assert result["nodes"][1]["node_id"] == "n1"
    assert result["nodes"][2]["state"] == "DEAD"
    assert "Ray lists it as DEAD" in result["problems"][0]
    assert result["extra"] == []


def test_dead_entries_alone_do_not_count_as_extra():
    nodes, probes = healthy()
    result = run(expected(), [*nodes, raw_node("10.0.0.99", "gone", alive=False)], probes)
    assert result["ok"], result["problems"]


def test_same_ip_and_port_alive_twice_is_deduplicated():
    nodes, _ = healthy()
    assert len(alive_nodes([*nodes, dict(nodes[1], NodeID="n1-dup")])) == 3


def test_extra_alive_node_is_an_error():
    nodes, probes = healthy()
    stray = raw_node("10.0.0.99", "n9", hostname="stray")
    probes["n9"] = probe(3)
    result = run(expected(), [*nodes, stray], probes)
    assert not result["ok"]
    assert [e["ip"] for e in result["extra"]] == ["10.0.0.99"]
    assert result["extra"][0]["rank"] == "3"
    (problem,) = result["problems"]
    assert "10.0.0.99" in problem and "not in the inventory" in problem and "RLINF_NODE_RANK=3" in problem
    assert "4 ALIVE nodes for 3 expected" in problem


def test_second_raylet_on_an_expected_ip_is_extra():
    nodes, probes = healthy()
    second = raw_node("10.0.0.11", "n1b", port=40001)
    result = run(expected(), [*nodes, second], probes)
    assert [e["node_id"] for e in result["extra"]] == ["n1b"]
    assert not result["ok"]


def test_rank_mismatch_names_host_rank_and_fix():
    nodes, probes = healthy()
    probes["n2"] = probe(1)
    result = run(expected(), nodes, probes)
    (problem,) = result["problems"]
    assert problem.startswith("host 'w2' (rank 2, 10.0.0.12)")
    assert "RLINF_NODE_RANK=1" in problem and "rank 2" in problem and "restart" in problem
    assert result["nodes"][2]["problems"] == [problem]
    assert result["nodes"][1]["problems"] == []


def test_rank_not_set_in_worker_env():
    nodes, probes = healthy()
    probes["n1"] = probe(None)
    result = run(expected(), nodes, probes)
    (problem,) = result["problems"]
    assert "RLINF_NODE_RANK is not set" in problem and "host 'w1'" in problem


def test_ray_version_mismatch_is_reported_on_the_odd_node():
    nodes, probes = healthy()
    probes["n2"] = probe(2, ray="2.58.0")
    result = run(expected(), nodes, probes)
    (problem,) = result["problems"]
    assert problem.startswith("host 'w2' (rank 2")
    assert "Ray is 2.58.0 but 2.60.0 on 'head'" in problem


def test_after_a_new_pin_every_node_must_run_it_not_just_the_same_one():
    nodes, probes = healthy()
    assert run(expected(), nodes, probes, ray_version="2.60.0")["ok"]
    old = run(expected(), nodes, probes, ray_version="2.61.0")
    assert not old["ok"] and len(old["problems"]) == 3
    assert old["problems"][0].startswith("host 'head' (rank 0")
    assert "runs Ray 2.60.0 but rlinf_ray_version pins 2.61.0" in old["problems"][0]


def test_python_patch_mismatch_is_reported():
    nodes, probes = healthy()
    probes["n1"] = probe(1, python="3.11.7 (main, May  9 2026) [GCC 12.2.0]")
    result = run(expected(), nodes, probes)
    (problem,) = result["problems"]
    assert "host 'w1'" in problem and "Python is 3.11.7 but 3.11.2" in problem


def test_python_build_string_alone_does_not_matter():
    nodes, probes = healthy()
    probes["n1"] = probe(1, python="3.11.2 (other build) [GCC 13]")
    assert run(expected(), nodes, probes)["ok"]


def test_interpreter_path_mismatch_is_reported():
    nodes, probes = healthy()
    probes["n2"] = probe(2, exe="/usr/bin/python3")
    result = run(expected(), nodes, probes)
    (problem,) = result["problems"]
    assert "host 'w2'" in problem and "/usr/bin/python3" in problem and EXE in problem


def test_more_gpus_than_expected_pass_and_numbers_are_not_strings():
    nodes, probes = healthy({"n1": {"GPU": 8.0}, "n2": {"GPU": 4.0}})
    exp = expected({"w1": {"GPU": 4}, "w2": {"GPU": "4"}, "head": {"CPU": "2"}})
    result = run(exp, nodes, probes)
    assert result["ok"], result["problems"]
    assert result["totals"]["GPU"] == {"actual": 12.0, "expected": 8.0}


def test_fewer_gpus_than_expected_fail_per_node_and_total():
    nodes, probes = healthy({"n1": {"GPU": 2.0}})
    result = run(expected({"w1": {"GPU": 4}}), nodes, probes)
    assert not result["ok"]
    assert any(
        p.startswith("host 'w1' (rank 1") and "GPU=2" in p and "at least 4" in p and "ray_num_gpus" in p
        for p in result["problems"]
    )
    # The per-node sentence explains it; no second, cluster-level sentence for the same shortfall.
    assert len(result["problems"]) == 1
    assert result["totals"]["GPU"] == {"actual": 2.0, "expected": 4.0}


def test_explicit_cluster_total_is_at_least_not_equal():
    nodes, probes = healthy({"n1": {"GPU": 4.0}, "n2": {"GPU": 4.0}})
    assert run(expected(), nodes, probes, expected_totals={"GPU": 6})["ok"]
    result = run(expected(), nodes, probes, expected_totals={"GPU": "16", "CPU": 4})
    (problem,) = result["problems"]
    assert problem.startswith("cluster at 10.0.0.10:6379: Ray reports 8 GPU in total")
    assert "at least 16" in problem and "ray_check_expected_totals" in problem
    assert result["totals"]["CPU"] == {"actual": 6.0, "expected": 4.0}


def test_custom_resource_total():
    nodes, probes = healthy({"n1": {"robot": 1.0}})
    result = run(expected(), nodes, probes, expected_totals={"robot": 2})
    assert "1 robot in total" in result["problems"][0]


def test_bad_expected_totals():
    nodes, probes = healthy()
    with pytest.raises(ExpectedNodesError, match="ray_check_expected_totals"):
        run(expected(), nodes, probes, expected_totals={"GPU": "lots"})


def test_missing_gpu_resource_counts_as_zero():
    nodes, probes = healthy()
    result = run(expected({"w2": {"GPU": 1}}), nodes, probes)
    assert any("GPU=0" in p and "host 'w2'" in p for p in result["problems"])


def test_custom_resource_on_the_wrong_node():
    nodes, probes = healthy({"n2": {"robot": 1.0}})
    result = run(expected({"w1": {"robot": 1}}), nodes, probes)
    problems = result["problems"]
    assert len(problems) == 2
    assert any(
        p.startswith("host 'w1' (rank 1") and "custom resource 'robot'" in p and "found on 'w2' instead" in p
        for p in problems
    )
    assert any(p.startswith("host 'w2' (rank 2") and "robot=1" in p and "only on w1" in p for p in problems)
    assert result["nodes"][2]["custom_resources"] == {"robot": 1.0}


def test_custom_resource_on_the_right_node_passes():
    nodes, probes = healthy({"n1": {"robot": 2.0, "camera": 1.0}})
    assert run(expected({"w1": {"robot": 1, "camera": 1}}), nodes, probes)["ok"]


def test_undeclared_custom_resource_is_not_a_problem():
    nodes, probes = healthy({"n2": {"tpu_slice": 1.0}})
    assert run(expected(), nodes, probes)["ok"]


def test_failed_probe_names_the_node():
    nodes, probes = healthy()
    probes["n1"] = {"error": "the task did not finish within 60 s"}
    result = run(expected(), nodes, probes)
    (problem,) = result["problems"]
    assert "host 'w1' (rank 1" in problem and "did not finish" in problem


def test_unprobed_node_is_a_problem_only_when_probing():
    nodes, probes = healthy()
    del probes["n2"]
    assert not run(expected(), nodes, probes)["ok"]
    result = run(expected(), nodes, {}, probed=False)
    assert result["ok"], result["problems"]


def test_expected_env_values():
    nodes, probes = healthy()
    exp = expected(env={"w1": {"RLINF_COMM_NET_DEVICES": "et0"}})
    result = run(exp, nodes, probes)
    (problem,) = result["problems"]
    assert "RLINF_COMM_NET_DEVICES='eth0'" in problem and "'et0'" in problem


def test_every_problem_is_listed_not_only_the_first():
    nodes, probes = healthy({"n1": {"GPU": 1.0}})
    probes["n1"] = probe(2, ray="2.47.0")
    result = run(expected({"w1": {"GPU": 2}}), nodes[:2], probes)
    text = "\n".join(result["problems"])
    for needle in ("host 'w2'", "RLINF_NODE_RANK=2", "Ray is 2.47.0", "GPU=1"):
        assert needle in text
    assert result["summary"].endswith(f"{len(result['problems'])} problems")


def test_matching_names_the_missing_host():
    nodes, _ = healthy()
    exp = expected()
    assert match_nodes(exp, nodes)["missing"] == []
    assert [m["name"] for m in match_nodes(exp, nodes[1:])["missing"]] == ["head"]


def test_state_field_without_alive_key():
    nodes, probes = healthy()
    for node in nodes:
        del node["Alive"]
    nodes[2]["State"] = "DEAD"
    assert run(expected(), nodes, probes)["missing"] == ["w2"]


@pytest.mark.parametrize(
    ("items", "needle"),
    [
        (
            [{"name": "a", "rank": 0, "ip": "1.1.1.1"}, {"name": "b", "rank": 0, "ip": "1.1.1.2"}],
            "share rank",
        ),
        ([{"name": "a", "rank": "x", "ip": "1.1.1.1"}], "not a whole number"),
        ([{"name": "a", "rank": 0, "ip": "1.1.1.1", "resources": {"GPU": "many"}}], "ray_num_gpus"),
        ([{"name": "a", "rank": 0, "ip": "1.1.1.1", "resources": {"robot": -1}}], "ray_resources"),
    ],
)
def test_unusable_expected_nodes(items, needle):
    with pytest.raises(ExpectedNodesError) as err:
        normalize_expected(items)
    assert needle in str(err.value)


def test_expected_nodes_sorted_by_rank_and_numbers_parsed():
    exp = normalize_expected(
        [
            {"name": "b", "rank": 1, "ip": "1.1.1.2", "resources": {"GPU": "4", "CPU": None}},
            {"name": "a", "rank": 0, "ip": "1.1.1.1"},
        ]
    )
    assert [n["name"] for n in exp] == ["a", "b"]
    assert exp[1]["resources"] == {"GPU": 4.0}


def test_small_helpers():
    assert short_python_version(PY) == "3.11.2"
    assert short_python_version(None) is None
    assert format_amount(2.0) == "2"
    assert format_amount(0.5) == "0.5"
    assert format_amount("x") == "x"


def shared_machine_expected(temp_dirs=("/tmp/ray", "/tmp/ray-b")):
    return normalize_expected(
        [
            {"name": "head", "rank": 0, "ip": "10.0.0.10"},
            {"name": "a", "rank": 1, "ip": "10.0.0.11", "temp_dir": temp_dirs[0]},
            {"name": "b", "rank": 2, "ip": "10.0.0.11", "temp_dir": temp_dirs[1]},
        ]
    )


def test_two_ray_nodes_on_one_machine_are_told_apart_by_temp_dir():
    nodes = [
        raw_node("10.0.0.10", "n0", head=True),
        # Listed in the "wrong" order on purpose: the socket path decides, not the order.
        raw_node("10.0.0.11", "nb", port=40001, temp_dir="/tmp/ray-b"),
        raw_node("10.0.0.11", "na", port=40000, temp_dir="/tmp/ray"),
    ]
    probes = {"n0": probe(0), "na": probe(1), "nb": probe(2)}
    result = run(shared_machine_expected(), nodes, probes)
    assert result["ok"], result["problems"]
    assert [n["node_id"] for n in result["nodes"]] == ["n0", "na", "nb"]


def test_shared_machine_without_socket_info_falls_back_to_the_probed_rank():
    nodes = [
        raw_node("10.0.0.10", "n0", head=True),
        raw_node("10.0.0.11", "nb", port=40000),
        raw_node("10.0.0.11", "na", port=40001),
    ]
    for node in nodes:
        del node["RayletSocketName"]
    probes = {"n0": probe(0), "na": probe(1), "nb": probe(2)}
    result = run(shared_machine_expected(), nodes, probes)
    assert result["ok"], result["problems"]
    assert [n["node_id"] for n in result["nodes"]] == ["n0", "na", "nb"]


def test_shared_machine_with_one_node_down_names_the_right_host():
    nodes = [raw_node("10.0.0.10", "n0", head=True), raw_node("10.0.0.11", "nb", temp_dir="/tmp/ray-b")]
    probes = {"n0": probe(0), "nb": probe(2)}
    exp = shared_machine_expected()
    result = run(exp, nodes, probes)
    assert result["missing"] == ["a"]
    (problem,) = result["problems"]
    assert problem.startswith("host 'a' (rank 1, 10.0.0.11): no ALIVE Ray node of its own")
    assert "belongs to 'b'" in problem


def test_temp_dir_prefix_is_a_directory_match():
    nodes = [raw_node("10.0.0.10", "n0", head=True), raw_node("10.0.0.11", "n1", temp_dir="/tmp/ray2")]
    exp = normalize_expected(
        [
            {"name": "head", "rank": 0, "ip": "10.0.0.10"},
            {"name": "a", "rank": 1, "ip": "10.0.0.11", "temp_dir": "/tmp/ray"},
        ]
    )
    # /tmp/ray2 is not under /tmp/ray; the node still matches by IP as the only one there.
    result = run(exp, nodes, {"n0": probe(0), "n1": probe(1)})
    assert result["ok"], result["problems"]


def test_stale_entry_of_a_restarted_raylet_is_not_taken_for_the_host():
    nodes, probes = healthy()
    # The killed raylet's entry (lower port, sorts first) is still ALIVE and runs nothing;
    # the restarted raylet on the same IP is the host's node.
    stale = raw_node("10.0.0.11", "old1", port=39000)
    fresh = raw_node("10.0.0.11", "new1", port=41000)
    probes.update({"old1": {"error": "the task did not finish within 60 s"}, "new1": probe(1)})
    result = run(expected(), [nodes[0], stale, fresh, nodes[2]], probes)
    assert result["nodes"][1]["node_id"] == "new1"
    assert result["nodes"][1]["problems"] == []
    (problem,) = result["problems"]
    assert "still listed ALIVE" in problem and "stale entry" in problem and "'w1'" in problem
    assert [e["node_id"] for e in result["extra"]] == ["old1"]


def test_killed_raylet_alone_is_named_with_host_and_rank():
    nodes, probes = healthy()
    probes["n2"] = {"error": "the task did not finish within 60 s"}
    result = run(expected(), nodes, probes)
    (problem,) = result["problems"]
    assert problem.startswith("host 'w2' (rank 2, 10.0.0.12): a task pinned to this node failed")


def test_a_node_without_a_known_address_is_missing_and_the_others_are_checked():
    exp = normalize_expected(
        [
            {"name": "head", "rank": 0, "ip": "10.0.0.10"},
            {"name": "w1", "rank": 1, "ip": "10.0.0.11"},
            {"name": "w2", "rank": 2, "ip": ""},
        ]
    )
    nodes, probes = healthy()
    result = run(exp, nodes[:2], probes)
    assert result["missing"] == ["w2"] and not result["ok"]
    assert any("no record of it under /etc/rlinf/state" in p for p in result["problems"])
    assert [n["state"] for n in result["nodes"][:2]] == ["ALIVE", "ALIVE"]


def test_a_rank_0_without_cpus_is_named_as_the_node_rlinf_would_wait_on():
    """RLinf places its managers (1 CPU each) on rank 0; the check's own probe asks for none."""
    nodes, probes = healthy({"n0": {"CPU": 0.0}})
    result = run(expected(), nodes, probes)
    found = [p for p in result["problems"] if "RLinf would wait forever" in p]
    assert len(found) == 1 and "host 'head'" in found[0] and "CPU=0" in found[0], result["problems"]


def test_a_worker_without_cpus_is_not_a_problem_of_the_status_check():
    nodes, probes = healthy({"n2": {"CPU": 0.0}})
    assert not [p for p in run(expected(), nodes, probes)["problems"] if "CPU" in p]


def _with_python(entries, pythons):
    return [{**e, "python": pythons.get(e["name"])} for e in entries]


def test_nodes_with_venvs_of_their_own_pass_when_each_runs_its_plans_interpreter():
    # RLinf's compute + control layout: each Ray node its own venv (RLinf only warns).
    nodes, probes = healthy()
    probes["n1"] = probe(1, exe="/opt/rlinf/control-venv/bin/python")
    pythons = {"head": EXE, "w1": "/opt/rlinf/control-venv/bin/python", "w2": EXE}
    assert run(_with_python(expected(), pythons), nodes, probes)["ok"]


def test_a_node_not_running_its_plans_interpreter_is_named_with_the_fix():
    nodes, probes = healthy()
    probes["n2"] = probe(2, exe="/usr/bin/python3")
    (problem,) = run(_with_python(expected(), {"head": EXE, "w1": EXE, "w2": EXE}), nodes, probes)["problems"]
    assert problem.startswith("host 'w2' (rank 2")
    assert f"the Ray worker interpreter is /usr/bin/python3 but the plan starts Ray with {EXE}" in problem
    assert "re-run site.yml" in problem


def test_a_resource_declared_as_zero_that_ray_leaves_out_is_not_short():
    """ray_num_cpus: 0 on a worker: Ray's node map has no CPU key at all."""
    nodes, probes = healthy()
    del nodes[2]["Resources"]["CPU"]
    assert run(expected({"w2": {"CPU": 0}}), nodes, probes)["problems"] == []


# What the mutation run (tests/mutate.py) found untested: the input normalisers, value by value.
from ansible_collections.rlinf.cluster.plugins.module_utils import ray_cluster_state as S  # noqa: E402


@pytest.mark.parametrize(
    ("value", "number"),
    [
        (2, 2.0),
        (" 1.5 ", 1.5),
        ("x", None),
        (None, None),
        (True, None),
        (float("nan"), None),
        ("inf", None),
        ([1], None),
    ],
)
def test_a_resource_amount_is_a_finite_number_or_none(value, number):
    assert S._number(value) == number


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2.0, "2"),
        (0.5, "0.5"),
        (2.00001, "2.00001"),
        (1e-06, "1e-06"),
        (1.9999999, "2"),
        ("many", "many"),
        (True, "True"),
    ],
)
def test_an_amount_is_shown_whole_when_it_is_within_a_millionth(value, text):
    assert format_amount(value) == text


@pytest.mark.parametrize(
    ("version", "short"),
    [(PY, "3.11.2"), ("3.12", "3.12"), ("CPython 3.11", "CPython"), ("", None), (None, None)],
)
def test_the_python_version_is_its_number(version, short):
    assert short_python_version(version) == short


def test_an_expected_node_is_normalised_field_by_field():
    item = {
        "name": "w1",
        "rank": "1",
        "ip": " 10.0.0.2 ",
        "temp_dir": "",
        "python": None,
        "resources": {"GPU": "2", "CPU": None, "disk": ""},
        "env": {"A": 1, "B": None},
    }
    full = dict(item, name="w2", rank=2.0, temp_dir="/tmp/ray-b", python="/opt/py", resources={}, env={})
    assert normalize_expected([full, item]) == [
        {
            "name": "w1",
            "rank": 1,
            "ip": "10.0.0.2",
            "temp_dir": None,
            "python": None,
            "resources": {"GPU": 2.0},
            "env": {"A": "1"},
        },
        {
            "name": "w2",
            "rank": 2,
            "ip": "10.0.0.2",
            "temp_dir": "/tmp/ray-b",
            "python": "/opt/py",
            "resources": {},
            "env": {},
        },
    ]


def test_bad_expected_nodes_are_every_problem_named():
    with pytest.raises(ExpectedNodesError) as err:
        normalize_expected(
            [
                "w9",
                {"name": "w1", "rank": 1.5, "ip": "10.0.0.2"},
                {"name": "w2", "rank": 2, "ip": "10.0.0.3", "resources": {"GPU": -1, "CPU": 0}},
                {"name": "w3", "rank": 3, "ip": "10.0.0.4"},
                {"name": "w4", "rank": 3, "ip": "10.0.0.4"},
                {"name": "w4", "rank": 4, "ip": "10.0.0.5"},
            ]
        )
    assert err.value.problems == [
        "expected_nodes[0]: 'w9' is not a dict with name, rank and ip.",
        "host 'w1': rank 1.5 is not a whole number >= 0; fix rlinf_node_rank.",
        "host 'w2': expected resource GPU=-1 is not a non-negative number; fix ray_num_gpus or rlinf_gpus_per_node "
        "in the inventory.",
        "hosts w4, w4: they share name 'w4'; every Ray node needs its own name.",
        "hosts w3, w4: they share rank 3; every Ray node needs its own rank.",
    ]


def test_expected_totals_are_non_negative_numbers():
    assert S.normalize_totals({"GPU": "4", "CPU": 0, "x": None, "y": ""}) == {"GPU": 4.0, "CPU": 0.0}
    with pytest.raises(ExpectedNodesError) as err:
        S.normalize_totals({"GPU": -0.5, "CPU": "many"})
    assert err.value.problems == [
        "expected total GPU=-0.5 is not a non-negative number; fix ray_check_expected_totals.",
        "expected total CPU='many' is not a non-negative number; fix ray_check_expected_totals.",
    ]


def test_a_ray_nodes_record_is_read_field_by_field():
    raw = raw_node("10.0.0.2", "n1", resources={"weird": "x"}, hostname="box")
    assert S.normalize_node(raw) == {
        "node_id": "n1",
        "ip": "10.0.0.2",
        "port": 40000,
        "hostname": "box",
        "state": "ALIVE",
        "is_head": False,
        "socket": "/tmp/ray/session_2026_1/sockets/raylet",
        "resources": {"CPU": 2.0, "memory": 1e9, "object_store_memory": 5e8, "node:10.0.0.2": 1.0, "weird": "x"},
    }
    bare = S.normalize_node({"State": "DEAD", "ObjectStoreSocketName": "/tmp/ray-b/s/plasma", "NodeManagerPort": "x"})
    assert bare == {
        "node_id": "",
        "ip": "",
        "port": None,
        "hostname": "",
        "state": "DEAD",
        "is_head": False,
        "socket": "/tmp/ray-b/s/plasma",
        "resources": {},
    }
    assert S.normalize_node({"State": "alive"})["state"] == "ALIVE"


def _ids(result):
    return {name: node["node_id"] for name, node in result["matched"].items()}


def _shared(a_temp="/tmp/ray", b_temp="/tmp/ray-b"):
    return normalize_expected(
        [
            {"name": "a", "rank": 1, "ip": "10.0.0.11", "temp_dir": a_temp},
            {"name": "b", "rank": 2, "ip": "10.0.0.11", "temp_dir": b_temp},
        ]
    )


def test_without_probes_the_socket_under_its_temp_dir_tells_shared_nodes_apart():
    nodes = [raw_node("10.0.0.11", "nb", port=40000, temp_dir="/tmp/ray-b"), raw_node("10.0.0.11", "na", port=40001)]
    assert _ids(match_nodes(_shared(), nodes)) == {"a": "na", "b": "nb"}
    # a node without a temp dir takes what the others' temp dirs leave
    assert _ids(match_nodes(_shared(a_temp=None), nodes)) == {"a": "na", "b": "nb"}
    # a record without a socket path is in no temp dir
    bare = [dict(n) for n in nodes]
    for n in bare:
        del n["RayletSocketName"]
    assert _ids(match_nodes(_shared(), bare)) == {"a": "nb", "b": "na"}


def test_the_rank_a_node_reads_beats_its_temp_dir_and_an_answering_node_beats_a_silent_one():
    nodes = [raw_node("10.0.0.11", "n1", port=40000), raw_node("10.0.0.11", "n2", port=40001, temp_dir="/tmp/ray-b")]
    ranks = {"n1": {"env": {"RLINF_NODE_RANK": "2"}}, "n2": {"env": {"RLINF_NODE_RANK": "1"}}}
    assert _ids(match_nodes(_shared(), nodes, ranks)) == {"a": "n2", "b": "n1"}
    one = normalize_expected([{"name": "a", "rank": 1, "ip": "10.0.0.11", "temp_dir": "/tmp/ray"}])
    answers = {"n1": {"error": "the task did not finish within 60 s"}, "n2": {"env": {}}}
    result = match_nodes(one, nodes, answers)
    assert _ids(result) == {"a": "n2"} and [n["node_id"] for n in result["extra"]] == ["n1"]


def test_a_missing_host_ray_lists_dead_is_marked_dead():
    exp = normalize_expected(
        [{"name": "w1", "rank": 1, "ip": "10.0.0.11"}, {"name": "w2", "rank": 2, "ip": "10.0.0.12"}]
    )
    result = match_nodes(exp, [raw_node("10.0.0.11", "x", alive=False)])
    assert result["dead"] == {"w1": True}
    assert [e["name"] for e in result["missing"]] == ["w1", "w2"]


def test_alive_nodes_are_sorted_by_address_then_port():
    nodes = [raw_node("10.0.0.11", "a", port=40001), raw_node("10.0.0.11", "b", port=40000)]
    unknown_port = raw_node("10.0.0.11", "z", port=None)
    one = raw_node("10.0.0.11", "c", port=1)
    assert [n["node_id"] for n in S.alive_nodes([*nodes, one, unknown_port])] == ["z", "c", "b", "a"]


def test_a_rank_0_with_exactly_one_cpu_is_enough_and_a_declared_cpu_count_is_judged_as_declared():
    nodes, probes = healthy({"n0": {"CPU": 1.0}})
    assert run(expected(), nodes, probes)["ok"]
    nodes, probes = healthy({"n0": {"CPU": 0.0}})
    (problem,) = run(expected({"head": {"CPU": 2}}), nodes, probes)["problems"]
    assert problem.startswith("host 'head' (rank 0, 10.0.0.10): Ray reports CPU=0 on this node but the inventory")


def test_a_resource_exactly_as_expected_passes_per_node_and_in_total():
    nodes, probes = healthy({"n1": {"GPU": 4.0}, "n2": {"GPU": 4.0}})
    result = run(expected({"w1": {"GPU": 4}, "w2": {"GPU": 4}}), nodes, probes, expected_totals={"GPU": 8})
    assert result["ok"], result["problems"]
    assert [n["expected_resources"] for n in result["nodes"]] == [{}, {"GPU": 4.0}, {"GPU": 4.0}]


def test_an_explicit_total_is_reported_even_when_a_node_explains_its_shortfall():
    nodes, probes = healthy({"n1": {"GPU": 2.0}})
    result = run(expected({"w1": {"GPU": 4}}), nodes, probes, expected_totals={"GPU": 4})
    assert len(result["problems"]) == 2
    assert result["problems"][1].startswith("cluster at 10.0.0.10:6379: Ray reports 2 GPU in total")


def test_a_custom_resource_missing_everywhere_says_no_such_key():
    nodes, probes = healthy()
    (problem,) = run(expected({"w1": {"robot": 1}}), nodes, probes)["problems"]
    assert "Ray reports no 'robot'; pass --resources to ray start on 'w1'" in problem


def test_a_failed_probe_is_left_out_of_the_consistency_checks():
    nodes, probes = healthy()
    probes["n2"] = {"error": "timeout", "ray_version": "2.0.0"}
    result = run(expected(), nodes, probes)
    assert not [p for p in result["problems"] if "ray_version" in p or "Ray version" in p], result["problems"]


def test_the_summary_line_counts_and_names_what_it_found():
    nodes, probes = healthy({"n1": {"GPU": 2.0}})
    assert run(expected(), nodes, probes)["summary"] == (
        "OK: 3/3 nodes ALIVE at 10.0.0.10:6379, ranks 0-2 match the inventory, Ray 2.60.0, Python 3.11.2, "
        "6 CPUs, 2 GPUs"
    )
    result = run(expected(), nodes[:2], probes)
    assert result["summary"] == "FAILED: 2/3 expected nodes ALIVE at 10.0.0.10:6379, 1 missing, 0 extra, 1 problem"
    assert S._name_of(result["problems"][0]) == "w2"
    assert S._name_of("cluster at x: Ray reports") is None
