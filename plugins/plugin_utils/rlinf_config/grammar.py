"""RLinf's ``cluster:`` grammar: rank expressions, ``component_placement`` in both forms, the
placement of components on node groups' resources, and RLinf YAML loaded safely.

Mirrors rlinf 0.3.0 (``rlinf/scheduler/cluster/{config,utils,node}.py`` and
``rlinf/scheduler/placement/{placement,node,flexible}.py``). The checks of a whole ``cluster:``
block against an inventory are in checks.py."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence

import yaml

from ansible_collections.rlinf.cluster.plugins.module_utils.topology import format_ranks

DEFAULT_GROUP = "cluster"
NODE_GROUP = "node"
ACCELERATOR = "Accelerator"

# ClusterConfig's fields (rlinf/scheduler/cluster/config.py), then the cluster-level keys
# RLinf's runners and Cluster read although ClusterConfig ignores them: auto_scheduler
# (utils/placement.py _is_auto), use_pre_process_policy and use_wait_before_last_iter_policy
# (dynamic_scheduler/scheduler_worker.py, runners/reasoning_runner.py), recreate_nccl_groups
# (workers/megatron_worker.py), and on main net_emulation and tracer (cluster/cluster.py).
CLUSTER_FIELDS = ("num_nodes", "component_placement", "node_groups", "profiling")
RUNNER_KEYS = ("auto_scheduler", "use_pre_process_policy", "use_wait_before_last_iter_policy", "recreate_nccl_groups")
MAIN_KEYS = ("net_emulation", "tracer")
CLUSTER_KEYS = (*CLUSTER_FIELDS, *RUNNER_KEYS, *MAIN_KEYS)
GROUP_KEYS = ("label", "node_ranks", "env_configs", "hardware", "hardware_type", "ignore_hardware")
ENV_CONFIG_KEYS = ("node_ranks", "env_vars", "python_interpreter_path")
HARDWARE_KEYS = ("type", "configs")
# Fields of each robot config dataclass (rlinf/scheduler/hardware/robots/*.py; ``node_rank``
# is common) with the type RobotAutoConfig parses an env var into: str, int, bool or list.
ROBOT_FIELDS = {
    "Franka": {
        "robot_ip": "str",
        "camera_serials": "list",
        "camera_type": "str",
        "gripper_type": "str",
        "gripper_connection": "str",
        "controller_node_rank": "int",
        "disable_validate": "bool",
    },
    "DualFranka": {
        "left_robot_ip": "str",
        "right_robot_ip": "str",
        "left_camera_serials": "list",
        "right_camera_serials": "list",
        "base_camera_serials": "list",
        "camera_type": "str",
        "base_camera_type": "str",
        "left_camera_type": "str",
        "right_camera_type": "str",
        "left_gripper_type": "str",
        "right_gripper_type": "str",
        "left_gripper_connection": "str",
        "right_gripper_connection": "str",
        "left_controller_node_rank": "int",
        "right_controller_node_rank": "int",
    },
    "DOSW1": {
        "robot_url": "str",
        "left_arm_port": "int",
        "right_arm_port": "int",
        "left_lead_port": "int",
        "right_lead_port": "int",
        "camera_serials": "list",
    },
    "GimArm": {
        "can_interface": "str",
        "arm_variant": "str",
        "camera_serials": "list",
        "camera_type": "str",
        "enable_gripper": "bool",
        "gripper_type": "str",
        "controller_node_rank": "int",
        "disable_validate": "bool",
    },
    "Turtle2": {},
}
# Fields RLinf's robotics refactor adds (PR #1481, refs/pull/1481/head fb8f3c90a, not merged in
# main a3816b5 nor in 0.3.0): rlinf/robotics/robots/franka.py FrankaConfig.camera_node_rank,
# rlinf/robotics/robots/dual_franka.py DualFrankaConfig.disable_validate. The validator has no
# notion of the nodes' RLinf version, so a config may use the keys of either.
ROBOTICS_FIELDS = {
    "Franka": {"camera_node_rank": "int"},
    "DualFranka": {"disable_validate": "bool"},
}
ALL_ROBOT_FIELDS = {hw: {**fields, **ROBOTICS_FIELDS.get(hw, {})} for hw, fields in ROBOT_FIELDS.items()}
HARDWARE_CONFIG_KEYS = {hw: tuple(fields) for hw, fields in ALL_ROBOT_FIELDS.items()}
# The ``count_fields`` each robot's enumerate() passes to RobotAutoConfig.resolve (0.3.0 and
# main a3816b5, rlinf/scheduler/hardware/robots/auto_config.py _create_from_env): on a node
# without a YAML config of that type, RLinf creates one robot per comma-separated value of
# these env vars (upper-cased). Turtle2 creates none from the environment. The robotics
# refactor (PR #1481, rlinf/robotics/discovery/autoconfig.py _create_from_env) instead takes
# the largest comma count of any scalar (not list) field's env var but node_rank and *_node_rank.
ROBOT_COUNT_FIELDS = {
    "Franka": ("robot_ip",),
    "DualFranka": ("left_robot_ip", "right_robot_ip"),
    "DOSW1": ("robot_url",),
    "GimArm": ("can_interface",),
    "Turtle2": (),
}
# Checked by the config dataclasses' __post_init__ when ClusterConfig is built.
IP_FIELDS = {"Franka": ("robot_ip",), "DualFranka": ("left_robot_ip", "right_robot_ip")}
GIMARM_VARIANTS = ("gim_arm", "gim_arm_xl")
# ClusterConfig.__post_init__: cluster.profiling -> the ProfileConfig subclass registered for
# its backend (accelerators/nvidia_gpu.py NsightConfig, amd_gpu.py RocprofSysConfig), which
# rejects unknown keys; the tool each backend's check() looks for on the node's PATH.
PROFILE_COMMON_KEYS = ("backend", "enabled", "worker_groups", "steps", "output_dir")
PROFILE_BACKENDS = {
    "nsight": ((*PROFILE_COMMON_KEYS, "options", "flags"), "nsys"),
    "rocprof_sys": ((*PROFILE_COMMON_KEYS, "args", "env"), "rocprof-sys-python"),
}
# What the rlinf-ray unit's PATH is when rlinf_env_vars does not set one (systemd's default).
SYSTEMD_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HARDWARE_TYPES = tuple(HARDWARE_CONFIG_KEYS)


class RLinfConfigError(ValueError):
    """Raised with every problem found (loading a file, or checking a cluster block)."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class RankError(ValueError):
    """A rank expression RLinf rejects. ``kind`` is "format" (RLinf's ValueError) or "range"."""

    def __init__(self, message: str, kind: str = "format"):
        self.kind = kind
        super().__init__(message)


