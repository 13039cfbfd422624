"""Cluster topology from the inventory: the head, the workers and each node's RLinf rank.

One source of truth for validation, templates and checks. Ranks come from the whole
inventory (the ``groups`` magic variable, never the hosts of the current play), so
``--limit`` and hosts appended to ``ray_workers`` never renumber existing nodes.
Plain Python, no Ansible imports: the filter plugins and the unit tests call it directly.

Inventory contract read here (every name is documented in docs/validation.md):

- ``ray_head`` (exactly one host) and ``ray_workers`` groups; ranks are the head 0, then
  the workers in inventory order. ``rlinf_node_rank`` (host var) overrides, validated.
- Node groups: a host belongs to the RLinf node group ``L`` when its ``rlinf_node_group``
  var is ``L`` (or a list containing ``L``), normally set as a group var of a child group,
  or when it is in an inventory group whose name is listed in ``rlinf_node_groups``.
- ``rlinf_gpus_per_node`` (int >= 0) and ``rlinf_cuda_visible_devices`` (GPU ids, a
  list or a comma-separated string) describe the accelerators of one Ray node;
  ``rlinf_accelerator_type`` (RLinf's AcceleratorType, default ``NV_GPU``) says which kind.
  RLinf counts a node's accelerators itself (NVML for NVIDIA), every one the machine has,
  whatever ``CUDA_VISIBLE_DEVICES`` says, unless the node runs in a container that sees
  only its own (``rlinf_gpu_isolated: true``).
- Several hosts with the same ``ansible_host`` are several Ray nodes on one machine;
  they need distinct ``ray_port`` (default 6379), ``ray_temp_dir`` (default
  ``/tmp/ray``), ``rlinf_env_file`` and ``ray_node_unit_name`` (one systemd unit and one
  env file, with its own rank, per Ray node), and GPUs on at most one of them (the others
  declare ``rlinf_gpus_per_node: 0``: RLinf's compute + control layout) unless every one
  of them is isolated.
- ``ray_node_include_dashboard`` stays true on the head: RLinf reads Ray's state API.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from ansible_collections.rlinf.cluster.plugins.module_utils.managed_env_vars import managed_env_problems

HEAD_GROUP = "ray_head"
WORKER_GROUP = "ray_workers"
RANK_VAR = "rlinf_node_rank"
NODE_GROUP_VAR = "rlinf_node_group"
NODE_GROUPS_VAR = "rlinf_node_groups"
GPUS_VAR = "rlinf_gpus_per_node"
CUDA_VAR = "rlinf_cuda_visible_devices"
PORT_VAR = "ray_port"
TEMP_DIR_VAR = "ray_temp_dir"
ENV_FILE_VAR = "rlinf_env_file"
UNIT_VAR = "ray_node_unit_name"
DEFAULT_RAY_PORT = 6379
DEFAULT_RAY_TEMP_DIR = "/tmp/ray"
DEFAULT_ENV_FILE = "/etc/rlinf/rlinf.env"
DEFAULT_UNIT = "rlinf-ray"
ISOLATED_VAR = "rlinf_gpu_isolated"
ACCELERATOR_VAR = "rlinf_accelerator_type"
ENV_VARS_VAR = "rlinf_env_vars"
DASHBOARD_VAR = "ray_node_include_dashboard"
RAY_GPUS_VAR = "ray_num_gpus"
DEFAULT_ACCELERATOR = "NV_GPU"
# RLinf's AcceleratorType (rlinf/scheduler/hardware/accelerators/, main a3816b5) ->
# (what it is, the resource Ray advertises it as, the variable RLinf's get_accelerator_env_var
# writes into each worker). Ray names: ray/_private/accelerators/*.py get_resource_name; Ray
# 2.60 has no manager for MUSA or Kunlun, so it advertises none for them.
ACCELERATOR_TYPES = {
    "NV_GPU": ("NVIDIA GPUs", "GPU", "CUDA_VISIBLE_DEVICES"),
    "AMD_GPU": ("AMD GPUs", "GPU", "HIP_VISIBLE_DEVICES"),
    "INTEL_GPU": ("Intel GPUs", "GPU", "ONEAPI_DEVICE_SELECTOR"),
    "NPU": ("Huawei Ascend NPUs", "NPU", "ASCEND_RT_VISIBLE_DEVICES"),
    "MUSA_GPU": ("Moore Threads MUSA GPUs", None, "MUSA_VISIBLE_DEVICES"),
    "KUNLUN_XPU": ("Kunlun XPUs (RLinf main only, not 0.3.0)", None, "CUDA_VISIBLE_DEVICES"),
}
# Why a GPU split between Ray nodes of one machine fails under RLinf (read in its source).
NVML_REASON = (
    "RLinf counts a Ray node's GPUs itself, every GPU of the machine (NVIDIA: "
    "rlinf/scheduler/hardware/accelerators/nvidia_gpu.py get_num_devices -> Ray's "
    "NvidiaGPUAcceleratorManager.get_current_node_num_accelerators, an NVML device count that "
    "ignores CUDA_VISIBLE_DEVICES), then writes CUDA_VISIBLE_DEVICES=<local indices 0..n-1> into "
    "each worker, overriding the node's"
)
# Labels RLinf reserves for its built-in groups (case-sensitive: "Node" is allowed).
RESERVED_LABELS = ("cluster", "node")
# Inventory groups that can never be node groups.
_SPECIAL_GROUPS = ("all", "ungrouped")
# One GPU id as CUDA_VISIBLE_DEVICES takes it: an index, a GPU-/MIG- UUID (MIG-GPU-<uuid>/1/0).
# Nothing systemd, the shell or the env file would read differently (quote, '$', ';', space, newline).
_DEVICE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_./:-]*$")


class TopologyError(ValueError):
    """Raised with every problem found, not only the first."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def _vars(hostvars: Mapping[str, Mapping], name: str) -> Mapping:
    try:
        found = hostvars[name]
    except (KeyError, TypeError):
        return {}
    return found if found is not None else {}


