"""What the README and docs/ name exists: make targets, roles, modules, filters, playbooks,
variables, files of the repository and the links between pages. Pure text, no Ansible."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
import yaml

from ansible_collections.rlinf.cluster.plugins.plugin_utils.schema import EASYTIER_VARS, TOPOLOGY_VARS, VARS

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]

PREFIXES = (
    "rlinf_",
    "ray_",
    "easytier_",
    "python_env_",
    "code_sync_",
    "firewall_",
    "metrics_",
    "readiness_",
    "teardown_",
)
# Names with our prefixes that are not variables, each with what it is instead.
NOT_VARIABLES = {
    "rlinf_cluster": "the inventory group of every Ray node (and the inline `cluster:` variable)",
    "ray_head": "the inventory group of the head",
    "ray_workers": "the inventory group of the workers",
    "rlinf_node": "a Prometheus label on every target",
    "rlinf_rank": "a Prometheus label on every target",
    "rlinf_role": "a Prometheus label on every target",
    "ray_node_cpu_utilization": "a metric Ray exports",
    "ray_current_cluster": "a file Ray writes in its temp dir",
    "rlinf_gpus": "a field of the cluster_nodes filter's result",
    "ray_accelerator_resource": "a field of the cluster_nodes filter's result",
    "easytier_bootstrap": "the inventory group of the overlay's bootstrap host",
}
# Repository paths the pages may name: a backticked word starting with one of these.
REPO_DIRS = ("roles/", "plugins/", "tests/", "requirements/", "meta/", "bench/", "lab/", "docs/", "inventories/sample")

_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
_SPAN = re.compile(r"`([^`\n]+)`")
_MAKE = re.compile(r"\bmake ([a-z][a-z0-9-]*)")
_FQCN = re.compile(r"(?<![\w.])rlinf\.cluster\.([a-z_][a-z0-9_]*)")
_ROLE_PATH = re.compile(r"\broles/([a-z_][a-z0-9_]*)")
_WORD = re.compile(r"[A-Za-z0-9_./*<>-]+")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _stems(pattern: str) -> set[str]:
    return {path.stem for path in ROOT.glob(pattern)}


@cache
def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)\s*:(?!=)", text, re.M))


def _tasks(items) -> list[dict]:
    found = []
    for item in items or []:
        if isinstance(item, dict):
            found.append(item)
            for key in ("block", "rescue", "always"):
                found += _tasks(item.get(key))
    return found


def _set_names(tasks) -> set[str]:
    names: set[str] = set()
    for task in _tasks(tasks):
        if isinstance(task.get("register"), str):
            names.add(task["register"])
        for key in ("ansible.builtin.set_fact", "set_fact", "vars"):
            if isinstance(task.get(key), dict):
                names |= set(task[key])
    return names


def role_facts() -> set[str]:
    """What the roles and plays register, set as facts or give as play vars: the contract
    roles share (CONTRIBUTING.md)."""
    names: set[str] = set()
    for path in ROOT.glob("roles/*/tasks/*.yml"):
        names |= _set_names(yaml.safe_load(path.read_text()))
    for path in ROOT.glob("playbooks/*.yml"):
        for play in yaml.safe_load(path.read_text()) or []:
            names |= _set_names([play])
            for key in ("pre_tasks", "tasks", "post_tasks"):
                names |= _set_names(play.get(key))
    return names


@cache
def known_variables() -> set[str]:
    """Schema variables, role defaults, and the roles' own names (a role, a fact it sets)."""
    names = {var.name for var in VARS + EASYTIER_VARS} | set(TOPOLOGY_VARS) | role_facts()
    for path in ROOT.glob("roles/*/defaults/main.yml"):
        names |= set(yaml.safe_load(path.read_text()) or {})
    return names | {path.name for path in (ROOT / "roles").iterdir() if path.is_dir()}


@cache
def collection_names() -> set[str]:
    """What `rlinf.cluster.<x>` may name: a role, module, action, filter or playbook."""
    return (
        {path.name for path in (ROOT / "roles").iterdir() if path.is_dir()}
        | _stems("plugins/modules/*.py")
        | _stems("plugins/action/*.py")
        | _stems("plugins/filter/*.yml")
        | _stems("playbooks/*.yml")
    )


