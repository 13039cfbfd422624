"""Pure logic of rlinf.cluster.code_sync (plugins/module_utils/code_sync.py) and the
controller script the role runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ansible_collections.rlinf.cluster.plugins.module_utils.code_sync import (
    MIB,
    measure_tree,
    size_problem,
    tree_digest,
)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "collections/ansible_collections/rlinf/cluster/roles/code_sync/files/code_sync_tree.py"


def checkout(tmp_path: Path, files: dict[str, bytes]) -> Path:
    for rel, content in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return tmp_path


def test_measure_lists_largest_first_and_sums(tmp_path):
    root = checkout(tmp_path, {"a.py": b"x" * 10, "sub/b.bin": b"y" * 300, "sub/c.bin": b"z" * 300, "d": b""})
    result = measure_tree(str(root), top=2)
    assert result["total_bytes"] == 610
    assert result["files"] == 4
    assert result["largest"] == [{"path": "sub/b.bin", "bytes": 300}, {"path": "sub/c.bin", "bytes": 300}]


def test_measure_skips_excluded_names_and_symlinks(tmp_path):
    root = checkout(tmp_path, {"keep.py": b"1", "__pycache__/x.pyc": b"22", "logs/run.log": b"333"})
    (root / "link").symlink_to(root / "keep.py")
    assert measure_tree(str(root), ["__pycache__", "logs"])["files"] == 1
    assert measure_tree(str(root))["files"] == 3


def test_size_problem_names_tree_limit_files_and_override():
    measure = {"total_bytes": 60 * MIB, "files": 3, "largest": [{"path": "ckpt/model.pt", "bytes": 55 * MIB}]}
    msg = size_problem(measure, 50, "/src/RLinf/rlinf")
    assert msg.startswith("/src/RLinf/rlinf holds 60.0 MiB in 3 files, above the code-sync limit of 50 MiB")
    assert "Largest files: ckpt/model.pt (55.0 MiB)" in msg
    assert "-e code_sync_max_mb=N" in msg
    assert size_problem(measure, 60, "x") is None
    assert size_problem({"total_bytes": 0, "files": 0, "largest": []}, 0, "x") is None


def test_digest_follows_rlinf_and_build_files_only(tmp_path):
    root = checkout(tmp_path, {"pyproject.toml": b"[project]\n", "rlinf/__init__.py": b"v=1\n", "docs/x.md": b"a"})
    first = tree_digest(str(root))
    (root / "docs" / "x.md").write_text("b")
    (root / "rlinf" / "__pycache__").mkdir()
    (root / "rlinf" / "__pycache__" / "m.pyc").write_bytes(b"c")
    assert tree_digest(str(root), ["__pycache__"]) == first
    (root / "rlinf" / "__init__.py").write_text("v=2\n")
    assert tree_digest(str(root), ["__pycache__"]) != first
    (root / "rlinf" / "__init__.py").write_text("v=1\n")
    (root / "pyproject.toml").write_text("[project]\nname='x'\n")
    assert tree_digest(str(root)) != first


def run_script(*args: str) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)
    return proc.returncode, json.loads(proc.stdout)


def test_script_accepts_a_small_checkout_and_hashes_it(tmp_path):
    root = checkout(tmp_path, {"pyproject.toml": b"", "rlinf/__init__.py": b"x"})
    rc, out = run_script(str(root), "50", "--digest", "--exclude=__pycache__")
    assert rc == 0 and out["problem"] is None and len(out["digest"]) == 64


def test_script_refuses_a_big_tree_and_a_non_checkout(tmp_path):
    root = checkout(tmp_path / "big", {"rlinf/__init__.py": b"", "rlinf/w.bin": b"\0" * (2 * MIB)})
    rc, out = run_script(str(root), "1")
    assert rc == 2 and "Largest files: w.bin (2.0 MiB)" in out["problem"]
    rc, out = run_script(str(tmp_path / "empty"), "1")
    assert rc == 2 and "is not an RLinf checkout" in out["problem"]