def _get(hostvars: Mapping[str, Mapping], name: str, key: str, problems: list[str], default=None):
    """hostvars[name][key]; a value Ansible cannot template becomes a problem naming host and var."""
    try:
        value = _vars(hostvars, name).get(key, default)
        if value is not None and not isinstance(value, (Mapping, list, tuple)):
            str(value)  # an undefined Jinja variable raises here
    except Exception as err:
        problems.append(f"host '{name}': {key} cannot be evaluated ({err}); fix its value in the inventory.")
        return default
    return default if value is None else value


def _explicit_rank(name: str, hostvars: Mapping[str, Mapping], problems: list[str]):
    value = _get(hostvars, name, RANK_VAR, problems)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            if isinstance(value, (bool, float)):
                raise ValueError
            value = int(str(value).strip())
        except ValueError:
            problems.append(
                f"host '{name}': {RANK_VAR}={value!r} is not an integer; "
                "set it to a whole number or remove it to use inventory order."
            )
            return None
    if value < 0:
        problems.append(
            f"host '{name}': {RANK_VAR}={value} is negative; RLinf ranks start at 0, "
            "set a rank >= 0 or remove it to use inventory order."
        )
        return None
    return value


def parse_device_ids(value) -> list[str] | None:
    """GPU ids from ``rlinf_cuda_visible_devices``: a list, an int or ``"0,1"``. None if unset."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("a boolean is not a GPU list")
    if isinstance(value, int):
        return [str(value)]
    if isinstance(value, str):
        items = [part.strip() for part in value.split(",")]
        if value.strip() == "":
            return []
    elif isinstance(value, Sequence):
        items = [str(part).strip() for part in value]
    else:
        raise ValueError(f"{type(value).__name__} is not a GPU list")
    if any(item == "" for item in items):
        raise ValueError("it has an empty entry")
    odd = [item for item in items if not _DEVICE_ID.fullmatch(item)]
    if odd:
        raise ValueError(f"the id {odd[0]!r} is neither an index nor a GPU UUID")
    return items


def _node_group_labels(name, hostvars, problems) -> list[str]:
    value = _get(hostvars, name, NODE_GROUP_VAR, problems)
    if value is None or value == "":
        return []
    values = [value] if isinstance(value, (str, int)) and not isinstance(value, bool) else value
    if not isinstance(values, Sequence) or isinstance(values, str):
        problems.append(
            f"host '{name}': {NODE_GROUP_VAR}={value!r} is neither a label nor a list of labels; "
            "set it to a string such as 'edge'."
        )
        return []
    labels = []
    for item in values:
        if isinstance(item, bool) or not isinstance(item, (str, int)):
            problems.append(f"host '{name}': {NODE_GROUP_VAR} entry {item!r} is not a label; use a plain string.")
            continue
        labels.append(str(item))
    return labels


def _label_problems(label: str, where: str) -> list[str]:
    if label.strip() == "":
        return [f"{where}: an empty node-group label; give the group a name."]
    if label in RESERVED_LABELS:
        return [
            f"{where}: node-group label '{label}' is reserved by RLinf ('cluster' and 'node' are "
            "built in); choose another label."
        ]
    if "," in label or label != label.strip():
        return [
            f"{where}: node-group label '{label}' contains a comma or surrounding spaces, which "
            "RLinf's node_group field splits on; use a plain name."
        ]
    return []


def _declared_group_names(ordered, hostvars, groups, problems) -> list[str]:
    """Inventory groups listed in ``rlinf_node_groups`` (read from every cluster host)."""
    names: list[str] = []
    for host in ordered:
        value = _get(hostvars, host, NODE_GROUPS_VAR, problems)
        if value is None or value == "" or value == []:
            continue
        if isinstance(value, str) or not isinstance(value, Sequence):
            problems.append(
                f"host '{host}': {NODE_GROUPS_VAR}={value!r} must be a list of inventory group names, e.g. [edge]."
            )
            continue
        for item in value:
            if str(item) not in names:
                names.append(str(item))
    for group in names:
        if group in _SPECIAL_GROUPS or group in (HEAD_GROUP, WORKER_GROUP):
            problems.append(
                f"inventory: {NODE_GROUPS_VAR} lists '{group}', which cannot be a node group; "
                "list a child group of the cluster that holds the hosts of one node group."
            )
        elif group not in groups:
            problems.append(
                f"inventory: {NODE_GROUPS_VAR} lists group '{group}', which the inventory does not "
                f"define; create the group or remove it from {NODE_GROUPS_VAR}."
            )
    return [g for g in names if g in groups and g not in (*_SPECIAL_GROUPS, HEAD_GROUP, WORKER_GROUP)]


def as_bool(value):
    """Ansible's truthy spellings -> bool; None for anything else."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "yes", "on", "1", "y", "t"):
            return True
        if text in ("false", "no", "off", "0", "n", "f", ""):
            return False
    return None


