"""Is the cluster ready to train: the pure half of the ``ray_readiness`` module.

No ``ray`` or ``torch`` import here. The module runs one actor per node, which reports
what it sees (environment, interfaces, torch, timings); these functions decide what that
means: which socket interface RLinf's workers would use, whether every node joined the
collective group and computed the right sums, which node cannot reach which peer, and
whether RLinf's own scheduler put every rank where the inventory says. Every problem is
one sentence naming the host, its rank and the fix.
"""

from __future__ import annotations

import ipaddress
import statistics
from collections.abc import Mapping, Sequence

from ansible_collections.rlinf.cluster.plugins.module_utils.expected_nodes import identities, shared_identity_problems

COMM_KEY = "RLINF_COMM_NET_DEVICES"
GLOO_KEY = "GLOO_SOCKET_IFNAME"
NCCL_KEY = "NCCL_SOCKET_IFNAME"
RANK_KEY = "RLINF_NODE_RANK"
# What the actor reads from its node's environment (the one `ray start` froze).
ENV_KEYS = (COMM_KEY, GLOO_KEY, NCCL_KEY, RANK_KEY)
DEFAULT_SIZES = (1024, 1048576, 16777216)
FLOAT32_BYTES = 4
TCP_FIX = (
    "allow new TCP connections between the nodes' collective addresses on every port (gloo and "
    "NCCL use random ports, not Ray's) or fix the route on that interface"
)


class ReadinessInputError(ValueError):
    """The expected node list is unusable; carries every problem."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


# --------------------------------------------------------------------------- helpers


def label(node: Mapping) -> str:
    """host 'w1' (rank 1)"""
    return f"host '{node['name']}' (rank {node['rank']})"


def human_bytes(size: int) -> str:
    """1024 -> '1 KiB', 16777216 -> '16 MiB', 1000 -> '1000 B'."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} B"


def format_seconds(seconds: float | None) -> str:
    """A latency for the table: '420 us', '3.1 ms', '1.20 s'."""
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def format_rate(gbytes_per_s: float | None) -> str:
    if gbytes_per_s is None:
        return "-"
    if gbytes_per_s < 0.1:
        return f"{gbytes_per_s * 1000:.1f} MB/s"
    return f"{gbytes_per_s:.2f} GB/s"


def rank_ranges(ranks: Sequence[int]) -> str:
    """[0, 1, 2, 5] -> '0-2, 5'."""
    out: list[str] = []
    ordered = sorted(set(int(r) for r in ranks))
    start = prev = None
    for rank in [*ordered, None]:
        if start is None:
            start = prev = rank
        elif rank is not None and rank == prev + 1:
            prev = rank
        else:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = rank
    return ", ".join(out)


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


# --------------------------------------------------------------------------- inputs


def normalize_expected(expected: Sequence[Mapping]) -> list[dict]:
    """Validate the expected nodes (name, rank, ip, optional comm_device, temp_dir); sorted by rank."""
    found, problems = identities(expected)
    nodes: list[dict] = []
    for item, name, rank in found:
        ip = str(item.get("ip") or "").strip()
        if not ip:
            problems.append(
                f"host '{name}' (rank {rank}): no Ray address is known (the node keeps no record of it): run "
                "site.yml, which records it, or set ray_node_ip."
            )
            continue
        comm_device = item.get("comm_device")
        nodes.append(
            {
                "name": name,
                "rank": rank,
                "ip": ip,
                "comm_device": str(comm_device).strip() if comm_device else "",
                "temp_dir": str(item.get("temp_dir") or "") or None,
                "write_dirs": [str(d) for d in item.get("write_dirs") or []],
            }
        )
    problems.extend(shared_identity_problems(nodes))
    if not nodes and not problems:
        problems.append("expected_nodes is empty: pass every node of the inventory (name, rank, ip).")
    if problems:
        raise ReadinessInputError(problems)
    return sorted(nodes, key=lambda n: n["rank"])


def normalize_sizes(sizes: Sequence) -> list[int]:
    """All-reduce sizes in bytes, whole float32 elements, ascending, no duplicates."""
    out: set[int] = set()
    problems = []
    for size in sizes or []:
        try:
            number = int(size)
        except (TypeError, ValueError):
            number = 0
        if number < FLOAT32_BYTES:
            problems.append(f"size {size!r} is not a whole number of bytes >= {FLOAT32_BYTES}; fix readiness_sizes.")
            continue
        out.add(number - number % FLOAT32_BYTES)
    if problems:
        raise ReadinessInputError(problems)
    return sorted(out) or list(DEFAULT_SIZES)


