"""rlinf.cluster.code_tree (plugins/modules/code_tree.py) built as a real AnsibleModule on
real temporary trees, and the pure logic it wraps (plugins/module_utils/code_sync.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from module_docs import assert_read_only_module_documented
from module_results import ExitJson, FailJson

from ansible_collections.rlinf.cluster.plugins.module_utils.code_sync import (
    MIB,
    copied_paths,
    measure_tree,
    size_problem,
    tree_digest,
    walk_files,
)
from ansible_collections.rlinf.cluster.plugins.modules import code_tree


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


def test_excludes_follow_rsync_names_and_paths(tmp_path):
    root = checkout(
        tmp_path,
        {"ray_utils/ray_head_ip.txt": b"ip", "ray_utils/start.sh": b"s", "a/ray_utils/ray_head_ip.txt": b"i"},
    )
    kept = [rel for rel, _ in walk_files(str(root), ["ray_utils/ray_head_ip.txt"])]
    assert kept == ["ray_utils/start.sh"]
    anchored = [rel for rel, _ in walk_files(str(root), ["/ray_utils/ray_head_ip.txt"])]
    assert anchored == ["a/ray_utils/ray_head_ip.txt", "ray_utils/start.sh"]


def test_copied_paths_lists_files_links_and_dirs_deepest_first(tmp_path):
    root = checkout(tmp_path, {"pyproject.toml": b"", "rlinf/a/b/m.py": b"", "logs/x.log": b"", "rlinf/c.py": b""})
    (root / "docs").symlink_to(root / "rlinf")
    paths = copied_paths(str(root), ["logs"])
    assert paths["files"] == ["docs", "pyproject.toml", "rlinf/c.py", "rlinf/a/b/m.py"]
    assert paths["dirs"] == ["rlinf/a/b", "rlinf/a", "rlinf"]


def run_module(module_args: dict, check_mode: bool = False) -> dict:
    if check_mode:
        module_args = {**module_args, "_ansible_check_mode": True}
    with pytest.raises(ExitJson) as exc, patch_module_args(module_args):
        code_tree.main()
    return exc.value.args[0]


def test_module_accepts_a_small_checkout_hashes_and_lists_it(tmp_path, module_exits):
    root = checkout(tmp_path, {"pyproject.toml": b"", "rlinf/__init__.py": b"x", "rlinf/__pycache__/m.pyc": b"c"})
    args = {"path": str(root), "digest": True, "list_paths": True, "excludes": ["__pycache__"]}
    out = run_module(args)
    assert out["changed"] is False and out["problem"] is None and out["missing"] == []
    assert out["files"] == 2 and out["total_bytes"] == 2  # the size guard counts caches too
    assert out["digest"] == tree_digest(str(root), ["__pycache__"])
    assert out["paths"] == {"files": ["pyproject.toml", "rlinf/__init__.py"], "dirs": ["rlinf"]}
    assert run_module(args, check_mode=True) == out


def test_module_reports_a_big_tree_listing_the_largest_files(tmp_path, module_exits):
    root = checkout(tmp_path, {"rlinf/__init__.py": b"", "rlinf/w.bin": b"\0" * (2 * MIB), "rlinf/s.bin": b"1"})
    out = run_module({"path": str(root), "max_mb": 1, "digest": True, "top": 1})
    assert out["problem"].startswith(f"{root}/rlinf holds 2.0 MiB in 3 files, above the code-sync limit of 1 MiB")
    assert "Largest files: w.bin (2.0 MiB)." in out["problem"]
    assert out["largest"] == [{"path": "w.bin", "bytes": 2 * MIB}] and "digest" not in out


def test_module_reports_what_makes_a_directory_no_checkout(tmp_path, module_exits):
    root = checkout(tmp_path, {"rlinf/__init__.py": b""})
    out = run_module({"path": str(root), "required_files": ["pyproject.toml", "rlinf/__init__.py"]})
    assert out["missing"] == ["pyproject.toml"]
    assert out["problem"] == f"{root} is not an RLinf checkout: pyproject.toml missing under {root}."
    out = run_module({"path": str(tmp_path / "absent"), "list_paths": True})
    assert out["missing"] == ["rlinf/__init__.py"] and out["total_bytes"] == 0 and "paths" not in out


def test_module_fails_naming_the_checkout_when_a_file_cannot_be_read(tmp_path, module_exits, monkeypatch):
    root = checkout(tmp_path, {"rlinf/__init__.py": b""})

    def unreadable(path):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr("os.path.getsize", unreadable)
    with pytest.raises(FailJson) as exc, patch_module_args({"path": str(root)}):
        code_tree.main()
    assert exc.value.args[0]["msg"].startswith(f"cannot read the checkout {root} (")


def test_documentation_matches_argument_spec():
    assert_read_only_module_documented(code_tree, code_tree.ARGUMENT_SPEC)
