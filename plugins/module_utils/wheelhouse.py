"""Which wheels a node can install: the pip download arguments for its platform.

The controller downloads once for every node (`pip download --only-binary=:all:`) with
the node's Python and platform instead of its own. pip does not widen a single
``--platform manylinux_2_36_x86_64`` to the legacy ``manylinux2014`` aliases that
many wheels (Ray's among them) carry, so every compatible tag is listed.
"""

from __future__ import annotations

import hashlib
import os
from urllib.parse import unquote

# glibc versions of the legacy manylinux aliases (PEP 600).
LEGACY_ALIASES = {"manylinux2014": (2, 17), "manylinux2010": (2, 12), "manylinux1": (2, 5)}
OLDEST_GLIBC_MINOR = 5


def _glibc(version: str) -> tuple[int, int]:
    try:
        major, minor = (int(part) for part in str(version).split(".")[:2])
    except ValueError:
        raise ValueError(f"glibc version {version!r} is not of the form 2.NN") from None
    if major != 2:
        raise ValueError(f"glibc version {version!r}: only glibc 2.x is supported")
    return major, minor


def manylinux_platforms(machine: str, glibc: str) -> list[str]:
    """Every manylinux platform tag a host with this machine and glibc accepts, newest first."""
    major, minor = _glibc(glibc)
    tags = [f"manylinux_{major}_{m}_{machine}" for m in range(minor, OLDEST_GLIBC_MINOR - 1, -1)]
    tags += [f"{alias}_{machine}" for alias, (_major, alias_minor) in LEGACY_ALIASES.items() if alias_minor <= minor]
    return tags


def pip_download_args(python_version: str, machine: str, glibc: str) -> list[str]:
    """pip download options selecting wheels for a CPython ``python_version`` node."""
    major_minor = "".join(str(python_version).split(".")[:2])
    args = ["--only-binary=:all:", "--implementation", "cp", "--python-version", major_minor]
    for abi in (f"cp{major_minor}", "abi3", "none"):
        args += ["--abi", abi]
    for tag in manylinux_platforms(machine, glibc):
        args += ["--platform", tag]
    return args


def _version(platform: dict) -> str:
    return str(platform.get("python_version") or platform["version"])


def wheelhouse_key(platform: dict) -> str:
    """Name of the wheelhouse a node uses, e.g. ``cp311-x86_64``."""
    major_minor = "".join(_version(platform).split(".")[:2])
    return f"cp{major_minor}-{platform['machine']}"


def wheelhouse_platforms(platforms: list[dict]) -> list[dict]:
    """One entry per wheelhouse the nodes need, with the oldest glibc among its nodes.

    ``platforms`` holds each node's ``python_version`` (or ``version``), ``machine`` and ``glibc``.
    """
    by_key: dict[str, dict] = {}
    for platform in platforms:
        key = wheelhouse_key(platform)
        current = by_key.get(key)
        if current is None or _glibc(platform["glibc"]) < _glibc(current["glibc"]):
            by_key[key] = {
                "key": key,
                "python_version": _version(platform),
                "machine": platform["machine"],
                "glibc": platform["glibc"],
            }
    return [by_key[key] for key in sorted(by_key)]


def lock_names(stamp: str, no_deps: bool) -> dict[str, str]:
    """File names, in the wheelhouse, of a requirement set's locks: the set with its dependencies,
    and the packages installed without theirs ("" when there are none)."""
    return {"deps": f"requirements-{stamp}.lock", "no_deps": f"requirements-{stamp}-no-deps.lock" if no_deps else ""}