# --------------------------------------------------------------------------- the socket interface


def ccl_socket_var(cuda_devices: int) -> str:
    """The collective library's interface variable RLinf sets: NCCL's on a CUDA node, else gloo's."""
    return NCCL_KEY if cuda_devices and cuda_devices > 0 else GLOO_KEY


def socket_env(env: Mapping, ccl_var: str = GLOO_KEY) -> dict:
    """What RLinf's ``Worker._setup_comm_envs`` does with a node's environment.

    ``RLINF_COMM_NET_DEVICES``, when set (even empty), is copied into ``GLOO_SOCKET_IFNAME``
    and then into the accelerator's variable (``NCCL_SOCKET_IFNAME`` on NVIDIA), each only
    when that variable is unset; a variable already set to something else is kept and
    RLinf logs a warning. Returns the variables to set, the resulting values and those
    warnings.
    """
    merged = {k: v for k, v in dict(env).items() if v is not None}
    devices = merged.get(COMM_KEY)
    updates: dict[str, str] = {}
    warnings: list[str] = []
    if devices is not None:
        for var in (GLOO_KEY, ccl_var):
            if merged.get(var) is None:
                merged[var] = updates[var] = devices
            elif merged[var] != devices:
                warnings.append(
                    f"{var} is already set to {merged[var]!r} in Ray's environment, so RLinf ignores "
                    f"{COMM_KEY}={devices!r} and the collectives use {merged[var]!r}"
                )
    return {
        "updates": updates,
        "gloo_ifname": merged.get(GLOO_KEY),
        "ccl_var": ccl_var,
        "ccl_ifname": merged.get(ccl_var),
        "comm_devices": devices,
        "warnings": warnings,
    }


def interface_names(value: str | None) -> list[str]:
    """GLOO_SOCKET_IFNAME may list several interfaces: 'eth0,eth1' -> ['eth0', 'eth1']."""
    return [part.strip() for part in str(value or "").split(",") if part.strip()]


def collective_address(gloo_ifname: str | None, interfaces: Mapping, hostname_addresses: Sequence[str]) -> dict:
    """The address gloo binds to on a node, and why.

    With ``GLOO_SOCKET_IFNAME`` set: the first IPv4 of the first interface it names. Unset:
    what the hostname resolves to (gloo's default), loopback being useless to the peers.
    ``interfaces`` maps each interface to its IPv4 addresses. Returns interface, address,
    source and a problem sentence (None when usable).
    """
    if gloo_ifname is not None:
        names = interface_names(gloo_ifname)
        if not names:
            return {
                "interface": "",
                "address": None,
                "source": GLOO_KEY,
                "problem": f"{GLOO_KEY} is set but empty, so gloo cannot pick an interface; set "
                "rlinf_comm_net_device to the NIC the nodes reach each other on",
            }
        first = names[0]
        if first not in interfaces:
            known = ", ".join(sorted(interfaces)) or "none"
            return {
                "interface": gloo_ifname,
                "address": None,
                "source": GLOO_KEY,
                "problem": f"interface {first!r} ({GLOO_KEY}) does not exist on this node (it has {known}); "
                "fix rlinf_comm_net_device for this host and re-run site.yml",
            }
        addresses = [a for a in interfaces.get(first) or [] if a]
        if not addresses:
            return {
                "interface": gloo_ifname,
                "address": None,
                "source": GLOO_KEY,
                "problem": f"interface {first!r} ({GLOO_KEY}) has no IPv4 address; bring it up or fix "
                "rlinf_comm_net_device",
            }
        return {"interface": gloo_ifname, "address": addresses[0], "source": GLOO_KEY, "problem": None}
    usable = [a for a in hostname_addresses or [] if a and not _is_loopback(a)]
    if usable:
        owner = next((name for name, addrs in interfaces.items() if usable[0] in (addrs or [])), "")
        return {"interface": owner, "address": usable[0], "source": "hostname", "problem": None}
    seen = ", ".join(hostname_addresses or []) or "nothing"
    return {
        "interface": "",
        "address": None,
        "source": "hostname",
        "problem": f"{COMM_KEY} and {GLOO_KEY} are unset and the hostname resolves to {seen}, so gloo "
        "would bind to loopback, which no peer reaches; set rlinf_comm_net_device for this host and re-run site.yml",
    }


