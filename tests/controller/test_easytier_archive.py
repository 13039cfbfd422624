"""The easytier role's `archive` source: checksum checked on the controller, before any node.

Drives the role's controller-side tasks (tasks_from: artifacts_archive.yml) with archives
the test builds. Nothing is installed anywhere: the only host is the controller itself
(connection local), and every task of that file runs there. Needs no lab host.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
from controller_playbook import run_controller_playbook

PLAYBOOK = """
- name: EasyTier archive source, controller side only
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
    easytier_install_source: archive
    easytier_members: [{name: localhost}]
  tasks:
    - name: Verify, unpack and locate easytier-core
      ansible.builtin.include_role:
        name: rlinf.cluster.easytier
        tasks_from: artifacts_archive.yml
    - name: Show what a node would get
      ansible.builtin.debug:
        msg: "BINARIES={{ __easytier_binaries | map('basename') | join(',') }}"
"""
FAKE_CORE = b"#!/bin/sh\necho easytier-core 0.0.0-test\n"


def build_tar(path: Path, members: dict[str, bytes]) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_zip(path: Path, members: dict[str, bytes]) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run(tmp_path: Path, archive: Path, sha256: str) -> subprocess.CompletedProcess:
    variables = {
        "easytier_archive_path": str(archive),
        "easytier_archive_sha256": sha256,
        "easytier_controller_cache_dir": str(tmp_path / "cache"),
    }
    return run_controller_playbook(tmp_path, "archive", PLAYBOOK, variables)


@pytest.mark.parametrize("builder", [build_tar, build_zip], ids=["tar.gz", "zip"])
def test_right_checksum_unpacks_easytier_core(tmp_path, builder):
    archive = tmp_path / ("et.tar.gz" if builder is build_tar else "et.zip")
    sha = builder(
        archive, {"easytier-linux-x86_64/easytier-core": FAKE_CORE, "easytier-linux-x86_64/easytier-cli": FAKE_CORE}
    )
    proc = run(tmp_path, archive, sha.upper())  # the checksum is compared case-insensitively
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "BINARIES=easytier-cli,easytier-core" in proc.stdout
    unpacked = tmp_path / "cache" / "unpacked" / sha / "easytier-linux-x86_64" / "easytier-core"
    assert unpacked.read_bytes() == FAKE_CORE


def test_wrong_checksum_is_refused_with_a_clear_message(tmp_path):
    archive = tmp_path / "et.tar.gz"
    actual = build_tar(archive, {"easytier-linux-x86_64/easytier-core": FAKE_CORE})
    wrong = "0" * 64
    proc = run(tmp_path, archive, wrong)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"EasyTier archive {archive} has sha256 {actual} but easytier_archive_sha256 expects {wrong}" in " ".join(
        out.split()
    )
    assert "refusing to install it" in out
    assert "Traceback" not in out
    # Nothing was unpacked: the check comes first.
    assert not (tmp_path / "cache" / "unpacked").exists()


def test_missing_archive_is_refused(tmp_path):
    proc = run(tmp_path, tmp_path / "nope.zip", "1" * 64)
    assert proc.returncode != 0
    assert "does not exist on the controller" in proc.stdout
    assert "easytier_archive_path" in proc.stdout


def test_archive_without_easytier_core_is_refused(tmp_path):
    archive = tmp_path / "et.tar.gz"
    sha = build_tar(archive, {"README": b"not a release\n"})
    proc = run(tmp_path, archive, sha)
    assert proc.returncode != 0
    assert "holds no file named easytier-core" in proc.stdout
