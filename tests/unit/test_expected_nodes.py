"""The one rule for an expected node's identity (name, rank), shared by ray_cluster_check,
ray_gcs_nodes and ray_readiness through ray_cluster_state and readiness."""

from __future__ import annotations

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.rlinf.cluster.plugins.module_utils import readiness
from ansible_collections.rlinf.cluster.plugins.module_utils.expected_nodes import (
    EXPECTED_NODES,
    identities,
    shared_identity_problems,
    whole_rank,
)
from ansible_collections.rlinf.cluster.plugins.module_utils.ray_cluster_state import (
    ExpectedNodesError,
    normalize_expected,
)


@pytest.mark.parametrize(
    ("value", "rank"),
    [
        (0, 0),
        (3, 3),
        ("2", 2),
        (" 4 ", 4),
        (5.0, 5),
        (True, None),
        (False, None),
        (-1, None),
        ("-1", None),
        (1.5, None),
        (-2.0, None),
        ("x", None),
        ("", None),
        (None, None),
        ("1.0", None),
    ],
)
def test_a_rank_is_a_whole_number_from_zero(value, rank):
    assert whole_rank(value) == rank


def test_each_unusable_item_is_one_sentence_and_the_rest_are_kept():
    found, problems = identities(["w9", {"rank": 1}, {"name": "w2", "rank": -1}, {"name": "w3", "rank": "3"}])
    assert found == [({"rank": 1}, "expected_nodes[1]", 1), ({"name": "w3", "rank": "3"}, "w3", 3)]
    assert problems == [
        "expected_nodes[0]: 'w9' is not a dict with name, rank and ip.",
        "host 'w2': rank -1 is not a whole number >= 0; fix rlinf_node_rank.",
    ]


def test_names_and_ranks_are_each_a_nodes_own_but_an_ip_is_not():
    nodes = [
        {"name": "a", "rank": 0, "ip": "10.0.0.1"},
        {"name": "b", "rank": 1, "ip": "10.0.0.1"},
        {"name": "b", "rank": 2, "ip": "10.0.0.2"},
        {"name": "c", "rank": 2, "ip": "10.0.0.3"},
    ]
    assert shared_identity_problems(nodes) == [
        "hosts b, b: they share name 'b'; every Ray node needs its own name.",
        "hosts b, c: they share rank 2; every Ray node needs its own rank.",
    ]
    assert shared_identity_problems(nodes[:2]) == []


def test_shared_ranks_are_said_in_the_order_of_the_rank():
    nodes = [{"name": n, "rank": r} for n, r in [("a", 1), ("b", 1), ("c", 0), ("d", 0), ("e", 0)]]
    assert shared_identity_problems(nodes) == [
        "hosts c, d, e: they share rank 0; every Ray node needs its own rank.",
        "hosts a, b: they share rank 1; every Ray node needs its own rank.",
    ]


@pytest.mark.parametrize("rank", [-1, 1.5, "x", True])
def test_the_cluster_check_and_readiness_refuse_the_same_ranks_in_the_same_words(rank):
    item = {"name": "w1", "rank": rank, "ip": "10.0.0.2"}
    with pytest.raises(ExpectedNodesError) as checked:
        normalize_expected([item])
    with pytest.raises(readiness.ReadinessInputError) as ready:
        readiness.normalize_expected([item])
    assert (
        checked.value.problems
        == ready.value.problems
        == [f"host 'w1': rank {rank!r} is not a whole number >= 0; fix rlinf_node_rank."]
    )


def test_the_cluster_check_and_readiness_accept_the_same_ranks():
    items = [{"name": "w1", "rank": "1", "ip": "10.0.0.2"}, {"name": "h", "rank": 0.0, "ip": "10.0.0.1"}]
    assert [(n["name"], n["rank"]) for n in normalize_expected(items)] == [("h", 0), ("w1", 1)]
    assert [(n["name"], n["rank"]) for n in readiness.normalize_expected(items)] == [("h", 0), ("w1", 1)]


def test_the_modules_argument_spec_needs_the_list_and_each_nodes_name_rank_and_ip():
    validator = ArgumentSpecValidator({"expected_nodes": EXPECTED_NODES})
    assert validator.validate({}).error_messages == ["missing required arguments: expected_nodes"]
    for key in ("name", "rank", "ip"):
        item = {"name": "w1", "rank": 1, "ip": "10.0.0.2"}
        del item[key]
        found = validator.validate({"expected_nodes": [item]}).error_messages
        assert found == [f"missing required arguments: {key} found in expected_nodes"], found
    ok = validator.validate({"expected_nodes": [{"name": "w1", "rank": "1", "ip": "10.0.0.2"}]})
    assert ok.error_messages == [] and ok.validated_parameters["expected_nodes"][0]["rank"] == 1