def _bool_var(name, hostvars, key, default, problems):
    raw = _get(hostvars, name, key, problems, default)
    value = as_bool(raw)
    if value is None:
        problems.append(f"host '{name}': {key}={raw!r} is not a boolean; set it to true or false.")
        return default
    return value


def _accelerator(name, hostvars, problems):
    raw = _get(hostvars, name, ACCELERATOR_VAR, problems, "") or DEFAULT_ACCELERATOR
    value = str(raw)
    if value in ACCELERATOR_TYPES:
        return value
    exact = [t for t in ACCELERATOR_TYPES if t.lower() == value.strip().lower()]
    hint = f" (write '{exact[0]}')" if exact else ""
    problems.append(
        f"host '{name}': {ACCELERATOR_VAR}={raw!r} is not an accelerator type RLinf knows{hint}; use one "
        f"of {', '.join(ACCELERATOR_TYPES)} (RLinf's AcceleratorType)."
    )
    return DEFAULT_ACCELERATOR


def _gpu_info(name, hostvars, problems, accelerator=DEFAULT_ACCELERATOR):
    """(gpus, devices) for one host; None when unknown."""
    devices = None
    raw_devices = _get(hostvars, name, CUDA_VAR, problems)
    if raw_devices is not None:
        try:
            devices = parse_device_ids(raw_devices)
        except ValueError as err:
            problems.append(
                f"host '{name}': {CUDA_VAR}={raw_devices!r} is not a GPU list ({err}); "
                "write GPU ids as a list or a comma-separated string such as '0,1'."
            )
        else:
            if len(set(devices)) != len(devices):
                problems.append(f"host '{name}': {CUDA_VAR}={raw_devices!r} repeats a GPU id; list each GPU once.")
        what, _resource, devices_var = ACCELERATOR_TYPES[accelerator]
        if devices is not None and devices_var != "CUDA_VISIBLE_DEVICES":
            problems.append(
                f"host '{name}': {CUDA_VAR} writes CUDA_VISIBLE_DEVICES, which {what} ({ACCELERATOR_VAR}="
                f"{accelerator}) do not read (RLinf selects them with {devices_var}); remove it and set "
                f"{GPUS_VAR}."
            )
    gpus = None
    raw_gpus = _get(hostvars, name, GPUS_VAR, problems)
    if raw_gpus is not None and raw_gpus != "":
        try:
            if isinstance(raw_gpus, (bool, float)):
                raise ValueError
            gpus = int(str(raw_gpus).strip())
            if gpus < 0:
                raise ValueError
        except ValueError:
            problems.append(
                f"host '{name}': {GPUS_VAR}={raw_gpus!r} is not a whole number >= 0; "
                "set the number of GPUs this Ray node uses (0 for a CPU-only node)."
            )
            gpus = None
    if devices is not None and gpus is not None:
        problems.extend(_device_count_problems(name, gpus, devices))
    return gpus, devices


