"""The files rlinf-ansible keeps on a node, and the manifest of every path it created.

A manifest (JSON, under /etc/rlinf/state/) lists what rlinf-ansible created on the node, in
creation order, each entry ``{"path", "kind", "tag"}``:

- ``file``: removed by purge;
- ``dir``: removed by purge only when empty (anything of the operator's inside keeps it);
- ``tree``: a directory filled by a tool (a venv, a wheelhouse); its files at the time of the
  last install are listed in a side file next to the manifest, and purge removes exactly
  those, then the directories left empty. What someone added later stays.

A path that existed before rlinf-ansible wrote it is never added. Runs on the nodes:
Python 3.9+, standard library only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile

MARKER = b"Managed by rlinf-ansible"
# The EasyTier role's header (kept as it was: a changed unit would restart the overlay under a job).
OTHER_MARKERS = (b"Managed by Ansible (rlinf.cluster.easytier)",)
MANIFEST_VERSION = 1
KINDS = ("file", "dir", "tree", "venv")


def is_ours(path):
    """Whether a file's first lines carry our header (an earlier install, before manifests)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(512)
    except OSError:
        return False
    return any(marker in head for marker in (MARKER, *OTHER_MARKERS))


def read_manifest(path):
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return []
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return []
    return [
        e
        for e in entries
        if isinstance(e, dict)
        and isinstance(e.get("path"), str)
        and e.get("kind") in KINDS
        and e["path"].startswith("/")
    ]


def manifest_text(entries):
    return json.dumps({"version": MANIFEST_VERSION, "entries": entries}, indent=2, sort_keys=True) + "\n"


def side_file(manifest, path):
    """Where a tree's file list is kept."""
    return f"{manifest}.d/{hashlib.sha1(path.encode()).hexdigest()[:16]}.files"


def tree_files(root):
    """Every file and symlink below ``root``, relative, sorted (directories are implied)."""
    found = []
    for current, dirs, files in os.walk(root):
        rel = os.path.relpath(current, root)
        for name in files + [d for d in dirs if os.path.islink(os.path.join(current, d))]:
            found.append(name if rel == "." else os.path.join(rel, name))
    return sorted(found)


def missing_parents(path):
    """The directories above ``path`` that do not exist, outermost first."""
    missing = []
    parent = os.path.dirname(path)
    while parent and parent != "/" and not os.path.lexists(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    return list(reversed(missing))


def file_differs(path, content, mode, uid=None, gid=None):
    """(content differs, attributes differ) of an existing or missing file."""
    try:
        st = os.lstat(path)
    except OSError:
        return True, True
    if not stat.S_ISREG(st.st_mode):
        return True, True
    with open(path, "rb") as handle:
        same = handle.read() == content
    attrs = (
        stat.S_IMODE(st.st_mode) != mode
        or (uid is not None and st.st_uid != uid)
        or (gid is not None and st.st_gid != gid)
    )
    return not same, attrs


def file_state(path):
    """What a regular file at ``path`` holds, for comparing it with a plan on the controller:
    ``exists``, and for a regular file its ``sha256``, ``mode`` (octal text), ``uid``, ``gid`` and
    their names (``owner``, ``group``; None where the node has no name for them)."""
    import grp
    import pwd

    try:
        st = os.lstat(path)
    except OSError:
        return {"exists": False}
    if not stat.S_ISREG(st.st_mode):
        return {"exists": True, "regular": False}
    try:
        with open(path, "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return {"exists": True, "regular": True, "readable": False}
    found = {"exists": True, "regular": True, "readable": True, "sha256": digest}
    found.update(mode=f"{stat.S_IMODE(st.st_mode):04o}", uid=st.st_uid, gid=st.st_gid, owner=None, group=None)
    with contextlib.suppress(KeyError):
        found["owner"] = pwd.getpwuid(st.st_uid).pw_name
    with contextlib.suppress(KeyError):
        found["group"] = grp.getgrgid(st.st_gid).gr_name
    return found


def write_atomic(path, content, mode, uid=None, gid=None):
    """Write ``content`` to ``path`` through a temporary file in the same directory."""
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".rlinf-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.chmod(tmp, mode)
        if uid is not None or gid is not None:
            os.chown(tmp, -1 if uid is None else uid, -1 if gid is None else gid)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def tree_would_remain(root, files):
    """Whether remove_tree_files(root, files) would leave ``root`` in place (check mode): some
    file under it is neither listed nor the bytecode cache of a module that goes."""
    listed = {os.path.normpath(rel) for rel in files}
    for rel in tree_files(root):
        if rel in listed:
            continue
        cache_dir, name = os.path.split(rel)
        if os.path.basename(cache_dir) == "__pycache__" and name.endswith(".pyc"):
            source = os.path.join(os.path.dirname(cache_dir), name.split(".", 1)[0] + ".py")
            if source in listed or not os.path.exists(os.path.join(root, source)):
                continue
        return True
    return False


def remove_tree_files(root, files):
    """Remove the listed files under ``root``, the bytecode caches of what it removed, then every
    directory left empty; returns (removed paths, whether ``root`` is gone)."""
    removed = []
    prefix = root.rstrip("/") + "/"
    for rel in files:
        target = os.path.normpath(os.path.join(root, rel))
        if not target.startswith(prefix):
            continue  # never outside the tree
        if os.path.islink(target) or os.path.isfile(target):
            os.unlink(target)
            removed.append(target)
    for current, _dirs, names in os.walk(root):
        if os.path.basename(current) != "__pycache__":
            continue
        source_dir = os.path.dirname(current)
        for name in names:
            module = name.split(".", 1)[0] + ".py"
            if name.endswith(".pyc") and not os.path.exists(os.path.join(source_dir, module)):
                os.unlink(os.path.join(current, name))
                removed.append(os.path.join(current, name))
    for current, _dirs, _names in os.walk(root, topdown=False):
        if os.path.islink(current):
            continue
        with contextlib.suppress(OSError):
            os.rmdir(current)
    return removed, not os.path.lexists(root)
