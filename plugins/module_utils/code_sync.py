"""Pure logic of the rlinf.cluster.code_tree module: measure the `rlinf/` tree, explain an
oversized one, hash what a wheel is built from, list what rsync copies. No Ansible imports,
so unit tests run it directly."""

from __future__ import annotations

import fnmatch
import hashlib
import os

MIB = 1024 * 1024
# Files at the root of a checkout that decide what `pip wheel` builds, besides rlinf/.
BUILD_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "MANIFEST.in")


def _excluded(rel: str, excludes: list[str]) -> bool:
    """rsync's reading of an exclude: a pattern without a slash matches the name at any
    depth; one with a slash matches the end of the relative path (a leading / anchors it)."""
    name = os.path.basename(rel)
    for pattern in excludes:
        pattern = pattern.rstrip("/")
        if "/" not in pattern:
            if fnmatch.fnmatch(name, pattern):
                return True
        elif pattern.startswith("/"):
            if fnmatch.fnmatch(rel, pattern[1:]):
                return True
        elif fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(rel, "*/" + pattern):
            return True
    return False


def _pruned_walk(root: str, excludes: list[str]):
    """os.walk of root, sorted, with excluded directories pruned and excluded files dropped;
    yields (relative directory, subdirectory names, file names)."""
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir
        dirnames[:] = sorted(d for d in dirnames if not _excluded(os.path.join(rel_dir, d), excludes))
        yield rel_dir, dirnames, sorted(f for f in filenames if not _excluded(os.path.join(rel_dir, f), excludes))


def walk_files(root: str, excludes: list[str] | None = None):
    """Yield (relative path, size) of every regular file under root, sorted, skipping what
    `excludes` matches (rsync-style patterns, see _excluded) and symlinks."""
    for rel_dir, _dirs, filenames in _pruned_walk(root, excludes or []):
        for name in filenames:
            path = os.path.join(root, rel_dir, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            yield os.path.join(rel_dir, name), os.path.getsize(path)


def copied_paths(root: str, excludes: list[str] | None = None) -> dict:
    """What `rsync -a` with these excludes copies from root: `files` (symlinks included,
    also those to directories) and `dirs`, deepest first so they can be removed in order."""
    files, dirs = [], []
    for rel_dir, dirnames, filenames in _pruned_walk(root, excludes or []):
        links = [d for d in dirnames if os.path.islink(os.path.join(root, rel_dir, d))]
        files.extend(os.path.join(rel_dir, name) for name in sorted(filenames + links))
        dirs.extend(os.path.join(rel_dir, d) for d in dirnames if d not in links)
    dirs.sort(key=lambda rel: (-rel.count(os.sep), rel))
    return {"files": files, "dirs": dirs}


def measure_tree(root: str, excludes: list[str] | None = None, top: int = 10) -> dict:
    """Total size, file count and the `top` largest files of the tree under root."""
    files = list(walk_files(root, excludes))
    largest = sorted(files, key=lambda item: (-item[1], item[0]))[:top]
    return {
        "total_bytes": sum(size for _path, size in files),
        "files": len(files),
        "largest": [{"path": path, "bytes": size} for path, size in largest],
    }


def human_size(size: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if size < 1024 or unit == "MiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} MiB"  # pragma: no cover


def size_problem(measure: dict, max_mb: float, tree: str, override_var: str = "code_sync_max_mb") -> str | None:
    """None when the tree fits, else a message naming the tree, its size, the limit, the
    largest files and how to get past it."""
    limit = int(float(max_mb) * MIB)
    if measure["total_bytes"] <= limit:
        return None
    biggest = "; ".join(f"{item['path']} ({human_size(item['bytes'])})" for item in measure["largest"])
    return (
        f"{tree} holds {human_size(measure['total_bytes'])} in {measure['files']} files, above the "
        f"code-sync limit of {max_mb:g} MiB. Every node receives all of it (RLinf's own Ray code sync "
        f"ships rlinf/ whole, with no exclusions). Largest files: {biggest}. Move logs, checkpoints, "
        f"datasets and other large files out of rlinf/, or raise the limit with -e {override_var}=N."
    )


def tree_digest(root: str, excludes: list[str] | None = None, package: str = "rlinf") -> str:
    """sha256 over the build files at the root and every file under root/package (names and
    contents): the same digest means the same wheel content."""
    digest = hashlib.sha256()
    entries = [(name, os.path.join(root, name)) for name in BUILD_FILES if os.path.isfile(os.path.join(root, name))]
    package_dir = os.path.join(root, package)
    for rel, _size in walk_files(package_dir, excludes):
        entries.append((os.path.join(package, rel), os.path.join(package_dir, rel)))
    for rel, path in entries:
        digest.update(rel.encode() + b"\0")
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()
