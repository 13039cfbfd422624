"""execution-environment.yml and ansible-navigator.yml: ansible-builder writes a build
context from them (offline), with the collection's controller needs and the versions the
collection is tested with; navigator accepts its settings and runs the EE's image.
Controller only: building the image itself needs a registry."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.package

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EE = yaml.safe_load((ROOT / "execution-environment.yml").read_text())


def _pins() -> dict[str, str]:
    """name -> version of requirements/controller.txt."""
    pins = {}
    for line in (ROOT / "requirements" / "controller.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower()] = version.strip()
    return pins


def test_ee_pins_the_versions_the_collection_is_tested_with():
    pins = _pins()
    deps = EE["dependencies"]
    assert deps["ansible_core"]["package_pip"] == f"ansible-core=={pins['ansible-core']}"
    assert deps["ansible_runner"]["package_pip"] == f"ansible-runner=={pins['ansible-runner']}"
    requirements = yaml.safe_load((ROOT / "requirements.yml").read_text())
    tested = {c["name"]: str(c["version"]) for c in requirements["collections"]}
    ee_collections = {c["name"]: str(c["version"]) for c in deps["galaxy"]["collections"]}
    assert "ansible.posix" in ee_collections
    for name, version in ee_collections.items():
        assert tested.get(name) == version, f"{name}: {version} in the EE, {tested.get(name)} in requirements.yml"
    # The same files the installed collection declares (meta/execution-environment.yml).
    meta = yaml.safe_load((ROOT / "meta" / "execution-environment.yml").read_text())["dependencies"]
    assert (deps["python"], deps["system"]) == (meta["python"], meta["system"])


def test_ansible_builder_create_writes_the_build_context(tmp_path):
    context = tmp_path / "context"
    run = subprocess.run(
        [BIN / "ansible-builder", "create", "--file", ROOT / "execution-environment.yml", "--context", context],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    build = context / "_build"
    deps = EE["dependencies"]
    assert (build / "requirements.txt").read_text() == (ROOT / deps["python"]).read_text()
    assert (build / "bindep.txt").read_text() == (ROOT / deps["system"]).read_text()
    assert yaml.safe_load((build / "requirements.yml").read_text())["collections"] == deps["galaxy"]["collections"]
    containerfile = (context / "Containerfile").read_text()
    refs = re.search(r'^ARG ANSIBLE_INSTALL_REFS="(.*)"$', containerfile, re.M).group(1)
    assert refs.split() == [deps["ansible_core"]["package_pip"], deps["ansible_runner"]["package_pip"]]
    assert f'ARG EE_BASE_IMAGE="{EE["images"]["base_image"]["name"]}"' in containerfile


def test_navigator_accepts_its_settings_and_runs_the_ee_image(tmp_path):
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "ANSIBLE_NAVIGATOR_LOG_FILE": str(tmp_path / "navigator.log"),
        "NO_COLOR": "1",
    }
    run = subprocess.run(
        [BIN / "ansible-navigator", "settings", "--effective", "--mode", "stdout", "--ee", "false"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    settings = yaml.safe_load((ROOT / "ansible-navigator.yml").read_text())["ansible-navigator"]
    assert settings["execution-environment"]["image"] in EE["options"]["tags"]


def test_top_level_playbooks_find_the_collection_next_to_them_whatever_the_config(tmp_path):
    """As an AWX project: no ansible.cfg of ours and a collections path elsewhere; the
    playbook-adjacent collections/ directory still provides rlinf.cluster."""
    empty_cfg = tmp_path / "ansible.cfg"
    empty_cfg.write_text("[defaults]\n")
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "ANSIBLE_CONFIG": str(empty_cfg),
        "ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections"),
        "ANSIBLE_NOCOLOR": "1",
    }
    run = subprocess.run(
        [BIN / "ansible-playbook", ROOT / "validate.yml", "-i", ROOT / "inventories" / "sample"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "num_nodes: 5" in run.stdout
