"""Jinja filter over plugins/module_utils/firewall.py (the firewall rules of one machine)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rlinf.cluster.plugins.module_utils.firewall import FirewallError, machine_rules


def _firewall_rules(plan, host):
    try:
        return machine_rules(plan, str(host))
    except (FirewallError, KeyError, TypeError) as err:
        raise AnsibleFilterError(f"firewall_rules: {err}") from None


class FilterModule:
    def filters(self):
        return {"firewall_rules": _firewall_rules}
