"""The expected-node shape the plan hands to the modules that talk to the cluster
(ray_cluster_check, ray_readiness): one argument spec, one doc fragment
(rlinf.cluster.expected_nodes). Each module reads the keys it needs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

EXPECTED_NODE_OPTIONS = {
    "name": {"type": "str", "required": True},
    "rank": {"type": "int", "required": True},
    "ip": {"type": "str", "required": True},
    "temp_dir": {"type": "str"},
    "python": {"type": "str"},
    "comm_device": {"type": "str"},
    "resources": {"type": "dict", "default": {}},
    "env": {"type": "dict", "default": {}},
    "write_dirs": {"type": "list", "elements": "str", "default": []},
}

EXPECTED_NODES = {"type": "list", "elements": "dict", "required": True, "options": EXPECTED_NODE_OPTIONS}


def whole_rank(value) -> int | None:
    """A rank as the plan writes it (a whole number >= 0, or its text); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return int(value) if value.is_integer() and value >= 0 else None
    try:
        rank = int(str(value).strip())
    except ValueError:
        return None
    return rank if rank >= 0 else None


def identities(expected: Sequence) -> tuple[list[tuple[Mapping, str, int]], list[str]]:
    """(item, name, rank) of every usable expected node, and a sentence for each one that is not."""
    found: list[tuple[Mapping, str, int]] = []
    problems: list[str] = []
    for index, item in enumerate(expected or []):
        if not isinstance(item, Mapping):
            problems.append(f"expected_nodes[{index}]: {item!r} is not a dict with name, rank and ip.")
            continue
        name = str(item.get("name") or f"expected_nodes[{index}]")
        rank = whole_rank(item.get("rank"))
        if rank is None:
            problems.append(
                f"host '{name}': rank {item.get('rank')!r} is not a whole number >= 0; fix rlinf_node_rank."
            )
            continue
        found.append((item, name, rank))
    return found, problems


def shared_identity_problems(nodes: Sequence[Mapping]) -> list[str]:
    """Names and ranks are each a node's own; one IP may hold several Ray nodes (a shared machine)."""
    problems: list[str] = []
    for field in ("name", "rank"):
        for value, count in sorted(Counter(node[field] for node in nodes).items(), key=lambda kv: str(kv[0])):
            if count > 1:
                owners = ", ".join(node["name"] for node in nodes if node[field] == value)
                problems.append(f"hosts {owners}: they share {field} {value!r}; every Ray node needs its own {field}.")
    return problems
