"""Ray's ports and the addresses allowed to reach them, for the opt-in firewall.

Plain Python, no Ansible imports: the filter plugins and the unit tests call it directly.

Ray picks most of its ports at random unless ``ray start`` pins them; with the firewall on,
ray_node pins every one of them to the variables below (defaults here and in
roles/cluster_defaults), so the firewall knows which ports to guard. Several Ray nodes
on one machine need distinct values, which ``firewall_problems`` checks.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence

from ansible_collections.rlinf.cluster.plugins.module_utils.topology import (
    TopologyError,
    cluster_nodes,
)

# Pinned on every Ray node (variable -> default).
NODE_PORTS = {
    "ray_node_manager_port": 6380,
    "ray_object_manager_port": 6381,
    "ray_dashboard_agent_grpc_port": 6382,
    "ray_runtime_env_agent_port": 6383,
    "ray_metrics_export_port": 6384,
    "ray_dashboard_agent_listen_port": 52365,
}
# Only the head listens on these.
HEAD_PORTS = {
    "ray_port": 6379,
    "ray_node_dashboard_port": 8265,
}
# The head's metrics ports, set only through Ray's environment variables of these names.
HEAD_FIXED_PORTS = {"AUTOSCALER_METRIC_PORT": 44217, "DASHBOARD_METRIC_PORT": 44227}
CLIENT_PORT_VAR = "ray_client_server_port"
DEFAULT_CLIENT_PORT = 10001
WORKER_RANGE_VARS = ("ray_min_worker_port", "ray_max_worker_port")
DEFAULT_WORKER_RANGE = (10002, 19999)
EXTRA_SOURCES_VAR = "rlinf_firewall_allowed_sources"
CLIENT_SOURCES_VAR = "rlinf_firewall_client_sources"


class FirewallError(ValueError):
    """Raised with every problem found, not only the first."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def _port(host: str, var: str, value, problems: list[str]) -> int | None:
    try:
        if isinstance(value, (bool, float)):
            raise ValueError
        port = int(str(value).strip())
        if not 1024 <= port <= 65535:
            raise ValueError
    except ValueError:
        problems.append(f"host '{host}': {var}={value!r} is not a port Ray accepts; set a number in 1024..65535.")
        return None
    return port


def node_ports(host: str, node_vars: Mapping, is_head: bool) -> dict:
    """The ports one Ray node listens on, from its variables (missing ones take the defaults).

    Returns ``{"single": {var: port}, "client": port or None, "workers": (min, max),
    "fixed": [port]}``; the client and fixed ports are only the head's. Raises
    FirewallError naming the host and variable.
    """
    problems: list[str] = []
    wanted = {**NODE_PORTS, **(HEAD_PORTS if is_head else {})}
    single = {}
    for var, default in wanted.items():
        port = _port(host, var, node_vars.get(var, default), problems)
        if port is not None:
            single[var] = port
    client = None
    if is_head:
        client = _port(host, CLIENT_PORT_VAR, node_vars.get(CLIENT_PORT_VAR, DEFAULT_CLIENT_PORT), problems)
    low, high = (
        _port(host, var, node_vars.get(var, default), problems)
        for var, default in zip(WORKER_RANGE_VARS, DEFAULT_WORKER_RANGE, strict=True)
    )
    if low is not None and high is not None and low > high:
        problems.append(
            f"host '{host}': ray_min_worker_port={low} is above ray_max_worker_port={high}; swap or fix them."
        )
    named = dict(single)
    if client is not None:
        named[CLIENT_PORT_VAR] = client
    holders: dict[int, list[str]] = {}
    for var, port in named.items():
        holders.setdefault(port, []).append(var)
        if low is not None and high is not None and low <= port <= high:
            problems.append(
                f"host '{host}': {var}={port} lies in the worker port range {low}-{high}; "
                "move it out of ray_min_worker_port..ray_max_worker_port."
            )
    for port, names in holders.items():
        if len(names) > 1:
            problems.append(f"host '{host}': {', '.join(names)} are all {port}; give each its own port.")
    if problems:
        raise FirewallError(problems)
    fixed = sorted(HEAD_FIXED_PORTS.values()) if is_head else []
    return {"single": single, "client": client, "workers": (low, high), "fixed": fixed}


def nft_ports(ports: Mapping) -> list[str]:
    """The cluster-only ports as nft set elements, sorted: ``["6379", ..., "10002-19999"]``."""
    low, high = ports["workers"]
    elements = [str(p) for p in sorted(set(ports["single"].values()) | set(ports.get("fixed", [])))]
    elements.append(str(low) if low == high else f"{low}-{high}")
    return elements


