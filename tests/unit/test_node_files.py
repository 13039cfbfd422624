"""The node-side helpers of rlinf.cluster.owned_files (plugins/module_utils/node_files.py), on a
temporary directory: what counts as ours, what a manifest holds, what a tree removal leaves."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.rlinf.cluster.plugins.module_utils import node_files as F


def test_a_file_is_ours_when_its_first_512_bytes_carry_our_header(tmp_path):
    near, far, none = tmp_path / "near", tmp_path / "far", tmp_path / "none"
    near.write_bytes(b"x" * (512 - len(F.MARKER)) + F.MARKER)
    far.write_bytes(b"x" * (513 - len(F.MARKER)) + F.MARKER)
    none.write_bytes(b"# Managed by Ansible (rlinf.cluster.easytier)\n")
    assert (F.is_ours(near), F.is_ours(far), F.is_ours(none)) == (True, False, True)
    assert F.is_ours(tmp_path / "missing") is False
    assert F.is_ours(tmp_path) is False  # a directory cannot be read as a file


@pytest.mark.parametrize("data", ["not json", "[1, 2]", '{"entries": {"path": "/x"}}', '{"version": 1}'])
def test_an_unreadable_manifest_lists_nothing(tmp_path, data):
    manifest = tmp_path / "m.json"
    manifest.write_text(data)
    assert F.read_manifest(str(manifest)) == []


def test_a_manifest_keeps_only_absolute_entries_of_a_known_kind(tmp_path):
    good = [{"path": "/etc/rlinf/a", "kind": "file", "tag": ""}, {"path": "/opt/rlinf/venv", "kind": "venv"}]
    bad = [{"path": "rel", "kind": "file"}, {"path": "/x", "kind": "socket"}, {"path": 5, "kind": "file"}, "str"]
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({"version": 1, "entries": good + bad}))
    assert F.read_manifest(str(manifest)) == good


def test_the_manifest_text_is_versioned_sorted_json_indented_two():
    assert F.manifest_text([{"path": "/a", "kind": "file"}]) == (
        '{\n  "entries": [\n    {\n      "kind": "file",\n      "path": "/a"\n    }\n  ],\n  "version": 1\n}\n'
    )


def test_a_trees_side_file_is_named_by_its_path():
    assert F.side_file("/etc/rlinf/state/u.manifest.json", "/opt/rlinf/venv") == (
        "/etc/rlinf/state/u.manifest.json.d/" + F.hashlib.sha1(b"/opt/rlinf/venv").hexdigest()[:16] + ".files"
    )


def test_tree_files_lists_files_and_directory_links_relative_and_sorted(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "f").write_text("x")
    (tmp_path / "a").write_text("x")
    os.symlink(str(tmp_path / "b"), str(tmp_path / "link"))
    assert F.tree_files(str(tmp_path)) == ["a", "b/f", "link"]


def test_missing_parents_are_the_absent_directories_outermost_first(tmp_path):
    path = tmp_path / "x" / "y" / "file"
    assert F.missing_parents(str(path)) == [str(tmp_path / "x"), str(tmp_path / "x" / "y")]
    assert F.missing_parents(str(tmp_path / "file")) == []


def test_file_differs_says_content_and_attributes_apart(tmp_path):
    path = tmp_path / "f"
    assert F.file_differs(str(path), b"x", 0o644) == (True, True)
    path.write_bytes(b"x")
    path.chmod(0o644)
    st = path.stat()
    assert F.file_differs(str(path), b"x", 0o644, st.st_uid, st.st_gid) == (False, False)
    assert F.file_differs(str(path), b"y", 0o644) == (True, False)
    assert F.file_differs(str(path), b"x", 0o600) == (False, True)
    assert F.file_differs(str(path), b"x", 0o644, st.st_uid + 1) == (False, True)
    assert F.file_differs(str(path), b"x", 0o644, None, st.st_gid + 1) == (False, True)
    assert F.file_differs(str(tmp_path), b"x", 0o755) == (True, True)  # a directory is no file


def test_write_atomic_writes_the_mode_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "f"
    F.write_atomic(str(path), b"data", 0o600)
    assert path.read_bytes() == b"data" and (path.stat().st_mode & 0o777) == 0o600
    assert os.listdir(tmp_path) == ["f"]


def test_a_tree_stays_when_a_file_not_listed_is_in_it_but_not_for_a_going_modules_bytecode(tmp_path):
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "mod.py").write_text("")
    (tmp_path / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"")
    assert F.tree_would_remain(str(tmp_path), ["pkg/mod.py"]) is False
    assert F.tree_would_remain(str(tmp_path), []) is True
    (tmp_path / "pkg" / "__pycache__" / "gone.cpython-311.pyc").write_bytes(b"")  # its source is gone
    assert F.tree_would_remain(str(tmp_path), ["pkg/mod.py"]) is False
    (tmp_path / "pkg" / "mine.txt").write_text("")
    assert F.tree_would_remain(str(tmp_path), ["pkg/mod.py"]) is True


def test_removing_a_trees_files_removes_its_bytecode_and_empty_directories_never_outside(tmp_path):
    root = tmp_path / "tree"
    (root / "pkg" / "__pycache__").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("")
    (root / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"")
    (tmp_path / "outside").write_text("")
    removed, gone = F.remove_tree_files(str(root), ["pkg/mod.py", "../outside"])
    assert removed == [str(root / "pkg" / "mod.py"), str(root / "pkg" / "__pycache__" / "mod.cpython-311.pyc")]
    assert gone is True and (tmp_path / "outside").exists()
    (root / "keep").mkdir(parents=True)
    (root / "keep" / "mine").write_text("")
    assert F.remove_tree_files(str(root), []) == ([], False)


def test_the_bytecode_of_a_module_that_stays_keeps_the_tree_and_a_stray_pyc_is_a_file_like_any(tmp_path):
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "keep.py").write_text("")
    (tmp_path / "pkg" / "__pycache__" / "keep.cpython-311.pyc").write_bytes(b"")
    assert F.tree_would_remain(str(tmp_path), ["pkg/keep.py"]) is False
    assert F.tree_would_remain(str(tmp_path), ["pkg/__pycache__/keep.cpython-311.pyc"]) is True  # keep.py stays
    stray = tmp_path / "other"
    stray.mkdir()
    (stray / "lost.pyc").write_bytes(b"")  # not in a __pycache__: not a module's cache
    assert F.tree_would_remain(str(stray), []) is True


def test_a_failed_write_leaves_no_temporary_file_and_raises(tmp_path):
    with pytest.raises(TypeError):
        F.write_atomic(str(tmp_path / "f"), "not bytes", 0o644)
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_write_atomic_sets_the_owner_and_group_it_is_given_and_keeps_the_other(tmp_path):
    F.write_atomic(str(tmp_path / "u"), b"x", 0o644, uid=12345)
    F.write_atomic(str(tmp_path / "g"), b"x", 0o644, gid=23456)
    F.write_atomic(str(tmp_path / "n"), b"x", 0o644)
    u, g, n = ((tmp_path / name).stat() for name in "ugn")
    assert (u.st_uid, u.st_gid) == (12345, n.st_gid)
    assert (g.st_uid, g.st_gid) == (n.st_uid, 23456)


def test_removing_a_trees_files_keeps_the_bytecode_of_a_module_that_stays(tmp_path):
    root = tmp_path / "tree"
    (root / "pkg" / "__pycache__").mkdir(parents=True)
    for name in ("mod", "keep"):
        (root / "pkg" / f"{name}.py").write_text("")
        (root / "pkg" / "__pycache__" / f"{name}.cpython-311.pyc").write_bytes(b"")
    (root / "pkg" / "__pycache__" / "notes.txt").write_text("")
    removed, gone = F.remove_tree_files(str(root), ["pkg/mod.py"])
    assert removed == [str(root / "pkg" / "mod.py"), str(root / "pkg" / "__pycache__" / "mod.cpython-311.pyc")]
    assert gone is False
    assert sorted(os.listdir(root / "pkg" / "__pycache__")) == ["keep.cpython-311.pyc", "notes.txt"]
