"""Compare what a Ray cluster reports with what the inventory expects.

Pure logic, no ``ray`` import: the ``ray_cluster_check`` module feeds it ``ray.nodes()``
records and the results of one probe (an actor) per node; the unit tests feed it fabricated
data. Every problem is one sentence naming the host, its rank and the fix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

from ansible_collections.rlinf.cluster.plugins.module_utils.expected_nodes import identities, shared_identity_problems

RANK_KEY = "RLINF_NODE_RANK"
DEFAULT_ENV_KEYS = ("RLINF_NODE_RANK", "RLINF_COMM_NET_DEVICES")
# Ray's own resources: never "custom" (robots, cameras, ...).
BUILTIN_RESOURCES = frozenset({"CPU", "GPU", "memory", "object_store_memory"})
BUILTIN_PREFIXES = ("node:", "accelerator_type:")
# Where each expected resource comes from in the inventory, for the fix sentences.
RESOURCE_SOURCES = {"CPU": "ray_num_cpus", "GPU": "ray_num_gpus or rlinf_gpus_per_node"}
EPSILON = 1e-6


class ExpectedNodesError(ValueError):
    """The expected node list itself is unusable; carries every problem."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


# --------------------------------------------------------------------------- helpers


def is_builtin_resource(key: str) -> bool:
    return key in BUILTIN_RESOURCES or key.startswith(BUILTIN_PREFIXES)


