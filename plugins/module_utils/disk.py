# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""Free space on the filesystems Ray's temp dir and the venv live on: the read (node side,
``usage``) and the judgement preflight and status share (controller side, ``judge``).

Ray stops spilling objects when its temp dir's filesystem passes 95% (RLinf issue #304), and
pip fails half-way through a venv on a full disk: both are cheaper to refuse than to debug.
Plain Python, no Ansible imports.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# What each probed path is, in the sentences, and the variable that moves it.
SUBJECTS = {
    "temp_dir": ("Ray's temp dir", "ray_temp_dir"),
    "venv": ("the venv", "rlinf_venv_dir"),
}
GIB = 1024**3
MIB = 1024**2


def _mount_point(path: str) -> str:
    while not os.path.ismount(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def usage(path: str) -> dict:
    """The filesystem ``path`` is on (its nearest existing parent when it does not exist yet)."""
    probed = os.path.abspath(path or "/")
    while not os.path.exists(probed):
        probed = os.path.dirname(probed)
    info = {"path": path, "probed": probed, "exists": probed == os.path.abspath(path or "/")}
    try:
        st = os.statvfs(probed)
    except OSError as err:
        info["error"] = f"cannot statvfs {probed}: {err.strerror}"
        return info
    total = st.f_blocks * st.f_frsize
    free = st.f_bavail * st.f_frsize
    info.update(
        total=total,
        free=free,
        # Of what an unprivileged writer (Ray's worker, pip) may use: root's reserve is not free.
        percent_free=round(100.0 * free / total, 1) if total else 0.0,
        mount=_mount_point(probed),
    )
    return info


def size(amount: float) -> str:
    """Bytes as an operator reads them: 1.5G, 300M, 12K."""
    for unit, factor in (("T", 1024**4), ("G", GIB), ("M", MIB), ("K", 1024)):
        if amount >= factor:
            return f"{amount / factor:.1f}{unit}"
    return f"{int(amount)}B"


def column(info: Mapping | None) -> str:
    """One table cell: '42.0% 3.1G' free, or '?' when the node was not read."""
    if not info or "percent_free" not in info:
        return "?"
    return f"{info['percent_free']:g}% {size(info['free'])}"


def _fix(key: str, info: Mapping, temp_dir: str) -> str:
    if key == "temp_dir":
        return (
            f"delete old Ray sessions under {temp_dir}/session_* (not the one session_latest points to), or set "
            "ray_temp_dir to a directory on a bigger disk and re-run site.yml"
        )
    return f"free space on {info.get('mount') or info.get('probed')} or point rlinf_venv_dir at a bigger disk"


def judge(
    host: str | None,
    disks: Mapping[str, Mapping],
    limits: Mapping,
    venv_installs: bool = False,
) -> tuple[list[str], list[str]]:
    """(problems, warnings) for one node's ``disks`` (``usage`` of each SUBJECTS key).

    Below ``limits['fail_percent']`` free fails and below ``limits['warn_percent']`` warns (the
    boundary itself passes); with ``venv_installs`` (the venv does not exist yet: pip is about to create it) the venv's
    filesystem must also hold ``limits['venv_min_free_mib']``."""
    problems: list[str] = []
    warnings: list[str] = []
    prefix = f"{host}: " if host else ""
    temp_dir = str((disks.get("temp_dir") or {}).get("path") or "/tmp/ray")
    for key, (what, _var) in SUBJECTS.items():
        info = disks.get(key)
        if not info:
            continue
        where = info.get("path") or info.get("probed")
        if info.get("probed") and info.get("probed") != where:
            where = f"{where} (not created yet; its filesystem at {info['probed']})"
        if "error" in info:
            warnings.append(f"{prefix}the free space of {what} {where} could not be read ({info['error']}).")
            continue
        percent = float(info.get("percent_free") or 0)
        free = f"{percent:g}% free ({size(info.get('free') or 0)} of {size(info.get('total') or 0)})"
        fix = _fix(key, info, temp_dir)
        if percent < limits["fail_percent"]:
            problems.append(
                f"{prefix}{what} {where} has only {free}, below rlinf_disk_fail_percent="
                f"{limits['fail_percent']}%: {fix}."
            )
        elif percent < limits["warn_percent"]:
            warnings.append(
                f"{prefix}{what} {where} has {free}, below rlinf_disk_warn_percent={limits['warn_percent']}%: {fix}."
            )
        if key == "venv" and venv_installs:
            need = int(limits["venv_min_free_mib"]) * MIB
            if int(info.get("free") or 0) < need:
                problems.append(
                    f"{prefix}the venv {where} does not exist yet and its filesystem has {size(info.get('free') or 0)}"
                    f" free, less than the {size(need)} the install needs (rlinf_disk_venv_min_free_mib="
                    f"{limits['venv_min_free_mib']}): {fix}."
                )
    return problems, warnings
