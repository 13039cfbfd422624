"""`ansible-galaxy collection build` makes an artifact that holds the collection only and
works without the checkout. Controller only: no lab hosts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path, PurePosixPath

import pytest
import yaml
from ansible_builder._target_scripts.introspect import EXCLUDE_REQUIREMENTS
from packaging.requirements import Requirement

pytestmark = pytest.mark.package

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# What an installed collection is made of (galaxy.yml `manifest:`). Anything else at the
# top of the artifact is a file of the checkout that leaked.
TOP_LEVEL = {
    "CHANGELOG.md",
    "FILES.json",
    "LICENSE",
    "MANIFEST.json",
    "README.md",
    "changelogs",
    "docs",
    "inventories",
    "meta",
    "playbooks",
    "plugins",
    "requirements.yml",
    "roles",
}
# Of the checkout, never in the artifact: the lab, the tests, CI, bench, the dev tooling (tools/: the generator).
CHECKOUT_ONLY = {
    ".ci",
    ".lab",
    ".venv",
    "Makefile",
    "ansible.cfg",
    "artifacts",
    "bench",
    "collections",
    "galaxy.yml",
    "lab",
    "molecule",
    "pyproject.toml",
    "requirements",
    "tests",
    "tools",
}
# Directories a user of the installed collection needs whole: every file the checkout has
# there must be packed (a new role file or plugin that the manifest misses fails here).
SHIPPED_WHOLE = ["roles", "plugins", "playbooks", "meta", "docs", "inventories/sample"]
SHIPPED_FILES = ["README.md", "LICENSE", "CHANGELOG.md", "changelogs/changelog.yaml"]
# Text that marks a machine's secret or a path of this machine in a file.
SECRET_MARKERS = ["PRIVATE KEY", "ansible_ssh_private_key_file", str(ROOT)]


def _checkout_files(directory: str) -> set[str]:
    return {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / directory).rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and not any(part.startswith(".") for part in path.relative_to(ROOT).parts)
        and path.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def artifact(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("build")
    build = subprocess.run(
        [BIN / "ansible-galaxy", "collection", "build", "--output-path", out, ROOT],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (path,) = out.glob("rlinf-cluster-*.tar.gz")
    return path


def test_artifact_holds_the_collection_and_no_checkout_machine_or_secret_file(artifact):
    with tarfile.open(artifact) as tar:
        members = {m.name.removeprefix("./"): m for m in tar.getmembers()}
        files = {name for name, m in members.items() if m.isfile()}
        contents = {name: tar.extractfile(members[name]).read().decode(errors="replace") for name in files}

    top = {PurePosixPath(name).parts[0] for name in members}
    assert top <= TOP_LEVEL, f"not part of the collection: {sorted(top - TOP_LEVEL)}"
    assert not top & CHECKOUT_ONLY
    hidden = sorted(n for n in members if any(p.startswith(".") for p in PurePosixPath(n).parts))
    assert not hidden, f"dotfiles packed: {hidden}"
    inventories = {PurePosixPath(n).parts[1] for n in members if n.startswith("inventories/")}
    assert inventories == {"sample"}, "only the sample inventory ships (inventories/lab is this machine's)"
    assert not [n for n in members if "__pycache__" in n or n.endswith(".pyc")]
    for name, text in contents.items():
        for marker in SECRET_MARKERS:
            assert marker not in text, f"{name} holds {marker!r}"

    needed = set(SHIPPED_FILES).union(*(_checkout_files(d) for d in SHIPPED_WHOLE))
    assert needed - files == set(), f"missing from the artifact: {sorted(needed - files)}"
    # The parts a user needs are really there, not only matched by the directory walk.
    assert {"roles/ray_node/tasks/main.yml", "playbooks/site.yml", "meta/runtime.yml"} <= files
    assert any(n.startswith("plugins/modules/") for n in files)
    assert "Apache License" in contents["LICENSE"] and "Version 2.0, January 2004" in contents["LICENSE"]


@pytest.fixture(scope="module")
def installed(artifact, tmp_path_factory) -> Path:
    """A collections path with the artifact installed, outside the checkout."""
    where = tmp_path_factory.mktemp("installed")
    # From there: in the checkout, its ansible.cfg would show the collection as installed.
    subprocess.run(
        [BIN / "ansible-galaxy", "collection", "install", "--force", "--no-deps", "-p", where, artifact],
        cwd=where,
        capture_output=True,
        text=True,
        check=True,
    )
    return where


def test_built_collection_installs_and_runs_validate_outside_the_checkout(installed, tmp_path):
    collection = installed / "ansible_collections" / "rlinf" / "cluster"
    assert (collection / "roles" / "ray_node" / "tasks" / "main.yml").is_file()
    assert not (collection / "collections").exists(), "the checkout's self-symlink must not be packed"

    # Run from an empty directory so neither the repo's ansible.cfg nor its symlink is used.
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "ANSIBLE_COLLECTIONS_PATH": str(installed),
        "ANSIBLE_NOCOLOR": "1",
    }
    doc = subprocess.run(
        [BIN / "ansible-doc", "rlinf.cluster.ray_cluster_check"], cwd=workdir, env=env, capture_output=True, text=True
    )
    assert doc.returncode == 0 and "expected_nodes" in doc.stdout, doc.stderr
    # The operator's inventory lives outside the collection (a copy of the sample's).
    inventory = tmp_path / "site-inventory"
    shutil.copytree(collection / "inventories" / "sample", inventory)
    before = _tree(installed)
    first_inventory = subprocess.run(
        [BIN / "ansible-inventory", "-i", inventory, "--list"], cwd=workdir, env=env, capture_output=True, text=True
    ).stdout
    run = subprocess.run(
        [BIN / "ansible-playbook", "rlinf.cluster.validate", "-i", inventory],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    # validate.yml writes the plan: in the inventory's state dir, nothing under the installed collection.
    assert (inventory / ".rlinf" / "artifacts" / "cluster-plan.json").is_file(), sorted(_tree(tmp_path))
    assert _tree(installed) == before, f"written into the installed collection: {sorted(_tree(installed) - before)}"
    # The next run reads the inventory directory again: nothing the last run wrote is read as inventory.
    again = subprocess.run(
        [BIN / "ansible-inventory", "-i", inventory, "--list"], cwd=workdir, env=env, capture_output=True, text=True
    )
    assert again.returncode == 0 and "not a valid group" not in again.stderr, again.stderr[-2000:]
    assert set(json.loads(again.stdout)) == set(json.loads(first_inventory)), again.stdout[-2000:]
    # The sample inventory's rank table and cluster block, as the checkout prints them (README).
    assert "4     edge-2      198.51.100.22  worker  edge   0" in run.stdout, run.stdout[-3000:]
    assert "num_nodes: 5" in run.stdout, run.stdout[-3000:]


def _tree(root: Path) -> set[str]:
    """Every path under ``root`` (bytecode aside: Python may cache a module it imports)."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if "__pycache__" not in p.parts}


def _requirement_lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def test_an_execution_environment_that_installs_the_collection_gets_its_controller_needs(installed):
    """ansible-builder reads meta/execution-environment.yml of the installed collection:
    every Python and system requirement it names reaches the EE's build (except those
    ansible-builder leaves to the base image, such as PyYAML)."""
    run = subprocess.run(
        [BIN / "ansible-builder", "introspect", installed], capture_output=True, text=True, cwd=installed
    )
    assert run.returncode == 0, run.stderr
    found = yaml.safe_load(run.stdout)
    tag = "  # from collection rlinf.cluster"
    python = _requirement_lines(ROOT / "meta" / "ee-requirements.txt")
    wanted = [req for req in python if Requirement(req).name.lower() not in EXCLUDE_REQUIREMENTS]
    assert wanted, "the collection names no Python requirement ansible-builder passes on"
    assert found["python"] == [req + tag for req in wanted]
    assert found["system"] == [req + tag for req in _requirement_lines(ROOT / "meta" / "ee-bindep.txt")]