def lock_text(report: dict) -> str:
    """A pip requirements file pinning every package of a ``pip install --dry-run --report`` to its
    version and sha256, the wheel's file name after each line (``--require-hashes`` reads it)."""
    lines = ["# Written by rlinf.cluster from pip's resolution of the wheelhouse; do not edit."]
    for item in sorted(report.get("install") or [], key=lambda i: i["metadata"]["name"].lower()):
        info = item.get("download_info") or {}
        sha256 = ((info.get("archive_info") or {}).get("hashes") or {}).get("sha256")
        url = str(info.get("url") or "")
        if not sha256 or not url.startswith("file://"):
            raise ValueError(f"pip's report has no local file and sha256 for {item['metadata']['name']}")
        name = unquote(url.rsplit("/", 1)[-1])
        lines.append(f"{item['metadata']['name']}=={item['metadata']['version']} --hash=sha256:{sha256}  # {name}")
    return "\n".join(lines) + "\n"


def lock_files(text: str) -> dict[str, str]:
    """wheel file name -> sha256, as a lock written by ``lock_text`` lists them."""
    files = {}
    for line in text.splitlines():
        requirement, name = line.partition("  # ")[::2]
        sha256 = requirement.partition("--hash=sha256:")[2]
        if name and sha256:
            files[name.strip()] = sha256.strip()
    return files


# Characters rsync reads as a pattern in an --include rule; no wheel or lock name has them.
_RSYNC_PATTERN_CHARS = frozenset("*?[\\/\n")


def push_rsync_opts(locks: dict[str, str]) -> list[str]:
    """rsync options that push one set of a platform's wheelhouse: ``locks`` maps each lock's file name to
    its text; the locks and the wheels they list go, nothing else of the controller's directory (the sets
    of other pins and packages it keeps). The node's copy loses every other file (``--delete-excluded``:
    that directory is all ours). Raises ValueError for a name rsync would read as a pattern."""
    if not locks:
        raise ValueError("no lock to push: the set has not been downloaded and resolved on the controller")
    names = sorted({*locks, *(wheel for text in locks.values() for wheel in lock_files(text))})
    odd = [name for name in names if _RSYNC_PATTERN_CHARS & set(name)]
    if odd:
        raise ValueError(f"file names rsync would read as patterns: {odd}")
    return [*(f"--include=/{name}" for name in names), "--exclude=*", "--delete-excluded"]


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def lock_state(directory: str, locks: dict[str, str]) -> tuple[bool, list[str]]:
    """Whether a set's wheelhouse on the controller is complete: every lock of the set is there and every
    wheel it lists is there. Returns (complete, problems). Every lock in the directory is read, not only
    the set's: the sets share their wheels, and pip download keeps a wheel that is already there, so a
    wheel whose content no longer matches any lock listing it is a problem (the new set's lock would
    record it), while a missing wheel or lock only makes the set incomplete. Each wheel is hashed once."""
    try:
        present = sorted(n for n in os.listdir(directory) if n.startswith("requirements-") and n.endswith(".lock"))
    except OSError:
        present = []
    listed: dict[str, dict[str, str]] = {}
    for lock in present:
        path = os.path.join(directory, lock)
        try:
            with open(path, encoding="utf-8") as handle:
                listed[lock] = lock_files(handle.read())
        except OSError:
            listed[lock] = {}
    digests: dict[str, str] = {}
    named: set[str] = set()
    problems = []
    for lock, files in listed.items():
        for name, sha256 in sorted(files.items()):
            wheel = os.path.join(directory, name)
            if not os.path.isfile(wheel):
                continue
            if wheel not in digests:
                digests[wheel] = _sha256(wheel)
            if digests[wheel] != sha256 and wheel not in named:
                named.add(wheel)
                problems.append(
                    f"the controller's wheelhouse file {wheel} does not match the sha256 its lock "
                    f"{os.path.join(directory, lock)} recorded when it was downloaded; remove that file and re-run "
                    "(it is downloaded again)"
                )
    wanted = [lock for lock in locks.values() if lock]
    complete = all(
        listed.get(lock) and all(os.path.isfile(os.path.join(directory, name)) for name in listed[lock])
        for lock in wanted
    )
    return complete and not problems, problems
