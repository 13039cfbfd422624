"""The report and the table status prints, from one check result and the nodes' manifests."""

from __future__ import annotations

from ansible_collections.rlinf.cluster.plugins.module_utils.cluster_report import (
    build,
    gpu_readings,
    parse_manifest,
    table,
)

HEADER = ["CUSTOM", "RAY", "PYTHON", "TEMP_FREE", "VENV_FREE"]
EXPECTED = [{"name": "head", "rank": 0, "ip": "10.0.0.1"}, {"name": "w1", "rank": 1, "ip": "10.0.0.2"}]
CHECK = {
    "summary": "FAILED: 1/2 expected nodes ALIVE",
    "problems": ["host 'w1' (rank 1): no ALIVE Ray node with this IP"],
    "missing": ["w1"],
    "nodes": [
        {
            "name": "head",
            "rank": 0,
            "ip": "10.0.0.1",
            "state": "ALIVE",
            "resources": {"CPU": 2.0},
            "ray_version": "2.60.0",
            "python": "3.11.2",
            "custom_resources": {"franka": 1},
        },
    ],
    "extra": [{"rank": "5", "ip": "10.0.0.9", "state": "ALIVE", "resources": {"CPU": 1}}],
}


def test_every_expected_node_is_in_the_report_with_its_manifest():
    manifests = {"w1": {"versions": {"python": "3.11.2", "ray": "2.60.0"}}}
    report = build(CHECK, EXPECTED, manifests, "head", "10.0.0.1:6379", "2026-12-01T00:00:00Z")
    assert report["ok"] is False and report["missing"] == ["w1"]
    assert [(n["name"], n["state"]) for n in report["nodes"]] == [("head", "ALIVE"), ("w1", "UNKNOWN")]
    assert report["nodes"][1]["manifest"] == {"python": "3.11.2", "ray": "2.60.0"}
    assert report["nodes"][0]["manifest"] == {}


def test_a_check_that_did_not_run_says_so():
    report = build({"msg": "cannot import ray"}, EXPECTED, {}, "head", "10.0.0.1:6379", "t")
    assert report["summary"] == "FAILED: the check did not run: cannot import ray"
    assert report["problems"] == ["cannot import ray"] and not report["ok"]


def test_a_manifest_is_the_node_reads_versions_and_keeps_an_error():
    assert parse_manifest({"versions": {"error": "FileNotFoundError: venv"}}) == {"error": "FileNotFoundError: venv"}
    assert parse_manifest({"versions": {"ray": "2.60.0"}, "gpus": {}}) == {"ray": "2.60.0"}
    assert parse_manifest({"versions": {}}) == {} and parse_manifest({"unit": {}}) == {} and parse_manifest(None) == {}


def test_the_table_has_a_row_per_node_extra_nodes_then_the_verdict():
    lines = table(build(CHECK, EXPECTED, {}, "head", "10.0.0.1:6379", "t"))
    assert lines[0].split() == ["RANK", "HOST", "IP", "STATE", "CPUS", "GPUS", *HEADER]
    assert lines[1].split() == ["0", "head", "10.0.0.1", "ALIVE", "2", "0", "franka=1", "2.60.0", "3.11.2", "?", "?"]
    assert lines[2].split() == ["1", "w1", "10.0.0.2", "UNKNOWN", "0", "0", "-", "-", "-", "?", "?"]
    assert lines[3].split()[:3] == ["5", "(not", "in"]
    assert lines[-2:] == ["FAILED: 1/2 expected nodes ALIVE", "- host 'w1' (rank 1): no ALIVE Ray node with this IP"]


def test_a_passing_check_has_no_problems():
    ok = {"summary": "OK: 2/2 nodes ALIVE", "problems": [], "nodes": []}
    report = build(ok, EXPECTED, {}, "head", "10.0.0.1:6379", "t")
    assert report["ok"] and report["problems"] == []


