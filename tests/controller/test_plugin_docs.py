"""Every plugin and role of the collection renders with ansible-doc. Controller only.

The plugins are found in the checkout (every file under plugins/<type>/, every filter or
test a Jinja plugin file returns, every role), not listed here: a plugin added later is
checked the same way without touching this file.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.parsing.plugin_docs import read_docstring

pytestmark = pytest.mark.package

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
COLLECTION = "rlinf.cluster"
PACKAGE = "ansible_collections.rlinf.cluster.plugins"
# plugins/ holds these besides plugins: shared code and documentation fragments. An action
# plugin is documented by the module of its name (ansible-doc has no action type).
NOT_PLUGINS = {"module_utils", "plugin_utils", "doc_fragments", "action", "__pycache__"}
# Jinja plugin files each return several plugins from one method.
JINJA = {"filter": ("FilterModule", "filters"), "test": ("TestModule", "tests")}
# Types whose documentation must say what they return and show an example.
RETURNS = {"module", "filter", "test", "lookup"}


def _kind(directory: Path) -> str:
    return "module" if directory.name == "modules" else directory.name


def _plugin_dirs() -> list[Path]:
    return sorted(p for p in (ROOT / "plugins").iterdir() if p.is_dir() and p.name not in NOT_PLUGINS)


def discover() -> list[tuple[str, str]]:
    """(ansible-doc type, name) of every plugin and role in the checkout."""
    found = []
    for directory in _plugin_dirs():
        kind = _kind(directory)
        for source in sorted(directory.glob("*.py")):
            if source.name == "__init__.py":
                continue
            if kind in JINJA:
                cls, method = JINJA[kind]
                module = importlib.import_module(f"{PACKAGE}.{directory.name}.{source.stem}")
                found += [(kind, name) for name in getattr(getattr(module, cls)(), method)()]
            else:
                found.append((kind, source.stem))
    roles = ROOT / "roles"
    found += [("role", role.name) for role in sorted(roles.iterdir()) if role.is_dir()]
    return sorted(found)


def _fragments() -> dict[str, dict]:
    """FQCN of every documentation fragment of the collection -> its parsed YAML."""
    fragments = {}
    for source in sorted((ROOT / "plugins" / "doc_fragments").glob("*.py")):
        module = importlib.import_module(f"{PACKAGE}.doc_fragments.{source.stem}")
        for attr, text in vars(module.ModuleDocFragment).items():
            if attr.isupper() and isinstance(text, str):
                suffix = "" if attr == "DOCUMENTATION" else f".{attr.lower()}"
                fragments[f"{COLLECTION}.{source.stem}{suffix}"] = yaml.safe_load(text)
    return fragments


def _extends() -> dict[tuple[str, str], list[str]]:
    """(type, name) -> the fragments its DOCUMENTATION extends, read from the sources."""
    extends = {}
    for directory in _plugin_dirs():
        kind = _kind(directory)
        for source in sorted(directory.iterdir()):
            if source.suffix == ".py" and kind not in JINJA:
                doc, name = read_docstring(str(source))["doc"] or {}, source.stem
            elif source.suffix in (".yml", ".yaml"):
                doc = yaml.safe_load(source.read_text()).get("DOCUMENTATION") or {}
                name = doc.get("name", source.stem)
            else:
                continue
            used = doc.get("extends_documentation_fragment") or []
            extends[(kind, name)] = [used] if isinstance(used, str) else list(used)
    return extends


def _ansible_doc(*args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
    }
    return subprocess.run([BIN / "ansible-doc", *args], cwd=ROOT, env=env, capture_output=True, text=True)


def _header(kind: str, fqcn: str) -> str:
    return f"> ROLE: *{fqcn}* (" if kind == "role" else f"> {kind.upper()} {fqcn} ("


def _pages(kind: str, names: list[str]) -> tuple[dict[str, str], str]:
    """ansible-doc's text page of each plugin that renders, and its stderr."""
    text = _ansible_doc("-t", kind, *names)
    pages: dict[str, str] = {}
    current = None
    for line in text.stdout.splitlines():
        starts = [n for n in names if line.startswith(_header(kind, n))]
        if starts:
            current = starts[0]
            pages[current] = ""
        if current:
            pages[current] += line + "\n"
    return pages, text.stderr


def _json_docs(kind: str, names: list[str]) -> tuple[dict[str, dict], str]:
    """ansible-doc's JSON documentation of each plugin that has one, and its stderr."""
    run = _ansible_doc("-t", kind, "--json", *names)
    return (json.loads(run.stdout) if run.returncode == 0 else {}), run.stderr


