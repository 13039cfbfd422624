"""Jinja filter over plugins/module_utils/restarts.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rlinf.cluster.plugins.module_utils.restarts import ray_node_restart


def _ray_node_restart(facts):
    try:
        return ray_node_restart(facts)
    except (TypeError, ValueError) as err:
        raise AnsibleFilterError(str(err)) from None


class FilterModule:
    def filters(self):
        return {"ray_node_restart": _ray_node_restart}
