"""Ray's ports and the addresses allowed to reach them, for the opt-in firewall.

Plain Python over the plan's nodes (plugins/plugin_utils/plan/), no Ansible imports.

Ray picks most of its ports at random unless ``ray start`` pins them; with the firewall on,
the plan pins every one of them (``pinned_port_args``) from the same port table the rules
are built from, so the firewall knows which ports to guard. Several Ray nodes on one
machine need distinct values, which ``port_problems`` checks.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence

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


def node_port_problems(node: Mapping) -> list[str]:
    """One node's pinned ports: distinct, outside its own worker range, the range in order."""
    name = node["name"]
    ports = node["ports"]
    low, high = ports["ray_min_worker_port"], ports["ray_max_worker_port"]
    problems: list[str] = []
    if low > high:
        problems.append(
            f"host '{name}': ray_min_worker_port={low} is above ray_max_worker_port={high}; swap or fix them."
        )
    named = _single_ports(node)
    holders: dict[int, list[str]] = {}
    for var, port in named.items():
        holders.setdefault(port, []).append(var)
        if low <= port <= high:
            problems.append(
                f"host '{name}': {var}={port} lies in the worker port range {low}-{high}; "
                "move it out of ray_min_worker_port..ray_max_worker_port."
            )
    for port, names in holders.items():
        if len(names) > 1:
            problems.append(f"host '{name}': {', '.join(names)} are all {port}; give each its own port.")
    return problems


def _single_ports(node: Mapping) -> dict:
    """The ports this node listens on by name (the head's GCS, dashboard and client ports included)."""
    ports = node["ports"]
    wanted = [*NODE_PORTS, *HEAD_PORTS, CLIENT_PORT_VAR] if node["role"] == "head" else list(NODE_PORTS)
    return {var: ports[var] for var in wanted if var in ports}


def port_problems(nodes: Sequence[Mapping]) -> list[str]:
    """Every problem with the pinned ports across the plan's nodes; [] = usable.

    Nodes sharing a machine must not pin the same port, and no pinned port may fall in
    another node's worker range there.
    """
    problems: list[str] = []
    machines: dict[str, list[Mapping]] = {}
    for node in nodes:
        problems.extend(node_port_problems(node))
        machines.setdefault(node["machine"], []).append(node)
    for machine, members in machines.items():
        owner: dict[int, str] = {}
        for node in members:
            for var, port in _single_ports(node).items():
                if port in owner and owner[port] != node["name"]:
                    problems.append(
                        f"hosts {owner[port]}, {node['name']}: both pin port {port} ({var}) on machine {machine}; "
                        f"give each Ray node there its own {var}."
                    )
                else:
                    owner[port] = node["name"]
        for node in members:
            low, high = node["ports"]["ray_min_worker_port"], node["ports"]["ray_max_worker_port"]
            for port, holder in owner.items():
                if holder != node["name"] and low <= port <= high:
                    problems.append(
                        f"hosts {holder}, {node['name']}: port {port} of {holder} lies in {node['name']}'s worker "
                        f"range {low}-{high} on machine {machine}; move one of them."
                    )
    return problems


# `ray start` flag of each pinned port variable (the client port only on the head).
PORT_FLAGS = {
    "ray_node_manager_port": "--node-manager-port",
    "ray_object_manager_port": "--object-manager-port",
    "ray_dashboard_agent_grpc_port": "--dashboard-agent-grpc-port",
    "ray_dashboard_agent_listen_port": "--dashboard-agent-listen-port",
    "ray_runtime_env_agent_port": "--runtime-env-agent-port",
    "ray_metrics_export_port": "--metrics-export-port",
    "ray_min_worker_port": "--min-worker-port",
    "ray_max_worker_port": "--max-worker-port",
}


