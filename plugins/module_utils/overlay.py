"""EasyTier overlay membership and addresses, computed from the inventory.

Members are the host in ``easytier_bootstrap`` (exactly one; it may be outside the Ray
cluster) followed by the Ray head and the Ray workers in inventory order; a host in
several of those groups is listed once, at its first position. Each member gets the
``easytier_ipv4`` host var, else the address at its position in the overlay subnet
(``.1`` for the first member, ``.2`` for the next...). Every problem found is reported
as a sentence naming the host, the variable and the fix.

Plain Python, no Ansible imports: the filter plugin and the unit tests call it directly.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence

BOOTSTRAP_GROUP = "easytier_bootstrap"
HEAD_GROUP = "ray_head"
WORKER_GROUP = "ray_workers"
IP_VAR = "easytier_ipv4"
SUBNET_VAR = "easytier_subnet"
DEFAULT_SUBNET = "10.144.0.0/24"
DEFAULT_DEV = "et0"


class OverlayError(ValueError):
    """Raised with every problem found, not only the first."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


PUBLIC_VAR = "easytier_allow_public_subnet"


def parse_subnet(subnet: object, allow_public: bool = False) -> ipaddress.IPv4Network:
    """The overlay subnet as an IPv4Network; raises OverlayError with a readable sentence.

    Overlay addresses are routed to the TUN device on every member, so a range the member
    also needs for something else is refused: loopback, link-local (cloud metadata lives
    there), multicast, reserved, and, unless ``allow_public``, a public range someone else
    owns (the members would no longer reach it)."""
    text = str(subnet).strip()
    try:
        network = ipaddress.ip_network(text, strict=True)
    except ValueError as err:
        hint = ""
        try:
            loose = ipaddress.ip_network(text, strict=False)
            hint = f" (did you mean {loose}?)"
        except ValueError:
            pass
        raise OverlayError([f"{SUBNET_VAR}={text!r} is not a network address in CIDR form{hint}: {err}."]) from None
    if network.version != 4:
        raise OverlayError([f"{SUBNET_VAR}={text!r} must be an IPv4 network such as {DEFAULT_SUBNET}."])
    if network.prefixlen > 30:
        raise OverlayError([f"{SUBNET_VAR}={text!r} is too small: use a prefix of /30 or shorter (e.g. /24)."])
    for kind, taken in (
        ("loopback", network.is_loopback),
        ("link-local (cloud metadata services answer there)", network.is_link_local),
        ("multicast", network.is_multicast),
        ("reserved", network.is_reserved or network.network_address.is_unspecified),
    ):
        if taken:
            raise OverlayError(
                [
                    f"{SUBNET_VAR}={text!r} is {kind}, which every member needs as it is: use a private range (e.g. "
                    f"{DEFAULT_SUBNET})."
                ]
            )
    if network.is_global and not allow_public:
        raise OverlayError(
            [
                f"{SUBNET_VAR}={text!r} is a public range: the members would route it into the overlay and lose "
                f"whoever owns it. Use a private range (10/8, 172.16/12, 192.168/16, 100.64/10), or set "
                f"{PUBLIC_VAR}: true if the range is yours."
            ]
        )
    return network


def interface_addresses(facts: Mapping | None, exclude: Sequence[str] = ()) -> list[tuple[str, object]]:
    """(device, IPv4Interface) for every IPv4 address in a host's gathered facts.

    ``facts`` is the host's ``ansible_facts``; devices named in ``exclude`` (the overlay
    device itself) are skipped. Missing or partial facts give an empty list.
    """
    found: list[tuple[str, object]] = []
    if not isinstance(facts, Mapping):
        return found
    for device in facts.get("interfaces") or []:
        if device in exclude:
            continue
        data = facts.get(device.replace("-", "_").replace(":", "_").replace(".", "_")) or facts.get(device)
        if not isinstance(data, Mapping):
            continue
        entries = []
        if isinstance(data.get("ipv4"), Mapping):
            entries.append(data["ipv4"])
        entries.extend(e for e in data.get("ipv4_secondaries") or [] if isinstance(e, Mapping))
        for entry in entries:
            address = entry.get("address")
            netmask = entry.get("netmask") or entry.get("prefix") or "32"
            if not address:
                continue
            try:
                found.append((device, ipaddress.ip_interface(f"{address}/{netmask}")))
            except ValueError:
                continue
    return found


def _members_in_order(groups: Mapping[str, Sequence[str]]) -> list[tuple[str, str, bool]]:
    """(name, role, ray_node) in overlay order, each host once."""
    ordered: list[tuple[str, str, bool]] = []
    seen: dict[str, int] = {}
    ray_nodes = set(groups.get(HEAD_GROUP) or []) | set(groups.get(WORKER_GROUP) or [])
    for group, role in ((BOOTSTRAP_GROUP, "bootstrap"), (HEAD_GROUP, "head"), (WORKER_GROUP, "worker")):
        for name in groups.get(group) or []:
            if name in seen:
                continue
            seen[name] = len(ordered)
            ordered.append((name, role, name in ray_nodes))
    return ordered


