"""State next to the inventory: the built collection, installed outside the checkout, runs
site.yml against the lab's inventory with the token the checkout generated (kept in the
inventory's .rlinf/, not under the collection): nothing changes, Ray restarts nowhere, the
token file is the same, and the installed collection holds no state and no report (those go
next to the inventory)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time

import pytest
from lab_helpers import CONTROLLER_TOKEN, LAB_INVENTORY, ROOT, lab_hosts, run_playbook, wait_for_alive

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

BIN = os.path.dirname(sys.executable)


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_installed_collection_keeps_the_checkouts_token(tmp_path):
    hosts = lab_hosts()
    head = next(iter(hosts.values()))
    # The checkout's run put the token next to the inventory.
    first = run_playbook("site.yml", tmp_path)
    assert first.rc == 0, first.stdout[-3000:]
    assert CONTROLLER_TOKEN.is_file() and CONTROLLER_TOKEN.parent.parent == LAB_INVENTORY / ".rlinf"
    token = digest(CONTROLLER_TOKEN)
    before = {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()}

    build = subprocess.run(
        [f"{BIN}/ansible-galaxy", "collection", "build", "--output-path", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (artifact,) = tmp_path.glob("rlinf-cluster-*.tar.gz")
    installed = tmp_path / "installed"
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    # Not through the checkout's ansible.cfg (make exports ANSIBLE_CONFIG): its collections path
    # holds the checkout's rlinf.cluster, and ansible-galaxy would skip it as already installed.
    clean = {k: v for k, v in os.environ.items() if k not in ("ANSIBLE_CONFIG", "ANSIBLE_COLLECTIONS_PATH")}
    subprocess.run(
        [f"{BIN}/ansible-galaxy", "collection", "install", "--no-deps", "--force", "-p", str(installed), str(artifact)],
        cwd=workdir,
        env=clean,
        capture_output=True,
        text=True,
        check=True,
    )
    collection = installed / "ansible_collections" / "rlinf" / "cluster"
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        # The installed collection first; ansible.posix from the controller venv's ansible package.
        "ANSIBLE_COLLECTIONS_PATH": str(installed),
        "ANSIBLE_HOST_KEY_CHECKING": "False",
        "ANSIBLE_NOCOLOR": "1",
    }
    # SSH's control sockets in a short directory: under tmp_path (pytest-xdist's is deep) their
    # path would pass the 108 bytes a Unix socket's may have.
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="rlinf-cp-", dir="/tmp") as control_dir:
        env["ANSIBLE_SSH_CONTROL_PATH_DIR"] = control_dir
        run = subprocess.run(
            [f"{BIN}/ansible-playbook", "rlinf.cluster.site", "-i", str(LAB_INVENTORY)],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    # It ran the installed playbooks: their report lands in the inventory's state dir (where Ansible
    # does not read it as inventory), not in the collection.
    report = LAB_INVENTORY / ".rlinf" / "artifacts" / "cluster-report.json"
    assert report.is_file() and report.stat().st_mtime >= started
    recap = [line for line in run.stdout.splitlines() if " changed=" in line]
    assert recap and all(" changed=0 " in line for line in recap), recap
    assert digest(CONTROLLER_TOKEN) == token
    assert {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()} == before
    # Nothing of the run's state or reports landed in the installed collection.
    assert not (collection / "artifacts").exists()