def sources(values, what: str) -> list[str]:
    """IPv4 addresses or networks, normalised, unique and sorted; raises FirewallError on a bad one."""
    if values is None:
        values = []
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise FirewallError([f"{what}={values!r} must be a list of IPv4 addresses or networks, e.g. [192.0.2.7]."])
    problems: list[str] = []
    networks = set()
    for value in values:
        try:
            network = ipaddress.ip_network(str(value).strip(), strict=False)
        except ValueError:
            problems.append(
                f"{what}: {value!r} is not an IPv4 address or network; write e.g. 192.0.2.7 or 192.0.2.0/24."
            )
            continue
        if network.version != 4:
            problems.append(f"{what}: {value!r} is IPv6; Ray binds IPv4 node addresses, list IPv4 only.")
            continue
        networks.add(network)
    if problems:
        raise FirewallError(problems)
    ordered = sorted(networks, key=lambda n: (int(n.network_address), n.prefixlen))
    return [str(n.network_address) if n.prefixlen == 32 else str(n) for n in ordered]


def firewall_problems(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Mapping]) -> list[str]:
    """Every problem with the firewall's ports and sources across the inventory; [] = usable.

    Nodes sharing a machine (same ``ansible_host``) must not pin the same port, and no
    pinned port may fall in another node's worker range there.
    """
    try:
        nodes = cluster_nodes(groups, hostvars)
    except TopologyError:
        return []  # validate_inventory reports those already
    problems: list[str] = []
    machines: dict[str, list[tuple[str, dict]]] = {}
    for node in nodes:
        node_vars = hostvars.get(node["name"]) or {}
        try:
            ports = node_ports(node["name"], node_vars, node["role"] == "head")
        except FirewallError as err:
            problems.extend(err.problems)
            continue
        for var in (EXTRA_SOURCES_VAR, CLIENT_SOURCES_VAR):
            try:
                sources(node_vars.get(var), f"host '{node['name']}': {var}")
            except FirewallError as err:
                problems.extend(err.problems)
        machines.setdefault(node["machine"], []).append((node["name"], ports))
    for machine, members in machines.items():
        owner: dict[int, str] = {}
        for name, ports in members:
            named = dict(ports["single"])
            if ports["client"] is not None:
                named[CLIENT_PORT_VAR] = ports["client"]
            for var, port in named.items():
                if port in owner:
                    problems.append(
                        f"hosts {owner[port]}, {name}: both pin port {port} ({var}) on machine {machine}; "
                        f"give each Ray node there its own {var}."
                    )
                else:
                    owner[port] = name
        for name, ports in members:
            low, high = ports["workers"]
            for port, holder in owner.items():
                if holder != name and low <= port <= high:
                    problems.append(
                        f"hosts {holder}, {name}: port {port} of {holder} lies in {name}'s worker range "
                        f"{low}-{high} on machine {machine}; move one of them."
                    )
    return problems


def machine_rules(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Mapping], host: str) -> dict:
    """What the firewall of ``host``'s machine allows: every Ray node sharing it counts.

    Returns ``cluster_ports`` and ``client_ports`` (nft set elements), ``cluster_sources``
    (every Ray node's ``rlinf_node_ip`` plus ``rlinf_firewall_allowed_sources``),
    ``client_sources`` (``rlinf_firewall_client_sources``) and ``missing``: the Ray nodes
    whose address this run does not know (left out by --limit), which must be empty
    before the rules are used. Raises FirewallError (or TopologyError) on bad values.
    """
    nodes = cluster_nodes(groups, hostvars)
    mine = next((n for n in nodes if n["name"] == host), None)
    if mine is None:
        raise FirewallError([f"host '{host}': it is not a Ray node (neither in ray_head nor in ray_workers)."])
    cluster_ports: set = set()
    client_ports: set = set()
    extra: list = []
    client: list = []
    for node in nodes:
        if node["machine"] != mine["machine"]:
            continue
        node_vars = hostvars.get(node["name"]) or {}
        ports = node_ports(node["name"], node_vars, node["role"] == "head")
        cluster_ports.update(nft_ports(ports))
        if ports["client"] is not None:
            client_ports.add(str(ports["client"]))
        extra.extend(sources(node_vars.get(EXTRA_SOURCES_VAR), f"host '{node['name']}': {EXTRA_SOURCES_VAR}"))
        client.extend(sources(node_vars.get(CLIENT_SOURCES_VAR), f"host '{node['name']}': {CLIENT_SOURCES_VAR}"))
    addresses = []
    missing = []
    for node in nodes:
        address = (hostvars.get(node["name"]) or {}).get("rlinf_node_ip")
        if address:
            addresses.append(str(address).strip())
        else:
            missing.append(node["name"])
    return {
        "cluster_ports": sorted(cluster_ports, key=lambda p: int(p.split("-")[0])),
        "client_ports": sorted(client_ports, key=int),
        "cluster_sources": sources(addresses + extra, "the Ray nodes' addresses (rlinf_node_ip)"),
        "client_sources": sources(client, CLIENT_SOURCES_VAR),
        "missing": missing,
    }