def plan_node(expected: Mapping, facts: Mapping) -> dict:
    """One node's interface decision from its actor's facts, with its problems."""
    env = dict(facts.get("env") or {})
    cuda = int(facts.get("cuda_devices") or 0)
    sock = socket_env(env, ccl_socket_var(cuda))
    where = collective_address(
        sock["gloo_ifname"], facts.get("interfaces") or {}, facts.get("hostname_addresses") or []
    )
    problems = []
    actual = sock["comm_devices"] or ""
    if expected.get("comm_device") is not None and actual != (expected.get("comm_device") or ""):
        want = expected.get("comm_device") or "(unset)"
        problems.append(
            f"{label(expected)}: Ray's environment has {COMM_KEY}={actual or '(unset)'} but the inventory "
            f"says {want}; re-run site.yml (Ray freezes its environment at start, so it restarts there)."
        )
    if where["problem"]:
        problems.append(f"{label(expected)}: {where['problem']}.")
    return {
        "updates": sock["updates"],
        "interface": where["interface"],
        "address": where["address"],
        "source": where["source"],
        "ccl_var": sock["ccl_var"],
        "ccl_ifname": sock["ccl_ifname"],
        "warnings": [f"{label(expected)}: {w}." for w in sock["warnings"]],
        "problems": problems,
    }


# --------------------------------------------------------------------------- all-reduce figures


def expected_sum(world: int) -> float:
    """Every rank contributes rank + 1: the sum of 1..world."""
    return world * (world + 1) / 2


def size_figures(size: int, seconds: Sequence[float], world: int) -> dict:
    """Median time of one size and the bandwidths nccl-tests would print for it.

    algbw = bytes / time; busbw = algbw * 2 (n - 1) / n, what each link carried in a ring
    all-reduce, comparable across cluster sizes and with the NIC's speed.
    """
    times = [float(t) for t in seconds if t is not None and float(t) > 0]
    if not times:
        return {"bytes": size, "seconds": None, "algbw_gbps": None, "busbw_gbps": None}
    median = statistics.median(times)
    algbw = size / median / 1e9
    busbw = algbw * 2 * (world - 1) / world if world > 1 else algbw
    return {
        "bytes": size,
        "seconds": median,
        "algbw_gbps": round(algbw, 4),
        "busbw_gbps": round(busbw, 4),
        "runs": len(times),
    }


def node_group_result(expected: Mapping, result: Mapping | None, world: int, backend: str, wait_s: float) -> dict:
    """One node's group outcome: joined, sums right, figures, and its problems."""
    out = {"joined": False, "ok": False, "latency_s": None, "busbw_gbps": None, "sizes": [], "error": None}
    problems: list[str] = []
    if not result:
        out["error"] = f"no answer within {wait_s:.0f} s"
        problems.append(
            f"{backend}: {label(expected)} did not answer within {wait_s:.0f} s (its actor hung "
            "joining the group or could not run)."
        )
        return {**out, "problems": problems}
    if result.get("error") and result.get("phase") == "join":
        out["error"] = result["error"]
        problems.append(f"{backend}: {label(expected)} did not join the group: {result['error']}")
        return {**out, "problems": problems}
    out["joined"] = True
    out["join_s"] = result.get("join_seconds")
    want = expected_sum(world)
    for entry in result.get("sizes") or []:
        figures = size_figures(int(entry.get("bytes") or 0), entry.get("seconds") or [], world)
        figures["correct"] = bool(entry.get("correct"))
        out["sizes"].append(figures)
        if not figures["correct"]:
            problems.append(
                f"{backend}: the all-reduce of {human_bytes(figures['bytes'])} on {label(expected)} "
                f"returned {entry.get('value')!r}, not {want:g}; the collective library or the network "
                "corrupts data there."
            )
    if result.get("error"):
        out["error"] = result["error"]
        problems.append(f"{backend}: {label(expected)} joined but the all-reduce failed: {result['error']}")
    timed = [s for s in out["sizes"] if s["seconds"] is not None]
    if timed:
        out["latency_s"] = timed[0]["seconds"]
        out["busbw_gbps"] = timed[-1]["busbw_gbps"]
    out["ok"] = not problems and bool(out["sizes"])
    return {**out, "problems": problems}


