"""The easytier role's `release` source, against a local mirror of GitHub's layout.

GitHub is unreachable from the test machines, so a local HTTP server serves
``v<version>/easytier-linux-<arch>-v<version>.zip`` and ``easytier_release_base_url``
points at it. This exercises the real code path (download once on the controller,
sha256 check, unpack, locate easytier-core) without the internet. Nothing is installed:
only the controller-side tasks run (tasks_from: artifacts_release.yml).
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import platform
import subprocess
import threading
import zipfile
from pathlib import Path

import pytest
from controller_playbook import run_controller_playbook

VERSION = "2.6.4"
ARCH = {"x86_64": "x86_64", "aarch64": "aarch64", "armv7l": "armv7"}.get(platform.machine(), platform.machine())
FAKE_CORE = b"#!/bin/sh\necho easytier-core 0.0.0-test\n"
PLAYBOOK = """
- name: EasyTier release source, controller side only
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
    easytier_install_source: release
    easytier_members: [{name: localhost}]
  tasks:
    - name: Read the architecture
      ansible.builtin.setup:
        gather_subset: [min]
    - name: Download, verify, unpack and locate easytier-core
      ansible.builtin.include_role:
        name: rlinf.cluster.easytier
        tasks_from: artifacts_release.yml
    - name: Show what a node would get
      ansible.builtin.debug:
        msg: "BINARIES={{ __easytier_binaries | map('basename') | join(',') }}"
"""


@pytest.fixture
def mirror(tmp_path):
    root = tmp_path / "mirror"
    asset = root / f"v{VERSION}" / f"easytier-linux-{ARCH}-v{VERSION}.zip"
    asset.parent.mkdir(parents=True)
    with zipfile.ZipFile(asset, "w") as archive:
        archive.writestr(f"easytier-linux-{ARCH}/easytier-core", FAKE_CORE)
        archive.writestr(f"easytier-linux-{ARCH}/easytier-cli", FAKE_CORE)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", hashlib.sha256(asset.read_bytes()).hexdigest()
    server.shutdown()
    server.server_close()


def run(tmp_path: Path, base_url: str, sha256: str) -> subprocess.CompletedProcess:
    variables = {
        "easytier_release_base_url": base_url,
        "easytier_release_sha256": sha256,
        "easytier_controller_cache_dir": str(tmp_path / "cache"),
    }
    return run_controller_playbook(tmp_path, "release", PLAYBOOK, variables)


def test_release_is_downloaded_once_checked_and_unpacked(tmp_path, mirror):
    base_url, sha = mirror
    proc = run(tmp_path, base_url, sha)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "BINARIES=easytier-cli,easytier-core" in proc.stdout
    assert (tmp_path / "cache" / "downloads" / f"easytier-linux-{ARCH}-v{VERSION}.zip").exists()
    core = tmp_path / "cache" / "unpacked" / sha / f"easytier-linux-{ARCH}" / "easytier-core"
    assert core.read_bytes() == FAKE_CORE
    # A second run finds the archive already there and changes nothing.
    again = run(tmp_path, base_url, sha)
    assert again.returncode == 0, again.stdout
    assert "changed=0" in again.stdout


def test_release_with_a_wrong_checksum_is_refused(tmp_path, mirror):
    base_url, sha = mirror
    wrong = "f" * 64
    proc = run(tmp_path, base_url, wrong)
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    pin = "easytier_release_sha256 (or the pin in roles/easytier/vars/main.yml)"
    assert f"has sha256 {sha} but {pin} expects {wrong}" in out, out
    assert "refusing to install it" in out and "Traceback" not in out
    assert not (tmp_path / "cache" / "unpacked").exists()


def test_unreachable_release_names_the_alternatives(tmp_path, mirror):
    _, sha = mirror
    proc = run(tmp_path, "http://127.0.0.1:9/nowhere", sha)
    out = " ".join(proc.stdout.split())
    assert proc.returncode != 0
    assert "Could not download EasyTier release http://127.0.0.1:9/nowhere/v2.6.4/" in out
    assert "easytier_release_base_url" in out and "easytier_install_source=archive" in out
