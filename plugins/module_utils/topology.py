"""Cluster topology from the inventory: the head, the workers and each node's RLinf rank.

One source of truth for validation, templates and checks. Ranks come from the whole
inventory (the ``groups`` magic variable, never the hosts of the current play), so
``--limit`` and hosts appended to ``ray_workers`` never renumber existing nodes.
Plain Python, no Ansible imports: the filter plugins and the unit tests call it directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

HEAD_GROUP = "ray_head"
WORKER_GROUP = "ray_workers"
RANK_VAR = "rlinf_node_rank"


class TopologyError(ValueError):
    """Raised with every problem found, not only the first."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def _explicit_rank(name: str, hostvars: Mapping[str, Mapping], problems: list[str]):
    value = hostvars.get(name, {}).get(RANK_VAR)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = int(str(value).strip())
        except ValueError:
            problems.append(
                f"host '{name}': {RANK_VAR}={value!r} is not an integer; "
                "set it to a whole number or remove it to use inventory order."
            )
            return None
    return value


def topology_problems(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Mapping]) -> list[str]:
    """Every problem with the head/worker groups and ranks; an empty list means usable."""
    try:
        cluster_nodes(groups, hostvars)
    except TopologyError as err:
        return err.problems
    return []


def cluster_nodes(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Mapping]) -> list[dict]:
    """Return the Ray nodes in rank order as dicts: name, rank, role, address.

    Head is rank 0, then ``ray_workers`` in inventory order. An explicit
    ``rlinf_node_rank`` host var overrides the position and must keep ranks unique and
    continuous with the head at 0. Raises TopologyError listing every problem.
    """
    problems: list[str] = []
    heads = list(dict.fromkeys(groups.get(HEAD_GROUP) or []))
    workers = list(dict.fromkeys(groups.get(WORKER_GROUP) or []))

    if not heads:
        problems.append(
            f"inventory: group '{HEAD_GROUP}' is missing or empty; "
            f"put exactly one host in '{HEAD_GROUP}'."
        )
    elif len(heads) > 1:
        problems.append(
            f"inventory: group '{HEAD_GROUP}' has {len(heads)} hosts ({', '.join(heads)}); "
            "a Ray cluster has exactly one head: keep one and move the others to "
            f"'{WORKER_GROUP}'."
        )
    for name in workers:
        if name in heads:
            problems.append(
                f"host '{name}': it is in both '{HEAD_GROUP}' and '{WORKER_GROUP}'; "
                f"remove it from '{WORKER_GROUP}'."
            )
    workers = [w for w in workers if w not in heads]

    ordered = heads[:1] + workers
    nodes = []
    for position, name in enumerate(ordered):
        explicit = _explicit_rank(name, hostvars, problems)
        rank = position if explicit is None else explicit
        nodes.append(
            {
                "name": name,
                "rank": rank,
                "role": "head" if position == 0 else "worker",
                "address": str(hostvars.get(name, {}).get("ansible_host", name)),
            }
        )

    if nodes and nodes[0]["rank"] != 0:
        problems.append(
            f"host '{nodes[0]['name']}': the head must have {RANK_VAR}=0 "
            f"(RLinf pins its manager actors to rank 0), not {nodes[0]['rank']}."
        )
    by_rank: dict[int, list[str]] = {}
    for node in nodes:
        by_rank.setdefault(node["rank"], []).append(node["name"])
    for rank, names in sorted(by_rank.items()):
        if len(names) > 1:
            problems.append(
                f"hosts {', '.join(names)}: they share {RANK_VAR}={rank}; "
                "every node needs its own rank."
            )
    expected = set(range(len(nodes)))
    for node in nodes:
        if node["rank"] not in expected:
            problems.append(
                f"host '{node['name']}': {RANK_VAR}={node['rank']} is outside 0..{len(nodes) - 1}; "
                f"ranks must be continuous from 0 for the {len(nodes)} nodes in the inventory."
            )

    if problems:
        raise TopologyError(problems)
    return sorted(nodes, key=lambda n: n["rank"])
