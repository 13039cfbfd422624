# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""Whether a node's files already are what the plan renders, judged on the controller.

The node read (rlinf.cluster.node_state, option ``digests``) returns each file's sha256, mode and
owner; this compares them with the files rlinf.cluster.owned_files would write. True only where
owned_files (state=present, check mode) would report nothing changed and nothing created, so the
run may skip that call: every file is listed in the node's manifest and has the planned content,
mode, owner and group; every file to remove is absent; every path to record is listed already.
Anything else (a file not read, not listed, different, a path to remove that exists) is False,
and owned_files decides as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping


def _same_id(wanted, number, name) -> bool:
    if wanted is None or wanted == "":
        return True
    text = str(wanted)
    return int(text) == number if text.isdigit() else text == name


def _file_as_planned(spec: Mapping, state: Mapping | None, recorded: Mapping[str, str]) -> bool:
    if not state or not state.get("readable") or spec["path"] not in recorded:
        return False
    content = str(spec["content"]).encode()
    if state.get("sha256") != hashlib.sha256(content).hexdigest():
        return False
    if int(str(state.get("mode", "")) or "-1", 8) != int(str(spec.get("mode") or "0644"), 8):
        return False
    return _same_id(spec.get("owner"), state.get("uid"), state.get("owner")) and _same_id(
        spec.get("group"), state.get("gid"), state.get("group")
    )


def files_as_planned(
    found: Mapping[str, Mapping],
    manifest: Iterable[Mapping],
    files: Iterable[Mapping],
    secret_files: Iterable[Mapping] = (),
    remove: Iterable[Mapping] = (),
    record: Iterable[Mapping] = (),
) -> bool:
    """``found``: path -> node_files.file_state() of that path on the node; ``manifest``: the
    node's manifest entries (``path``, ``kind``); the rest as owned_files takes them."""
    recorded = {entry["path"]: entry.get("kind", "file") for entry in manifest}
    if not recorded:
        return False
    for spec in [*files, *secret_files]:
        if not _file_as_planned(spec, found.get(spec["path"]), recorded):
            return False
    for spec in remove:
        state = found.get(spec["path"])
        if state is None or state.get("exists", True):
            return False
    for spec in record:
        kind = recorded.get(spec.get("path"))
        # A venv an earlier release listed as a tree is relisted as a venv (a manifest change).
        if kind is None or (spec.get("kind", "file") == "venv" and kind == "tree"):
            return False
    return True
