"""The typed plan (plugins/plugin_utils/plan_types.py) is the plan that plan/ computes: every field of
every computed plan below is typed there (none unknown, none of the wrong type), every required field
is in each, and docs/plan.schema.json is generated from the types."""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping
from pathlib import Path

import jsonschema
import pytest
from test_metrics_plan import probe
from test_plan_contract import GROUPS, SSH, _hostvars, _static

from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan_types as T

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "docs" / "plan.schema.json"


def mismatches(value, tp, where: str = "rlinf_plan") -> list[str]:
    """Where ``value`` is not of type ``tp``: a missing required field, an unknown one, a wrong type."""
    if typing.is_typeddict(tp):
        if not isinstance(value, Mapping):
            return [f"{where}: {type(value).__name__}, not {tp.__name__}"]
        hints = typing.get_type_hints(tp)
        out = [f"{where}.{key}: missing" for key in sorted(tp.__required_keys__ - set(value))]
        out += [f"{where}.{key}: not in {tp.__name__}" for key in sorted(set(value) - set(hints))]
        for key in sorted(set(value) & set(hints)):
            out += mismatches(value[key], hints[key], f"{where}.{key}")
        return out
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is object:
        return []
    if origin is typing.Literal:
        return [] if value in args else [f"{where}: {value!r} not one of {args}"]
    if origin in (typing.Union, types.UnionType):
        return [] if any(not mismatches(value, arg, where) for arg in args) else [f"{where}: {value!r} is not {tp}"]
    if tp is type(None):
        return [] if value is None else [f"{where}: {value!r} is not None"]
    base = origin or tp
    if (base is int and isinstance(value, bool)) or not isinstance(value, base):
        return [f"{where}: {type(value).__name__}, not {getattr(base, '__name__', base)}"]
    if base is list and args:
        return [m for i, item in enumerate(value) for m in mismatches(item, args[0], f"{where}[{i}]")]
    if base is dict and args:
        return [m for key, item in value.items() for m in mismatches(item, args[1], f"{where}[{key!r}]")]
    return []


def _resolved(hostvars, purpose="site", context_purpose=None):
    plan = P.resolve(_static(hostvars, context_purpose or purpose), {n: probe(a) for n, a in SSH.items()}, purpose)
    for build in plan.get("wheelhouses", []):
        build["complete"] = False
    return plan


def _gpu_user_package():
    hostvars = _hostvars()
    for name, host in hostvars.items():
        host.update(rlinf_code_sync="package", rlinf_gpus_per_node=2, ray_node_user="ray", rlinf_metrics_enabled=False)
        if name == "w3":
            host.update(ray_node_ip=SSH[name], rlinf_cuda_visible_devices="0,1")
    return hostvars


def _overlay():
    groups = dict(GROUPS, easytier_bootstrap=["h"])
    hostvars = _hostvars()
    for host in hostvars.values():
        host.update(easytier_enabled=True, easytier_network_name="lab", easytier_network_secret="s" * 24)
    static = _static(hostvars, "site", groups)
    probes = {n: probe(a) for n, a in SSH.items()}
    for name, found in probes.items():
        found["interfaces"]["et0"] = [static["nodes"][name]["address_rule"]["value"]]
    resolved = P.resolve(static, probes, "site")
    for build in resolved["wheelhouses"]:
        build["complete"] = False
    return static, resolved


PLANS = {
    "static site": lambda: _static(_hostvars(), "site"),
    "resolved site": lambda: _resolved(_hostvars()),
    "resolved site, GPUs, ray_node_user, package": lambda: _resolved(_gpu_user_package()),
    "static remove-node": lambda: _static(_hostvars(node="w1"), "remove-node"),
    "resolved remove-node": lambda: _resolved(_hostvars(node="w1"), "remove-node"),
    "static teardown": lambda: _static(_hostvars(), "teardown"),
    "static launch": lambda: _static(_hostvars(rlinf_entry="bash run.sh"), "launch"),
    "static overlay": lambda: _overlay()[0],
    "resolved overlay": lambda: _overlay()[1],
}


@pytest.mark.parametrize("build", PLANS.values(), ids=PLANS)
def test_a_computed_plan_is_of_the_typed_shape(build):
    plan = build()
    assert mismatches(plan, T.ClusterPlan) == []
    # The generated JSON Schema says the same of it.
    assert [e.message for e in jsonschema.Draft202012Validator(T.json_schema()).iter_errors(plan)] == []


def test_the_checker_names_a_missing_an_unknown_and_a_wrong_field():
    plan = PLANS["resolved site"]()
    del plan["cluster"]["head"]
    plan["nodes"]["w1"]["rank_typo"] = 1
    plan["nodes"]["h"]["rank"] = "0"
    assert mismatches(plan, T.ClusterPlan) == [
        "rlinf_plan.cluster.head: missing",
        "rlinf_plan.nodes['h'].rank: str, not int",
        "rlinf_plan.nodes['w1'].rank_typo: not in NodePlan",
    ]


def test_the_node_and_cluster_fields_a_role_reads_are_typed():
    # The contract test reads fields off computed plans; the types must name each of them too.
    from test_plan_contract import reads

    def typed(tp, path):
        for key in path:
            hints = typing.get_type_hints(tp) if typing.is_typeddict(tp) else {}
            if key not in hints:
                return typing.get_origin(tp) is dict or tp in (dict, object)
            tp = hints[key]
            if typing.get_origin(tp) is dict and typing.get_args(tp):
                return True
        return True

    untyped = [
        f"{where}: {name}.{'.'.join(path)}"
        for where, name, path in reads()
        if not typed(T.ClusterPlan if name == "rlinf_plan" else T.NodePlan, [p for p in path if p != "nodes"])
    ]
    assert untyped == []


def test_docs_plan_schema_is_generated_from_the_types():
    assert SCHEMA.exists(), "run make generate"
    assert json.loads(SCHEMA.read_text()) == T.json_schema(), "docs/plan.schema.json is stale: run make generate"


def test_the_schema_is_the_plan_version_and_closed():
    schema = T.json_schema()
    assert schema["$defs"]["ClusterPlan"]["properties"]["version"] == {"const": P.PLAN_VERSION}
    assert all(d["additionalProperties"] is False for d in schema["$defs"].values())
    assert "ip" in schema["$defs"]["NodePlan"]["properties"]
    assert "ip" not in schema["$defs"]["NodePlan"]["required"]
