"""The host firewalls of a node that are not ours (ufw, firewalld), and whether they let the cluster in.

Our own nft table accepts Ray's traffic, but nftables runs every table's input chain: a packet
our table accepts is still dropped by ufw's or firewalld's. Ray needs every port between its
nodes (GCS, raylet, object manager, the worker port range), so a host firewall is open for the
cluster when it allows all traffic from each peer's address; that is what Ray's docs ask and
what ``ufw allow from ADDRESS`` does. Narrower rules are not evaluated: they are reported as
not open, with the command that opens the node.

Plain Python, no Ansible imports: node_state reads the firewall's own words, the plan judges them.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence

RULE_COMMENT = "rlinf-ansible"
MANAGE_VAR = "rlinf_firewall_manage_host"
_DEFAULT = re.compile(r"^Default:\s*(\w+)\s*\(incoming\)", re.MULTILINE)
_ALLOW = re.compile(r"^(?P<to>.+?)\s{2,}ALLOW(?: IN)?\s{2,}(?P<src>\S+(?: \(v6\))?)(?:\s+#\s*(?P<comment>.*))?$")


def parse_ufw(text: str) -> dict:
    """``ufw status verbose`` as {active, incoming, sources, ours}; sources allow every port."""
    active = text.lstrip().startswith("Status: active")
    match = _DEFAULT.search(text)
    sources: list[str] = []
    ours: list[str] = []
    for line in text.splitlines():
        found = _ALLOW.match(line.strip())
        if not found or found.group("to").strip() != "Anywhere" or "(v6)" in found.group("src"):
            continue
        src = found.group("src")
        sources.append("0.0.0.0/0" if src == "Anywhere" else src)
        if (found.group("comment") or "").strip() == RULE_COMMENT:
            ours.append(src)
    return {"active": active, "incoming": match.group(1) if match else "unknown", "sources": sources, "ours": ours}


def _covered(ip: str, sources: Sequence[str]) -> bool:
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    for source in sources:
        try:
            if address in ipaddress.ip_network(source, strict=False):
                return True
        except ValueError:
            continue
    return False


def closed_peers(found: Mapping, peers: Sequence[str]) -> list[str]:
    """The peers' addresses ufw here would drop (all of them allowed when ufw is off or allows by default)."""
    ufw = found.get("ufw") or {}
    if not ufw.get("active") or ufw.get("incoming") == "allow":
        return []
    return [ip for ip in peers if not _covered(ip, ufw.get("sources") or [])]


def problems(found: Mapping, peers: Sequence[str], manage: bool) -> list[str]:
    """Sentences for the plan: a host firewall that would drop Ray's traffic from the other nodes."""
    out: list[str] = []
    closed = closed_peers(found, peers)
    if closed and not manage:
        commands = "; ".join(f"ufw allow from {ip} comment {RULE_COMMENT}" for ip in closed)
        out.append(
            f"ufw is active here and drops incoming traffic by default, so Ray's traffic from "
            f"{', '.join(closed)} would never arrive (Ray uses many ports between its nodes). Set {MANAGE_VAR}: "
            f"true to let rlinf.cluster add those rules through ufw (and remove them on purge), or add them "
            f"yourself: {commands}."
        )
    untrusted = [ip for ip in peers if not _covered(ip, (found.get("firewalld_trusted") or "").split())]
    if found.get("firewalld") and untrusted:
        out.append(
            f"firewalld is running here and rejects what its zones do not allow, so Ray's traffic from "
            f"{', '.join(untrusted)} would be dropped; rlinf.cluster does not manage firewalld (it could not be "
            "tested here). Put the cluster's addresses in the trusted zone: "
            + "; ".join(f"firewall-cmd --permanent --zone=trusted --add-source={ip}" for ip in untrusted)
            + "; firewall-cmd --reload."
        )
    return out
