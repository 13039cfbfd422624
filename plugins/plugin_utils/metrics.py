"""Opt-in metrics (rlinf_metrics_enabled): which host scrapes, what it scrapes, and the files that say so.

Plain Python over the plan (plugins/plugin_utils/plan/). One Prometheus, from Debian's package,
runs on the scraper (``rlinf_metrics_host``, the head by default; a Ray node, so it reaches
every Ray address, the overlay's included). It scrapes, at each node's Ray address (not the
SSH one): every Ray node's metrics export port (pinned while metrics are on), the head's
autoscaler and dashboard metrics ports, and one node exporter (Debian's package) per machine,
bound to the Ray address of the machine's first Ray node. The packages' own units run with a
drop-in of ours that points them at our settings; the packages' files are left as they are.

Controller-only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import yaml

from ansible_collections.rlinf.cluster.plugins.module_utils import firewall, render

METRICS_PORT_VAR = "ray_metrics_export_port"
NODE_EXPORTER_PORT_VAR = "rlinf_metrics_node_exporter_port"
PROMETHEUS_CONFIG = "/etc/rlinf/metrics/prometheus.yml"
PROMETHEUS_UNIT = "prometheus"
NODE_EXPORTER_UNIT = "prometheus-node-exporter"
PROMETHEUS_DROPIN = f"/etc/systemd/system/{PROMETHEUS_UNIT}.service.d/rlinf.conf"
NODE_EXPORTER_DROPIN = f"/etc/systemd/system/{NODE_EXPORTER_UNIT}.service.d/rlinf.conf"
PROMETHEUS_BIN = "/usr/bin/prometheus"
NODE_EXPORTER_BIN = "/usr/bin/prometheus-node-exporter"
# Debian's package keeps its time series here (--storage.tsdb.path of its unit's default).
PROMETHEUS_STORAGE = "/var/lib/prometheus/metrics2/"
# Where Ray's head writes the Grafana dashboards it generates, under its temp dir.
DASHBOARDS_SUBDIR = "session_latest/metrics/grafana/dashboards"
# The controller's copy, under the artifacts directory.
DASHBOARDS_ARTIFACTS_SUBDIR = "ray-grafana-dashboards"
# The paths a node's metrics files may take (node paths the probe reads), by plan key.
PATHS = {
    "metrics_prometheus_config": PROMETHEUS_CONFIG,
    "metrics_prometheus_dropin": PROMETHEUS_DROPIN,
    "metrics_node_exporter_dropin": NODE_EXPORTER_DROPIN,
}
# The packages' units a node may run for metrics, with the files of ours each runs with.
UNITS = (
    {
        "unit": PROMETHEUS_UNIT,
        "package": "prometheus",
        "bin": PROMETHEUS_BIN,
        "dropin": PROMETHEUS_DROPIN,
        "files": [PROMETHEUS_CONFIG, PROMETHEUS_DROPIN],
        "remove": [{"path": PROMETHEUS_CONFIG}, {"path": PROMETHEUS_DROPIN, "reload": True}],
        "runs_on": "scraper",
    },
    {
        "unit": NODE_EXPORTER_UNIT,
        "package": "prometheus-node-exporter",
        "bin": NODE_EXPORTER_BIN,
        "dropin": NODE_EXPORTER_DROPIN,
        "files": [NODE_EXPORTER_DROPIN],
        "remove": [{"path": NODE_EXPORTER_DROPIN, "reload": True}],
        "runs_on": "node_exporter",
    },
)


def scraper(order: Sequence[str], requested: str) -> tuple[str, str | None]:
    """(the scraper's name, problem): ``rlinf_metrics_host`` when it names a Ray node, else the head."""
    requested = (requested or "").strip()
    if not requested:
        return order[0], None
    if requested not in order:
        return order[0], (
            f"rlinf_metrics_host={requested!r} is not a Ray node of this inventory (ray_head, ray_workers); "
            "Prometheus must run on one, since it scrapes the nodes at their Ray addresses: name one, or leave it "
            f"empty for the head ({order[0]})."
        )
    return requested, None


def settings(order: Sequence[str], requested: str, values: Mapping, enabled: bool) -> tuple[dict, list[str]]:
    """The cluster's metrics settings (``plan['cluster']['metrics']``) and the problems found."""
    host, problem = scraper(order, requested)
    out = {
        "enabled": bool(enabled),
        "host": host,
        "prometheus_host": values["rlinf_metrics_prometheus_host"],
        "prometheus_port": values["rlinf_metrics_prometheus_port"],
        "scrape_interval": values["rlinf_metrics_scrape_interval"],
    }
    return out, [problem] if (problem and enabled) else []


def node_settings(node: Mapping, cluster_metrics: Mapping, node_exporter_port: int) -> dict:
    """One node's part: does it run Prometheus, does it run its machine's node exporter."""
    enabled = cluster_metrics["enabled"]
    out = {
        "scraper": enabled and node["name"] == cluster_metrics["host"],
        "node_exporter": enabled and bool(node["machine_owner"]),
        "node_exporter_port": node_exporter_port,
        # Every unit metrics may have run here, for purge (which reads no probe).
        "units": [dict(unit) for unit in UNITS],
        "dashboards_dir": dashboards_dir(node) if node["role"] == "head" else "",
    }
    # The units it runs here: the probe reads their state before site.yml takes them.
    out["services"] = [unit["unit"] for unit in UNITS if out[unit["runs_on"]]]
    return out


def port_problems(nodes: Sequence[Mapping], cluster_metrics: Mapping) -> list[str]:
    """With metrics on: the node exporter's port and Prometheus's must not be a port Ray pins or a
    worker port on their machine, and Ray nodes sharing a machine need their own metrics port."""
    if not cluster_metrics["enabled"]:
        return []
    problems: list[str] = []
    machines: dict[str, list[Mapping]] = {}
    for node in nodes:
        machines.setdefault(node["machine"], []).append(node)
    for machine, members in machines.items():
        ray_ports: dict[int, str] = {}
        for node in members:
            for var, port in firewall._single_ports(node).items():
                ray_ports.setdefault(port, f"{var} of {node['name']}")
        extra = []
        for node in members:
            if node["metrics"]["node_exporter"]:
                extra.append((NODE_EXPORTER_PORT_VAR, node["metrics"]["node_exporter_port"], node["name"]))
            if node["metrics"]["scraper"]:
                extra.append(("rlinf_metrics_prometheus_port", cluster_metrics["prometheus_port"], node["name"]))
        if len(extra) == 2 and extra[0][1] == extra[1][1]:
            problems.append(
                f"host '{extra[0][2]}': {extra[0][0]} and {extra[1][0]} are both {extra[0][1]}; give each its own port."
            )
        for var, port, name in extra:
            if port in ray_ports:
                problems.append(f"host '{name}': {var}={port} is also {ray_ports[port]}; give it another port.")
            for node in members:
                low, high = node["ports"]["ray_min_worker_port"], node["ports"]["ray_max_worker_port"]
                if low <= port <= high:
                    problems.append(
                        f"host '{name}': {var}={port} lies in the worker port range {low}-{high} of {node['name']}; "
                        "move it out of ray_min_worker_port..ray_max_worker_port."
                    )
        seen: dict[int, str] = {}
        for node in members:
            port = node["ports"][METRICS_PORT_VAR]
            if port in seen:
                problems.append(
                    f"hosts {seen[port]}, {node['name']}: both pin {METRICS_PORT_VAR}={port} on machine {machine} "
                    f"(metrics are on); give each Ray node there its own {METRICS_PORT_VAR}."
                )
            seen.setdefault(port, node["name"])
    return problems


def missing_addresses(plan: Mapping) -> list[str]:
    """The Ray nodes this run knows no address of (left out by --limit): Prometheus would lose them."""
    return [name for name in plan["order"] if not plan["nodes"][name].get("ip")]


def scrape_targets(plan: Mapping) -> list[dict]:
    """What Prometheus scrapes, each at a Ray address: ``job``, ``target`` (ip:port) and ``labels``."""
    targets = []
    for name in plan["order"]:
        node = plan["nodes"][name]
        if not node.get("ip"):
            continue
        labels = {"rlinf_node": name, "rlinf_rank": str(node["rank"]), "rlinf_role": node["role"]}
        targets.append(
            {"job": "ray", "target": f"{node['ip']}:{node['ports'][METRICS_PORT_VAR]}", "labels": dict(labels)}
        )
        if node["role"] == "head":
            for component, port in sorted(firewall.HEAD_FIXED_PORTS.items()):
                component_labels = dict(labels, rlinf_component=component.split("_")[0].lower())
                targets.append({"job": "ray_head", "target": f"{node['ip']}:{port}", "labels": component_labels})
        if node["metrics"]["node_exporter"]:
            targets.append(
                {
                    "job": "node",
                    "target": f"{node['ip']}:{node['metrics']['node_exporter_port']}",
                    "labels": {"rlinf_machine": node["machine"], "rlinf_node": name},
                }
            )
    return targets


def _local(address: str) -> str:
    """How Prometheus reaches itself: loopback when it listens on every address."""
    return "127.0.0.1" if address == "0.0.0.0" else address


def prometheus_config(plan: Mapping) -> str:
    """Prometheus's configuration file (YAML): static targets from the plan, one job per kind."""
    settings = plan["cluster"]["metrics"]
    interval = f"{settings['scrape_interval']}s"
    jobs: dict[str, list] = {"ray": [], "ray_head": [], "node": []}
    for target in scrape_targets(plan):
        jobs[target["job"]].append({"targets": [target["target"]], "labels": target["labels"]})
    local = f"{_local(settings['prometheus_host'])}:{settings['prometheus_port']}"
    config = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "scrape_configs": [
            *({"job_name": job, "static_configs": configs} for job, configs in jobs.items() if configs),
            {"job_name": "prometheus", "static_configs": [{"targets": [local]}]},
        ],
    }
    header = f"# {render.MANAGED} (rlinf.cluster.metrics); local edits are overwritten.\n"
    # Through JSON: Ansible's tagged strings (host names) become plain ones YAML can write.
    plain = json.loads(json.dumps(config))
    return header + yaml.safe_dump(plain, sort_keys=False, default_flow_style=False)


