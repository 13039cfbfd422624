"""`ansible-galaxy collection build` makes an artifact that works without the checkout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_built_collection_installs_and_runs_validate_outside_the_checkout(tmp_path):
    build = subprocess.run(
        [BIN / "ansible-galaxy", "collection", "build", "--output-path", tmp_path, ROOT],
        capture_output=True,
        text=True,
        check=True,
    )
    artifact = next(tmp_path.glob("rlinf-cluster-*.tar.gz"))
    assert "Created collection" in build.stdout

    installed = tmp_path / "installed"
    # From tmp_path: in the checkout, its ansible.cfg would show the collection as installed.
    subprocess.run(
        [BIN / "ansible-galaxy", "collection", "install", "--force", "--no-deps", "-p", installed, artifact],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
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
    run = subprocess.run(
        [BIN / "ansible-playbook", "rlinf.cluster.validate", "-i", ROOT / "inventories" / "sample"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    # The sample inventory's rank table and cluster block, as the checkout prints them (README).
    assert "4     edge-2      198.51.100.22  worker  edge   0" in run.stdout, run.stdout[-3000:]
    assert "num_nodes: 5" in run.stdout, run.stdout[-3000:]
