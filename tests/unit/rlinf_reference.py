"""RLinf's own parsers, run from its source, for the differential tests.

rlinf's modules import torch and ray at the top, so the package cannot be imported in the
controller venv. This module reads the source (the installed ``rlinf`` package, found
without importing it; or a wheel named by ``RLINF_WHEEL``; or a checkout named by
``RLINF_SRC``), takes the functions and classes the validator mirrors out of it with
``ast`` and executes them unchanged in one module namespace. The only edit: relative
``from ..x import y`` statements inside those functions are dropped, because ``y`` is
already defined in that namespace; names used only in annotations (Cluster, Placement)
are empty placeholder classes. OmegaConf (requirements/test.txt) builds the
``DictConfig`` RLinf receives from Hydra.
"""

from __future__ import annotations
import __future__

import ast
import dataclasses
import importlib.util
import ipaddress
import logging
import os
import sys
import types
import typing
import warnings
import zipfile
from collections.abc import Sequence
from enum import Enum
from pathlib import Path

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf

# (file, names) in the order they must be defined.
PIECES = [
    ("rlinf/scheduler/cluster/utils.py", ["DataclassProtocol", "parse_rank_config", "dataclass_arg_check"]),
    (
        "rlinf/scheduler/hardware/hardware.py",
        ["HardwareConfig", "NodeHardwareConfig", "HardwareInfo", "HardwareResource", "Hardware"],
    ),
    ("rlinf/scheduler/hardware/robots/auto_config.py", ["RobotAutoConfig"]),
    ("rlinf/scheduler/hardware/robots/franka.py", ["FrankaRobot", "FrankaConfig"]),
    ("rlinf/scheduler/hardware/robots/dual_franka.py", ["DualFrankaRobot", "DualFrankaConfig"]),
    ("rlinf/scheduler/hardware/robots/dosw1.py", ["DOSW1Robot", "DOSW1HWConfig"]),
    ("rlinf/scheduler/hardware/robots/gim_arm.py", ["GimArmRobot", "GimArmConfig"]),
    ("rlinf/scheduler/hardware/robots/xsquare.py", ["Turtle2Robot", "Turtle2Config"]),
    (
        "rlinf/scheduler/hardware/accelerators/accelerator.py",
        ["ProfileConfig", "AcceleratorType", "AcceleratorManager"],
    ),
    ("rlinf/scheduler/hardware/accelerators/nvidia_gpu.py", ["NsightConfig"]),
    ("rlinf/scheduler/hardware/accelerators/amd_gpu.py", ["RocprofSysConfig"]),
    ("rlinf/scheduler/cluster/config.py", ["NodeGroupEnvConfig", "NodeGroupConfig", "ClusterConfig"]),
    ("rlinf/scheduler/cluster/node.py", ["NodeInfo", "NodeGroupInfo"]),
    ("rlinf/scheduler/placement/placement.py", ["PlacementStrategy"]),
    ("rlinf/scheduler/placement/flexible.py", ["FlexiblePlacementStrategy"]),
    ("rlinf/scheduler/placement/node.py", ["NodePlacementStrategy"]),
]
ROBOT_FILES = {
    "Franka": "rlinf/scheduler/hardware/robots/franka.py",
    "DualFranka": "rlinf/scheduler/hardware/robots/dual_franka.py",
    "DOSW1": "rlinf/scheduler/hardware/robots/dosw1.py",
    "GimArm": "rlinf/scheduler/hardware/robots/gim_arm.py",
    "Turtle2": "rlinf/scheduler/hardware/robots/xsquare.py",
}
ACCELERATOR_DIR = "rlinf/scheduler/hardware/accelerators/"
CLUSTER_PY = "rlinf/scheduler/cluster/cluster.py"


class Sources:
    """Text of RLinf source files, from a checkout, a wheel or the installed package."""

    def __init__(self):
        self.where = None
        self._root = None
        self._zip = None
        if os.environ.get("RLINF_SRC"):
            self._root = Path(os.environ["RLINF_SRC"])
            self.where = f"checkout {self._root}"
        elif os.environ.get("RLINF_WHEEL"):
            self._zip = zipfile.ZipFile(os.environ["RLINF_WHEEL"])
            self.where = f"wheel {os.environ['RLINF_WHEEL']}"
        else:
            spec = importlib.util.find_spec("rlinf")  # locates the package without running it
            if spec is not None and spec.submodule_search_locations:
                self._root = Path(next(iter(spec.submodule_search_locations))).parent
                self.where = f"installed package {self._root}"

    @property
    def found(self) -> bool:
        return self.where is not None

    def read(self, path: str) -> str:
        if self._zip is not None:
            return self._zip.read(path).decode()
        return (self._root / path).read_text()

    def names(self, prefix: str) -> list[str]:
        if self._zip is not None:
            return sorted(n for n in self._zip.namelist() if n.startswith(prefix) and n.endswith(".py"))
        return sorted(str(p.relative_to(self._root)) for p in (self._root / prefix).glob("*.py"))


class _DropRelativeImports(ast.NodeTransformer):
    def visit_ImportFrom(self, node):
        return None if node.level else node


def _uses_future_annotations(tree: ast.Module) -> bool:
    return any(
        isinstance(n, ast.ImportFrom) and n.module == "__future__" and any(a.name == "annotations" for a in n.names)
        for n in tree.body
    )


