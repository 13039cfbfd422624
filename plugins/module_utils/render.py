"""The files a node gets, rendered from the plan, each value quoted for the program that reads it.

- systemd (``ExecStart=``, ``Environment=``): systemd.syntax(7) and systemd.service(5)
  rules: a word with anything but plain characters is double-quoted with ``\\`` and ``"``
  escaped, ``%`` doubled (specifiers) and ``$`` doubled (variable substitution).
- the environment file: read by systemd's ``EnvironmentFile=`` and by ``set -a; . file``;
  single-quoted values, which both read literally (the schema refuses what would need more).
- shell snippets: ``shlex.quote``.

Controller-only.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence

from ansible_collections.rlinf.cluster.plugins.module_utils import sandbox
from ansible_collections.rlinf.cluster.plugins.module_utils.env_file import render_env

MANAGED = "Managed by rlinf-ansible"
_SYSTEMD_PLAIN = re.compile(r"^[A-Za-z0-9_@+=:,./-]+$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class RenderError(ValueError):
    pass


def systemd_word(word: str) -> str:
    """One word of an ExecStart= or Environment= line, as systemd reads it back."""
    word = str(word)
    if _CONTROL.search(word):
        raise RenderError(f"{word!r} holds a control character; systemd cannot take it in one word")
    if word == ";":
        return "\\;"
    if _SYSTEMD_PLAIN.match(word):
        return word
    escaped = word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return f'"{escaped}"'


def systemd_line(words: Sequence[str]) -> str:
    return " ".join(systemd_word(w) for w in words)


def number_text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def json_text(data) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def env_file(env: Mapping) -> str:
    return (
        f"# {MANAGED} (rlinf.cluster.ray_node); local edits are overwritten.\n"
        "# Ray freezes its environment at `ray start`: the Ray unit loads this file and a change\n"
        "# here restarts Ray on this node.\n" + render_env(env)
    )


def profile(node: Mapping) -> str:
    """The login-shell snippet: the environment Ray runs with, the cluster address, the venv's tools."""
    env = shlex.quote(node["paths"]["env_file"])
    bin_dir = node["paths"]["venv"] + "/bin"
    return (
        f"# {MANAGED} (rlinf.cluster.ray_node): interactive shells get the\n"
        "# environment Ray runs with, the cluster address and the venv's tools.\n"
        f"if [ -r {env} ]; then\n"
        "  set -a\n"
        f"  . {env}\n"
        "  set +a\n"
        '  export RAY_ADDRESS="$RLINF_RAY_HEAD_ADDRESS"\n'
        "fi\n"
        'case ":$PATH:" in\n'
        f"  *{shlex.quote(':' + bin_dir + ':')}*) ;;\n"
        f'  *) PATH={shlex.quote(bin_dir)}:"$PATH" ;;\n'
        "esac\n"
    )