class PlacementError(ValueError):
    """A placement string or a placement RLinf rejects."""


class UnknownResources(Exception):
    """The resource count of a group is unknown (GPUs per node not declared)."""


# --------------------------------------------------------------------------- ranks


def _is_all(text: str) -> bool:
    return text.lower() == "all"


def parse_rank_config(rank_config, available_ranks: Sequence[int] | None = None, rank_type: str = "node"):
    """Rank expression -> sorted unique ranks, accepting exactly what RLinf accepts.

    ``all`` (any case) needs ``available_ranks``; otherwise comma-separated ``N`` or
    ``N-M`` items (empty items skipped, whitespace and Python ``int()`` spellings allowed,
    duplicates merged). Ranks must lie between the smallest and largest available rank.
    A YAML list or a boolean is not a rank expression. Raises RankError.
    """
    text = str(rank_config)
    available = sorted(available_ranks) if available_ranks is not None else None
    if _is_all(text):
        if available is None:
            raise RankError(f"'{text}' needs a known set of {rank_type} ranks", "range")
        return sorted(set(available))
    ranks: set[int] = set()
    for item in text.split(","):
        item = item.strip()
        if item == "":
            continue
        bounds = item.split("-")
        try:
            if len(bounds) == 1:
                start = end = int(bounds[0])
            elif len(bounds) == 2:
                start, end = int(bounds[0]), int(bounds[1])
            else:
                raise ValueError
        except ValueError:
            raise RankError(
                f"'{text}' is not a {rank_type} rank expression (expected 'all' or items 'N' or 'N-M' "
                "separated by commas)",
                "format",
            ) from None
        if end < start:
            raise RankError(f"range '{item}' in '{text}' ends before it starts", "range")
        if available is not None:
            if not available:
                raise RankError(f"'{text}' selects {rank_type} ranks but there are none", "range")
            for bound in (start, end):
                if not available[0] <= bound <= available[-1]:
                    raise RankError(
                        f"{rank_type} rank {bound} in '{text}' is outside {available[0]}..{available[-1]}",
                        "range",
                    )
        ranks.update(range(start, end + 1))
    return sorted(ranks)


def rank_overlaps(rank_config) -> list[int]:
    """Ranks written more than once in an expression ("0,0", "0-1,1-2"); [] for "all"."""
    text = str(rank_config)
    if _is_all(text):
        return []
    seen: set[int] = set()
    repeated: set[int] = set()
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            found = parse_rank_config(item)
        except RankError:
            return []
        repeated.update(seen.intersection(found))
        seen.update(found)
    return sorted(repeated)


# ----------------------------------------------------------------------- placement