def _number(value) -> float | None:
    """A resource amount as a float, or None when it is not a number."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(number) or math.isinf(number):
        return None
    return number


def format_amount(value) -> str:
    """2.0 -> '2', 0.5 -> '0.5'; anything else as str."""
    number = _number(value)
    if number is None:
        return str(value)
    if abs(number - round(number)) < EPSILON:
        return str(round(number))
    return f"{number:g}"


def short_python_version(version: str | None) -> str | None:
    """'3.11.2 (main, ...) [GCC 12.2.0]' -> '3.11.2'."""
    if not version:
        return None
    match = re.match(r"\s*(\d+\.\d+(?:\.\d+)?\S*)", str(version))
    return match.group(1) if match else str(version).split()[0]


def _label(node: Mapping) -> str:
    """'host 'w1' (rank 1, 10.0.0.2)' for an expected node."""
    return f"host '{node['name']}' (rank {node['rank']}, {node['ip']})"


def _join(items: Iterable[str]) -> str:
    return ", ".join(items)


# --------------------------------------------------------------------------- inputs


def normalize_expected(expected: Sequence[Mapping]) -> list[dict]:
    """Validate and normalise the expected nodes; sorted by rank.

    Each item: name, rank, ip, optional resources {key: amount}, optional env {KEY: value}.
    Raises ExpectedNodesError listing every problem.
    """
    found, problems = identities(expected)
    nodes: list[dict] = []
    for item, name, rank in found:
        # No IP: the node keeps no record of its Ray address (never deployed, or unreachable);
        # it is reported missing, the others are still checked.
        ip = str(item.get("ip") or "").strip()
        resources: dict[str, float] = {}
        for key, amount in dict(item.get("resources") or {}).items():
            if amount is None or amount == "":
                continue
            number = _number(amount)
            if number is None or number < 0:
                source = RESOURCE_SOURCES.get(str(key), "ray_resources")
                problems.append(
                    f"host '{name}': expected resource {key}={amount!r} is not a non-negative number; "
                    f"fix {source} in the inventory."
                )
                continue
            resources[str(key)] = number
        env = {str(k): str(v) for k, v in dict(item.get("env") or {}).items() if v is not None}
        nodes.append(
            {
                "name": name,
                "rank": rank,
                "ip": ip,
                "temp_dir": str(item.get("temp_dir") or "") or None,
                "python": str(item.get("python") or "") or None,
                "resources": resources,
                "env": env,
            }
        )

    problems.extend(shared_identity_problems(nodes))
    if problems:
        raise ExpectedNodesError(problems)
    return sorted(nodes, key=lambda node: node["rank"])


def normalize_totals(totals: Mapping | None) -> dict[str, float]:
    """Cluster-wide minimums {resource: amount}; raises ExpectedNodesError on non-numbers."""
    out: dict[str, float] = {}
    problems = []
    for key, amount in dict(totals or {}).items():
        if amount is None or amount == "":
            continue
        number = _number(amount)
        if number is None or number < 0:
            problems.append(
                f"expected total {key}={amount!r} is not a non-negative number; fix ray_check_expected_totals."
            )
            continue
        out[str(key)] = number
    if problems:
        raise ExpectedNodesError(problems)
    return out


# --------------------------------------------------------------------------- ray.nodes()


def normalize_node(raw: Mapping) -> dict:
    """One ``ray.nodes()`` record as a plain dict."""
    alive = raw.get("Alive")
    if alive is None:
        alive = str(raw.get("State", "")).upper() == "ALIVE"
    resources = {}
    for key, amount in dict(raw.get("Resources") or {}).items():
        number = _number(amount)
        resources[str(key)] = number if number is not None else amount
    port = raw.get("NodeManagerPort")
    return {
        "node_id": str(raw.get("NodeID") or ""),
        "ip": str(raw.get("NodeManagerAddress") or ""),
        "port": int(port) if _number(port) is not None else None,
        "hostname": str(raw.get("NodeManagerHostname") or ""),
        "state": "ALIVE" if alive else "DEAD",
        "is_head": bool((raw.get("Resources") or {}).get("node:__internal_head__")),
        # Under the node's --temp-dir: tells apart several Ray nodes on one machine.
        "socket": str(raw.get("RayletSocketName") or raw.get("ObjectStoreSocketName") or ""),
        "resources": resources,
    }


def alive_nodes(raw_nodes: Iterable[Mapping]) -> list[dict]:
    """ALIVE nodes, one per NodeManagerAddress+port (DEAD entries dropped), sorted by address."""
    seen: dict[tuple, dict] = {}
    for raw in raw_nodes or []:
        node = normalize_node(raw)
        if node["state"] != "ALIVE":
            continue
        seen.setdefault((node["ip"], node["port"]), node)
    return sorted(seen.values(), key=lambda n: (n["ip"], n["port"] or 0, n["node_id"]))


def dead_ips(raw_nodes: Iterable[Mapping]) -> set[str]:
    return {node["ip"] for node in map(normalize_node, raw_nodes or []) if node["state"] == "DEAD"}


def _in_temp_dir(node: Mapping, temp_dir: str | None) -> bool:
    if not temp_dir or not node.get("socket"):
        return False
    return str(node["socket"]).startswith(str(temp_dir).rstrip("/") + "/")


def match_nodes(
    expected: Sequence[Mapping], raw_nodes: Iterable[Mapping], probes: Mapping[str, Mapping] | None = None
) -> dict:
    """Pair expected nodes with ALIVE Ray nodes by IP.

    Several Ray nodes may share a machine (one IP, each with its own ray_temp_dir). On one
    IP an expected node takes, in this order of preference: the node whose raylet socket
    lies under its ``temp_dir``, the node whose probe read its rank, the next node left.
    Returns {"matched": {name: node}, "missing": [expected...], "extra": [node...],
    "dead": {name: True}} where ``dead`` marks missing hosts that Ray lists as DEAD.
    ALIVE nodes left over on an expected IP are extra.
    """
    raw_nodes = list(raw_nodes or [])
    probes = probes or {}
    alive = alive_nodes(raw_nodes)
    dead = dead_ips(raw_nodes)
    by_ip: dict[str, list[dict]] = {}
    for node in alive:
        by_ip.setdefault(node["ip"], []).append(node)
    matched: dict[str, dict] = {}
    used: set[str] = set()

    def take(exp: Mapping, accept) -> None:
        if exp["name"] in matched:
            return
        for node in by_ip.get(exp["ip"], []):
            if node["node_id"] not in used and accept(node):
                matched[exp["name"]] = node
                used.add(node["node_id"])
                return

    def rank_ok(node: Mapping, exp: Mapping) -> bool:
        return str(((probes.get(node["node_id"]) or {}).get("env") or {}).get(RANK_KEY)) == str(exp["rank"])

    def probe_ok(node: Mapping, exp: Mapping) -> bool:
        probe = probes.get(node["node_id"])
        return bool(probe) and not probe.get("error")

    def temp_ok(node: Mapping, exp: Mapping) -> bool:
        return _in_temp_dir(node, exp.get("temp_dir"))

    # Best evidence first: a node that runs tasks and reads this host's rank beats a stale
    # entry of a restarted raylet (still ALIVE for a while, runs nothing) on the same IP.
    preferences = [
        lambda n, e: temp_ok(n, e) and rank_ok(n, e),
        rank_ok,
        lambda n, e: temp_ok(n, e) and probe_ok(n, e),
        probe_ok,
        temp_ok,
        lambda n, e: True,
    ]
    for accept in preferences:
        for exp in expected:
            take(exp, lambda node, exp=exp, accept=accept: accept(node, exp))
    missing = [exp for exp in expected if exp["name"] not in matched]
    extra = [node for node in alive if node["node_id"] not in used]
    return {
        "matched": matched,
        "missing": missing,
        "extra": extra,
        "dead": {exp["name"]: True for exp in missing if exp["ip"] in dead},
    }


# --------------------------------------------------------------------------- evaluation


def _reference(values: Sequence[tuple[Mapping, str | None]]):
    """The value the others must equal: the one on the lowest probed rank (the head's)."""
    present = [(node, value) for node, value in values if value]
    if not present:
        return None, None
    node, value = min(present, key=lambda pair: pair[0]["rank"])
    return node, value


def _consistency_problems(entries, field: str, what: str, fix: str) -> list[str]:
    values = [(exp, probe.get(field)) for exp, probe in entries]
    ref_node, ref_value = _reference(values)
    problems = []
    if ref_node is None:
        return problems
    for exp, value in values:
        if value and value != ref_value:
            problems.append(
                f"{_label(exp)}: {what} is {value} but {ref_value} on '{ref_node['name']}' "
                f"(rank {ref_node['rank']}); {fix}"
            )
    return problems


def _custom_owner_text(owners: Sequence[str]) -> str:
    return f" (found on {_join(repr(o) for o in owners)} instead)" if owners else ""


def evaluate(
    expected: Sequence[Mapping],
    raw_nodes: Iterable[Mapping],
    probes: Mapping[str, Mapping] | None = None,
    address: str = "",
    env_keys: Sequence[str] = DEFAULT_ENV_KEYS,
    probed: bool = True,
    expected_totals: Mapping[str, float] | None = None,
    ray_version: str | None = None,
) -> dict:
    """Compare the cluster with the expected nodes.

    With ``ray_version`` (the pin), every probed node must run exactly that Ray: after a pin
    changes, a node still on the old one (not restarted, or its install failed) is named.

    ``expected`` must come from normalize_expected(). ``probes`` maps a node_id to the
    result of the task pinned to that node: {"env", "python", "python_executable",
    "ray_version"} or {"error": "..."}; with ``probed`` a matched node with no entry is a
    problem, without it (membership and resources only) it is not.
    Returns {"ok", "nodes", "missing", "extra", "problems", "summary", "totals"}.
    """
    probes = dict(probes or {})
    raw_nodes = list(raw_nodes or [])
    expected_totals = normalize_totals(expected_totals)
    short_keys: set[str] = set()
    where = f" at {address}" if address else ""
    membership = match_nodes(expected, raw_nodes, probes)
    matched, missing, extra = membership["matched"], membership["missing"], membership["extra"]
    problems: list[str] = []

    # One report entry per expected node, in rank order.
    nodes: list[dict] = []
    probed_entries: list[tuple[dict, dict]] = []
    for exp in expected:
        node = matched.get(exp["name"])
        probe = probes.get(node["node_id"], {}) if node else {}
        entry = {
            "name": exp["name"],
            "rank": exp["rank"],
            "ip": exp["ip"],
            "state": node["state"] if node else ("DEAD" if exp["name"] in membership["dead"] else "MISSING"),
            "node_id": node["node_id"] if node else None,
            "hostname": node["hostname"] if node else None,
            "is_head": node["is_head"] if node else False,
            "resources": _visible_resources(node["resources"]) if node else {},
            "custom_resources": _custom_resources(node["resources"]) if node else {},
            "expected_resources": dict(exp.get("resources") or {}),
            "env": dict(probe.get("env") or {}),
            "python": short_python_version(probe.get("python")),
            "python_build": probe.get("python"),
            "python_executable": probe.get("python_executable"),
            "ray_version": probe.get("ray_version"),
            "problems": [],
        }
        nodes.append(entry)
        if node and probe and not probe.get("error"):
            probed_entries.append((exp, {**probe, "python": entry["python"]}))

    by_name = {entry["name"]: entry for entry in nodes}

    def add(name: str | None, sentence: str) -> None:
        problems.append(sentence)
        if name in by_name:
            by_name[name]["problems"].append(sentence)

    # Membership.
    for exp in missing:
        if not exp["ip"]:
            add(
                exp["name"],
                f"{_label(exp)}: its Ray address is unknown: the node keeps no record of it under "
                "/etc/rlinf/state (never brought up by site.yml, or unreachable now); run site.yml.",
            )
            continue
        seen = "Ray lists it as DEAD" if exp["name"] in membership["dead"] else "it never joined"
        neighbours = [name for name, node in matched.items() if node["ip"] == exp["ip"]]
        if neighbours:
            add(
                exp["name"],
                f"{_label(exp)}: no ALIVE Ray node of its own in the cluster{where}: the Ray node on "
                f"{exp['ip']} belongs to {_join(repr(n) for n in neighbours)} ({seen}); start Ray for "
                f"'{exp['name']}' (re-run site.yml) with its own ray_temp_dir on that machine.",
            )
            continue
        add(
            exp["name"],
            f"{_label(exp)}: no ALIVE Ray node with this IP in the cluster{where} ({seen}); "
            f"start Ray on '{exp['name']}' (re-run site.yml or restart its Ray unit) and check that it "
            f"reaches the head{where}.",
        )
    extra_entries = []
    for node in extra:
        probe = probes.get(node["node_id"], {})
        rank = (probe.get("env") or {}).get(RANK_KEY)
        extra_entries.append(
            {
                "name": None,
                "rank": rank,
                "ip": node["ip"],
                "port": node["port"],
                "state": node["state"],
                "node_id": node["node_id"],
                "hostname": node["hostname"],
                "resources": _visible_resources(node["resources"]),
                "custom_resources": _custom_resources(node["resources"]),
                "env": dict(probe.get("env") or {}),
                "python": short_python_version(probe.get("python")),
                "python_executable": probe.get("python_executable"),
                "ray_version": probe.get("ray_version"),
            }
        )
        rank_text = f", {RANK_KEY}={rank}" if rank is not None else ""
        neighbours = [name for name, other in matched.items() if other["ip"] == node["ip"]]
        if neighbours and probe.get("error"):
            add(
                None,
                f"Ray node {node['ip']}:{node['port']} (node_id {node['node_id'][:12]}) is still listed ALIVE "
                f"in the cluster{where} next to the node of {_join(repr(n) for n in neighbours)} but runs no "
                "tasks: a stale entry of a restarted raylet, which RLinf would count as a node; the GCS marks "
                "it DEAD within about a minute: run status again then, and restart Ray on "
                f"{_join(repr(n) for n in neighbours)} if it stays.",
            )
            continue
        add(
            None,
            f"Ray node {node['ip']}:{node['port']} (hostname '{node['hostname']}', node_id "
            f"{node['node_id'][:12]}{rank_text}) is ALIVE in the cluster{where} but is not in the "
            f"inventory: {len(matched) + len(extra)} ALIVE nodes for {len(expected)} expected, and RLinf "
            "would silently use only some of them; stop Ray on that machine or add it to 'ray_workers'.",
        )

    # Probes: the task pinned to each node.
    for exp in expected:
        node = matched.get(exp["name"])
        if not node:
            continue
        probe = probes.get(node["node_id"])
        if probe is None and not probed:
            continue
        if probe is None:
            add(
                exp["name"],
                f"{_label(exp)}: no task was run on this node, so its Ray worker environment is unknown; "
                "run the check with probe enabled.",
            )
            continue
        if probe.get("error"):
            add(
                exp["name"],
                f"{_label(exp)}: a task pinned to this node failed: {probe['error']}; the node is ALIVE but "
                f"cannot run work: read the raylet log on '{exp['name']}' (journalctl -u rlinf-ray, "
                "/tmp/ray/session_latest/logs) and restart its Ray.",
            )
            continue
        env = probe.get("env") or {}
        if RANK_KEY in env_keys:
            actual = env.get(RANK_KEY)
            if actual is None or str(actual).strip() == "":
                add(
                    exp["name"],
                    f"{_label(exp)}: {RANK_KEY} is not set in this node's Ray worker environment (RLinf "
                    f"reads it there); put {RANK_KEY}={exp['rank']} in the env file on '{exp['name']}' and "
                    "restart its Ray (Ray reads its environment only at ray start).",
                )
            elif str(actual).strip() != str(exp["rank"]):
                add(
                    exp["name"],
                    f"{_label(exp)}: the Ray workers on this node read {RANK_KEY}={actual} but the "
                    f"inventory gives rank {exp['rank']}; set {RANK_KEY}={exp['rank']} in the env file on "
                    f"'{exp['name']}' and restart its Ray (re-run site.yml).",
                )
        for key, want in sorted((exp.get("env") or {}).items()):
            got = env.get(key)
            if got != want:
                add(
                    exp["name"],
                    f"{_label(exp)}: the Ray workers on this node read {key}={got!r} but the inventory "
                    f"expects {want!r}; fix the env file on '{exp['name']}' and restart its Ray "
                    "(re-run site.yml).",
                )

    # Versions: the pinned Ray on every probed node, and identical everywhere (extra nodes included).
    if ray_version:
        for exp, probe in probed_entries:
            running = probe.get("ray_version")
            if running and running != ray_version:
                add(
                    exp["name"],
                    f"{_label(exp)}: runs Ray {running} but rlinf_ray_version pins {ray_version}; re-run site.yml "
                    "(it installs the pin and restarts Ray there).",
                )
    for sentence in _consistency_problems(
        probed_entries,
        "ray_version",
        "Ray",
        "install the same Ray version on every node (re-run site.yml) and restart Ray there.",
    ):
        add(_name_of(sentence), sentence)
    for sentence in _consistency_problems(
        probed_entries,
        "python",
        "Python",
        "Ray needs the same Python (patch level included) on every node: rebuild the venv on that "
        "node from the same Python and restart Ray.",
    ):
        add(_name_of(sentence), sentence)
    # Each node's own planned interpreter when the plan says it (nodes may have venvs of their own, as
    # RLinf's single-machine compute + control layout does: RLinf only warns), else all the same.
    for exp, probe in probed_entries:
        running = probe.get("python_executable")
        if exp.get("python") and running and running != exp["python"]:
            add(
                exp["name"],
                f"{_label(exp)}: the Ray worker interpreter is {running} but the plan starts Ray with "
                f"{exp['python']} (rlinf_venv_dir); re-run site.yml so the unit starts Ray from it.",
            )
    for sentence in _consistency_problems(
        [(exp, probe) for exp, probe in probed_entries if not exp.get("python")],
        "python_executable",
        "the Ray worker interpreter",
        "RLinf warns when interpreters differ: start Ray from the same venv path (rlinf_venv_dir) on every node.",
    ):
        add(_name_of(sentence), sentence)

    # Resources: per node at least the expected amount; custom ones on the right node.
    custom_declared: dict[str, list[str]] = {}
    for exp in expected:
        for key in exp.get("resources") or {}:
            if not is_builtin_resource(key):
                custom_declared.setdefault(key, []).append(exp["name"])
    for exp in expected:
        node = matched.get(exp["name"])
        if not node:
            continue
        cpus = _number(node["resources"].get("CPU")) or 0.0
        if exp["rank"] == 0 and cpus < 1 and "CPU" not in (exp.get("resources") or {}):
            # RLinf pins its managers to rank 0 and each asks 1 CPU: it would wait forever.
            add(
                exp["name"],
                f"{_label(exp)}: Ray reports CPU={format_amount(cpus)} on this node, rank 0, where RLinf "
                "places its managers (1 CPU each): RLinf would wait forever; start its Ray with CPUs "
                "(re-run site.yml: ray_num_cpus unset or >= 1).",
            )
        for key, want in sorted((exp.get("resources") or {}).items()):
            # Ray leaves a resource of 0 out of the node's map (ray_num_cpus: 0 has no CPU key).
            got = _number(node["resources"].get(key))
            if (got or 0.0) + EPSILON >= want:
                continue
            short_keys.add(key)
            if is_builtin_resource(key):
                source = RESOURCE_SOURCES.get(key, "ray_resources")
                add(
                    exp["name"],
                    f"{_label(exp)}: Ray reports {key}={format_amount(got or 0)} on this node but the "
                    f"inventory expects at least {format_amount(want)} ({source}); pass it to ray start "
                    f"on '{exp['name']}' (re-run site.yml) or lower {source}.",
                )
            else:
                owners = [
                    name
                    for name, other in matched.items()
                    if name != exp["name"] and _number(other["resources"].get(key))
                ]
                have = f"{key}={format_amount(got)}" if got is not None else f"no '{key}'"
                add(
                    exp["name"],
                    f"{_label(exp)}: custom resource '{key}' (ray_resources expects "
                    f"{format_amount(want)}) is missing on this node: Ray reports {have}"
                    f"{_custom_owner_text(owners)}; pass --resources to ray start on "
                    f"'{exp['name']}' (re-run site.yml).",
                )
        for key, owners in sorted(custom_declared.items()):
            if exp["name"] in owners:
                continue
            got = _number(node["resources"].get(key))
            if got:
                add(
                    exp["name"],
                    f"{_label(exp)}: Ray reports custom resource {key}={format_amount(got)} on this node "
                    f"but the inventory declares '{key}' only on {_join(owners)}; remove it from ray start "
                    f"on '{exp['name']}' (ray_resources) and restart its Ray.",
                )

    # Totals: an explicit cluster-wide minimum (expected_totals, like check_ray.sh's N but
    # numeric and "at least"), else the sum of the per-node amounts; the latter is only
    # reported when no per-node sentence already explains the shortfall.
    totals: dict[str, dict] = {}
    for key in sorted({"CPU", "GPU", *expected_totals}):
        declared = [exp for exp in expected if key in (exp.get("resources") or {})]
        actual = sum(_number(node["resources"].get(key)) or 0.0 for node in matched.values())
        explicit = key in expected_totals
        want = expected_totals[key] if explicit else (sum(e["resources"][key] for e in declared) or None)
        totals[key] = {"actual": actual, "expected": want}
        if want is None or actual + EPSILON >= want or (not explicit and key in short_keys):
            continue
        if explicit:
            source = "ray_check_expected_totals"
        else:
            source = f"{RESOURCE_SOURCES.get(key, 'ray_resources')} summed over {_join(e['name'] for e in declared)}"
        add(
            None,
            f"cluster{where}: Ray reports {format_amount(actual)} {key} in total on the inventory's ALIVE "
            f"nodes but at least {format_amount(want)} are expected ({source}); add nodes or resources, "
            "or lower the expectation.",
        )

    # Keep sentences unique, in order.
    problems = list(dict.fromkeys(problems))
    for entry in nodes:
        entry["problems"] = list(dict.fromkeys(entry["problems"]))
    return {
        "ok": not problems,
        "nodes": nodes,
        "missing": [exp["name"] for exp in missing],
        "extra": extra_entries,
        "problems": problems,
        "totals": totals,
        "summary": summarize(nodes, extra_entries, problems, address, totals),
    }


def _name_of(sentence: str) -> str | None:
    match = re.match(r"host '([^']+)'", sentence)
    return match.group(1) if match else None


def _visible_resources(resources: Mapping) -> dict:
    return {k: v for k, v in sorted(resources.items()) if not k.startswith("node:")}


def _custom_resources(resources: Mapping) -> dict:
    return {k: v for k, v in sorted(resources.items()) if not is_builtin_resource(k)}


def summarize(nodes, extra, problems, address="", totals=None) -> str:
    alive = sum(1 for n in nodes if n["state"] == "ALIVE")
    where = f" at {address}" if address else ""
    if problems:
        missing = sum(1 for n in nodes if n["state"] != "ALIVE")
        return (
            f"FAILED: {alive}/{len(nodes)} expected nodes ALIVE{where}, {missing} missing, "
            f"{len(extra)} extra, {len(problems)} problem{'s' if len(problems) != 1 else ''}"
        )
    rays = sorted({n["ray_version"] for n in nodes if n["ray_version"]})
    pythons = sorted({n["python"] for n in nodes if n["python"]})
    ranks = [n["rank"] for n in nodes]
    rank_text = f"ranks {min(ranks)}-{max(ranks)}" if ranks else "no ranks"
    parts = [f"OK: {alive}/{len(nodes)} nodes ALIVE{where}", f"{rank_text} match the inventory"]
    if rays:
        parts.append(f"Ray {_join(rays)}")
    if pythons:
        parts.append(f"Python {_join(pythons)}")
    if totals:
        parts.append(
            f"{format_amount(totals.get('CPU', {}).get('actual', 0))} CPUs, "
            f"{format_amount(totals.get('GPU', {}).get('actual', 0))} GPUs"
        )
    return ", ".join(parts)
