"""Jinja filters over plugins/plugin_utils/rlinf_config/ (RLinf cluster check and generation)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rlinf.cluster.plugins.plugin_utils.rlinf_config import (
    RLinfConfigError,
    check_cluster,
    cluster_block,
    cluster_block_yaml,
    resolve_cluster,
)


def _rlinf_config_check(config, nodes=None):
    """{problems, warnings, cluster} for a path, a whole config or a cluster block."""
    try:
        cluster, source = resolve_cluster(config)
    except RLinfConfigError as err:
        return {"problems": err.problems, "warnings": [], "cluster": {}}
    try:
        report = check_cluster(cluster, list(nodes) if nodes else None, source)
    except Exception as err:  # never a traceback: report it as one problem
        report = {
            "problems": [
                f"{source}: could not be checked ({type(err).__name__}: {err}); please report this with the config."
            ],
            "warnings": [],
        }
    report["cluster"] = dict(cluster)
    return report


def _nodes_or_fail(nodes, name):
    if not isinstance(nodes, list):
        raise AnsibleFilterError(f"{name}: expects the list from rlinf.cluster.cluster_nodes.")
    return nodes


def _rlinf_cluster_block(nodes):
    return cluster_block(_nodes_or_fail(nodes, "rlinf_cluster_block"))


def _rlinf_cluster_yaml(nodes):
    return cluster_block_yaml(_nodes_or_fail(nodes, "rlinf_cluster_yaml"))


class FilterModule:
    def filters(self):
        return {
            "rlinf_config_check": _rlinf_config_check,
            "rlinf_cluster_block": _rlinf_cluster_block,
            "rlinf_cluster_yaml": _rlinf_cluster_yaml,
        }
