"""The GPU rules of the cluster check: each node's NVML facts against Ray and the plan.

Plain Python, no Ansible imports (the cluster_report action calls it on the controller).

RLinf places workers by the NVML device count of each Ray node (every GPU the machine, or the
node's container, has; ``CUDA_VISIBLE_DEVICES`` ignored) and then sets ``CUDA_VISIBLE_DEVICES``
in each worker itself; it never asks Ray for a GPU resource (rlinf/scheduler/cluster/cluster.py
pins each worker with a node affinity only). Ray's GPU resource is only what Ray would schedule.
So a node where the two numbers differ is one where RLinf uses GPUs Ray (and the inventory) did
not give it, or expects GPUs that are not there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

CUDA_VAR = "rlinf_cuda_visible_devices"
RAY_GPUS_VAR = "ray_num_gpus"
GPUS_VAR = "rlinf_gpus_per_node"
ISOLATED_VAR = "rlinf_gpu_isolated"
# RLinf's group of every node (rlinf/scheduler/cluster/node.py NodeGroupInfo.DEFAULT_GROUP_LABEL).
DEFAULT_GROUP = "cluster"
_RLINF_COUNT = (
    "RLinf counts a node's GPUs with NVML (rlinf/scheduler/hardware/accelerators/nvidia_gpu.py "
    "get_num_devices -> Ray's NvidiaGPUAcceleratorManager.get_current_node_num_accelerators), every GPU "
    "the machine or container has whatever CUDA_VISIBLE_DEVICES says, and sets CUDA_VISIBLE_DEVICES of "
    "its workers itself"
)


def _amount(value) -> float:
    try:
        return float(value or 0)
    except (TypeError, ValueError):
        return 0.0


def _n(value: float) -> str:
    return f"{value:g}"


def _facts(node: Mapping) -> dict | None:
    found = (node.get("manifest") or {}).get("gpus")
    return found if isinstance(found, Mapping) else None


def _rlinf_count(facts: Mapping) -> int:
    """The GPUs RLinf counts here: NVML's number (0 when NVML cannot start), else the known count."""
    return int(facts["nvml_count"] if facts.get("nvml_count") is not None else facts.get("count") or 0)


def _label(node: Mapping) -> str:
    return f"host '{node['name']}'" + (f" (rank {node['rank']})" if node.get("rank") is not None else "")


def _nvml_broken(node: Mapping, facts: Mapping) -> str | None:
    if facts.get("nvml_count") == 0 and (facts.get("count") or 0) > 0:
        return (
            f"{_label(node)}: nvidia-smi lists {facts['count']} GPU(s) but NVML cannot start in the node venv's "
            f"Python ({facts.get('nvml_error') or 'no reason given'}), so Ray and RLinf count 0 GPUs here; "
            "install the NVIDIA driver's NVML library (libnvidia-ml.so.1, matching the kernel driver) where the "
            "venv's Python loads it, then restart Ray on this node (re-run site.yml)."
        )
    return None


def _count_mismatch(node: Mapping, plan: Mapping, nvml: int, ray: float) -> str | None:
    """NVML and Ray's GPU resource disagree on this node: say which and the fix."""
    if ray == nvml:
        return None
    devices = plan.get("cuda_visible_devices")
    ray_gpus = plan.get("ray_num_gpus")
    head = f"{_label(node)}: Ray advertises {_n(ray)} GPU(s) but NVML sees {nvml} on this node; {_RLINF_COUNT}"
    if ray > nvml:
        setting = f"{RAY_GPUS_VAR}={ray_gpus}" if ray_gpus is not None else "the Ray unit's GPU count"
        return (
            f"{head}, so RLinf places work on {nvml} GPU(s) here and a placement sized for the {_n(ray)} Ray "
            f"advertises ({setting}) fails or lands elsewhere: set {RAY_GPUS_VAR}: {nvml} (or remove it) and "
            f"{GPUS_VAR}: {nvml}."
        )
    if plan.get("gpu_isolated"):
        return (
            f"{head}; {ISOLATED_VAR} is true, but this node's container is not isolated: NVML in it sees "
            f"{nvml} GPU(s), and RLinf would give its workers all of them. Give the container only its GPUs "
            "(e.g. NVIDIA_VISIBLE_DEVICES or --gpus), or set "
            f"{ISOLATED_VAR}: false and run one Ray node per GPU machine."
        )
    if devices:
        return (
            f"{head}, so it gives this node's workers all {nvml} GPUs, not the {len(devices)} of {CUDA_VAR}="
            f"{','.join(str(d) for d in devices)}: remove {CUDA_VAR} so Ray advertises all {nvml}, or run this "
            f"Ray node in a container that sees only its GPUs and set {ISOLATED_VAR}: true."
        )
    if ray_gpus is not None:
        return (
            f"{head}, so {RAY_GPUS_VAR}={ray_gpus} does not keep RLinf off the other {nvml - int(ray)} GPU(s): "
            f"remove {RAY_GPUS_VAR} (or set it to {nvml}), or run this Ray node in a container that sees only "
            f"its GPUs and set {ISOLATED_VAR}: true."
        )
    return (
        f"{head}, so it uses all {nvml} while Ray schedules {_n(ray)}: Ray's unit sees a CUDA_VISIBLE_DEVICES "
        f"from outside rlinf-ansible (its environment); remove it there, or use {CUDA_VAR} with "
        f"{ISOLATED_VAR} in a container that sees only those GPUs."
    )


