"""Jinja filters over plugins/module_utils/topology.py (ranks, head, problems)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rlinf.cluster.plugins.module_utils.topology import (
    TopologyError,
    cluster_nodes,
    topology_problems,
)


def _cluster_nodes(groups, hostvars):
    try:
        return cluster_nodes(groups, hostvars)
    except TopologyError as err:
        raise AnsibleFilterError(str(err)) from None


class FilterModule:
    def filters(self):
        return {
            "cluster_nodes": _cluster_nodes,
            "topology_problems": topology_problems,
        }
