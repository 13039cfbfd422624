"""The systemd sandbox of one Ray unit: what Ray may write and see, decided once.

Two profiles (``ray_node_sandbox_profile``):

``training`` (the default) lets RLinf's workers do what RLinf's examples and docs do, and keeps
what hardening does not break (docs/security.md names the RLinf feature behind each relaxation):

- the operating system read-only (``ProtectSystem=full``: ``/usr``, ``/boot``, ``/etc``), and
  what root runs or installs from outside the unit (the venv, ``/opt/rlinf``, cron's and at's
  spools): no new privileges, no kernel tunables, modules or logs, no namespaces;
- everything else as root sees it: model weights and datasets are read wherever they are, home
  directories included, with root's ``CAP_DAC_READ_SEARCH`` / ``CAP_DAC_OVERRIDE`` /
  ``CAP_FOWNER`` (no other capability); logs and checkpoints are written under the checkout, the
  run's log path and any directory of the user's; caches go where the user's own tools put them
  (``$HOME`` is root's, as in the driver RLinf copies it from);
- ``ptrace``, ``pidfd_getfd`` and ``perf_event_open`` (``@debug``): RLinf shares CUDA memory
  between co-located workers after ``prctl(PR_SET_PTRACER, ANY)``, and Nsight profiles;
- unlimited locked memory (NCCL over InfiniBand/RoCE registers its buffers);
- files created readable by others (``UMask=0022``): a researcher reads the checkpoints.

``strict`` is the earlier default: no capabilities, the whole file system read-only except the
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

PROFILES = ("training", "strict")
HOME_ROOTS = ("/home", "/root", "/run/user")
ALWAYS_WRITABLE = ("/tmp", "/var/tmp")
STATE_ROOT = "/var/lib"
# Address families Ray and RLinf use: local and Internet sockets, netlink (interface
# addresses, RDMA), and SocketCAN (RLinf's real-world robot arms, e.g. GimArm).
ADDRESS_FAMILIES = ("AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK", "AF_CAN")
# training: what root runs or installs from outside the unit stays read-only ('-': may be missing).
ROOT_RUN_PATHS = ("/opt/rlinf", "/var/spool")
# training, Ray as root: read and write files of other users (weights under /home/alice, a
# checkpoint directory a researcher owns); nothing that changes the system.
TRAINING_CAPABILITIES = ("CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER")


def under(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root + "/") for root in roots)


def home_dir(unit: str) -> str:
    """Ray's $HOME: the unit's state directory."""
    return f"{STATE_ROOT}/{unit}"


def service_of(unit: str, paths: Mapping, code_dest: str, settings: Mapping) -> dict:
    """The static part of a node's sandbox (no host contacted): ``settings`` holds the node's
    ray_node_sandbox, ray_node_sandbox_profile, ray_node_user, ray_node_writable_paths and
    ray_node_realtime."""
    sandbox = bool(settings["ray_node_sandbox"])
    profile = settings["ray_node_sandbox_profile"] if sandbox else ""
    user = settings["ray_node_user"]
    temp_dir = paths["temp_dir"]
    writable = []
    if not under(temp_dir, ALWAYS_WRITABLE):
        writable.append(temp_dir)
    writable.extend(settings["ray_node_writable_paths"])
    # A dedicated user has its home there even without the sandbox (the user's passwd entry);
    # root keeps its own under the training profile (RLinf copies the driver's HOME to workers).
    state = profile == "strict" or bool(user)
    return {
        "sandbox": sandbox,
        "profile": profile,
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
        # Where a job writes on this node (readiness writes a file into each): RLinf's example scripts
        # log and checkpoint under <checkout>/logs, and the operator names the rest.
        "job_dirs": ([posixpath.join(code_dest, "logs")] if code_dest else [])
        + list(settings["ray_node_writable_paths"]),
        "temp_dir": temp_dir,
        "code_dest": code_dest,
        "realtime": bool(settings["ray_node_realtime"]),
    }


def mounts(service: Mapping, paths: Mapping, python_prefix: str = "") -> dict:
    """The file-system directives: read-write paths, and what is bound into a hidden home.

    ``python_prefix`` is the installation the venv's interpreter comes from (the probe reads it):
    a Python under a home directory (pyenv in /root) must stay readable (strict), and is kept
    read-only like the venv (training: root runs it outside the unit).
    """
    if service.get("profile") == "training":
        return _training_mounts(service, paths, python_prefix)
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


def _training_mounts(service: Mapping, paths: Mapping, python_prefix: str) -> dict:
    read_only = [paths["venv"]] + ([python_prefix] if python_prefix else [])
    return {
        "protect_home": "no",
        "read_only": read_only,
        "read_only_optional": list(ROOT_RUN_PATHS),
        # Inside a read-only path above (a checkout under /opt/rlinf): writable again.
        "read_write": list(service["create_dirs"]),
        "read_write_optional": [service["code_dest"]] if service["code_dest"] else [],
        "bind": [],
        "bind_optional": [],
        "bind_read_only": [],
    }


def python_prefix(executable: str) -> str:
    """The installation prefix of an interpreter (``<prefix>/bin/python3.X``), when under a home."""
    if not executable or not under(executable, HOME_ROOTS):
        return ""
    return posixpath.dirname(posixpath.dirname(executable))
