"""The ``cluster:`` block that matches an inventory (see ``topology.cluster_nodes``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import yaml

from ansible_collections.rlinf.cluster.plugins.module_utils.topology import format_ranks


def cluster_block(nodes: Sequence[Mapping]) -> dict:
    """The ``cluster:`` keys an inventory determines: num_nodes and node_groups (ranks as strings)."""
    block: dict = {"num_nodes": len(nodes)}
    found: dict[str, list[int]] = {}
    for node in sorted(nodes, key=lambda n: n["rank"]):
        for label in node.get("node_groups") or []:
            found.setdefault(label, []).append(node["rank"])
    if found:
        block["node_groups"] = [{"label": label, "node_ranks": format_ranks(r)} for label, r in found.items()]
    return block


def cluster_block_yaml(nodes: Sequence[Mapping]) -> str:
    """``cluster:`` YAML text for the inventory, ready to paste above component_placement."""
    return yaml.safe_dump({"cluster": cluster_block(nodes)}, sort_keys=False, default_flow_style=False)