def parse_placement(placement, resource_count: int | None, resource_label: str = "Node"):
    """Placement string -> list of (resource_ranks, process_ranks), as RLinf's ``_parse_rank_map``.

    ``resource_count`` None means unknown: ranges are not checked and ``all`` raises
    UnknownResources. Raises PlacementError with the reason.
    """
    text = str(placement).strip()
    available = list(range(resource_count)) if resource_count is not None else None
    rank_map: list[tuple[list[int], list[int]]] = []
    used_resources: list[int] = []
    used_processes: list[int] = []
    parts = [p.strip() for p in text.split(",")]
    # A placement like "0-1:0-3,3-5" splits on commas first, exactly as RLinf does.
    for part in parts:
        if part == "":
            continue
        pieces = part.split(":")
        if not 1 <= len(pieces) <= 2:
            raise PlacementError(f"part '{part}' has more than one ':'; write resource_ranks[:process_ranks]")
        res_text = pieces[0].strip()
        if available is None and _is_all(res_text):
            raise UnknownResources
        if resource_count == 0:
            raise PlacementError(f"there are no {resource_label} resources to place '{part}' on")
        try:
            resources = parse_rank_config(res_text, available, f"{resource_label} resource")
        except RankError as err:
            raise PlacementError(f"resource ranks of '{part}': {err}") from None
        if not resources:
            raise PlacementError(f"part '{part}' selects no resource ranks")
        if not set(resources).isdisjoint(used_resources):
            raise PlacementError(f"part '{part}' reuses resource ranks; each resource rank may appear once")
        if used_resources and resources[0] <= used_resources[-1]:
            raise PlacementError(f"resource ranks must ascend from part to part ('{part}' goes back)")
        used_resources.extend(resources)
        if len(pieces) == 2:
            proc_text = pieces[1].strip()
            if proc_text == "all":
                raise PlacementError(f"process ranks in '{part}' cannot be 'all'; write them as N-M")
            try:
                processes = parse_rank_config(proc_text, None, "process")
            except RankError as err:
                raise PlacementError(f"process ranks of '{part}': {err}") from None
        else:
            offset = max(used_processes) + 1 if used_processes else 0
            processes = [offset + i for i in range(len(resources))]
        if not processes:
            raise PlacementError(f"part '{part}' has no process ranks")
        if not set(processes).isdisjoint(used_processes):
            raise PlacementError(f"part '{part}' reuses process ranks; each process rank may appear once")
        if used_processes and processes[0] != used_processes[-1] + 1:
            raise PlacementError(
                f"process ranks must continue from {used_processes[-1] + 1} in part '{part}' "
                "(they are continuous across parts)"
            )
        if processes != list(range(processes[0], processes[0] + len(processes))):
            raise PlacementError(f"process ranks in '{part}' are not continuous")
        used_processes.extend(processes)
        if len(processes) % len(resources) and len(resources) % len(processes):
            raise PlacementError(
                f"in '{part}', {len(processes)} process(es) on {len(resources)} resource(s): one count "
                "must divide the other"
            )
        rank_map.append((resources, processes))
    return rank_map


def process_resources(rank_map) -> dict[int, list[int]]:
    """Process rank -> resource ranks, as RLinf's ``_rank_map_to_process_resources_map``."""
    result: dict[int, list[int]] = {}
    for resources, processes in rank_map:
        if len(resources) >= len(processes):
            per = len(resources) // len(processes)
            for i, proc in enumerate(processes):
                result[proc] = list(resources[i * per : (i + 1) * per])
        else:
            per = len(processes) // len(resources)
            for i, res in enumerate(resources):
                for j in range(per):
                    result.setdefault(processes[i * per + j], []).append(res)
    return result


def hardware_kind(hw_type) -> str:
    """Display name of a hardware type: RLinf's "Accelerator" is a GPU here."""
    return "GPU" if hw_type == ACCELERATOR else str(hw_type)


class Group:
    """What RLinf's NodeGroupInfo knows: nodes (ranks) and the units each has."""

    def __init__(self, label, node_ranks, hw_type, units):
        self.label = label
        self.node_ranks = list(node_ranks)
        self.hw_type = hw_type  # None: one unit per node
        self.units = units  # per node, same order; None when unknown

    @property
    def count(self):
        if self.hw_type is None:
            return len(self.node_ranks)
        if self.units is None or any(u is None for u in self.units):
            return None
        return sum(self.units)

    def describe(self):
        kind = "node" if self.hw_type is None else hardware_kind(self.hw_type)
        return f"{self.count} {kind} resource(s)"


