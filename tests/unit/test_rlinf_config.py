"""Unit tests for plugins/module_utils/rlinf_config.py: grammar, placement, cross-check, generation."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.rlinf.cluster.plugins.module_utils.rlinf_config import (
    PlacementError,
    RankError,
    RLinfConfigError,
    check_cluster,
    cluster_block,
    cluster_block_yaml,
    load_config_file,
    load_config_text,
    parse_placement,
    parse_rank_config,
    resolve_cluster,
)
from ansible_collections.rlinf.cluster.plugins.module_utils.topology import cluster_nodes

CORPUS = Path(__file__).parent / "corpus"
BAD = yaml.safe_load((CORPUS / "bad_configs.yml").read_text())
GOOD = yaml.safe_load((CORPUS / "good_configs.yml").read_text())["configs"]
RANKS = yaml.safe_load((CORPUS / "rank_expressions.yml").read_text())
PLACEMENTS = yaml.safe_load((CORPUS / "placements.yml").read_text())


def _expand(ranks):
    """A list as is, or "a-b" -> [a, ..., b] (keeps long process lists out of the corpus)."""
    if isinstance(ranks, str):
        start, end = (int(x) for x in ranks.split("-"))
        return list(range(start, end + 1))
    return ranks


def nodes_from(spec: str | None):
    """'name:gpus[:label+label] ...' (head first) -> topology.cluster_nodes output."""
    if spec is None:
        return None
    names, hostvars = [], {}
    for item in spec.split():
        name, gpus, *labels = item.split(":")
        names.append(name)
        hostvars[name] = {"rlinf_gpus_per_node": int(gpus)}
        if labels:
            hostvars[name]["rlinf_node_group"] = labels[0].split("+")
    return cluster_nodes({"ray_head": names[:1], "ray_workers": names[1:]}, hostvars)


def problems_for(case) -> list[str]:
    try:
        cluster = load_config_text(case["yaml"], "test.yaml") if "yaml" in case else case["cluster"]
    except RLinfConfigError as err:
        return err.problems
    return check_cluster(cluster, nodes_from(case.get("hosts")))["problems"]


@pytest.mark.parametrize("case", BAD, ids=[c["name"] for c in BAD])
def test_bad_config(case):
    problems = problems_for(case)
    expected = case["expect"] if isinstance(case["expect"], list) else [case["expect"]]
    for fragment in expected:
        assert any(fragment in p for p in problems), f"{fragment!r} not in {problems}"
    for problem in problems:
        assert problem.endswith("."), problem


@pytest.mark.parametrize("case", GOOD, ids=[c["file"].rsplit("/", 1)[-1] for c in GOOD])
def test_good_config(case):
    cluster = load_config_file(str(CORPUS / case["file"]))
    nodes = nodes_from(case["hosts"])
    report = check_cluster(cluster, nodes, case["file"])
    assert report["problems"] == []
    assert report["warnings"] == []
    # The generated block agrees with the hand-written one on num_nodes and node_groups.
    block = cluster_block(nodes)
    assert block["num_nodes"] == cluster["num_nodes"]
    generated = {g["label"]: g["node_ranks"] for g in block.get("node_groups", [])}
    for group in cluster.get("node_groups") or []:
        if str(group["label"]) in generated:
            assert generated[str(group["label"])] == str(group["node_ranks"])


@pytest.mark.parametrize("case", GOOD, ids=[c["file"].rsplit("/", 1)[-1] for c in GOOD])
def test_good_config_alone_has_no_problems(case):
    report = check_cluster(load_config_file(str(CORPUS / case["file"])))
    assert report["problems"] == []


@pytest.mark.parametrize("case", RANKS, ids=[repr(c["expr"]) for c in RANKS])
def test_rank_expressions(case):
    available = None if case["available"] is None else list(range(case["available"]))
    if case.get("error"):
        with pytest.raises(RankError):
            parse_rank_config(case["expr"], available)
    else:
        assert parse_rank_config(case["expr"], available) == case["ranks"]


@pytest.mark.parametrize("case", PLACEMENTS, ids=[repr(c["placement"]) for c in PLACEMENTS])
def test_placement_strings(case):
    if case.get("error"):
        with pytest.raises(PlacementError):
            parse_placement(case["placement"], case["resources"])
    else:
        got = [[r, p] for r, p in parse_placement(case["placement"], case["resources"])]
        assert got == [[_expand(r), _expand(p)] for r, p in case["map"]]


def test_generated_block_for_sample_layout():
    nodes = nodes_from("h:4:cloud g1:8:cloud g2:8:cloud e1:0:edge e2:0:edge")
    assert cluster_block_yaml(nodes) == (
        "cluster:\n"
        "  num_nodes: 5\n"
        "  node_groups:\n"
        "  - label: cloud\n"
        "    node_ranks: 0-2\n"
        "  - label: edge\n"
        "    node_ranks: 3-4\n"
    )


def test_generated_block_node_ranks_are_strings_and_parse_back():
    nodes = nodes_from("h:8:a w:8:b x:8:a")
    block = cluster_block(nodes)
    assert block["node_groups"] == [{"label": "a", "node_ranks": "0,2"}, {"label": "b", "node_ranks": "1"}]
    text = yaml.safe_load(cluster_block_yaml(nodes))["cluster"]
    assert all(isinstance(g["node_ranks"], str) for g in text["node_groups"])
    text["component_placement"] = {"actor": {"node_group": "a", "placement": "0-15"}}
    assert check_cluster(text, nodes)["problems"] == []


def test_no_node_groups_when_inventory_has_none():
    assert cluster_block(nodes_from("h:8 w:8")) == {"num_nodes": 2}


def test_unknown_gpu_count_is_a_warning_not_a_problem():
    nodes = cluster_nodes({"ray_head": ["h"], "ray_workers": []}, {})
    report = check_cluster({"num_nodes": 1, "component_placement": {"actor": "0-7"}}, nodes)
    assert report["problems"] == []
    assert any("set rlinf_gpus_per_node" in w for w in report["warnings"])


def test_unknown_cluster_key_is_a_warning():
    report = check_cluster({"num_nodes": 1, "node_group": [], "component_placement": {"a": "all"}})
    assert report["problems"] == []
    assert any("'node_group' (did you mean 'node_groups'?) is ignored" in w for w in report["warnings"])


def test_inventory_group_missing_from_config_is_a_warning():
    report = check_cluster({"num_nodes": 2, "component_placement": {"a": "all"}}, nodes_from("h:1 e:0:edge"))
    assert report["problems"] == []
    assert any("inventory node group 'edge' has no entry" in w for w in report["warnings"])


def test_all_problems_are_collected():
    cluster = {
        "num_nodes": 3,
        "node_groups": [{"label": "node", "node_ranks": [0]}, {"label": "x", "node_ranks": "9"}],
        "component_placement": {"actor": "0-99", "env": {"node_group": "nope", "placement": 0}},
    }
    problems = check_cluster(cluster, nodes_from("h:8 w:8"))["problems"]
    # One pass lists the problems of num_nodes and of each node group, not only the first.
    assert problems == [
        "cluster: num_nodes=3 but the inventory has 2 Ray nodes; RLinf would wait forever for the missing nodes: "
        "set num_nodes to 2 or add hosts.",
        "cluster node_groups[0] 'node': label 'node' is reserved by RLinf (cluster, node); choose another.",
        "cluster node_groups[0] 'node' node_ranks: a YAML list ([0]) is not accepted by RLinf; write a string "
        "such as '0'.",
        "cluster node_groups[1] 'x' node_ranks: node rank 9 in '9' is outside 0..2; use ranks within 0..2.",
    ]


def test_resolve_cluster_forms(tmp_path):
    whole = {"cluster": {"num_nodes": 1, "component_placement": {"a": "all"}}}
    assert resolve_cluster(whole)[0] == whole["cluster"]
    assert resolve_cluster(whole["cluster"])[0] == whole["cluster"]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(whole))
    assert resolve_cluster(str(path)) == (whole["cluster"], f"rlinf_config '{path}'")
    with pytest.raises(RLinfConfigError, match="got int"):
        resolve_cluster(3)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(RLinfConfigError, match="does not exist"):
        load_config_file(str(tmp_path / "nope.yaml"))
    with pytest.raises(RLinfConfigError, match="is a directory"):
        load_config_file(str(tmp_path))


def test_yaml_tags_are_not_executed():
    with pytest.raises(RLinfConfigError, match="not valid YAML"):
        load_config_text("cluster: !!python/object/apply:os.system ['true']\n")
