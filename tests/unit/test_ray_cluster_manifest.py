"""module_utils/version_manifest.py: the per-node version manifest of the cluster report (node_state reads it
with the venv's own Python)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from ansible_collections.rlinf.cluster.plugins.module_utils.version_manifest import MANIFEST_PROBE, VersionRead


def run_manifest(base_dir: Path, path: str | None = None, pythonpath: Path | None = None) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if path is not None:
        env["PATH"] = path
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    proc = subprocess.run(
        [sys.executable, "-c", MANIFEST_PROBE, str(base_dir)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    return json.loads(proc.stdout)


def executable(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def test_manifest_without_easytier(tmp_path):
    manifest = run_manifest(tmp_path / "absent", path=str(tmp_path / "empty-path"))
    assert manifest["python"] == sys.version.split()[0]
    assert manifest["python_executable"] == sys.executable
    assert re.fullmatch(r"[0-9a-f]{64}", manifest["pip_freeze_sha256"])
    assert manifest["pip_freeze_source"] in ("pip freeze", "importlib.metadata")
    assert manifest["packages"] > 0
    assert manifest["easytier"] is None


def site_with(site: Path, **versions: str) -> Path:
    """Distributions' metadata in ``site`` (put on PYTHONPATH), as pip and importlib.metadata see it."""
    for name, version in versions.items():
        dist = site / f"{name}-{version}.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    site.mkdir(parents=True, exist_ok=True)
    return site


def test_manifest_reports_ray_and_hashes_the_package_set(tmp_path):
    # The controller's venv has no Ray (null); a node reports the installed version.
    base = run_manifest(tmp_path / "absent")
    same = run_manifest(tmp_path / "absent", pythonpath=site_with(tmp_path / "empty"))
    node = run_manifest(tmp_path / "absent", pythonpath=site_with(tmp_path / "a", ray="2.60.0", rlinf_probe="1.0"))
    newer = run_manifest(tmp_path / "absent", pythonpath=site_with(tmp_path / "b", ray="2.60.0", rlinf_probe="1.1"))
    assert base["ray"] is None and node["ray"] == "2.60.0"
    # Same packages from another place: same hash; more packages or another version: another.
    assert same["pip_freeze_sha256"] == base["pip_freeze_sha256"]
    assert node["packages"] == base["packages"] + 2
    assert len({m["pip_freeze_sha256"] for m in (base, node, newer)}) == 3, (base, node, newer)


def test_manifest_reads_easytier_pyo3_venv(tmp_path):
    executable(tmp_path / "easytier" / "venv" / "bin" / "python", 'echo "2.6.4 (easytier-pyo3 0.1.3)"')
    assert run_manifest(tmp_path / "easytier")["easytier"] == "2.6.4 (easytier-pyo3 0.1.3)"


def test_manifest_reads_easytier_core_binary(tmp_path):
    executable(tmp_path / "easytier" / "easytier-core", 'echo "easytier-core 2.6.4-abcdef"; echo more')
    assert run_manifest(tmp_path / "easytier")["easytier"] == "easytier-core 2.6.4-abcdef"


def test_manifest_reads_easytier_core_on_path(tmp_path):
    executable(tmp_path / "bin" / "easytier-core", 'echo "easytier-core 2.6.4"')
    manifest = run_manifest(tmp_path / "absent", path=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert manifest["easytier"] == "easytier-core 2.6.4"


def test_manifest_reports_a_broken_easytier_instead_of_failing(tmp_path):
    executable(tmp_path / "easytier" / "venv" / "bin" / "python", "echo boom >&2; exit 3")
    assert run_manifest(tmp_path / "easytier")["easytier"] == "unknown (boom)"


def test_the_read_in_a_child_returns_the_manifest_or_why_not(tmp_path):
    assert VersionRead(sys.executable, str(tmp_path / "absent")).result()["python_executable"] == sys.executable
    missing = VersionRead(str(tmp_path / "venv" / "bin" / "python"), str(tmp_path)).result()
    assert missing == {"error": f"FileNotFoundError: [Errno 2] No such file or directory: '{tmp_path}/venv/bin/python'"}
    executable(tmp_path / "broken", "echo cannot start >&2; exit 1")
    assert VersionRead(str(tmp_path / "broken"), str(tmp_path)).result() == {"error": "cannot start"}