def place(rank_map, groups: Sequence[Group]) -> list[str]:
    """Place the processes as RLinf does; reasons for failure (empty when it fits)."""
    problems: list[str] = []
    proc_map = process_resources(rank_map)
    node_mode = any(g.hw_type is None for g in groups)
    if node_mode:
        flat_nodes = [(rank, g.label) for g in groups for rank in g.node_ranks]
        seen: set[int] = set()
        for g in groups:
            if seen.intersection(g.node_ranks):
                problems.append(
                    f"node groups {', '.join(x.label for x in groups)} overlap; a node placement over "
                    "several groups needs disjoint nodes"
                )
                break
            seen.update(g.node_ranks)
        for proc in sorted(proc_map):
            res = proc_map[proc]
            if len(res) != 1:
                problems.append(
                    f"process {proc} would get resources {format_ranks(res)}, i.e. several nodes; one "
                    "process runs on one node, so give it a single resource rank"
                )
            elif res[0] >= len(flat_nodes):
                problems.append(
                    f"process {proc} is placed on node index {res[0]} but the group(s) have {len(flat_nodes)} node(s)"
                )
        return problems
    owners: list[tuple[int, str]] = []
    for g in groups:
        for node_rank, units in zip(g.node_ranks, g.units, strict=False):
            owners.extend([(node_rank, g.hw_type)] * units)
    if not owners:
        return ["the selected node group(s) have no resources"]
    for proc in sorted(proc_map):
        res = proc_map[proc]
        where = {owners[r][0] for r in res if r < len(owners)}
        if len(where) > 1:
            problems.append(
                f"process {proc} would use resources {format_ranks(res)} on nodes "
                f"{format_ranks(sorted(where))}; one process must stay on one node"
            )
        kinds = {hardware_kind(owners[r][1]) for r in res if r < len(owners)}
        if len(kinds) > 1:
            problems.append(
                f"process {proc} would mix hardware types {', '.join(sorted(kinds))}; one process uses "
                "one hardware type"
            )
    return problems


# ---------------------------------------------------------------------------- YAML


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys (OmegaConf does too)."""


def _construct_mapping(loader, node, deep=False):
    keys = set()
    for key_node, _value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in keys
        except TypeError:
            duplicate = False
        if duplicate:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        with contextlib.suppress(TypeError):
            keys.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_config_text(text: str, source: str = "the RLinf config"):
    """The mapping under ``cluster:`` of an RLinf YAML document. Raises RLinfConfigError."""
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        reason = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise RLinfConfigError(
            [f"{source}: not valid YAML{where} ({reason}); fix the syntax or pass the right file."]
        ) from None
    if not isinstance(data, Mapping):
        raise RLinfConfigError(
            [
                f"{source}: the top level is {type(data).__name__ if data is not None else 'empty'}, not "
                "a mapping with a 'cluster:' block; pass an RLinf training config (YAML)."
            ]
        )
    if "cluster" not in data:
        hint = (
            " It has a Hydra 'defaults:' list: pass the file that holds the cluster block, or set "
            "rlinf_cluster instead."
            if "defaults" in data
            else ""
        )
        raise RLinfConfigError([f"{source}: there is no top-level 'cluster:' block.{hint}".rstrip()])
    cluster = data["cluster"]
    if not isinstance(cluster, Mapping):
        raise RLinfConfigError(
            [f"{source}: 'cluster:' is {type(cluster).__name__}, not a mapping; write num_nodes etc. under it."]
        )
    return cluster


def load_config_file(path: str):
    """Read ``path`` (``~`` expanded, relative to the current directory) and return its cluster block."""
    full = os.path.abspath(os.path.expanduser(str(path)))
    try:
        with open(full, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise RLinfConfigError(
            [f"rlinf_config: file '{path}' does not exist (looked at {full}); give a path to the RLinf YAML."]
        ) from None
    except IsADirectoryError:
        raise RLinfConfigError([f"rlinf_config: '{path}' is a directory; give the path of one YAML file."]) from None
    except (OSError, UnicodeDecodeError) as err:
        raise RLinfConfigError(
            [f"rlinf_config: cannot read '{path}' ({err}); check the path and permissions."]
        ) from None
    return load_config_text(text, f"rlinf_config '{path}'")


def resolve_cluster(config):
    """A path, a whole config (with ``cluster:``) or a cluster block -> (cluster, source)."""
    if isinstance(config, str):
        return load_config_file(config), f"rlinf_config '{config}'"
    if isinstance(config, Mapping):
        if "cluster" in config and "num_nodes" not in config:
            inner = config["cluster"]
            if not isinstance(inner, Mapping):
                raise RLinfConfigError(["rlinf_cluster: 'cluster' is not a mapping; give the cluster block."])
            return inner, "rlinf_cluster"
        return config, "rlinf_cluster"
    raise RLinfConfigError(
        [
            f"rlinf_cluster: got {type(config).__name__}; set rlinf_config to a file path or rlinf_cluster "
            "to the mapping under 'cluster:'."
        ]
    )