def code_text(text: str) -> list[str]:
    """The inline code spans and fenced blocks of a page, where commands and names are quoted."""
    fences = _FENCE.findall(text)
    return fences + _SPAN.findall(_FENCE.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {_slug(m) for m in re.findall(r"^#+ (.+)$", _FENCE.sub("", page.read_text()), re.M)}


def problems(text: str, where: str = "page", page_dir: Path = ROOT) -> list[str]:
    """Every name ``text`` quotes that does not exist in the repository, one line each."""
    found: list[str] = []
    targets, names, variables = make_targets(), collection_names(), known_variables()
    for code in code_text(text):
        for target in _MAKE.findall(code):
            if target not in targets:
                found.append(f"{where}: `make {target}`: the Makefile has no target {target!r}")
        for name in _FQCN.findall(code):
            if name not in names:
                found.append(f"{where}: `rlinf.cluster.{name}`: no role, module, filter or playbook of that name")
        for role in _ROLE_PATH.findall(code):
            if not (ROOT / "roles" / role).is_dir():
                found.append(f"{where}: `roles/{role}`: no such role")
        if code.startswith("```"):
            continue
        for word in _WORD.findall(code):
            if word.startswith(PREFIXES) and re.fullmatch(r"[a-z0-9_]*[a-z0-9]", word):
                if word not in variables and word not in NOT_VARIABLES:
                    found.append(
                        f"{where}: `{word}` is not a variable of plugins/plugin_utils/schema.py, "
                        "a role default or a fact a role sets"
                    )
            elif word.startswith(REPO_DIRS) and not re.search(r"[*<>]", word):
                path = word.rstrip(".,:;)").split("#")[0]
                if not (ROOT / path).exists() and not _ROLE_PATH.match(path):
                    found.append(f"{where}: `{word}`: no such file or directory in the repository")
    for target in _LINK.findall(_FENCE.sub("", text)):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        if not path:
            continue  # an anchor of the page itself: test_in_page_anchors_exist
        linked = (page_dir / path).resolve()
        if not linked.exists():
            found.append(f"{where}: link {target!r}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            found.append(f"{where}: link {target!r}: {linked.name} has no heading with that anchor")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_name_a_page_quotes_exists(page):
    where = page.relative_to(ROOT).as_posix()
    assert problems(page.read_text(), where, page.parent) == []


def test_in_page_anchors_exist():
    for page in PAGES:
        text = _FENCE.sub("", page.read_text())
        own = anchors(page)
        missing = [a for a in re.findall(r"\]\(#([^)]+)\)", text) if a not in own]
        assert not missing, f"{page.relative_to(ROOT)}: no heading for {missing}"


def test_a_planted_bad_name_of_each_kind_is_reported():
    planted = (
        "Run `make package`, then `make lab LAB_NODES=8`; the role `rlinf.cluster.node_facts`\n"
        "and `roles/node_facts`; set `rlinf_no_such_setting: true` and `ray_port: 6379`; see\n"
        "`tests/unit/test_no_such_file.py` and [the page](docs/no-such-page.md) and\n"
        "[variables](docs/variables.md#no-such-heading).\n"
        "```\nmake no-such-target\n```\n"
    )
    found = problems(planted, "planted")
    assert found == [
        "planted: `make no-such-target`: the Makefile has no target 'no-such-target'",
        "planted: `make package`: the Makefile has no target 'package'",
        "planted: `rlinf.cluster.node_facts`: no role, module, filter or playbook of that name",
        "planted: `roles/node_facts`: no such role",
        "planted: `rlinf_no_such_setting` is not a variable of plugins/plugin_utils/schema.py, a role default "
        "or a fact a role sets",
        "planted: `tests/unit/test_no_such_file.py`: no such file or directory in the repository",
        "planted: link 'docs/no-such-page.md': no such file",
        "planted: link 'docs/variables.md#no-such-heading': variables.md has no heading with that anchor",
    ]


def test_what_exists_is_not_reported():
    real = (
        "`make lab`, `make unit`, `rlinf.cluster.ray_node`, `rlinf.cluster.ray_cluster_check`,\n"
        "`rlinf.cluster.rank_table`, `rlinf.cluster.site`, `roles/preflight`, `ray_port: 6379`,\n"
        "`rlinf_node_rank`, `easytier_subnet`, `plugins/plugin_utils/schema.py`,\n"
        "[security](docs/security.md#the-ray-units-sandbox)\n"
    )
    assert problems(real, "real") == []


def test_the_sandbox_section_the_integrator_rewrites_is_marked():
    text = (ROOT / "docs" / "security.md").read_text()
    assert "## The Ray unit's sandbox" in text
    assert text.count("The Ray unit's sandbox\"") == 2, "the BEGIN/END markers around the section"
