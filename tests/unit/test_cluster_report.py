"""The report and the table status prints, from one check result and the nodes' manifests."""

from __future__ import annotations

from ansible_collections.rlinf.cluster.plugins.module_utils.cluster_report import build, parse_manifest, table

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
    manifests = {"w1": {"rc": 0, "stdout": '{"python": "3.11.2", "ray": "2.60.0"}'}}
    report = build(CHECK, EXPECTED, manifests, "head", "10.0.0.1:6379", "2026-12-01T00:00:00Z")
    assert report["ok"] is False and report["missing"] == ["w1"]
    assert [(n["name"], n["state"]) for n in report["nodes"]] == [("head", "ALIVE"), ("w1", "UNKNOWN")]
    assert report["nodes"][1]["manifest"] == {"python": "3.11.2", "ray": "2.60.0"}
    assert report["nodes"][0]["manifest"] == {}


def test_a_check_that_did_not_run_says_so():
    report = build({"msg": "cannot import ray"}, EXPECTED, {}, "head", "10.0.0.1:6379", "t")
    assert report["summary"] == "FAILED: the check did not run: cannot import ray"
    assert report["problems"] == ["cannot import ray"] and not report["ok"]


def test_a_manifest_that_failed_keeps_its_error():
    assert parse_manifest({"rc": 1, "stderr": "No such file", "stdout": ""}) == {"error": "No such file"}
    assert parse_manifest(None) == {}


def test_the_table_has_a_row_per_node_extra_nodes_then_the_verdict():
    lines = table(build(CHECK, EXPECTED, {}, "head", "10.0.0.1:6379", "t"))
    assert lines[0].split() == ["RANK", "HOST", "IP", "STATE", "CPUS", "GPUS", "CUSTOM", "RAY", "PYTHON"]
    assert lines[1].split() == ["0", "head", "10.0.0.1", "ALIVE", "2", "0", "franka=1", "2.60.0", "3.11.2"]
    assert lines[2].split() == ["1", "w1", "10.0.0.2", "UNKNOWN", "0", "0", "-", "-", "-"]
    assert lines[3].split()[:3] == ["5", "(not", "in"]
    assert lines[-2:] == ["FAILED: 1/2 expected nodes ALIVE", "- host 'w1' (rank 1): no ALIVE Ray node with this IP"]


def test_a_passing_check_has_no_problems():
    ok = {"summary": "OK: 2/2 nodes ALIVE", "problems": [], "nodes": []}
    report = build(ok, EXPECTED, {}, "head", "10.0.0.1:6379", "t")
    assert report["ok"] and report["problems"] == []
