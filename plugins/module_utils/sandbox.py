"""The systemd sandbox of one Ray unit: what Ray may write and see, decided once.

Ray runs whatever code a token holder sends, so the unit keeps that code away from the rest of
the machine: no capabilities, no new privileges, the whole file system read-only except the
paths Ray and RLinf's workers write (seen on real hosts):

- ``/tmp`` and ``/var/tmp``: Ray's temp dir (``/tmp/ray``, its sessions, sockets and logs), which
  drivers reach (so ``PrivateTmp=no``), and Python's ``tempfile``, multiprocessing and many
  libraries, which fail without a writable temp directory;
- a ``ray_temp_dir`` outside them;
- Ray's home, ``/var/lib/<unit>`` (systemd's ``StateDirectory=``):
  Hugging Face, Triton and LIBERO write under ``$HOME``;
- the RLinf checkout on the node (RLinf's example scripts write logs and checkpoints under
  ``<checkout>/logs``), when the inventory names one, and ``ray_node_writable_paths``.

The venv is read-only: Ray writes nothing there (the role installs it, and RLinf in it), and
drivers outside the unit (Ansible's check, launch.yml) run its interpreter. Home directories
are hidden (``ProtectHome=yes``) unless one of the paths above, the venv or the interpreter
lives under one: then ``ProtectHome=tmpfs`` and only those paths are bound into the empty home.

Controller-only.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence

HOME_ROOTS = ("/home", "/root", "/run/user")
ALWAYS_WRITABLE = ("/tmp", "/var/tmp")
STATE_ROOT = "/var/lib"
# Address families Ray and RLinf use: local and Internet sockets, netlink (interface
# addresses, RDMA), and SocketCAN (RLinf's real-world robot arms, e.g. GimArm).
ADDRESS_FAMILIES = ("AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK", "AF_CAN")


def under(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root + "/") for root in roots)


def home_dir(unit: str) -> str:
    """Ray's $HOME: the unit's state directory."""
    return f"{STATE_ROOT}/{unit}"


def service_of(unit: str, paths: Mapping, code_dest: str, settings: Mapping) -> dict:
    """The static part of a node's sandbox (no host contacted): ``settings`` holds the node's
    ray_node_sandbox, ray_node_user, ray_node_writable_paths and ray_node_realtime."""
    sandbox = bool(settings["ray_node_sandbox"])
    user = settings["ray_node_user"]
    temp_dir = paths["temp_dir"]
    writable = []
    if not under(temp_dir, ALWAYS_WRITABLE):
        writable.append(temp_dir)
    writable.extend(settings["ray_node_writable_paths"])
    # A dedicated user has its home there even without the sandbox (the user's passwd entry).
    state = sandbox or bool(user)
    return {
        "sandbox": sandbox,
        # ray_node_user: empty runs Ray as root; the user owns its temp dir (sessions, sockets,
        # logs) and its home (systemd chowns the StateDirectory= to User=).
        "user": user,
        "run_as": user or "root",
        "home": home_dir(unit) if state else "",
        "state_dir": unit if state else "",
        # systemd creates the home at the first start: recorded in the manifest as ours (purge
        # removes it when empty; caches a run left there stay).
        "record": [{"path": home_dir(unit), "kind": "dir"}] if state else [],
        # Created by the role (the temp dir inside /tmp is Ray's own).
        "create_dirs": writable,
        "temp_dir": temp_dir,
        "code_dest": code_dest,
        "realtime": bool(settings["ray_node_realtime"]),
    }


def mounts(service: Mapping, paths: Mapping, python_prefix: str = "") -> dict:
    """The file-system directives: read-write paths, and what is bound into a hidden home.

    ``python_prefix`` is the installation the venv's interpreter comes from (the probe reads it):
    a Python under a home directory (pyenv in /root) must stay readable.
    """
    writable = list(ALWAYS_WRITABLE) + list(service["create_dirs"])
    # The checkout may be missing on a node (no code sync): systemd then skips it.
    optional = [service["code_dest"]] if service["code_dest"] else []
    readable = [paths["venv"]] + ([python_prefix] if python_prefix else [])
    in_home = [p for p in writable + optional + readable if under(p, HOME_ROOTS)]
    return {
        "protect_home": "tmpfs" if in_home else "yes",
        "read_write": [p for p in writable if not under(p, HOME_ROOTS)],
        "read_write_optional": [p for p in optional if not under(p, HOME_ROOTS)],
        "bind": [p for p in writable if under(p, HOME_ROOTS)],
        "bind_optional": [p for p in optional if under(p, HOME_ROOTS)],
        "bind_read_only": [p for p in readable if under(p, HOME_ROOTS)],
    }


def python_prefix(executable: str) -> str:
    """The installation prefix of an interpreter (``<prefix>/bin/python3.X``), when under a home."""
    if not executable or not under(executable, HOME_ROOTS):
        return ""
    return posixpath.dirname(posixpath.dirname(executable))
