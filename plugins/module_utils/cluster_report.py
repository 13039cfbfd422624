"""The cluster report status.yml and site.yml write, and the table they print, from one check.

Plain Python, no Ansible imports: the ray_cluster_check action plugin calls it on the
controller after the check module ran on the head.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

_HEADER = ("RANK", "HOST", "IP", "STATE", "CPUS", "GPUS", "CUSTOM", "RAY", "PYTHON")


def parse_manifest(result: Mapping | None) -> dict:
    """One node's version manifest from the result of manifest.py (ansible.builtin.script)."""
    if not result:
        return {}
    out = str(result.get("stdout") or "").strip()
    if int(result.get("rc", 1) or 0) == 0 and out.startswith("{"):
        try:
            return json.loads(out)
        except ValueError:
            pass
    error = " ".join(str(result.get(key) or "") for key in ("msg", "stderr", "stdout")).strip()
    return {"error": error[:300]}


def build(
    check: Mapping,
    expected: Sequence[Mapping],
    manifests: Mapping[str, Mapping],
    head: str,
    address: str,
    generated_at: str,
) -> dict:
    """The JSON report: the check's verdict, and per expected node its state and manifest."""
    summary = check.get("summary") or f"FAILED: the check did not run: {check.get('msg') or 'unknown error'}"
    found = {node.get("name"): node for node in check.get("nodes") or []}
    nodes = []
    for exp in expected:
        node = dict(
            found.get(exp["name"]) or {"name": exp["name"], "rank": exp["rank"], "ip": exp["ip"], "state": "UNKNOWN"}
        )
        node["manifest"] = parse_manifest(manifests.get(exp["name"]))
        nodes.append(node)
    return {
        "generated_at": generated_at,
        "head": head,
        "address": address,
        "ok": str(summary).startswith("OK"),
        "summary": summary,
        "problems": list(check["problems"]) if "problems" in check else [check.get("msg") or "the check did not run"],
        "missing": list(check.get("missing") or []),
        "extra": list(check.get("extra") or []),
        "totals": dict(check.get("totals") or {}),
        "driver": dict(check.get("driver") or {}),
        "nodes": nodes,
    }


def _amount(resources: Mapping, key: str) -> str:
    try:
        return f"{float(resources.get(key) or 0):g}"
    except (TypeError, ValueError):
        return "?"


def _custom(node: Mapping) -> str:
    return ",".join(f"{k}={v}" for k, v in (node.get("custom_resources") or {}).items()) or "-"


def table(report: Mapping) -> list[str]:
    """The lines status prints: one row per node (extra nodes last), the summary, the problems."""
    names = [str(n["name"]) for n in report["nodes"]]
    width = max([4, *([18] if report["extra"] else []), *map(len, names)])
    row = f"%-4s  %-{width}s  %-15s  %-7s  %4s  %4s  %-20s  %-7s  %s"
    lines = [row % _HEADER]
    for n in report["nodes"]:
        manifest = n.get("manifest") or {}
        res = n.get("resources") or {}
        lines.append(
            row
            % (
                n.get("rank"),
                n["name"],
                n.get("ip"),
                n.get("state"),
                _amount(res, "CPU"),
                _amount(res, "GPU"),
                _custom(n),
                n.get("ray_version") or manifest.get("ray") or "-",
                n.get("python") or manifest.get("python") or "-",
            )
        )
    for e in report["extra"]:
        res = e.get("resources") or {}
        rank = e.get("rank") if e.get("rank") is not None else "?"
        lines.append(
            row
            % (
                rank,
                "(not in inventory)",
                e.get("ip"),
                e.get("state"),
                _amount(res, "CPU"),
                _amount(res, "GPU"),
                _custom(e),
                e.get("ray_version") or "-",
                e.get("python") or "-",
            )
        )
    return [*lines, "", report["summary"], *(f"- {p}" for p in report["problems"])]
