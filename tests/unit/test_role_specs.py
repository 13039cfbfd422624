"""Every role entry point the playbooks and roles use has an argument spec, and each role's
defaults agree with its specs (names, types, defaults). `make lint` runs this file too."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES = ROOT / "roles"
INCLUDES = ("ansible.builtin.import_role", "ansible.builtin.include_role")
# YAML type of a default -> the argument-spec types it may have.
TYPES = {
    bool: {"bool"},
    int: {"int", "float", "raw"},
    float: {"float", "raw"},
    str: {"str", "path", "raw"},
    list: {"list", "raw"},
    dict: {"dict", "raw"},
    type(None): {"str", "path", "int", "float", "raw", "list", "dict"},
}


def _walk(node, found):
    if isinstance(node, dict):
        for key in INCLUDES:
            if key in node:
                ref = node[key]
                found.add((ref["name"].split(".")[-1], str(ref.get("tasks_from", "main")).removesuffix(".yml")))
        for role in node.get("roles") or [] if isinstance(node.get("roles"), list) else []:
            name = role if isinstance(role, str) else role.get("role") or role.get("name")
            found.add((name.split(".")[-1], "main"))
        for value in node.values():
            _walk(value, found)
    elif isinstance(node, list):
        for value in node:
            _walk(value, found)


def used_entry_points() -> list[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    sources = [*ROOT.glob("*.yml"), *(ROOT / "playbooks").glob("*.yml"), *ROLES.glob("*/tasks/*.yml")]
    for source in sources:
        _walk(yaml.safe_load(source.read_text()), found)
    return sorted(found)


def specs(role: str) -> dict:
    path = ROLES / role / "meta" / "argument_specs.yml"
    return (yaml.safe_load(path.read_text()) or {}).get("argument_specs", {}) if path.exists() else {}


def defaults(role: str) -> dict:
    path = ROLES / role / "defaults" / "main.yml"
    return (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}


ENTRY_POINTS = used_entry_points()
ROLE_NAMES = sorted(p.name for p in ROLES.iterdir() if p.is_dir())


def test_the_playbooks_use_entry_points_at_all():
    assert ("ray_node", "main") in ENTRY_POINTS and ("ray_node", "prepare") in ENTRY_POINTS


@pytest.mark.parametrize(("role", "entry"), ENTRY_POINTS, ids=[f"{r}:{e}" for r, e in ENTRY_POINTS])
def test_every_entry_point_in_use_has_a_spec(role, entry):
    assert (ROLES / role / "tasks" / f"{entry}.yml").exists(), f"{role} has no tasks/{entry}.yml"
    spec = specs(role).get(entry)
    assert spec is not None, f"roles/{role}/meta/argument_specs.yml has no entry point {entry!r}"
    assert spec.get("short_description") and spec.get("description"), f"{role}:{entry} needs both descriptions"


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_defaults_and_specs_agree(role):
    values = defaults(role)
    options: dict[str, dict] = {}
    for spec in specs(role).values():
        for name, option in (spec.get("options") or {}).items():
            options.setdefault(name, option)
    wrong = []
    for name, value in values.items():
        option = options.get(name)
        if option is None:
            wrong.append(f"{name}: in defaults/main.yml, in no entry point's spec")
            continue
        if option.get("type", "str") not in TYPES[type(value)]:
            wrong.append(f"{name}: default {value!r} is not of the spec's type {option.get('type', 'str')}")
        if "default" in option and option["default"] != value:
            wrong.append(f"{name}: spec default {option['default']!r} != defaults/main.yml {value!r}")
    for name, option in options.items():
        if "default" in option and name not in values:
            wrong.append(f"{name}: the spec gives a default that defaults/main.yml does not have")
    assert not wrong, wrong
