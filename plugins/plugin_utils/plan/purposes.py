# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""What the plan adds for one purpose: remove-node's cluster without the removed worker (who keeps
its rank, who moves down and so restarts) and its summary, launch.yml's names on the head, and the
checks of the run variables both need. Called by ``static_plan``. Controller-only."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime

from ansible_collections.rlinf.cluster.plugins.module_utils.problems import Problem

LAUNCH_UNIT_PREFIX = "rlinf-launch-"


def launch_names(run: Mapping, head: Mapping, now: datetime) -> dict:
    """launch.yml's run on the head: its unit (rlinf_launch_name, or the UTC time), working directory
    (the head's checkout), script and log (rlinf_launch_log_dir), and its record and outcome files."""
    name = run["rlinf_launch_name"] or now.strftime("%Y%m%d-%H%M%S")
    if name.startswith(LAUNCH_UNIT_PREFIX):
        name = name[len(LAUNCH_UNIT_PREFIX) :]
    unit = LAUNCH_UNIT_PREFIX + re.sub(r"[^A-Za-z0-9_.-]", "-", name)
    logs, state = head["paths"]["launch_log_dir"], head["paths"]["launch_state_dir"]
    return {
        "unit": unit,
        "dir": re.sub(r"(.)/+$", r"\1", head["code_dest"]),
        "script": f"{logs}/{unit}.sh",
        "log": f"{logs}/{unit}.log",
        "record": f"{state}/{unit}.json",
        "outcome": f"{state}/{unit}.outcome.json",
    }


def removal_plan(name: str, order: Sequence[str], nodes: Mapping[str, dict], topo: Sequence[Mapping]) -> dict:
    """The cluster without worker ``name``: RLinf needs ranks 0..n-1 with no gap, so every rank
    above the removed one moves down by one; the nodes below it keep theirs (and their Ray).

    Returns the new ``order``, ``nodes`` and ``topo`` (for the RLinf config check), and what
    changed: ``node`` and ``rank`` (the removed one), ``node_plan`` (its plan entry, for
    stopping it), ``renumbered`` (``name``, ``from``, ``to``) and ``explicit`` (the renumbered
    hosts whose rank the inventory sets with ``rlinf_node_rank``: the operator changes those)."""
    removed_rank = nodes[name]["rank"]
    explicit_hosts = {t["name"] for t in topo if t.get("explicit_rank") is not None}
    kept: dict[str, dict] = {}
    renumbered = []
    for other in order:
        if other == name:
            continue
        node = dict(nodes[other])
        if node["rank"] > removed_rank:
            renumbered.append({"name": other, "from": node["rank"], "to": node["rank"] - 1})
            node["rank"] -= 1
        kept[other] = node
    # A machine whose first Ray node goes keeps an owner (it applies the machine's firewall).
    owners: set[str] = set()
    for other in sorted(kept, key=lambda n: kept[n]["rank"]):
        node = kept[other]
        node["machine_owner"] = node["machine"] not in owners
        owners.add(node["machine"])
    new_order = sorted(kept, key=lambda n: kept[n]["rank"])
    ranks = {n: kept[n]["rank"] for n in new_order}
    return {
        "node": name,
        "rank": removed_rank,
        "node_plan": dict(nodes[name]),
        "renumbered": renumbered,
        "explicit": [r["name"] for r in renumbered if r["name"] in explicit_hosts],
        "order": new_order,
        "nodes": kept,
        "topo": [dict(t, rank=ranks[t["name"]]) for t in topo if t["name"] != name],
    }


def removal_summary(removal: Mapping, remaining: int) -> list[str]:
    """What remove-node.yml does and the inventory change it needs, one line each."""
    name = removal["node"]
    lines = [f"{name} (rank {removal['rank']}) leaves the cluster: its Ray stops there, its files stay."]
    moved = removal["renumbered"]
    if moved:
        changes = ", ".join(f"{r['name']} {r['from']} -> {r['to']}" for r in moved)
        lines.append(
            f"Ranks above it move down so they stay 0..{remaining - 1}: {changes}; Ray restarts there (a rank is "
            "read at `ray start`). Every other node keeps its rank and its Ray."
        )
    else:
        lines.append("No other rank changes: no other node restarts.")
    where = f" in {removal['inventory_file']}" if removal.get("inventory_file") else ""
    change = f"Then change the inventory{where}: delete {name} from ray_workers"
    if removal["explicit"]:
        ranks = {r["name"]: r["to"] for r in moved}
        change += " and set " + ", ".join(f"rlinf_node_rank: {ranks[n]} on {n}" for n in removal["explicit"])
    lines.append(
        change + f"; and set cluster.num_nodes: {remaining} in your RLinf config (the block below). Until then "
        f"site.yml would add {name} back at rank {removal['rank']}"
        + (" and move the ranks above it up again." if moved else ".")
    )
    return lines


def _purpose_checks(purpose: str, run: Mapping, order: Sequence[str], nodes: Mapping, problems: list[Problem]) -> None:
    if purpose == "launch" and not run["rlinf_entry"].strip():
        problems.append(
            Problem(
                None,
                'rlinf_entry is empty; launch.yml needs the command to run on the head, e.g. -e rlinf_entry="bash '
                'examples/embodiment/run_embodiment.sh CONFIG".',
            )
        )
    if purpose == "launch" and order and not nodes[order[0]]["code_dest"].startswith("/"):
        problems.append(
            Problem(
                order[0],
                "launch.yml runs rlinf_entry in the RLinf checkout on the head: set rlinf_src (or rlinf_code_dest) "
                f"to its absolute path there (now {nodes[order[0]]['code_dest']!r}).",
            )
        )
    if purpose == "remove-node":
        node = run["node"].strip()
        if not node:
            problems.append(Problem(None, "name the node to remove: -e node=HOST (a worker of this inventory)."))
        elif node not in nodes:
            problems.append(
                Problem(None, f"node={node!r} is not a Ray node of this inventory (ray_head, ray_workers).")
            )
        elif node == order[0]:
            problems.append(
                Problem(
                    None, f"node={node!r} is the Ray head (rank 0); removing it ends the cluster: use teardown.yml."
                )
            )