@functools.cache
def rendered(kind: str) -> tuple[dict[str, str], dict[str, dict], dict[str, str]]:
    """The text page of each plugin of one type, its JSON documentation, and what
    ansible-doc printed on stderr for it. One run for all the plugins of the type (one per
    plugin takes a minute); ansible-doc stops at the first plugin it cannot document, so
    then each plugin of the type runs alone and the failure is its own."""
    names = [f"{COLLECTION}.{name}" for k, name in PLUGINS if k == kind]
    pages, text_err = _pages(kind, names)
    docs, json_err = _json_docs(kind, names)
    if set(pages) == set(names) and set(docs) == set(names):
        return pages, docs, dict.fromkeys(names, text_err + json_err)
    errors = {}
    for name in names:
        page, text_err = _pages(kind, [name])
        doc, json_err = _json_docs(kind, [name])
        pages.update(page)
        docs.update(doc)
        errors[name] = text_err + json_err
    return pages, docs, errors


PLUGINS = discover()


def test_discovery_finds_what_ansible_doc_lists():
    """The checkout's plugins are the ones ansible-doc knows (no doc without a plugin,
    no plugin type the discovery misses), and there are some of each."""
    dump = _ansible_doc("--metadata-dump", "--no-fail-on-errors", COLLECTION)
    assert dump.returncode == 0, dump.stderr
    listed = {
        (kind, fqcn.removeprefix(f"{COLLECTION}."))
        for kind, plugins in json.loads(dump.stdout)["all"].items()
        for fqcn in plugins
        if fqcn.startswith(f"{COLLECTION}.")
    }
    assert listed == set(PLUGINS)
    assert {"module", "filter", "role"} <= {kind for kind, _ in PLUGINS}


def test_every_action_plugin_has_the_module_that_documents_it():
    actions = {p.stem for p in (ROOT / "plugins" / "action").glob("*.py") if p.name != "__init__.py"}
    assert actions, "no action plugin found"
    assert actions <= {name for kind, name in PLUGINS if kind == "module"}


@pytest.mark.parametrize(("kind", "name"), PLUGINS, ids=[f"{k}:{n}" for k, n in PLUGINS])
def test_plugin_renders_with_ansible_doc(kind, name):
    fqcn = f"{COLLECTION}.{name}"
    pages, docs, errors = rendered(kind)
    problems = [line for line in errors[fqcn].splitlines() if name in line]
    assert not problems, problems
    assert fqcn in pages, f"ansible-doc -t {kind} {fqcn} printed no page:\n{errors[fqcn]}"
    assert docs.get(fqcn), f"ansible-doc -t {kind} --json {fqcn} returned nothing:\n{errors[fqcn]}"
    entry = docs[fqcn]
    if kind == "role":
        assert entry["entry_points"], f"{fqcn} has no entry point"
        for point, spec in entry["entry_points"].items():
            assert spec.get("short_description"), f"{fqcn} entry point {point}: no short_description"
            assert spec.get("description"), f"{fqcn} entry point {point}: no description"
            assert f"ENTRY POINT: *{point}* - {spec['short_description']}" in pages[fqcn]
        return
    doc = entry["doc"]
    assert doc.get("short_description"), f"{fqcn}: no short_description"
    assert doc.get("description"), f"{fqcn}: no description"
    # antsibull-changelog lists a plugin under the release its version_added names.
    assert doc.get("version_added"), f"{fqcn}: no version_added (the release that adds it)"
    if kind in RETURNS:
        assert entry.get("examples", "").strip(), f"{fqcn}: no EXAMPLES"
        assert entry.get("return"), f"{fqcn}: no RETURN"
        yaml.safe_load(entry["examples"])
    if kind == "module":
        assert doc.get("attributes", {}).get("check_mode"), f"{fqcn}: no check_mode attribute"


FRAGMENTS = _fragments()
EXTENDS = _extends()


@pytest.mark.parametrize("fragment", sorted(FRAGMENTS))
def test_doc_fragment_is_used_and_merged_into_every_plugin_that_extends_it(fragment):
    users = [plugin for plugin, used in EXTENDS.items() if fragment in used]
    assert users, f"{fragment} is extended by no plugin, so ansible-doc never renders it"
    for kind, name in users:
        _, docs, _ = rendered(kind)
        doc = docs[f"{COLLECTION}.{name}"]["doc"]
        for section in ("attributes", "options"):
            for key, value in (FRAGMENTS[fragment].get(section) or {}).items():
                assert doc.get(section, {}).get(key) == value, f"{name}: {section}.{key} of {fragment} not rendered"


def test_every_fragment_a_plugin_extends_exists():
    ours = {f for used in EXTENDS.values() for f in used if f.startswith(f"{COLLECTION}.")}
    assert ours <= set(FRAGMENTS), sorted(ours - set(FRAGMENTS))