A100_FACTS = {
    "count": 8,
    "nvml_count": 8,
    "driver_version": "535.129.03",
    "cuda_driver_version": "12.2",
    "models": {"NVIDIA A100-SXM4-80GB": 8},
    "uuids": [],
    "source": "nvml",
}
NO_GPUS = {"count": 0, "nvml_count": 0, "driver_version": None, "cuda_driver_version": None, "models": {}}
OK_CHECK = {
    "summary": "OK: 2/2 nodes ALIVE at 10.0.0.1:6379",
    "problems": [],
    "nodes": [
        {"name": "head", "rank": 0, "ip": "10.0.0.1", "state": "ALIVE", "resources": {"CPU": 2.0}},
        {"name": "w1", "rank": 1, "ip": "10.0.0.2", "state": "ALIVE", "resources": {"CPU": 8.0, "GPU": 2.0}},
    ],
}


def gpu_plan(name, **kw):
    return {"name": name, "machine": name, "node_groups": [], "cuda_visible_devices": None, "gpu_isolated": False,
            "ray_num_gpus": None, "rlinf_gpus": None, "accelerator_type": "NV_GPU", **kw}  # fmt: skip


def test_gpu_facts_go_into_each_manifest_and_without_gpus_the_table_is_unchanged():
    gpus = {"head": {"gpus": NO_GPUS}, "w1": {"gpus": NO_GPUS}}
    ok = dict(OK_CHECK, nodes=[dict(n, resources={"CPU": 2.0}) for n in OK_CHECK["nodes"]])
    report = build(ok, EXPECTED, {}, "head", "a", "t", gpus=gpus, gpu_nodes=[gpu_plan("head"), gpu_plan("w1")])
    assert report["ok"] and report["problems"] == []
    assert [n["manifest"]["gpus"]["count"] for n in report["nodes"]] == [0, 0]
    assert table(report)[0].split() == ["RANK", "HOST", "IP", "STATE", "CPUS", "GPUS", *HEADER]


def test_a_gpu_problem_fails_a_passing_check_and_names_the_node():
    gpus = {"head": {"gpus": NO_GPUS}, "w1": {"gpus": A100_FACTS}}
    plans = [gpu_plan("head"), gpu_plan("w1", cuda_visible_devices=["0", "1"])]
    report = build(OK_CHECK, EXPECTED, {}, "head", "a", "t", gpus=gpus, gpu_nodes=plans)
    assert report["ok"] is False
    assert report["summary"] == "FAILED: 2/2 nodes ALIVE at 10.0.0.1:6379; but 1 GPU problem"
    [problem] = report["problems"]
    assert problem.startswith("host 'w1' (rank 1): Ray advertises 2 GPU(s) but NVML sees 8")
    assert report["nodes"][1]["problems"] == [problem] and not report["nodes"][0].get("problems")
    lines = table(report)
    assert lines[0].split()[-1] == "NVIDIA"
    assert lines[2].endswith("8x A100-SXM4-80GB 535.129.03 CUDA 12.2") and lines[1].split()[-1] == "-"
    assert lines[-1] == f"- {problem}"


def test_without_the_plans_gpu_nodes_no_gpu_rule_applies():
    report = build(OK_CHECK, EXPECTED, {}, "head", "a", "t", gpus={"w1": {"gpus": A100_FACTS}})
    assert report["ok"] and report["nodes"][1]["manifest"]["gpus"] == A100_FACTS


def test_a_node_whose_gpus_the_node_read_found_keeps_them_and_gpu_facts_wins_where_it_ran():
    probes = {"h": {"gpus": {"count": 8}}, "w1": {"gpus": {"count": 4}}, "w2": {}}
    registered = {"w1": {"gpus": {"count": 2}, "changed": False}}
    readings = gpu_readings(probes, registered)
    assert readings == {"h": {"gpus": {"count": 8}}, "w1": {"gpus": {"count": 2}, "changed": False}}