def _device_count_problems(name, gpus, devices) -> list[str]:
    """``rlinf_gpus_per_node`` is the machine's (or container's) GPU count, what RLinf counts with
    NVML; ``rlinf_cuda_visible_devices`` the GPUs of it Ray advertises. Only ids the count cannot
    hold are inconsistent (GPU UUIDs cannot be checked here)."""
    fix = (
        f"set {GPUS_VAR} to the machine's GPU count (what nvidia-smi -L lists; RLinf counts them all) and "
        f"{CUDA_VAR} to ids below it"
    )
    if len(devices) > gpus:
        return [
            f"host '{name}': {CUDA_VAR} lists {len(devices)} GPU(s) ({','.join(devices)}) but {GPUS_VAR}={gpus}, "
            f"the machine's GPU count, is smaller; {fix}."
        ]
    outside = [d for d in devices if d.isdigit() and int(d) >= gpus]
    if outside:
        return [
            f"host '{name}': {CUDA_VAR} names GPU id(s) {','.join(outside)}, which a machine with {GPUS_VAR}={gpus} "
            f"GPU(s) (ids 0..{gpus - 1}) does not have; {fix}."
        ]
    return []


def _ray_gpus_problems(name, hostvars, accelerator, problems):
    """ray_num_gpus sets Ray's 'GPU' resource, which is not how Ray advertises every accelerator."""
    raw = _get(hostvars, name, RAY_GPUS_VAR, problems)
    if raw is None or raw == "":
        return
    what, resource, _devices_var = ACCELERATOR_TYPES[accelerator]
    if resource == "GPU":
        return
    if resource is None:
        fix = (
            f"Ray has no accelerator support for them and RLinf counts them itself, so leave {RAY_GPUS_VAR} "
            f"unset and set {GPUS_VAR}"
        )
    else:
        fix = (
            f"Ray advertises them as '{resource}', not 'GPU': set ray_resources: {{{resource}: N}} if Ray "
            f"should not detect them itself, and {GPUS_VAR} for the placement checks"
        )
    problems.append(f"host '{name}': {RAY_GPUS_VAR} makes Ray advertise GPUs, but this node has {what}; {fix}.")


def _rlinf_gpus(declared, devices, isolated) -> int | None:
    """The accelerators RLinf counts on this Ray node (placement checks), None when unknown.

    RLinf counts every accelerator the machine (or the node's container) has, which is what
    ``rlinf_gpus_per_node`` says; a ``rlinf_cuda_visible_devices`` list alone only says what
    Ray's own GPU resource holds, except in a container that sees only those GPUs.
    """
    if declared is not None:
        return declared
    return len(devices) if isolated and devices is not None else None


def _port(name, hostvars, problems):
    raw = _get(hostvars, name, PORT_VAR, problems, DEFAULT_RAY_PORT)
    try:
        if isinstance(raw, (bool, float)):
            raise ValueError
        port = int(str(raw).strip())
        if not 1 <= port <= 65535:
            raise ValueError
    except ValueError:
        problems.append(f"host '{name}': {PORT_VAR}={raw!r} is not a TCP port; set a number in 1..65535.")
        return None
    return port