def load(sources: Sources) -> types.ModuleType:
    """A module holding RLinf's pieces (PIECES), executed from ``sources``."""
    module = types.ModuleType("rlinf_reference_src")
    sys.modules[module.__name__] = module  # dataclasses and get_type_hints look classes' modules up here
    module.__dict__.update(
        {
            "dataclass": dataclasses.dataclass,
            "asdict": dataclasses.asdict,
            "field": dataclasses.field,
            "fields": dataclasses.fields,
            "is_dataclass": dataclasses.is_dataclass,
            "dataclasses": dataclasses,
            "Enum": Enum,
            "HardwareType": typing.TypeVar("HardwareType"),
            "DictConfig": DictConfig,
            "ListConfig": ListConfig,
            "OmegaConf": OmegaConf,
            "yaml": yaml,
            "os": os,
            "ipaddress": ipaddress,
            "warnings": warnings,
            "logging": logging,
            "Sequence": Sequence,
            **{name: getattr(typing, name) for name in typing.__all__},
            # Named only in annotations of the pieces (Python evaluates them at definition).
            **{name: type(name, (), {}) for name in ("Cluster", "Placement", "MultiNodeGroupResolver")},
        }
    )
    for path, names in PIECES:
        tree = ast.parse(sources.read(path))
        found = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
                found[node.name] = _DropRelativeImports().visit(node)
        missing = set(names) - set(found)
        assert not missing, f"{missing} not found in {path} ({sources.where}): has rlinf changed?"
        body = ast.Module(body=[found[n] for n in names], type_ignores=[])
        ast.fix_missing_locations(body)
        flags = __future__.annotations.compiler_flag if _uses_future_annotations(tree) else 0
        exec(compile(body, path, "exec", flags=flags, dont_inherit=True), module.__dict__)  # rlinf's own code
    attach_placement_methods(module, sources)
    return module


def cluster_config_error(rlinf: types.ModuleType, cluster) -> str | None:
    """None when RLinf's ClusterConfig.from_dict_cfg accepts ``cluster``, else the error type and text."""
    try:
        rlinf.ClusterConfig.from_dict_cfg(OmegaConf.create(cluster))
    except Exception as err:  # RLinf raises AssertionError, ValueError and TypeError alike
        return f"{type(err).__name__}: {err}"
    return None


def placement_error(rlinf: types.ModuleType, text, resource_count: int, node_mode: bool) -> str | None:
    """None when RLinf's ComponentPlacement builds a strategy for ``text`` on ``resource_count`` resources.

    Runs ``_parse_rank_map`` and then ``_gen_node_placement`` (node mode, a group without
    hardware) or ``_gen_resource_placement``, as ``_parse_component_placement`` does.
    """

    class Resolver:  # what _parse_rank_map reads from MultiNodeGroupResolver
        hardware_resource_count = resource_count
        hardware_types = None if node_mode else ["Accelerator"]

    class Group:
        label = "cluster"

    placement = types.SimpleNamespace(
        _rank_map_to_process_resources_map=lambda rank_map: rlinf._rank_map_to_process_resources_map(None, rank_map)
    )
    generate = rlinf._gen_node_placement if node_mode else rlinf._gen_resource_placement
    try:
        rank_map = rlinf._parse_rank_map(None, text, Resolver())
        generate(placement, rank_map, [Group()], ["actor"])
    except (AssertionError, ValueError, IndexError) as err:
        return f"{type(err).__name__}: {err}"
    return None


def attach_placement_methods(rlinf: types.ModuleType, sources: Sources) -> None:
    """ComponentPlacement's rank-map parser and strategy builders, as functions (``self`` passed in)."""
    path = "rlinf/scheduler/placement/placement.py"
    tree = ast.parse(sources.read(path))
    wanted = ("_parse_rank_map", "_rank_map_to_process_resources_map", "_gen_node_placement", "_gen_resource_placement")
    found = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name in wanted}
    assert set(found) == set(wanted), f"{set(wanted) - set(found)} not found in {path}: has rlinf changed?"
    body = ast.Module(body=[_DropRelativeImports().visit(found[n]) for n in wanted], type_ignores=[])
    ast.fix_missing_locations(body)
    exec(compile(body, path, "exec", dont_inherit=True), rlinf.__dict__)


def robot_count_fields(sources: Sources) -> dict[str, tuple[str, ...]]:
    """The ``count_fields=`` each robot's enumerate() passes to RobotAutoConfig.resolve (() when none)."""
    result = {}
    for hw_type, path in ROBOT_FILES.items():
        result[hw_type] = ()
        for node in ast.walk(ast.parse(sources.read(path))):
            if isinstance(node, ast.keyword) and node.arg == "count_fields":
                result[hw_type] = tuple(ast.literal_eval(node.value))
    return result


def accelerator_env_vars(sources: Sources) -> dict[str, str]:
    """AcceleratorType value -> first variable its manager's get_accelerator_env_var writes."""
    result = {}
    for path in sources.names(ACCELERATOR_DIR):
        tree = ast.parse(sources.read(path))
        accel, var = None, None
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "get_accelerator_type":
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Attribute):
                        accel = sub.value.attr
            if isinstance(node, ast.FunctionDef) and node.name == "get_accelerator_env_var" and var is None:
                for sub in ast.walk(node):
                    if (
                        isinstance(sub, ast.Assign)
                        and isinstance(sub.targets[0], ast.Subscript)
                        and isinstance(sub.targets[0].slice, ast.Constant)
                    ):
                        var = sub.targets[0].slice.value
                        break
        if accel and var:
            result[accel] = var
    return result


def driver_set_env_vars(sources: Sources) -> list[str]:
    """RLINF_* variables the driver assigns in os.environ (cluster.py), e.g. RLINF_NET_EMULATION on main."""
    found = []
    for node in ast.walk(ast.parse(sources.read(CLUSTER_PY))):
        if not (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript)):
            continue
        target = node.targets[0]
        if ast.unparse(target.value) != "os.environ":
            continue
        text = ast.unparse(target.slice)
        if "ClusterEnvVar." in text:
            found.append("RLINF_" + text.split("ClusterEnvVar.")[1].split(")")[0])
    return found