# --------------------------------------------------------------------------- TCP all pairs


def tcp_pairs(nodes: Sequence[Mapping], listeners: Mapping, connects: Mapping) -> list[dict]:
    """Every ordered pair (source, destination) with its outcome.

    ``listeners[name]`` is {address, port} or {error}; ``connects[name]`` is the list of that
    node's attempts ({to, ok, connect_s, bytes, transfer_s, error}), or None when its actor
    did not answer.
    """
    pairs = []
    for src in nodes:
        attempts = {a.get("to"): a for a in (connects.get(src["name"]) or [])}
        for dst in nodes:
            if dst["name"] == src["name"]:
                continue
            listener = listeners.get(dst["name"]) or {}
            pair = {
                "from": src["name"],
                "to": dst["name"],
                "address": listener.get("address"),
                "port": listener.get("port"),
                "ok": False,
                "connect_s": None,
                "gbps": None,
                "error": None,
            }
            attempt = attempts.get(dst["name"])
            if listener.get("error") or not listener.get("port"):
                pair["error"] = f"{dst['name']} has no listener ({listener.get('error') or 'its actor did not answer'})"
            elif connects.get(src["name"]) is None:
                pair["error"] = f"{src['name']}'s actor did not answer"
            elif attempt is None:
                pair["error"] = "not attempted"
            else:
                pair["ok"] = bool(attempt.get("ok"))
                pair["connect_s"] = attempt.get("connect_s")
                pair["error"] = attempt.get("error")
                if attempt.get("transfer_s") and attempt.get("bytes"):
                    pair["gbps"] = round(float(attempt["bytes"]) / float(attempt["transfer_s"]) / 1e9, 4)
            pairs.append(pair)
    return pairs


def broken_nodes(nodes: Sequence[Mapping], pairs: Sequence[Mapping]) -> list[str]:
    """The nodes to blame for the failed pairs.

    A node none of whose connections out (or in) worked is the broken one; when no node is
    that clear-cut, both ends of every failed pair are named.
    """
    failed = [p for p in pairs if not p["ok"]]
    if not failed:
        return []
    blamed = []
    for node in nodes:
        out = [p for p in pairs if p["from"] == node["name"]]
        into = [p for p in pairs if p["to"] == node["name"]]
        if (out and not any(p["ok"] for p in out)) or (into and not any(p["ok"] for p in into)):
            blamed.append(node["name"])
    if not blamed:
        ends = {p["from"] for p in failed} | {p["to"] for p in failed}
        blamed = [n["name"] for n in nodes if n["name"] in ends]
    return blamed


def tcp_problems(nodes: Sequence[Mapping], pairs: Sequence[Mapping], plans: Mapping) -> list[str]:
    """One sentence per node whose connections out failed, naming the peers and the interface."""
    by_name = {n["name"]: n for n in nodes}
    problems = []
    for node in nodes:
        failed = [p for p in pairs if p["from"] == node["name"] and not p["ok"]]
        if not failed:
            continue
        plan = plans.get(node["name"]) or {}
        where = f"{plan.get('interface') or '(hostname)'} ({plan.get('address') or 'no address'})"
        peers = ", ".join(
            f"'{p['to']}' (rank {by_name[p['to']]['rank']}, {p['address'] or '?'}:{p['port'] or '?'}): "
            f"{p['error'] or 'failed'}"
            for p in failed
        )
        problems.append(f"TCP: {label(node)} cannot reach {peers}, from {where}; {TCP_FIX}.")
    return problems


def tcp_node_figures(name: str, pairs: Sequence[Mapping]) -> dict:
    """A node's TCP figures: median connect time and throughput of its connections out."""
    out = [p for p in pairs if p["from"] == name]
    ok = [p for p in out if p["ok"]]
    connects = [p["connect_s"] for p in ok if p["connect_s"]]
    rates = [p["gbps"] for p in ok if p["gbps"]]
    return {
        "ok": bool(out) and len(ok) == len(out),
        "reached": [p["to"] for p in ok],
        "unreachable": [p["to"] for p in out if not p["ok"]],
        "latency_s": statistics.median(connects) if connects else None,
        "gbps": round(statistics.median(rates), 4) if rates else None,
    }


# --------------------------------------------------------------------------- RLinf attached


