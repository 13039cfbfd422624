# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""One node's version manifest (rlinf.cluster.node_state with ``versions``), read by the venv's own Python.

``MANIFEST_PROBE`` runs as ``<venv>/bin/python -c MANIFEST_PROBE [EASYTIER_BASE_DIR]`` and prints one JSON
object: Python, Ray, the sha256 of the venv's ``pip freeze`` (its package metadata where the venv has no pip)
and the EasyTier version when EasyTier is installed (``EASYTIER_BASE_DIR``, default /opt/rlinf/easytier, or
``easytier-core`` on PATH). It never fails: what it cannot read is an error string. node_state starts it
before its other reads and collects it after them, so it costs the read little wall time.
"""

from __future__ import annotations

from ansible_collections.rlinf.cluster.plugins.module_utils.child_read import ChildRead

MANIFEST_PROBE = r"""
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys


def run(argv, timeout=60):
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as err:
        return None, str(err)
    if proc.returncode != 0:
        return None, (proc.stderr or proc.stdout).strip()[-300:] or f"exit status {proc.returncode}"
    return proc.stdout, None


def freeze():
    out, err = run([sys.executable, "-m", "pip", "freeze"])
    if out is not None:
        return out, "pip freeze", None
    # A venv without pip (uv): the same name==version lines from the package metadata.
    try:
        lines = sorted(
            {f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions()},
            key=str.lower,
        )
    except Exception as meta_err:
        return None, None, f"pip freeze failed ({err}); metadata failed ({meta_err})"
    return "".join(line + "\n" for line in lines), "importlib.metadata", None


def easytier(base_dir):
    python = os.path.join(base_dir, "venv", "bin", "python")
    if os.path.exists(python):
        code = (
            "import importlib.metadata as m, easytier_pyo3 as e; "
            "print(f'{e.version()} (easytier-pyo3 {m.version(\"easytier-pyo3\")})')"
        )
        out, err = run([python, "-c", code])
        return out.strip() if out else f"unknown ({err})"
    candidates = [
        os.path.join(base_dir, "easytier-core"),
        os.path.join(base_dir, "bin", "easytier-core"),
        shutil.which("easytier-core"),
    ]
    for binary in filter(None, candidates):
        if os.access(binary, os.X_OK):
            out, err = run([binary, "--version"])
            return out.strip().splitlines()[0] if out else f"unknown ({err})"
    if os.path.isdir(base_dir):
        return "present, version unknown"
    return None


def main():
    base_dir = sys.argv[1] if len(sys.argv) > 1 else "/opt/rlinf/easytier"
    manifest = {
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
    }
    try:
        manifest["ray"] = importlib.metadata.version("ray")
    except importlib.metadata.PackageNotFoundError:
        manifest["ray"] = None
    text, source, err = freeze()
    manifest["pip_freeze_sha256"] = hashlib.sha256(text.encode()).hexdigest() if text is not None else None
    manifest["pip_freeze_source"] = source
    manifest["packages"] = len(text.splitlines()) if text is not None else None
    if err:
        manifest["error"] = err
    manifest["easytier"] = easytier(base_dir)
    print(json.dumps(manifest, sort_keys=True))


if __name__ == "__main__":
    main()
"""


class VersionRead:
    """The manifest read in a child process, started when made: make it, do the other reads, then ``result``."""

    def __init__(self, python, easytier_dir):
        self.read = ChildRead([python, "-c", MANIFEST_PROBE, easytier_dir])

    def result(self, timeout=120):
        """The manifest, or ``{"error": ...}``."""
        return self.read.result(timeout)
