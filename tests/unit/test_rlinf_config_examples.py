"""The validator over every cluster: block in RLinf's repository (corpus/rlinf_examples.yml).

No false warning and no false error: a file is refused exactly when RLinf's own
ClusterConfig refuses it (checked against RLinf's code in test_rlinf_config_differential.py),
and the only warnings left are the robots RLinf creates from env vars, which are true for
the config alone. The counts below are the state of RLinf main a3816b5; a change in the
corpus (regenerated with corpus/make_rlinf_examples.py) must update them deliberately.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.rlinf.cluster.plugins.module_utils.topology import cluster_nodes
from ansible_collections.rlinf.cluster.plugins.plugin_utils.rlinf_config import check_cluster, parse_rank_config

CORPUS = Path(__file__).parent / "corpus" / "rlinf_examples.yml"
EXAMPLES = yaml.safe_load(CORPUS.read_text())
# What RLinf's ClusterConfig raises on these files, as shipped (placeholders not replaced).
PLACEHOLDER_IP = re.compile(r"(robot_ip|left_robot_ip|right_robot_ip) '[A-Z_0-9]+' is not an IP address")
HARDWARE_RANK_OUTSIDE = "hardware configs[0]: node_rank 0 is not in group 'franka' (node_ranks 1-2)"
ROBOTS_FROM_ENV = re.compile(r"node rank \d+ has no (Franka|DualFranka) config, so RLinf creates its")


def test_corpus_is_every_rlinf_example():
    assert len(EXAMPLES) == 369
    assert all(isinstance(c, dict) and "num_nodes" in c for c in EXAMPLES.values())


def test_examples_alone_only_true_problems_and_warnings():
    refused, warned = {}, {}
    for path, cluster in EXAMPLES.items():
        report = check_cluster(cluster, None, path)
        if report["problems"]:
            refused[path] = report["problems"]
        if report["warnings"]:
            warned[path] = report["warnings"]
    for path, problems in refused.items():
        for problem in problems:
            assert PLACEHOLDER_IP.search(problem) or HARDWARE_RANK_OUTSIDE in problem, (path, problem)
    for path, warnings in warned.items():
        for warning in warnings:
            assert ROBOTS_FROM_ENV.search(warning), (path, warning)
    assert len(refused) == 28
    assert len(warned) == 5
    # The one refusal that is not a placeholder: RLinf's config.py asserts a hardware config's
    # node_rank lies in its group, and this example puts it outside.
    assert any(
        HARDWARE_RANK_OUTSIDE in p
        for p in refused["examples/embodiment/config/realworld_dual_franka_dagger_openpi.yaml"]
    )


def _inventory_for(cluster):
    """An inventory that fits: num_nodes hosts, each config label as a node group, GPUs unknown."""
    n = cluster["num_nodes"]
    names = [f"n{i}" for i in range(n)]
    hostvars = {name: {"rlinf_node_group": []} for name in names}
    for group in cluster.get("node_groups") or []:
        for rank in parse_rank_config(group["node_ranks"], list(range(n))):
            hostvars[names[rank]]["rlinf_node_group"].append(str(group["label"]))
    return cluster_nodes({"ray_head": names[:1], "ray_workers": names[1:]}, hostvars)


@pytest.mark.parametrize("path", [p for p in EXAMPLES if "node_groups" in EXAMPLES[p]])
def test_examples_with_node_groups_fit_a_matching_inventory(path):
    cluster = EXAMPLES[path]
    report = check_cluster(cluster, _inventory_for(cluster), path)
    alone = check_cluster(cluster, None, path)
    assert set(alone["problems"]) <= set(report["problems"])
    # With the inventory, a robot node whose rlinf_env_vars has no robot IP has no robot for RLinf.
    for problem in set(report["problems"]) - set(alone["problems"]):
        assert re.search(r"there are no (Franka|DualFranka) resources", problem), problem
    for warning in report["warnings"]:
        assert "is unknown" in warning or "has no" in warning, warning
