"""The roles' defaults and argument specs and docs/variables.md's table are what tools/generate_vars.py
writes from its sources (tools/*.yml and schema.py), so no copy of a variable can drift from another."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from ansible_collections.rlinf.cluster.plugins.plugin_utils.schema import BY_NAME

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("generate_vars", ROOT / "tools" / "generate_vars.py")
generate_vars = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate_vars)

TABLE = yaml.safe_load((ROOT / "tools" / "role_variables.yml").read_text())
# Settings of one run (-e), read by the playbooks, that no role has a default for.
RUN_ONLY = {"teardown_purge", "teardown_confirm", "node", "remove_node_confirm", "rlinf_entry", "cluster_plan_path"}
# Host variables whose absence means "derived" (no default anywhere).
HOST_ONLY = {"easytier_ipv4"}


def test_the_checked_in_files_are_what_the_generator_writes():
    generated = generate_vars.generated()
    assert {path.relative_to(ROOT).as_posix() for path in generated} >= {
        "roles/ray_node/defaults/main.yml",
        "roles/ray_node/meta/argument_specs.yml",
        "docs/variables.md",
    }
    stale = [path.relative_to(ROOT).as_posix() for path in generate_vars.drifted(generated)]
    assert not stale, f"{stale} differ from tools/generate_vars.py's output: run make generate"


def test_the_generated_specs_read_back_to_the_same_text():
    files = generate_vars.generated()
    specs = [path for path in files if path.name == "argument_specs.yml"]
    assert len(specs) == len(list((ROOT / "roles").glob("*/meta/argument_specs.yml")))
    for path in specs:
        again = "---\n" + generate_vars.HEADER + generate_vars.dump(yaml.safe_load(files[path]))
        assert again == files[path], path


def test_every_schema_setting_has_a_role_default():
    missing = [name for name in BY_NAME if name not in RUN_ONLY | HOST_ONLY and not TABLE.get(name, {}).get("defaults")]
    assert not missing, f"no role holds a default for {missing} (tools/role_variables.yml: defaults)"


def test_a_role_default_differs_from_the_schema_only_where_the_plan_computes_it():
    for name, var in TABLE.items():
        if "role_default" in var:
            assert BY_NAME[name].default is None and "{{" in var["role_default"], name


def test_the_check_names_the_drifted_file_and_says_how_to_fix_it(tmp_path, monkeypatch, capsys):
    planted = tmp_path / "main.yml"
    planted.write_text("edited by hand\n")
    monkeypatch.setattr(generate_vars, "generated", lambda: {planted: "generated\n"})
    assert generate_vars.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert str(planted) in err and "run make generate" in err
    assert planted.read_text() == "edited by hand\n"
    assert generate_vars.main([]) == 0
    assert planted.read_text() == "generated\n"
    assert generate_vars.main(["--check"]) == 0


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"defaults": "no_such_role", "type": "str", "description": "x"}, "not a role"),
        ({"specs": ["ray_node:no_such_entry"], "type": "str", "description": "x"}, "not an entry point"),
        ({"specs": ["ray_node"], "typo": "str"}, "unknown keys"),
    ],
)
def test_a_table_mistake_is_named(entry, problem):
    entry_points = yaml.safe_load((ROOT / "tools" / "role_entry_points.yml").read_text())
    with pytest.raises(generate_vars.TableError, match=problem):
        generate_vars.check_table({"ray_node_planted": entry}, entry_points)


def test_a_table_mistake_is_one_line_not_a_traceback(monkeypatch, capsys):
    def broken():
        raise generate_vars.TableError("role_variables.yml: ray_node_planted has unknown keys ['typo']")

    monkeypatch.setattr(generate_vars, "generated", broken)
    assert generate_vars.main(["--check"]) == 2
    assert capsys.readouterr().err == "generate_vars: role_variables.yml: ray_node_planted has unknown keys ['typo']\n"