def evaluate_rlinf(expected: Sequence[Mapping], num_nodes: int, result: Mapping) -> dict:
    """Compare RLinf's rank -> node address map with the inventory's.

    ``result``: {state: attached|failed|timeout|not_installed|skipped, nodes: [{rank, ip}],
    error, log_tail, seconds, version}.
    """
    state = result.get("state")
    want = {int(n["rank"]): n for n in expected}
    if state == "no_cpu":
        workers = evaluate_workers(expected, result["workers"])
        return {
            "state": state,
            "version": None,
            "num_nodes": num_nodes,
            "seconds": None,
            "ranks": [],
            "workers": workers,
            "problems": list(workers["problems"]),
            "ok": False,
        }
    if state == "attached_unconfirmed":
        # RLinf attached and then hung in its workers' step: the attach itself is not the problem.
        workers = evaluate_workers(expected, result.get("workers") or {}, result.get("log_tail"))
        return {
            "state": "attached",
            "version": result.get("version"),
            "num_nodes": num_nodes,
            "seconds": None,
            "ranks": [],
            "workers": workers,
            "problems": list(workers["problems"]),
            "ok": not workers["problems"],
        }
    out = {
        "state": state,
        "version": result.get("version"),
        "num_nodes": num_nodes,
        "seconds": result.get("seconds"),
        "ranks": [],
        "problems": [],
        "ok": state in ("attached", "not_installed", "skipped"),
    }
    all_ranks = rank_ranges(want) if want else "none"
    if state == "timeout":
        tail = result.get("log_tail") or "no output"
        out["problems"].append(
            f"RLinf: Cluster(num_nodes={num_nodes}) did not attach within {result.get('timeout')} s, so "
            f"ranks {all_ranks} are unconfirmed (its last words: {tail!r}); RLinf waits forever for "
            "missing nodes: check every node is ALIVE (status.yml) and that num_nodes is the inventory's."
        )
        return out
    if state == "failed":
        out["problems"].append(
            f"RLinf: Cluster(num_nodes={num_nodes}) failed on the head, so ranks {all_ranks} are "
            f"unconfirmed: {result.get('error') or result.get('log_tail') or 'no output'}"
        )
        return out
    if state != "attached":
        return out
    seen: dict[int, Mapping] = {}
    for node in result.get("nodes") or []:
        seen[int(node.get("rank"))] = node
    for rank in sorted(set(want) | set(seen)):
        exp = want.get(rank)
        got = seen.get(rank)
        row = {
            "rank": rank,
            "name": exp["name"] if exp else None,
            "expected_ip": exp["ip"] if exp else None,
            "ip": got.get("ip") if got else None,
            "ok": bool(exp and got and str(got.get("ip")) == exp["ip"]),
        }
        out["ranks"].append(row)
        if row["ok"]:
            continue
        if exp and not got:
            out["problems"].append(
                f"RLinf: rank {rank} ({label(exp)}, {exp['ip']}) is not among the {len(seen)} nodes "
                f"RLinf's Cluster(num_nodes={num_nodes}) placed; check num_nodes and that host's "
                f"{RANK_KEY} (status.yml)."
            )
        elif got and not exp:
            out["problems"].append(
                f"RLinf: it has a rank {rank} at {got.get('ip')} that the inventory does not; more Ray "
                "nodes than the inventory are in the cluster, or num_nodes is wrong."
            )
        else:
            owner = next((n for n in expected if n["ip"] == got.get("ip")), None)
            whose = f" (the inventory's {label(owner)})" if owner else ""
            out["problems"].append(
                f"RLinf: rank {rank} is {got.get('ip')}{whose} in RLinf's Cluster but {exp['ip']} "
                f"({label(exp)}) in the inventory; the nodes' {RANK_KEY} disagree with the inventory: "
                "re-run site.yml."
            )
    if "workers" in result:
        out["workers"] = evaluate_workers(expected, result["workers"], result.get("log_tail"))
        out["problems"].extend(out["workers"]["problems"])
    out["ok"] = not out["problems"]
    return out


WORKER_STEPS = {
    "launch": "placing RLinf's workers (1 CPU each) on every node",
    "where": "starting RLinf's workers",
    "write": "writing a file into the job directories",
    "ring": "passing a message from each node to the next (RLinf's send/recv)",
}