def _placement_mismatch(node: Mapping, plan: Mapping, nvml: int) -> str | None:
    """The inventory's GPU count (what the config's placement was validated against) is not RLinf's."""
    planned = plan.get("rlinf_gpus")
    if planned is None or int(planned) == nvml:
        return None
    return (
        f"{_label(node)}: {GPUS_VAR}={planned} but NVML sees {nvml} GPU(s) here; RLinf numbers a node group's "
        f"GPUs by NVML's count per node, so the placement validated against {planned} puts processes on other "
        f"GPUs or nodes than intended: set {GPUS_VAR}: {nvml}."
    )


def _gpu_owner(members: Sequence[Mapping], plans: Mapping[str, Mapping]) -> str | None:
    """The one Ray node that holds a shared machine's GPUs, when the plan accepted the layout."""
    owners = {plans[n["name"]].get("machine_gpu_node") for n in members}
    return owners.pop() if len(owners) == 1 and None not in owners else None


def _declares_none_of_shared_gpus(plan: Mapping, name: str) -> bool:
    """A control node of an accepted compute + control machine: 0 GPUs by declaration, although
    NVML sees the machine's (the placement check keeps RLinf's GPU workers off it)."""
    return bool(plan.get("machine_gpu_node")) and plan["machine_gpu_node"] != name


def _shared_machines(nodes: Sequence[Mapping], plans: Mapping[str, Mapping]) -> list[tuple[list[str], str]]:
    """Ray nodes of one machine that are not all isolated, on a machine NVML sees GPUs on."""
    machines: dict[str, list[Mapping]] = {}
    for node in nodes:
        plan = plans.get(node["name"])
        if plan and plan.get("machine"):
            machines.setdefault(plan["machine"], []).append(node)
    out = []
    for machine, members in machines.items():
        if len(members) < 2 or all(plans[n["name"]].get("gpu_isolated") for n in members):
            continue
        if _gpu_owner(members, plans):
            continue  # RLinf's compute + control layout, accepted by topology and the placement check
        seen = [(n, _rlinf_count(_facts(n))) for n in members if _facts(n) and _rlinf_count(_facts(n)) > 0]
        if not seen:
            continue
        names = [n["name"] for n in members]
        counts = ", ".join(f"{n['name']} {c}" for n, c in seen)
        plain = [n for n in names if not plans[n].get("gpu_isolated")]
        out.append(
            (
                names,
                f"hosts {', '.join(names)}: they are Ray nodes of one machine ({machine}) and NVML sees GPUs on it "
                f"({counts}); {_RLINF_COUNT}, so each of them would count all of them and their workers would land "
                "on the same GPUs: run one Ray node per GPU machine, or give the GPUs to one of them "
                f"({GPUS_VAR}: <the machine's count> on it and 0 on the others, RLinf's compute + control layout), "
                "or run each in its own container that sees only its GPUs and set "
                f"{ISOLATED_VAR}: true on {', '.join(plain)}.",
            )
        )
    return out


def _shared_uuids(nodes: Sequence[Mapping], reported: set[frozenset]) -> list[tuple[list[str], str]]:
    """Two Ray nodes that see the same GPU (isolated containers that are not)."""
    holders: dict[str, list[str]] = {}
    for node in nodes:
        for uuid in (_facts(node) or {}).get("uuids") or []:
            holders.setdefault(uuid, [])
            if node["name"] not in holders[uuid]:
                holders[uuid].append(node["name"])
    shared: dict[tuple, list[str]] = {}
    for uuid, names in holders.items():
        if len(names) > 1:
            shared.setdefault(tuple(names), []).append(uuid)
    out = []
    for names, uuids in shared.items():
        if frozenset(names) in reported:
            continue
        out.append(
            (
                list(names),
                f"hosts {', '.join(names)}: they see the same GPU(s) ({', '.join(uuids)}); {_RLINF_COUNT}, so "
                "workers of each would run on them: give each Ray node's container only its own GPUs "
                f"(NVIDIA_VISIBLE_DEVICES or --gpus), or run one Ray node per GPU machine.",
            )
        )
    return out


