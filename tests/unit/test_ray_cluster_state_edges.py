"""ray_cluster_state at the edges its main tests leave out: no temp dir named, a node that is
missing, and an extra node that failed its probe with no expected node beside it."""

from __future__ import annotations

from test_ray_cluster_state import expected, healthy, probe, raw_node, run

from ansible_collections.rlinf.cluster.plugins.module_utils import ray_cluster_state as state


def test_no_temp_dir_named_matches_no_socket():
    assert state._in_temp_dir({"socket": "/tmp/ray/session_1/sockets/raylet"}, "") is False
    assert state._in_temp_dir({"socket": "/tmp/ray/session_1/sockets/raylet"}, "/tmp/ray") is True


def test_a_missing_node_is_not_reported_as_the_head():
    nodes, probes = healthy()
    result = run(expected(), nodes[:2], probes)
    missing = [n for n in result["nodes"] if n["name"] == "w2"]
    assert [(n["state"], n["is_head"]) for n in missing] == [("MISSING", False)]


def test_an_extra_node_that_failed_its_probe_alone_on_its_ip_is_not_called_a_stale_entry():
    nodes, probes = healthy()
    nodes.append(raw_node("10.0.0.99", "n9"))
    probes["n9"] = {**probe(None), "error": "the probe task did not run"}
    result = run(expected(), nodes, probes)
    texts = " ".join(str(p) for p in result["problems"])
    assert "10.0.0.99" in texts, result["problems"]
    assert "stale entry" not in texts, result["problems"]


def test_an_amount_short_by_exactly_the_tolerance_is_enough():
    # Ray reports resources as floats: an amount within EPSILON of the expected one counts as it.
    want = 2.0 + state.EPSILON
    nodes, probes = healthy({"n1": {"GPU": 2.0}})
    assert run(expected({"w1": {"GPU": want}}), nodes, probes)["ok"]
    assert run(expected(), nodes, probes, expected_totals={"GPU": want})["ok"]
    short = 2.0 + 2 * state.EPSILON
    assert not run(expected({"w1": {"GPU": short}}), nodes, probes)["ok"]
    assert not run(expected(), nodes, probes, expected_totals={"GPU": short})["ok"]
