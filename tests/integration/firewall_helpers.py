"""The opt-in nftables firewall as the lab tests switch it on and look for it (test_firewall.py, and
test_lifecycle.py's purge, which runs with it on)."""

from __future__ import annotations

from lab_helpers import ssh

TABLE = "nft list table inet rlinf"
RULES_FILE = "/etc/rlinf/firewall.nft"
UNIT_FILE = "/etc/systemd/system/rlinf-firewall.service"
# An operator's own nft table (issue 25): ours is one table beside it, never a flushed ruleset.
THEIR_TABLE = "inet operator_own"
THEIR_RULES = (
    f"add table {THEIR_TABLE}\n"
    f"add chain {THEIR_TABLE} input {{ type filter hook input priority 10; policy accept; }}\n"
    f'add rule {THEIR_TABLE} input tcp dport 9 counter drop comment "the operator\'s"\n'
)


def with_firewall(client_sources):
    """An inventory mutation (write_inventory) switching the firewall on for every Ray node."""

    def mutate(groups):
        for group in ("ray_head", "ray_workers"):
            groups[group].setdefault("vars", {}).update(
                rlinf_firewall_enabled=True, rlinf_firewall_client_sources=client_sources
            )

    return mutate


def assert_firewall_gone(hosts):
    for name, address in hosts.items():
        left = ssh(address, f"{TABLE}; ls {RULES_FILE} {UNIT_FILE}", check=False)
        assert "table inet rlinf" not in left.stdout, f"{name}: the table is still loaded"
        assert RULES_FILE not in left.stdout and UNIT_FILE not in left.stdout, f"{name}: {left.stdout}"