def _dropin(role: str, exec_start: Sequence[str], after: str) -> str:
    return "\n".join(
        [
            f"# {render.MANAGED} (rlinf.cluster.metrics); local edits are overwritten.",
            f"# Runs Debian's {role} with rlinf-ansible's settings; the package's files are untouched.",
            "[Unit]",
            f"After={after}",
            "Wants=network-online.target",
            "",
            "[Service]",
            "ExecStart=",
            f"ExecStart={render.systemd_line(exec_start)}",
            "# It binds an address that may appear after it starts (the overlay's, a late NIC): retry.",
            "Restart=always",
            "RestartSec=5",
            "",
        ]
    )


def node_files(node: Mapping, plan: Mapping) -> list[dict]:
    """The metrics files of one node (``owned_files`` items): Prometheus's config and drop-in on
    the scraper, the node exporter's drop-in on its machine's first Ray node; [] with metrics off."""
    settings = plan["cluster"]["metrics"]
    if not settings["enabled"]:
        return []
    after = "network-online.target" + (" easytier.service" if plan["cluster"].get("overlay") else "")
    files = []
    if node["metrics"]["scraper"]:
        listen = f"{settings['prometheus_host']}:{settings['prometheus_port']}"
        exec_start = [
            PROMETHEUS_BIN,
            f"--config.file={PROMETHEUS_CONFIG}",
            f"--web.listen-address={listen}",
            f"--storage.tsdb.path={PROMETHEUS_STORAGE}",
        ]
        files.append({"path": PROMETHEUS_CONFIG, "content": prometheus_config(plan), "mode": "0644"})
        files.append({"path": PROMETHEUS_DROPIN, "content": _dropin("Prometheus", exec_start, after), "mode": "0644"})
    if node["metrics"]["node_exporter"] and node.get("ip"):
        listen = f"{node['ip']}:{node['metrics']['node_exporter_port']}"
        exec_start = [NODE_EXPORTER_BIN, f"--web.listen-address={listen}"]
        files.append(
            {"path": NODE_EXPORTER_DROPIN, "content": _dropin("node exporter", exec_start, after), "mode": "0644"}
        )
    return files


