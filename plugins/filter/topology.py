"""Jinja filters over plugins/module_utils/topology.py (ranks, head, problems, warnings, rank table)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rlinf.cluster.plugins.module_utils.topology import (
    TopologyError,
    cluster_nodes,
    rank_table,
    topology_problems,
    topology_warnings,
)


def _cluster_nodes(groups, hostvars):
    try:
        return cluster_nodes(groups, hostvars)
    except TopologyError as err:
        raise AnsibleFilterError(str(err)) from None


def _topology_problems(groups, hostvars):
    try:
        return topology_problems(groups, hostvars)
    except Exception as err:  # never a traceback: report it as one problem
        return [f"inventory: could not read the topology ({type(err).__name__}: {err}); fix the inventory."]


def _topology_warnings(groups, hostvars):
    try:
        return topology_warnings(groups, hostvars)
    except Exception:  # the problems filter reports what is wrong; warnings stay quiet
        return []


def _rank_table(nodes):
    try:
        return rank_table(nodes or [])
    except (KeyError, TypeError) as err:
        raise AnsibleFilterError(f"rank_table: expects the list from rlinf.cluster.cluster_nodes ({err}).") from None


class FilterModule:
    def filters(self):
        return {
            "cluster_nodes": _cluster_nodes,
            "topology_problems": _topology_problems,
            "topology_warnings": _topology_warnings,
            "rank_table": _rank_table,
        }
