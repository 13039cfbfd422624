"""Jinja filters over plugins/module_utils/firewall.py (the firewall rules of one machine) and
host_firewall.py (what ufw says)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rlinf.cluster.plugins.module_utils.firewall import FirewallError, machine_rules
from ansible_collections.rlinf.cluster.plugins.module_utils.host_firewall import parse_ufw


def _firewall_rules(plan, host):
    try:
        return machine_rules(plan, str(host))
    except (FirewallError, KeyError, TypeError) as err:
        raise AnsibleFilterError(f"firewall_rules: {err}") from None


class FilterModule:
    def filters(self):
        return {"firewall_rules": _firewall_rules, "ufw_status": lambda text: parse_ufw(str(text))}