def _hosts(names: Sequence[str]) -> str:
    return f"host '{names[0]}'" if len(names) == 1 else f"hosts {', '.join(names)}"


def shared_machines(nodes: Sequence[dict]) -> dict[str, list[dict]]:
    """The Ray nodes of each machine that runs two or more of them."""
    machines: dict[str, list[dict]] = {}
    for node in nodes:
        machines.setdefault(node["machine"], []).append(node)
    return {machine: members for machine, members in machines.items() if len(members) > 1}


def same_value_problems(
    machine: str, members: Sequence[dict], value_of: Callable[[dict], object], var: str
) -> list[str]:
    """One sentence per value (None is none) that two or more Ray nodes of one machine would share."""
    holders: dict = {}
    for node in members:
        value = value_of(node)
        if value is not None:
            holders.setdefault(value, []).append(node["name"])
    return [
        f"hosts {', '.join(names)}: they run Ray nodes on the same machine ({machine}) with the same "
        f"{var}={value!r}; give each host its own {var}."
        for value, names in holders.items()
        if len(names) > 1
    ]


def _shared_machine_problems(nodes: list[dict]) -> list[str]:
    problems: list[str] = []
    for machine, members in shared_machines(nodes).items():
        names = ", ".join(n["name"] for n in members)
        for key, var in (
            (PORT_VAR, PORT_VAR),
            ("temp_dir", TEMP_DIR_VAR),
            ("env_file", ENV_FILE_VAR),
            ("unit_name", UNIT_VAR),
        ):
            problems.extend(same_value_problems(machine, members, lambda node, key=key: node[key], var))
        if all(n["gpu_isolated"] for n in members):
            continue  # each Ray node in its own container: device ids are local to it
        plain = [n["name"] for n in members if not n["gpu_isolated"]]
        with_gpus = [
            n for n in members if (n["gpus"] or 0) > 0 or (n["rlinf_gpus"] or 0) > 0 or n["cuda_visible_devices"]
        ]
        unknown = [n["name"] for n in members if not n["gpu_isolated"] and n["gpus"] is None]
        if len(with_gpus) == 1 and not with_gpus[0]["gpu_isolated"]:
            gpu_node = with_gpus[0]
            others = [n for n in members if n is not gpu_node]
            if all(n["gpus_per_node"] == 0 and not n["cuda_visible_devices"] for n in others):
                # RLinf's single-machine layout (compute + control): accepted; topology_warnings and the
                # placement check (rlinf_config.check_cluster) keep GPU placements on the GPU node only.
                for node in members:
                    node["machine_peers"] = [n["name"] for n in members if n is not node]
                    node["machine_gpu_node"] = gpu_node["name"]
                continue
            undeclared = [n["name"] for n in others if n["gpus_per_node"] is None]
            if undeclared:
                problems.append(
                    f"{_hosts(undeclared)}: {'it shares' if len(undeclared) == 1 else 'they share'} machine {machine} "
                    f"with {gpu_node['name']}, which has GPUs, but {'does' if len(undeclared) == 1 else 'do'} not set "
                    f"{GPUS_VAR}; set {GPUS_VAR}: 0 on {', '.join(undeclared)} (one Ray node of "
                    "a GPU machine holds its GPUs, as RLinf's compute + control single-machine layout does), or "
                    f"isolate each Ray node in its own container ({ISOLATED_VAR}: true)."
                )
                continue
        if with_gpus:
            users = ", ".join(
                f"{n['name']} ({n['gpus'] if n['gpus'] is not None else '?'} GPU(s)"
                + (f", {CUDA_VAR} {','.join(n['cuda_visible_devices'])})" if n["cuda_visible_devices"] else ")")
                for n in with_gpus
            )
            problems.append(
                f"hosts {names}: they are Ray nodes of one machine ({machine}) and split its GPUs ({users}); "
                f"{NVML_REASON}, so each Ray node here would count all of the machine's GPUs and their workers "
                "would land on the same ones: give the GPUs to one of them and set "
                f"{GPUS_VAR}: 0 on the others (RLinf's compute + control layout), or run each Ray node in its "
                f"own container that sees only its GPUs and set {ISOLATED_VAR}: true on {', '.join(plain)}."
            )
        elif unknown:
            problems.append(
                f"hosts {', '.join(unknown)}: they share machine {machine} with other Ray nodes ({names}) but "
                f"do not set {GPUS_VAR}; set {GPUS_VAR}: 0 on each (or on all but the one Ray node that holds "
                f"the machine's GPUs: RLinf would count every GPU of it on each of them), or isolate each in "
                f"its own container ({ISOLATED_VAR}: true)."
            )
    return problems