def ray_unit(node: Mapping, args: Sequence[str], cluster: Mapping, mounts: Mapping | None = None) -> str:
    """The systemd unit that runs `ray start --block` for one Ray node.

    ``node["service"]`` (plugins/module_utils/sandbox.py) says whether it is sandboxed; ``mounts``
    (sandbox.mounts) what it may write and which home paths it sees.
    """
    paths = node["paths"]
    service = node["service"]
    role = "head" if node["role"] == "head" else "worker"
    after = "network-online.target" + (" easytier.service" if cluster.get("overlay") else "")
    auth = (
        ["RAY_AUTH_MODE=token", f"RAY_AUTH_TOKEN_PATH={paths['token_file']}"]
        if cluster.get("auth")
        else ["RAY_AUTH_MODE=disabled"]
    )
    exec_start = [paths["python"], paths["venv"] + "/bin/ray", "start", "--block", *args]
    lines = [
        f"# {MANAGED} (rlinf.cluster.ray_node); local edits are overwritten.",
        "[Unit]",
        f"Description=Ray {role} for RLinf (rank {node['rank']})",
        f"After={after}",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
    ]
    lines += [
        "# Token auth does not depend on the env file: a missing file fails the start instead.",
        f"Environment={systemd_line(auth)}",
        "# Ray freezes its environment at start: a change to this file restarts the unit.",
        f"EnvironmentFile={systemd_word(paths['env_file'])}",
    ]
    if node.get("secret_env_names"):
        lines += [
            "# rlinf_secret_env_vars: root's alone (0600); systemd reads it before Ray starts.",
            f"EnvironmentFile={systemd_word(paths['secret_env_file'])}",
        ]
    if service.get("user"):
        lines += [
            "# ray_node_user: Ray runs as a system user of its own, which owns its temp dir and home.",
            f"User={systemd_word(service['user'])}",
            f"Group={systemd_word(service['user'])}",
        ]
    elif service["profile"] == "training":
        lines += [
            "# Root's HOME, USER and SHELL, as the driver has them (RLinf copies the driver's HOME to its",
            "# workers): caches land where root's own tools put them.",
            "User=root",
        ]
    if service["state_dir"]:
        lines += [
            "# Ray's home (caches of Hugging Face, Triton, LIBERO...): its own.",
            f"Environment={systemd_word('HOME=' + service['home'])}",
            "# Caches follow XDG_CACHE_HOME (Hugging Face, torch, pip): here even when RLinf copies the driver's",
            "# HOME to its workers, since a driver without XDG_CACHE_HOME leaves this one alone.",
            f"Environment={systemd_word('XDG_CACHE_HOME=' + service['home'] + '/.cache')}",
            f"StateDirectory={systemd_word(service['state_dir'])}",
            "StateDirectoryMode=0750",
        ]
    lines += [
        "# Started through bin/python so Ray's workers run the interpreter drivers use (RLinf",
        "# warns when a driver's sys.executable differs from the workers').",
        f"ExecStart={systemd_line(exec_start)}",
        "# `ray start --block` exits 1 on SIGTERM and when a Ray process dies: a stop stays a",
        "# clean stop, and a dead raylet brings the node back.",
        "SuccessExitStatus=1",
        "Restart=always",
        "RestartSec=5",
        "# A stop sends SIGTERM to every process of the unit at once, the head's GCS included, so",
        "# Ray's drain-on-SIGTERM (through the GCS) can only wait out its timeout: skip it.",
        "Environment=RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=0",
        "# The first driver after a start (every run's cluster check is one) would make the raylet start one",
        "# Python worker per CPU ahead of any task, which then sit idle (about 80 MB and 1% of a core each):",
        "# workers start when a task or an actor (an RLinf Worker) asks for one.",
        "Environment=RAY_prestart_worker_first_driver=0",
        "TimeoutStopSec=20",
        "LimitNOFILE=65536",
    ]
    if service["realtime"]:
        lines += [
            "# ray_node_realtime: SCHED_FIFO and mlock through the limits, without a capability.",
            "LimitRTPRIO=99",
        ]
    if service["realtime"] or service.get("profile") == "training":
        lines += [
            "# NCCL over InfiniBand/RoCE registers (locks) its buffers; libfranka locks its control loop.",
            "LimitMEMLOCK=infinity",
        ]
    if service["profile"] == "training":
        lines += training_lines(service, mounts or {})
    elif service["sandbox"]:
        lines += sandbox_lines(service, mounts or {})
    lines += ["", "[Install]", "WantedBy=multi-user.target", ""]
    return "\n".join(lines)


def _paths_line(key: str, required: Sequence[str], optional: Sequence[str] = ()) -> list[str]:
    words = [systemd_word(p) for p in required] + [systemd_word("-" + p) for p in optional]
    return [f"{key}={' '.join(words)}"] if words else []


def _hardening_lines(service: Mapping) -> list[str]:
    """What both profiles keep: nothing here stops RLinf training."""
    lines = [
        "ProtectKernelTunables=yes",
        "ProtectKernelModules=yes",
        "ProtectKernelLogs=yes",
        "ProtectControlGroups=yes",
        "ProtectHostname=yes",
        "ProtectProc=invisible",
        "LockPersonality=yes",
    ]
    if not service["realtime"]:
        lines.append("RestrictRealtime=yes")
    return [
        *lines,
        "RestrictSUIDSGID=yes",
        "RestrictNamespaces=yes",
        "# Local, Internet and netlink sockets, and SocketCAN for RLinf's robot arms.",
        f"RestrictAddressFamilies={' '.join(sandbox.ADDRESS_FAMILIES)}",
        "SystemCallArchitectures=native",
    ]