def _driver_problems(nodes: Sequence[Mapping], plans: Mapping[str, Mapping]) -> list[tuple[list[str], str]]:
    """NVIDIA drivers that differ between GPU nodes of one RLinf node group.

    Nodes of a declared node group are compared within it; nodes in none within RLinf's default
    group ``cluster`` (all of them, when the inventory declares no node group).
    """
    groups: dict[str, list[tuple[str, str]]] = {}
    for node in nodes:
        facts = _facts(node)
        if not facts or not facts.get("driver_version") or not (facts.get("count") or 0):
            continue
        labels = list((plans.get(node["name"]) or {}).get("node_groups") or []) or [DEFAULT_GROUP]
        for label in labels:
            groups.setdefault(label, []).append((node["name"], str(facts["driver_version"])))
    out = []
    for label, members in groups.items():
        versions: dict[str, list[str]] = {}
        for name, version in members:
            versions.setdefault(version, []).append(name)
        if len(versions) < 2:
            continue
        # The most common driver first: the odd ones out are named after it.
        ordered = sorted(versions.items(), key=lambda item: (-len(item[1]), item[0]))
        listing = "; ".join(f"{v} on {', '.join(names)}" for v, names in ordered)
        odd = [name for _key, names in ordered[1:] for name in names]
        group = f"node group '{label}'" if label != DEFAULT_GROUP or len(groups) > 1 else "the cluster"
        out.append(
            (
                odd,
                f"hosts {', '.join(odd)}: NVIDIA driver versions differ within {group} ({listing}); "
                "one group's workers run one job and talk over NCCL, so they need one driver and CUDA "
                f"version: install driver {ordered[0][0]} on {', '.join(odd)} (or the group's other "
                "nodes), reboot or reload it, and restart Ray there (re-run site.yml).",
            )
        )
    return out


def gpu_problems(nodes: Sequence[Mapping], plan_nodes: Sequence[Mapping]) -> list[tuple[list[str], str]]:
    """Every GPU problem as (the host names it is about, the sentence).

    ``nodes`` are the report's nodes (each with ``state``, Ray's ``resources`` and the
    ``manifest`` with its ``gpus`` facts); ``plan_nodes`` what the plan says of each
    (plan.gpu_nodes). A node without facts (unreachable) or not NVIDIA (``accelerator_type``)
    is left out; a node without GPUs, whose Ray advertises none, is fine.
    """
    plans = {p["name"]: p for p in plan_nodes}
    nvidia = [
        n
        for n in nodes
        if n.get("name") in plans and _facts(n) is not None and plans[n["name"]].get("accelerator_type") == "NV_GPU"
    ]
    out: list[tuple[list[str], str]] = []
    for node in nvidia:
        facts, plan = _facts(node), plans[node["name"]]
        broken = _nvml_broken(node, facts)
        if broken:
            out.append(([node["name"]], broken))
            continue
        if facts.get("nvml_count") is None and facts.get("error"):
            continue  # nothing could be read; the manifest says why
        nvml = _rlinf_count(facts)
        ray = _amount((node.get("resources") or {}).get("GPU"))
        control = _declares_none_of_shared_gpus(plan, node["name"])
        if str(node.get("state")).upper() == "ALIVE" and not (control and ray <= nvml):
            found = _count_mismatch(node, plan, nvml, ray)
            if found:
                out.append(([node["name"]], found))
        found = None if control else _placement_mismatch(node, plan, nvml)
        if found:
            out.append(([node["name"]], found))
    machines = _shared_machines(nvidia, plans)
    out.extend(machines)
    accepted = {}
    for n in nvidia:
        if plans[n["name"]].get("machine_gpu_node"):
            accepted.setdefault(plans[n["name"]]["machine"], set()).add(n["name"])
    reported = {frozenset(names) for names, _machine in machines} | {frozenset(names) for names in accepted.values()}
    out.extend(_shared_uuids(nvidia, reported))
    out.extend(_driver_problems(nvidia, plans))
    return out
