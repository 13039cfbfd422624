"""Typo'd variables (our prefix, in no table) are refused by the plan with the nearest real name,
and the table of names our own roles and playbooks set is the one they set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, sentences
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P
from ansible_collections.rlinf.cluster.plugins.plugin_utils import schema

ROOT = Path(__file__).resolve().parents[2]
GROUPS = {"ray_head": ["h"], "ray_workers": ["w1", "w2"]}


def hostvars(every=None, **per_host):
    base = {name: {"ansible_host": f"10.0.0.{i + 1}", **(every or {})} for i, name in enumerate(["h", "w1", "w2"])}
    for name, extra in per_host.items():
        base[name].update(extra)
    return base


def problems_of(groups, variables, context=None) -> list[str]:
    with pytest.raises(PlanError) as err:
        P.static_plan(groups, variables, context)
    return sentences(err.value.problems, 3)


def test_a_typod_host_var_is_refused_naming_the_host_and_the_nearest_name():
    found = problems_of(GROUPS, hostvars(w1={"rlinf_firewal_enabled": True}))
    assert found == [
        "host 'w1': rlinf_firewal_enabled is not a variable of rlinf.cluster and nothing reads it; did you mean "
        "rlinf_firewall_enabled? Rename it, or list it in rlinf_user_vars if it is a variable of yours."
    ]


def test_a_typod_group_var_is_refused_once_for_the_hosts_that_have_it():
    found = problems_of(GROUPS, hostvars(every={"ray_prot": 6380}))
    assert len(found) == 1
    assert found[0].startswith("all 3 hosts: ray_prot is not a variable of rlinf.cluster")
    assert "did you mean ray_port?" in found[0]


def test_a_typod_extra_var_is_refused_as_extra_vars_not_per_host():
    # Ansible merges the extra vars into every host's variables; the plan is told their names.
    variables = hostvars(every={"python_env_index_ulr": "http://mirror/simple"})
    found = problems_of(GROUPS, variables, {"extra_vars": ["python_env_index_ulr"]})
    assert found == [
        "extra vars: python_env_index_ulr is not a variable of rlinf.cluster and nothing reads it; did you mean "
        "python_env_index_url? Rename it, or list it in rlinf_user_vars if it is a variable of yours."
    ]


def test_a_bootstrap_hosts_typo_is_refused_with_the_overlay_off_too():
    groups = {**GROUPS, "easytier_bootstrap": ["b"]}
    variables = {**hostvars(), "b": {"easytier_netwrok_name": "x"}}
    found = problems_of(groups, variables)
    assert found[0].startswith("host 'b': easytier_netwrok_name is not a variable")
    assert "did you mean easytier_network_name?" in found[0]


def test_a_name_close_to_nothing_says_so():
    found = problems_of(GROUPS, hostvars(h={"launch_xyzzy_qwerty": 1}))
    assert "launch_xyzzy_qwerty is not a variable of rlinf.cluster" in found[0]
    assert "no variable of ours is close; rename it" in found[0]


def test_a_users_variable_listed_in_rlinf_user_vars_is_accepted():
    every = {"rlinf_team": "vision", "firewall_zone_a": 1, "rlinf_user_vars": ["rlinf_team", "firewall_zone_*"]}
    plan = P.static_plan(GROUPS, hostvars(every=every))
    assert plan["order"] == ["h", "w1", "w2"]


def test_rlinf_user_vars_opts_out_only_the_hosts_that_list_it():
    variables = hostvars(every={"rlinf_team": "vision"}, h={"rlinf_user_vars": ["rlinf_team"]})
    found = problems_of(GROUPS, variables)
    assert found == [found[0]] and found[0].startswith("hosts w1, w2: rlinf_team is not a variable")


def test_extra_vars_are_opted_out_by_the_heads_rlinf_user_vars():
    variables = hostvars(every={"rlinf_team": "vision", "rlinf_user_vars": ["rlinf_team"]})
    assert P.static_plan(GROUPS, variables, {"extra_vars": ["rlinf_team", "rlinf_user_vars"]})["order"]


def test_variables_without_our_prefixes_and_ansibles_own_are_ignored():
    every = {"my_setting": 1, "ansible_user": "ops", "ansible_python_interpreter": "/usr/bin/python3", "omit": "x"}
    every.update(inventory_hostname="h", group_names=["ray_head"], groups=GROUPS, playbook_dir="/p")
    assert P.static_plan(GROUPS, hostvars(every=every), {"extra_vars": ["my_setting"]})["order"]


def test_the_names_our_roles_set_at_run_time_are_accepted():
    # What a later play's plan sees after site.yml's set_fact and register ran.
    names = ["rlinf_plan", "rlinf_node", "preflight_resolved", "validate_inventory_result", "rlinf_probe"]
    every = dict.fromkeys([*names, "ray_node_started", "rlinf_venv_changed"], 1)
    assert P.static_plan(GROUPS, hostvars(every=every))["order"]


def test_a_malformed_rlinf_user_vars_is_refused():
    found = problems_of(GROUPS, hostvars(w1={"rlinf_user_vars": "rlinf_team"}))
    assert found[0].startswith("host 'w1': rlinf_user_vars='rlinf_team' is a str, not a list")


# The table of names our roles set ---------------------------------------------------------

PREFIX = re.compile("^(" + "|".join(re.escape(p) for p in schema.PREFIXES) + ")")


def _walk(node, found: set[str]) -> None:
    if isinstance(node, dict):
        for key in ("ansible.builtin.set_fact", "set_fact"):
            if isinstance(node.get(key), dict):
                found.update(k for k in node[key] if k != "cacheable")
        if isinstance(node.get("register"), str):
            found.add(node["register"])
        if isinstance(node.get("vars"), dict):
            found.update(node["vars"])
        loop_control = node.get("loop_control")
        if isinstance(loop_control, dict) and "loop_var" in loop_control:
            found.add(loop_control["loop_var"])
        for prompt in node.get("vars_prompt") or []:
            found.add(prompt["name"])
        for value in node.values():
            _walk(value, found)
    elif isinstance(node, list):
        for value in node:
            _walk(value, found)


def names_our_yaml_sets() -> set[str]:
    found: set[str] = set()
    sources = [*ROOT.glob("*.yml"), *ROOT.glob("playbooks/*.yml"), *ROOT.glob("roles/*/tasks/*.yml")]
    sources += ROOT.glob("roles/*/handlers/*.yml")
    for source in sources:
        _walk(yaml.safe_load(source.read_text()), found)
    for source in [*ROOT.glob("roles/*/defaults/main.yml"), *ROOT.glob("roles/*/vars/main.yml")]:
        found.update(yaml.safe_load(source.read_text()) or {})
    return {name for name in found if isinstance(name, str) and PREFIX.match(name)}


def test_every_name_our_roles_and_playbooks_set_is_known():
    missing = sorted(names_our_yaml_sets() - schema.KNOWN)
    assert not missing, f"set by roles/playbooks, refused as typos: add them to schema.RUNTIME_VARS: {missing}"


def test_runtime_vars_lists_only_names_the_roles_still_set():
    stale = sorted(schema.RUNTIME_VARS - names_our_yaml_sets())
    assert not stale, f"schema.RUNTIME_VARS names nothing sets any more: {stale}"
    assert not schema.RUNTIME_VARS & set(schema.BY_NAME), "a setting listed as a run-time name"


def test_every_role_prefix_is_one_of_ours():
    roles = [p.name for p in (ROOT / "roles").iterdir() if p.is_dir()]
    assert all((role + "_").startswith(schema.PREFIXES) for role in roles), roles
    assert all(name.startswith(schema.PREFIXES) for name in schema.BY_NAME if name != "node")