def evaluate_workers(expected: Sequence[Mapping], found: Mapping, tail: str | None = None) -> dict:
    """RLinf's workers on every node: placed with 1 CPU, wrote where the job writes, passed the ring.

    ``found``: {state: ran|no_cpu|timeout|failed, cpus: {rank: n}, nodes: {rank: {worker, writes,
    ring}}, ranks, phase, timeout, error}.
    """
    by_rank = {int(n["rank"]): n for n in expected}
    state = found.get("state")
    cpus = {int(k): v for k, v in (found.get("cpus") or {}).items()}
    problems: list[str] = []
    nodes = []

    def who(rank: int) -> str:
        node = by_rank.get(rank)
        return f"host '{node['name']}' (rank {rank})" if node else f"rank {rank}"

    if state == "no_cpu":
        for rank in found.get("ranks") or []:
            problems.append(
                f"RLinf: {who(rank)} offers Ray {cpus.get(rank, 0):g} CPUs, and every RLinf actor asks for 1 (its "
                "managers sit on rank 0): RLinf would wait forever to place them there. Remove ray_num_cpus: 0 "
                "from that host (or give it >= 1) and re-run site.yml."
            )
    elif state == "timeout":
        step = WORKER_STEPS.get(found.get("phase"), found.get("phase") or "running RLinf's workers")
        hint = (
            "RLinf's send/recv opens ports of its own, not Ray's: check a firewall between the nodes (the TCP "
            "check names the nodes that cannot reach which peer)"
            if found.get("phase") == "ring"
            else "check every node has a free CPU (a training run holds them)"
        )
        problems.append(
            f"RLinf: attached, then did not finish {step} within {found.get('timeout')} s (its last words: "
            f"{tail or 'no output'!r}); {hint}, and `journalctl -u rlinf-ray` on the nodes."
        )
    elif state == "failed":
        problems.append(f"RLinf: its workers failed: {found.get('error') or tail or 'no output'}")
    for rank, got in sorted(((int(k), v) for k, v in (found.get("nodes") or {}).items())):
        row = {"rank": rank, "name": by_rank.get(rank, {}).get("name"), "cpus": cpus.get(rank), "ok": True}
        row["writes"] = got.get("writes") or []
        row["ring"] = got.get("ring")
        for write in row["writes"]:
            if not write.get("ok"):
                row["ok"] = False
                problems.append(
                    f"RLinf: {who(rank)}: its RLinf worker could not {write.get('op') or 'write'} "
                    f"{write.get('dir')!r} ({write.get('error')}), where the job writes its logs and checkpoints; "
                    "make it writable for Ray's unit (ray_node_writable_paths, ray_node_user's ownership, the "
                    "sandbox profile) and re-run site.yml."
                )
        ring = row["ring"]
        prev = (rank - 1) % len(by_rank) if by_rank else None
        if state == "ran" and len(by_rank) > 1 and (not ring or ring.get("from") != prev):
            row["ok"] = False
            sender = who(prev) if prev is not None else "the previous node"
            problems.append(
                f"RLinf: {who(rank)} did not receive the message {sender}'s RLinf worker sent it (got "
                f"{ring!r}); RLinf's send/recv between these nodes fails."
            )
        nodes.append(row)
    if state == "ran":
        for rank in sorted(set(by_rank) - {n["rank"] for n in nodes}):
            problems.append(f"RLinf: {who(rank)} ran no RLinf worker; check num_nodes and that host's Ray.")
    return {"state": state, "seconds": found.get("seconds"), "nodes": nodes, "problems": problems}


# --------------------------------------------------------------------------- the whole report


def worker_summary(workers: Mapping) -> str:
    nodes = workers.get("nodes") or []
    good = [n for n in nodes if n.get("ok")]
    if workers.get("state") != "ran":
        return f"RLinf's workers did not run ({workers.get('state')})"
    dirs = sum(len(n.get("writes") or []) for n in nodes)
    return f"RLinf workers (1 CPU each) on {len(good)}/{len(nodes)} nodes passed the round trip" + (
        f" and wrote {dirs} job dirs" if dirs else " (no job dir known: set rlinf_src or ray_node_writable_paths)"
    )