def training_lines(service: Mapping, mounts: Mapping) -> list[str]:
    """ray_node_sandbox_profile: training (sandbox.py): the OS protected, RLinf's jobs not hindered."""
    capabilities = "" if service["user"] else " ".join(sandbox.TRAINING_CAPABILITIES)
    return [
        "# Sandbox (ray_node_sandbox_profile: training): RLinf's jobs read weights and write checkpoints",
        "# and caches where its examples do; the operating system stays out of reach. No way to gain",
        "# privileges (setuid binaries included); root keeps only its access to other users' files",
        "# (weights under a home directory, a researcher's checkpoint directory).",
        "NoNewPrivileges=yes",
        f"CapabilityBoundingSet={capabilities}",
        "AmbientCapabilities=",
        "# /usr, /boot and /etc read-only, and what root runs or installs from outside the unit (the venv,",
        "# /opt/rlinf, cron's spool); the checkout and ray_node_writable_paths writable even inside them.",
        "ProtectSystem=full",
        *_paths_line("ReadOnlyPaths", mounts.get("read_only", []), mounts.get("read_only_optional", [])),
        *_paths_line("ReadWritePaths", mounts.get("read_write", []), mounts.get("read_write_optional", [])),
        "# Home directories as root sees them: model weights, datasets and RLinf's assets live there, and",
        "# Hugging Face, torch and Triton write their caches under $HOME.",
        "ProtectHome=no",
        "# Drivers reach Ray's sockets and session files under /tmp/ray: no private /tmp.",
        "PrivateTmp=no",
        "# Checkpoints and logs readable by the researcher who reads them.",
        "UMask=0022",
        *_hardening_lines(service),
        "# A call outside the set fails with EPERM instead of killing the process. @debug: RLinf shares",
        "# CUDA memory between co-located workers (pidfd_getfd, ptrace after PR_SET_PTRACER), Nsight",
        "# profiles (perf_event_open).",
        "SystemCallFilter=@system-service @debug",
        "SystemCallErrorNumber=EPERM",
        "# Left open on purpose: devices (GPUs, cameras, robots, RDMA), W+X memory (the JITs of numba,",
        "# llvmlite and CUDA), /proc's system files Ray reads, the network.",
    ]


def sandbox_lines(service: Mapping, mounts: Mapping) -> list[str]:
    """ray_node_sandbox_profile: strict: what each directive keeps away from the code Ray runs."""
    lines = [
        "# Sandbox (ray_node_sandbox_profile: strict): Ray runs whatever code a token holder sends. No",
        "# capabilities and no way to gain any (setuid binaries included).",
        "NoNewPrivileges=yes",
        "CapabilityBoundingSet=",
        "AmbientCapabilities=",
        "# The file system read-only but for /tmp and /var/tmp (Ray's temp dir, tempfile), Ray's home, the",
        "# checkout (RLinf writes logs and checkpoints under <checkout>/logs; '-': may be missing) and",
        "# ray_node_writable_paths. The venv is read-only: Ray writes nothing there, root runs it.",
        "ProtectSystem=strict",
        *_paths_line("ReadWritePaths", mounts.get("read_write", []), mounts.get("read_write_optional", [])),
        f"ProtectHome={mounts.get('protect_home', 'yes')}",
        *_paths_line("BindPaths", mounts.get("bind", []), mounts.get("bind_optional", [])),
        *_paths_line("BindReadOnlyPaths", mounts.get("bind_read_only", [])),
        "# Drivers reach Ray's sockets and session files under /tmp/ray: no private /tmp.",
        "PrivateTmp=no",
        "UMask=0027",
        *_hardening_lines(service),
        "# A call outside the set fails with EPERM instead of killing the process.",
        "SystemCallFilter=@system-service",
        "SystemCallErrorNumber=EPERM",
        "# Left open on purpose: devices (PrivateDevices=, DevicePolicy=, and ProtectClock=, which adds a",
        "# device allow-list) for GPUs, cameras and robots; W+X memory (MemoryDenyWriteExecute=) for the",
        "# JITs of numba/llvmlite and CUDA; /proc's system files (ProcSubset=) Ray reads; the network.",
    ]
    return lines