def topology_problems(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Mapping]) -> list[str]:
    """Every problem with the head/worker groups and ranks; an empty list means usable."""
    try:
        cluster_nodes(groups, hostvars)
    except TopologyError as err:
        return err.problems
    return []


def topology_warnings(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Mapping]) -> list[str]:
    """What is allowed but does not do what it seems to under RLinf; [] when the topology has problems."""
    try:
        nodes = cluster_nodes(groups, hostvars)
    except TopologyError:
        return []
    warnings = []
    for node in nodes:
        if node["cuda_visible_devices"] and not node["gpu_isolated"]:
            count = (
                f"RLinf counts {node['rlinf_gpus']} GPU(s) here ({GPUS_VAR})"
                if node["rlinf_gpus"] is not None
                else f"without {GPUS_VAR} the placement checks do not know how many GPUs RLinf counts here"
            )
            warnings.append(
                f"host '{node['name']}': {CUDA_VAR}={','.join(node['cuda_visible_devices'])} limits Ray's GPU "
                f"resource, not RLinf's workers: {NVML_REASON}, so RLinf uses the machine's GPUs from index 0; "
                f"{count}. Set {GPUS_VAR} to the machine's GPU count, or run the node in a container that sees "
                f"only these GPUs ({ISOLATED_VAR}: true)."
            )
    seen: set[str] = set()
    for node in nodes:
        if not node["machine_peers"] or node["machine"] in seen:
            continue
        seen.add(node["machine"])
        gpu_node = next(n for n in nodes if n["name"] == node["machine_gpu_node"])
        members = [n for n in nodes if n["machine"] == node["machine"]]
        others = ", ".join(f"{n['name']} (rank {n['rank']})" for n in members if n is not gpu_node)
        warnings.append(
            f"hosts {', '.join(n['name'] for n in members)}: they are Ray nodes of one machine ({node['machine']}) "
            f"and only {gpu_node['name']} (rank {gpu_node['rank']}) has GPUs; RLinf's built-in node group "
            f"'cluster' counts the machine's GPUs (NVML) on each of them, {others} included, so only GPU "
            f"placements on a node group that holds {gpu_node['name']} alone are safe: add one (e.g. label gpu, "
            f"node_ranks: {gpu_node['rank']}) and place every GPU component on it with node_group."
        )
    return warnings


