"""Every module as ansible-doc shows it, the read-only fragment merged: full check mode, no
diff mode, the options its DOCUMENTATION declares. One ansible-doc run for all modules."""

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


@pytest.mark.parametrize("name", MODULES)
def test_ansible_doc_shows_a_read_only_module(shown, name):
    doc = shown[f"rlinf.cluster.{name}"]["doc"]
    assert doc["attributes"]["check_mode"]["support"] == "full"
    assert doc["attributes"]["diff_mode"]["support"] == "none"
    module = importlib.import_module(f"ansible_collections.rlinf.cluster.plugins.modules.{name}")
    declared = yaml.safe_load(module.DOCUMENTATION)
    assert set(doc["options"]) == set(declared["options"])
