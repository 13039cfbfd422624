"""The roles' contract with the plan: every field a role, playbook or template reads from
``rlinf_plan`` (the whole plan) or ``rlinf_node`` (this host's part) exists in a plan the Python
side computes. A rename in the plan (plugins/plugin_utils/plan/) that a YAML file still reads fails here, not on a lab.

The plans are the union of what the playbooks bind: a resolved site plan with metrics, the
firewall, auth and a user-run Ray, and a remove-node plan (its ``removal``)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from test_metrics_plan import probe

from ansible_collections.rlinf.cluster.plugins.action.cluster_plan import ActionModule
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("roles", "playbooks")
FIELD = re.compile(r"\b(rlinf_plan|rlinf_node)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
# What Jinja calls on a value, not a field of it.
METHODS = {"splitlines", "keys", "values", "items", "get", "split", "startswith"}

GROUPS = {"ray_head": ["h"], "ray_workers": ["w1", "w2", "w3"]}
SSH = {"h": "192.0.2.1", "w1": "192.0.2.2", "w2": "192.0.2.3", "w3": "192.0.2.4"}


def _hostvars(**run):
    every = {
        "rlinf_metrics_enabled": True,
        "rlinf_firewall_enabled": True,
        "rlinf_code_sync": "rsync",
        "rlinf_src": "/src/RLinf",
        "rlinf_secret_env_vars": {"HF_TOKEN": "x"},
    }
    return {name: {"ansible_host": address, **every, **(run if name == "h" else {})} for name, address in SSH.items()}


def _static(hostvars, purpose: str, groups=GROUPS) -> dict:
    """The static plan as the action returns it (what it adds on the controller included)."""
    built = P.static_plan(groups, hostvars, {"purpose": purpose})
    removed = [built["removal"]["node_plan"]] if "removal" in built else []
    for node in [*built["nodes"].values(), *removed]:
        node["ssh_verify_host"] = True
    ActionModule._adopt_legacy_token(built)
    return built


def plans() -> list[dict]:
    site = P.resolve(_static(_hostvars(), "site"), {n: probe(a) for n, a in SSH.items()}, "site")
    for build in site["wheelhouses"]:
        build["complete"] = False
    removal = _static(_hostvars(node="w1"), "remove-node")
    launch = _static(_hostvars(rlinf_entry="bash run.sh"), "launch")
    return [site, removal, launch]


def _has(value, path: list[str]) -> bool:
    for key in path:
        if key in METHODS:
            return True
        if not isinstance(value, Mapping) or key not in value:
            return False
        value = value[key]
    return True


def reads() -> Iterator[tuple[str, str, list[str]]]:
    """(where, name, path) for every field read of the plan's two names in the roles and playbooks."""
    for top in SOURCES:
        for file in sorted((ROOT / top).rglob("*")):
            if file.suffix not in (".yml", ".yaml", ".j2") or not file.is_file():
                continue
            for number, line in enumerate(file.read_text().splitlines(), 1):
                for match in FIELD.finditer(line):
                    where = f"{file.relative_to(ROOT)}:{number}"
                    yield where, match.group(1), match.group(2).lstrip(".").split(".")


def test_every_field_the_roles_read_exists_in_a_plan():
    computed = plans()
    nodes = [node for plan in computed for node in plan["nodes"].values()]
    nodes += [plan["removal"]["node_plan"] for plan in computed if "removal" in plan]
    missing = []
    for where, name, path in reads():
        found = any(_has(p, path) for p in computed) if name == "rlinf_plan" else any(_has(n, path) for n in nodes)
        if not found:
            missing.append(f"{where}: {name}.{'.'.join(path)}")
    assert missing == []


def test_the_reads_are_found_at_all():
    found = {(name, ".".join(path)) for _, name, path in reads()}
    # One of each name from a file that must read it: the scan itself works.
    assert ("rlinf_plan", "cluster.head_address") in found
    assert ("rlinf_node", "paths.venv") in found


@pytest.mark.parametrize("path", [["cluster", "no_such_setting"], ["nodes_typo"]])
def test_a_field_no_plan_has_is_caught(path):
    assert not any(_has(p, path) for p in plans())


def test_the_plan_has_no_other_names_in_the_roles():
    old = re.compile(r"\b(rlinf_resolved|rlinf_settings)\b|rlinf_plan\.plan\b")
    found = [
        f"{file.relative_to(ROOT)}:{n}"
        for top in SOURCES
        for file in sorted((ROOT / top).rglob("*.y*ml"))
        for n, line in enumerate(file.read_text().splitlines(), 1)
        if old.search(line)
    ]
    assert found == []