def _explicit_ip(name: str, value: object, network, problems: list[str]):
    text = str(value).strip()
    try:
        iface = ipaddress.ip_interface(text)
    except ValueError:
        problems.append(
            f"host '{name}': {IP_VAR}={text!r} is not an IPv4 address; "
            f"set it to an address inside {network} (e.g. {network.network_address + 1}) or remove it."
        )
        return None
    if iface.version != 4:
        problems.append(f"host '{name}': {IP_VAR}={text!r} must be an IPv4 address inside {network}.")
        return None
    if "/" in text and iface.network.prefixlen != network.prefixlen:
        problems.append(
            f"host '{name}': {IP_VAR}={text!r} has prefix /{iface.network.prefixlen} but the overlay "
            f"subnet ({SUBNET_VAR}) is {network}; write the address without a prefix."
        )
        return None
    return iface.ip


def overlay_members(
    groups: Mapping[str, Sequence[str]],
    hostvars: Mapping[str, Mapping],
    subnet: object = DEFAULT_SUBNET,
    dev_name: str = DEFAULT_DEV,
    allow_public: bool = False,
) -> list[dict]:
    """Return the overlay members in order as dicts.

    Keys: ``name``, ``role`` (bootstrap, head or worker), ``ray_node`` (bool),
    ``bootstrap`` (bool), ``ipv4`` (address), ``prefix`` (int), ``cidr``
    (``address/prefix``, the form EasyTier's ``ipv4`` key takes).
    Raises OverlayError listing every problem found.
    """
    problems: list[str] = []
    network = parse_subnet(subnet, allow_public)

    bootstraps = list(dict.fromkeys(groups.get(BOOTSTRAP_GROUP) or []))
    if not bootstraps:
        problems.append(
            f"inventory: group '{BOOTSTRAP_GROUP}' is missing or empty; put exactly one host in it "
            "(a host every node can reach, e.g. one with a public address)."
        )
    elif len(bootstraps) > 1:
        problems.append(
            f"inventory: group '{BOOTSTRAP_GROUP}' has {len(bootstraps)} hosts ({', '.join(bootstraps)}); "
            "EasyTier needs exactly one bootstrap host: keep one."
        )

    members = []
    for position, (name, role, ray_node) in enumerate(_members_in_order(groups)):
        hv = hostvars.get(name) or {}
        own_subnet = hv.get(SUBNET_VAR)
        if own_subnet is not None and str(own_subnet).strip() != str(subnet).strip():
            problems.append(
                f"host '{name}': {SUBNET_VAR}={own_subnet!r} differs from {subnet!r}; "
                "the overlay has one subnet: set it once for all hosts (group_vars/all)."
            )
        explicit = hv.get(IP_VAR)
        if explicit not in (None, ""):
            ip = _explicit_ip(name, explicit, network, problems)
            source = IP_VAR
        else:
            ip = network.network_address + 1 + position
            source = "position"
            if ip >= network.broadcast_address:
                problems.append(
                    f"host '{name}': no address left in {network} for overlay member #{position + 1}; "
                    f"use a larger {SUBNET_VAR} or set {IP_VAR} on this host."
                )
                ip = None
        if ip is not None:
            if ip not in network:
                problems.append(
                    f"host '{name}': {IP_VAR}={ip} is outside the overlay subnet {network}; "
                    f"pick an address inside it or change {SUBNET_VAR}."
                )
            elif ip in (network.network_address, network.broadcast_address):
                problems.append(
                    f"host '{name}': {IP_VAR}={ip} is the network or broadcast address of {network}; "
                    "pick a host address."
                )
            facts = hv.get("ansible_facts")
            for device, real in interface_addresses(facts, exclude=(dev_name,)):
                if real.ip == ip:
                    problems.append(
                        f"host '{name}': overlay address {ip} ({source}) is already the address of its "
                        f"interface {device}; set {IP_VAR} to a free address or change {SUBNET_VAR}."
                    )
                elif real.network.prefixlen and not real.ip.is_loopback and real.network.overlaps(network):
                    problems.append(
                        f"host '{name}': the overlay subnet {network} overlaps the network {real.network} "
                        f"of its interface {device}; routes would clash: choose another {SUBNET_VAR}."
                    )
        members.append(
            {
                "name": name,
                "role": role,
                "ray_node": ray_node,
                "bootstrap": name in bootstraps[:1],
                "ipv4": str(ip) if ip is not None else None,
                "prefix": network.prefixlen,
                "cidr": f"{ip}/{network.prefixlen}" if ip is not None else None,
            }
        )

    by_ip: dict[str, list[str]] = {}
    for member in members:
        if member["ipv4"]:
            by_ip.setdefault(member["ipv4"], []).append(member["name"])
    for ip, names in by_ip.items():
        if len(names) > 1:
            problems.append(
                f"hosts {', '.join(names)}: they share the overlay address {ip}; "
                f"every member needs its own {IP_VAR} (derived addresses follow inventory position)."
            )

    if problems:
        raise OverlayError(list(dict.fromkeys(problems)))
    return members


def overlay_problems(
    groups: Mapping[str, Sequence[str]],
    hostvars: Mapping[str, Mapping],
    subnet: object = DEFAULT_SUBNET,
    dev_name: str = DEFAULT_DEV,
    allow_public: bool = False,
) -> list[str]:
    """Every problem with the overlay membership and addresses; an empty list means usable."""
    try:
        overlay_members(groups, hostvars, subnet, dev_name, allow_public)
    except OverlayError as err:
        return err.problems
    return []