def pinned_port_args(node: Mapping) -> list[str]:
    """The `ray start` flags that pin every port the firewall guards on this node."""
    ports = node["ports"]
    args = [f"{flag}={ports[var]}" for var, flag in PORT_FLAGS.items()]
    if node["role"] == "head":
        args.append(f"--ray-client-server-port={ports[CLIENT_PORT_VAR]}")
    return args


def node_ports(node: Mapping) -> dict:
    """``{"single": {var: port}, "client": port or None, "workers": (min, max), "fixed": [port]}``."""
    single = {var: port for var, port in _single_ports(node).items() if var != CLIENT_PORT_VAR}
    is_head = node["role"] == "head"
    return {
        "single": single,
        "client": node["ports"].get(CLIENT_PORT_VAR) if is_head else None,
        "workers": (node["ports"]["ray_min_worker_port"], node["ports"]["ray_max_worker_port"]),
        "fixed": sorted(HEAD_FIXED_PORTS.values()) if is_head else [],
    }


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


def machine_rules(plan: Mapping, host: str) -> dict:
    """What the firewall of ``host``'s machine allows: every Ray node sharing it counts.

    Returns ``cluster_ports`` and ``client_ports`` (nft set elements), ``cluster_sources``
    (every Ray node's address plus ``rlinf_firewall_allowed_sources``), ``client_sources``
    (``rlinf_firewall_client_sources``), ``metrics_ports`` and ``metrics_sources`` (with metrics
    on: the ports only the scraper may reach, taken out of ``cluster_ports``, and its address) and
    ``missing``: the Ray nodes whose address this run does not know (left out by --limit), which
    must be empty before the rules are used.
    """
    nodes = [plan["nodes"][name] for name in plan["order"]]
    mine = plan["nodes"].get(host)
    if mine is None:
        raise FirewallError([f"host '{host}': it is not a Ray node (neither in ray_head nor in ray_workers)."])
    cluster_ports: set = set()
    client_ports: set = set()
    extra: list = []
    client: list = []
    members = [node for node in nodes if node["machine"] == mine["machine"]]
    metrics = metrics_split(plan, members)
    for node in members:
        ports = node_ports(node)
        cluster_ports.update(p for p in nft_ports(ports) if p not in metrics["ports"])
        if ports["client"] is not None:
            client_ports.add(str(ports["client"]))
        extra.extend(node["firewall"]["allowed_sources"])
        client.extend(node["firewall"]["client_sources"])
    addresses = [node["ip"] for node in nodes if node.get("ip")]
    missing = [node["name"] for node in nodes if not node.get("ip")]
    return {
        "cluster_ports": sorted(cluster_ports, key=lambda p: int(p.split("-")[0])),
        "client_ports": sorted(client_ports, key=int),
        "cluster_sources": sources(addresses + extra, "the Ray nodes' addresses"),
        "client_sources": sources(client, CLIENT_SOURCES_VAR),
        "metrics_ports": sorted(metrics["ports"], key=int),
        "metrics_sources": sources(metrics["sources"], "rlinf_metrics_host's address"),
        "missing": missing,
    }


def metrics_split(plan: Mapping, members: Sequence[Mapping]) -> dict:
    """With metrics on (rlinf_metrics_enabled), the ports of one machine's Ray nodes that only the
    scraper may reach: each node's metrics export port, the head's metrics ports and the machine's
    node exporter. ``{"ports": {"6384", ...}, "sources": [scraper's address]}``; none with metrics off."""
    settings = plan["cluster"].get("metrics") or {}
    if not settings.get("enabled"):
        return {"ports": set(), "sources": []}
    ports: set = set()
    for node in members:
        ports.add(str(node["ports"]["ray_metrics_export_port"]))
        if node["role"] == "head":
            ports.update(str(p) for p in HEAD_FIXED_PORTS.values())
        if (node.get("metrics") or {}).get("node_exporter"):
            ports.add(str(node["metrics"]["node_exporter_port"]))
    scraper_ip = plan["nodes"][settings["host"]].get("ip")
    return {"ports": ports, "sources": [scraper_ip] if scraper_ip else []}
