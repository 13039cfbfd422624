"""Every role default a user sets is a setting the schema checks, and docs/variables.md states each rule as
the schema checks it. The defaults themselves are generated from the schema (tests/unit/test_generated_vars.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from ansible_collections.rlinf.cluster.plugins.plugin_utils.schema import BY_NAME, TOPOLOGY_VARS

ROOT = Path(__file__).resolve().parents[2]


def role_defaults() -> dict[str, dict]:
    found: dict[str, dict] = {}
    for path in sorted(ROOT.glob("roles/*/defaults/main.yml")):
        for name, value in (yaml.safe_load(path.read_text()) or {}).items():
            found.setdefault(name, {})[path.parts[-3]] = value
    return found


def test_every_role_default_a_user_sets_is_in_the_schema():
    internal = (
        "validate_inventory_purpose",
        "validate_inventory_write",
        "preflight_purpose",
        "preflight_deferred_devices",
        "restart_guard_every",
    )
    unknown = [
        name
        for name in role_defaults()
        if name not in BY_NAME and name not in TOPOLOGY_VARS and not name.startswith(internal)
    ]
    assert not unknown, f"role defaults the schema does not check: {unknown}"


def variables_table_rows() -> list[list[str]]:
    text = (ROOT / "docs" / "variables.md").read_text()
    start = text.index("| variable | default | rule")
    table = text[start : text.index("\n\n", start)].splitlines()[2:]
    return [[cell.strip() for cell in row.strip().strip("|").split(" | ")] for row in table]


def test_the_variables_page_states_each_variables_rule_as_the_schema_checks_it():
    wrong = []
    for cells in variables_table_rows():
        names = [n for n in cells[0].replace("`", " ").replace("/", " ").split() if n in BY_NAME]
        for name in names:
            if BY_NAME[name].rule_text not in cells[2]:
                wrong.append(
                    f"{name}: docs/variables.md says {cells[2]!r}, the schema checks {BY_NAME[name].rule_text!r}"
                )
    assert not wrong, wrong
    listed = {n for cells in variables_table_rows() for n in cells[0].replace("`", " ").replace("/", " ").split()}
    assert {"rlinf_venv_dir", "ray_node_unit_name", "rlinf_env_vars", "python_env_extra_packages"} <= listed