def summarize(report: Mapping) -> str:
    """One line starting with OK: or FAILED:."""
    parts = []
    mode = report.get("mode")
    nodes = report.get("nodes") or []
    count = len(nodes)
    if mode == "torch":
        for backend in report.get("backends") or []:
            group = (report.get("groups") or {}).get(backend) or {}
            members = group.get("members") or []
            joined = sum(1 for n in nodes if (n.get(backend) or {}).get("joined"))
            if group.get("ok"):
                sizes = report.get("sizes") or []
                span = f"{human_bytes(sizes[0])}-{human_bytes(sizes[-1])}" if sizes else ""
                rates = [(n.get(backend) or {}).get("busbw_gbps") for n in nodes if n.get(backend)]
                rates = [r for r in rates if r is not None]
                slowest = f", slowest {format_rate(min(rates))}" if rates else ""
                parts.append(f"{backend} all-reduce across {len(members)}/{count} nodes correct ({span}{slowest})")
            else:
                parts.append(f"{backend} failed: {joined}/{len(members)} nodes joined")
    elif mode == "tcp":
        pairs = (report.get("tcp") or {}).get("pairs") or []
        ok = sum(1 for p in pairs if p["ok"])
        parts.append(f"torch not installed, all-pairs TCP {ok}/{len(pairs)} connections")
    broken = (report.get("tcp") or {}).get("broken") or []
    if broken:
        parts.append("cannot reach peers: " + ", ".join(broken))
    rlinf = report.get("rlinf") or {}
    state = rlinf.get("state")
    if state == "attached":
        ranks = [r["rank"] for r in rlinf.get("ranks") or []]
        if ranks:
            mapped = all(r.get("ok") for r in rlinf["ranks"])
            verdict = "at the inventory's addresses" if mapped else "NOT at the inventory's addresses"
            parts.append(
                f"RLinf {rlinf.get('version') or ''} attached, ranks {rank_ranges(ranks)} {verdict}".replace("  ", " ")
            )
        workers = rlinf.get("workers")
        if workers:
            parts.append(worker_summary(workers))
    elif state == "not_installed":
        parts.append("RLinf not installed in the venv (not attached)")
    elif state in ("failed", "timeout"):
        parts.append(f"RLinf did not attach ({state})")
    elif state == "no_cpu":
        parts.append("RLinf not started: a node offers Ray no CPU")
    prefix = "OK" if report.get("ok") else "FAILED"
    return f"{prefix}: " + "; ".join(parts) if parts else f"{prefix}: nothing was checked"


def render_table(report: Mapping) -> list[str]:
    """The readiness table: one row per node, the collective and RLinf's view of it."""
    nodes = report.get("nodes") or []
    backends = list(report.get("backends") or [])
    if report.get("mode") == "tcp" or (report.get("tcp") or {}).get("ran"):
        backends.append("tcp")
    rlinf = {r["rank"]: r for r in (report.get("rlinf") or {}).get("ranks") or []}
    rlinf_state = (report.get("rlinf") or {}).get("state")
    width = max([4] + [len(str(n.get("name"))) for n in nodes])
    row = f"%-4s  %-{width}s  %-10s  %-15s  %-8s  %-9s  %-10s  %s"
    lines = [row % ("RANK", "HOST", "IFACE", "ADDRESS", "CHECK", "LATENCY", "BANDWIDTH", "RLINF")]
    for node in nodes:
        if rlinf_state == "attached":
            got = rlinf.get(node["rank"]) or {}
            rlinf_cell = (got.get("ip") or "missing") + ("" if got.get("ok") else "(!)")
        else:
            rlinf_cell = {"not_installed": "not-installed", "skipped": "-"}.get(rlinf_state, rlinf_state or "-")
        interface = node.get("interface") or ("(hostname)" if node.get("source") == "hostname" else "-")
        cells = []
        for backend in backends or ["-"]:
            result = node.get(backend) or {}
            if backend == "tcp":
                latency, rate = result.get("latency_s"), result.get("gbps")
            else:
                latency, rate = result.get("latency_s"), result.get("busbw_gbps")
            verdict = "ok" if result.get("ok") else "FAIL" if result else "-"
            # No single spaces inside a cell: Ansible's YAML output folds long lines there.
            cells.append(
                (
                    f"{backend}:{verdict}" if backend != "-" else "-",
                    format_seconds(latency).replace(" ", ""),
                    format_rate(rate).replace(" ", ""),
                )
            )
        # One row per check; rank and host repeated (a line starting with spaces would be quoted).
        for check, latency, rate in cells:
            lines.append(
                row
                % (node["rank"], node["name"], interface, node.get("address") or "-", check, latency, rate, rlinf_cell)
            )
    return [line.rstrip() for line in lines]