def foreign_unit_problems(node: Mapping, probe: Mapping) -> list[str]:
    """A unit metrics would run here that runs or starts at boot already, without our drop-in: the
    operator's own Prometheus or node exporter, which our drop-in would reconfigure and purge stop."""
    problems = []
    services = probe.get("services") or {}
    paths = probe.get("paths") or {}
    for unit in UNITS:
        state = services.get(unit["unit"])
        if unit["unit"] not in node["metrics"].get("services", []) or not state:
            continue
        dropin_key = next(key for key, path in PATHS.items() if path == unit["dropin"])
        if (paths.get(dropin_key) or {}).get("ours"):
            continue
        if state.get("active") in ("active", "activating", "reloading") or state.get("enabled"):
            problems.append(
                f"{unit['unit']}.service already runs here (or starts at boot) and rlinf-ansible did not configure "
                f"it (no {unit['dropin']} of ours); rlinf_metrics_enabled would replace its settings and purge "
                f"would stop it: keep it and turn rlinf_metrics_enabled off, or stop and disable it first "
                f"(systemctl disable --now {unit['unit']}) to let rlinf-ansible run it"
                + (", or put Prometheus on another node (rlinf_metrics_host)." if unit["runs_on"] == "scraper" else ".")
            )
    return problems


def dashboards_dir(node: Mapping) -> str:
    """Where the head's Ray writes its Grafana dashboards."""
    return f"{node['paths']['temp_dir']}/{DASHBOARDS_SUBDIR}"


def node_resolved(node: Mapping, plan: Mapping, probe: Mapping) -> dict:
    """What the metrics role does on one probed node: ``metrics_files`` to write, ``metrics_units``
    to run (each with its files), ``metrics_leftovers``: units it ran before and must stop now (metrics
    turned off, or rlinf_metrics_host moved), found by the files of ours the probe saw."""
    files = node_files(node, plan)
    wanted = {f["path"] for f in files}
    running = [unit for unit in UNITS if node["metrics"][unit["runs_on"]]]
    seen = {info.get("path") for key, info in (probe.get("paths") or {}).items() if key in PATHS and info.get("exists")}
    leftovers = [
        dict(unit)
        for unit in UNITS
        if unit not in running and any(path in seen and path not in wanted for path in unit["files"])
    ]
    return {
        "metrics_files": files,
        "metrics_units": [dict(unit) for unit in running],
        "metrics_leftovers": leftovers,
    }