def cluster_nodes(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Mapping]) -> list[dict]:
    """Return the Ray nodes in rank order as dicts.

    Keys: ``name``, ``rank``, ``role`` (head/worker), ``address`` (``ansible_host`` or the
    name), ``machine`` (same as address: hosts sharing it share a machine),
    ``node_groups`` (RLinf labels, inventory order), ``node_group`` (the labels joined by
    commas, "" when none), ``gpus`` (Ray's view: the device list's length, else
    ``rlinf_gpus_per_node``; None when unknown), ``cuda_visible_devices``
    (list of ids or None), ``ray_port``, ``temp_dir``, ``env_file``, ``unit_name``,
    ``explicit_rank``; and ``rlinf_gpus`` (the accelerators RLinf counts on the node, what
    placement checks use: None when only ``rlinf_cuda_visible_devices`` is known, because
    RLinf counts every GPU of the machine), ``declared_gpus`` (``rlinf_gpus_per_node`` is
    set), ``gpus_per_node`` (its value or None), ``machine_peers`` and ``machine_gpu_node``
    (in the compute + control layout: the other Ray nodes of the machine, and the one that
    holds its GPUs; [] and None otherwise), ``gpu_isolated``, ``accelerator_type`` (RLinf's AcceleratorType),
    ``ray_accelerator_resource`` (the Ray resource those accelerators show as, "GPU", "NPU"
    or None), ``inventory_groups`` (every inventory group holding the host, but ``all`` and
    ``ungrouped``) and ``env_vars`` (the host's ``rlinf_env_vars``, {} when unset).

    Head is rank 0, then ``ray_workers`` in inventory order. An explicit
    ``rlinf_node_rank`` host var overrides the position and must keep ranks unique and
    continuous with the head at 0. Raises TopologyError listing every problem.
    """
    problems: list[str] = []
    groups = groups or {}
    hostvars = hostvars if hostvars is not None else {}
    heads = list(dict.fromkeys(groups.get(HEAD_GROUP) or []))
    workers = list(dict.fromkeys(groups.get(WORKER_GROUP) or []))

    if not heads:
        problems.append(f"inventory: group '{HEAD_GROUP}' is missing or empty; put exactly one host in '{HEAD_GROUP}'.")
    elif len(heads) > 1:
        problems.append(
            f"inventory: group '{HEAD_GROUP}' has {len(heads)} hosts ({', '.join(heads)}); "
            "a Ray cluster has exactly one head: keep one and move the others to "
            f"'{WORKER_GROUP}'."
        )
    for name in workers:
        if name in heads:
            problems.append(
                f"host '{name}': it is in both '{HEAD_GROUP}' and '{WORKER_GROUP}'; remove it from '{WORKER_GROUP}'."
            )
    workers = [w for w in workers if w not in heads]

    ordered = heads[:1] + workers
    declared = _declared_group_names(ordered, hostvars, groups, problems)
    for group in declared:
        outsiders = [h for h in groups.get(group) or [] if h not in ordered]
        if outsiders:
            problems.append(
                f"group '{group}': it is a node group ({NODE_GROUPS_VAR}) but {', '.join(outsiders)} "
                f"{'is' if len(outsiders) == 1 else 'are'} in neither '{HEAD_GROUP}' nor "
                f"'{WORKER_GROUP}'; add them to the cluster or remove them from '{group}'."
            )
        elif not groups.get(group):
            problems.append(
                f"group '{group}': it is a node group ({NODE_GROUPS_VAR}) but has no hosts; "
                f"add hosts or remove it from {NODE_GROUPS_VAR}."
            )
        problems.extend(_label_problems(group, f"group '{group}'"))

    nodes = []
    bad_labels: set[str] = set()
    for position, name in enumerate(ordered):
        explicit = _explicit_rank(name, hostvars, problems)
        rank = position if explicit is None else explicit
        labels = [g for g in declared if name in (groups.get(g) or [])]
        for label in _node_group_labels(name, hostvars, problems):
            if label not in bad_labels:
                found = _label_problems(label, f"host '{name}': {NODE_GROUP_VAR}")
                if found:
                    bad_labels.add(label)
                    problems.extend(found)
            if label not in labels:
                labels.append(label)
        accelerator = _accelerator(name, hostvars, problems)
        declared_gpus, devices = _gpu_info(name, hostvars, problems, accelerator)
        isolated = _bool_var(name, hostvars, ISOLATED_VAR, False, problems)
        _ray_gpus_problems(name, hostvars, accelerator, problems)
        address = str(_get(hostvars, name, "ansible_host", problems, name))
        env_vars = _get(hostvars, name, ENV_VARS_VAR, problems, {})
        env_vars = {str(k): v for k, v in env_vars.items()} if isinstance(env_vars, Mapping) else {}
        problems.extend(managed_env_problems(env_vars, name, ENV_VARS_VAR))
        if position == 0 and not _bool_var(name, hostvars, DASHBOARD_VAR, True, problems):
            problems.append(
                f"host '{name}': {DASHBOARD_VAR} is false, but RLinf needs the dashboard on the head: its "
                "failure handling lists actors through Ray's state API, which the dashboard serves "
                "(rlinf/scheduler/cluster/cluster.py signal handler, Worker.check_worker_alive, the "
                "distributed log collector), so a failed worker would not stop the run cleanly; keep it "
                "true (ray_node_dashboard_host keeps it on loopback)."
            )
        node = {
            "name": name,
            "rank": rank,
            "role": "head" if position == 0 else "worker",
            "address": address,
            "machine": address,
            "node_groups": labels,
            "node_group": ",".join(labels),
            # Ray's view: the device list when there is one, else the machine's count.
            "gpus": len(devices) if devices is not None else declared_gpus,
            "cuda_visible_devices": devices,
            "ray_port": _port(name, hostvars, problems),
            # An empty value means the default, as in the roles.
            "temp_dir": str(_get(hostvars, name, TEMP_DIR_VAR, problems, "") or DEFAULT_RAY_TEMP_DIR),
            "env_file": str(_get(hostvars, name, ENV_FILE_VAR, problems, "") or DEFAULT_ENV_FILE),
            "unit_name": str(_get(hostvars, name, UNIT_VAR, problems, "") or DEFAULT_UNIT),
            "explicit_rank": explicit is not None,
            "declared_gpus": declared_gpus is not None,
            "gpus_per_node": declared_gpus,
            "gpu_isolated": isolated,
            "accelerator_type": accelerator,
            "ray_accelerator_resource": ACCELERATOR_TYPES[accelerator][1],
            "inventory_groups": [
                g for g, members in groups.items() if g not in _SPECIAL_GROUPS and name in (members or [])
            ],
            "env_vars": env_vars,
            "rlinf_gpus": _rlinf_gpus(declared_gpus, devices, isolated),
            "machine_peers": [],
            "machine_gpu_node": None,
            # ray_num_cpus as set (None: Ray counts the machine's); the config check refuses a placement
            # on a node with fewer than RLinf's 1 CPU per actor (the plan checks the value's shape).
            "num_cpus": hostvars.get(name, {}).get("ray_num_cpus"),
        }
        nodes.append(node)

    if nodes and nodes[0]["rank"] != 0:
        problems.append(
            f"host '{nodes[0]['name']}': the head must have {RANK_VAR}=0 "
            f"(RLinf pins its manager actors to rank 0), not {nodes[0]['rank']}."
        )
    by_rank: dict[int, list[dict]] = {}
    for node in nodes:
        by_rank.setdefault(node["rank"], []).append(node)
    for rank, holders in sorted(by_rank.items()):
        if len(holders) > 1:
            implicit = [n["name"] for n in holders if not n["explicit_rank"]]
            hint = (
                f" ({', '.join(implicit)} got it from inventory order; set {RANK_VAR} on every host or on none)"
                if implicit
                else ""
            )
            problems.append(
                f"hosts {', '.join(n['name'] for n in holders)}: they share {RANK_VAR}={rank}{hint}; "
                "every node needs its own rank."
            )
    expected = set(range(len(nodes)))
    for node in nodes:
        if node["rank"] not in expected:
            problems.append(
                f"host '{node['name']}': {RANK_VAR}={node['rank']} is outside 0..{len(nodes) - 1}; "
                f"ranks must be continuous from 0 for the {len(nodes)} nodes in the inventory."
            )

    problems.extend(_shared_machine_problems(nodes))

    if problems:
        raise TopologyError(problems)
    return sorted(nodes, key=lambda n: n["rank"])


