"""Which wheels a node can install: the pip download arguments for its platform.

The controller downloads once for every node (`pip download --only-binary=:all:`) with
the node's Python and platform instead of its own. pip does not widen a single
``--platform manylinux_2_36_x86_64`` to the legacy ``manylinux2014`` aliases that
many wheels (Ray's among them) carry, so every compatible tag is listed.
"""

from __future__ import annotations

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
