"""Jinja filters over plugins/module_utils/firewall.py (the firewall's ports and sources)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rlinf.cluster.plugins.module_utils.firewall import (
    FirewallError,
    firewall_problems,
    machine_rules,
)
from ansible_collections.rlinf.cluster.plugins.module_utils.topology import TopologyError


def _firewall_rules(groups, hostvars, host):
    try:
        return machine_rules(groups, hostvars, str(host))
    except (FirewallError, TopologyError) as err:
        raise AnsibleFilterError(str(err)) from None


def _firewall_problems(groups, hostvars):
    try:
        return firewall_problems(groups, hostvars)
    except Exception as err:  # never a traceback: report it as one problem
        return [f"inventory: could not read the firewall settings ({type(err).__name__}: {err}); fix the inventory."]


class FilterModule:
    def filters(self):
        return {
            "firewall_rules": _firewall_rules,
            "firewall_problems": _firewall_problems,
        }