def format_ranks(ranks: Sequence[int]) -> str:
    """Compact RLinf rank expression: [0, 1, 2, 5] -> "0-2,5"; [] -> ""."""
    parts: list[str] = []
    ordered = sorted(set(ranks))
    start = prev = None
    for rank in ordered:
        if start is None:
            start = prev = rank
        elif rank == prev + 1:
            prev = rank
        else:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = rank
    if start is not None:
        parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(parts)


def inventory_node_groups(nodes: Sequence[Mapping]) -> dict[str, list[int]]:
    """RLinf label -> sorted node ranks, labels in first-seen rank order."""
    found: dict[str, list[int]] = {}
    for node in sorted(nodes, key=lambda n: n["rank"]):
        for label in node.get("node_groups") or []:
            found.setdefault(label, []).append(node["rank"])
    return found


def rank_table(nodes: Sequence[Mapping]) -> str:
    """Plain-text table: rank, host, address, role, node group(s), GPUs."""
    header = ("rank", "host", "address", "role", "group", "gpus")
    rows = [header]
    for node in sorted(nodes, key=lambda n: n["rank"]):
        gpus = node.get("gpus")
        rows.append(
            (
                str(node["rank"]),
                str(node["name"]),
                str(node["address"]),
                str(node.get("role", "")),
                node.get("node_group") or "-",
                "?" if gpus is None else str(gpus),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)).rstrip() for row in rows)
