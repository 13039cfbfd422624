"""Pure logic of rlinf.cluster.code_sync: measure the `rlinf/` tree, hash what a wheel is
built from, and explain an oversized tree. No Ansible imports, so unit tests run it directly."""

from __future__ import annotations

import fnmatch
import hashlib
import os

MIB = 1024 * 1024
# Files at the root of a checkout that decide what `pip wheel` builds, besides rlinf/.
BUILD_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "MANIFEST.in")


def _excluded(name: str, excludes: list[str]) -> bool:
    return any(fnmatch.fnmatch(name, pattern.rstrip("/")) for pattern in excludes)


def walk_files(root: str, excludes: list[str] | None = None):
    """Yield (relative path, size) of every regular file under root, sorted, skipping any
    file or directory whose name matches one of `excludes` (fnmatch patterns on the name)."""
    excludes = excludes or []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not _excluded(d, excludes))
        for name in sorted(filenames):
            if _excluded(name, excludes):
                continue
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            yield os.path.relpath(path, root), os.path.getsize(path)


def measure_tree(root: str, excludes: list[str] | None = None, top: int = 10) -> dict:
    """Total size, file count and the `top` largest files of the tree under root."""
    files = list(walk_files(root, excludes))
    largest = sorted(files, key=lambda item: (-item[1], item[0]))[:top]
    return {
        "total_bytes": sum(size for _, size in files),
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
    for rel, _ in walk_files(package_dir, excludes):
        entries.append((os.path.join(package, rel), os.path.join(package_dir, rel)))
    for rel, path in entries:
        digest.update(rel.encode() + b"\0")
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()
