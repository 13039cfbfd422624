"""Every module as ansible-doc shows it, its fragments merged: full check mode; no diff mode
for a module that only reads (the read-only or controller fragment), full diff mode for one
that writes; the options its DOCUMENTATION and its fragments declare. One ansible-doc run
for all modules."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if not p.name.startswith("_"))


@pytest.fixture(scope="module")
def shown() -> dict:
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-doc"), "-t", "module", "--json"]
        + [f"rlinf.cluster.{name}" for name in MODULES],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


READS_ONLY = {"rlinf.cluster.attributes.read_only", "rlinf.cluster.attributes.controller"}


def _fragment_options(fqcn: str) -> set[str]:
    collection_fragment = fqcn.removeprefix("rlinf.cluster.")
    source, _, attr = collection_fragment.partition(".")
    module = importlib.import_module(f"ansible_collections.rlinf.cluster.plugins.doc_fragments.{source}")
    text = getattr(module.ModuleDocFragment, (attr or "documentation").upper())
    return set(yaml.safe_load(text).get("options") or {})


@pytest.mark.parametrize("name", MODULES)
def test_ansible_doc_shows_the_module_as_declared(shown, name):
    doc = shown[f"rlinf.cluster.{name}"]["doc"]
    module = importlib.import_module(f"ansible_collections.rlinf.cluster.plugins.modules.{name}")
    declared = yaml.safe_load(module.DOCUMENTATION)
    fragments = declared.get("extends_documentation_fragment") or []
    assert doc["attributes"]["check_mode"]["support"] == "full"
    reads_only = bool(READS_ONLY & set(fragments))
    assert doc["attributes"]["diff_mode"]["support"] == ("none" if reads_only else "full")
    options = set(declared["options"]).union(*(_fragment_options(f) for f in fragments))
    assert set(doc["options"]) == options
