"""The cluster report status.yml and site.yml write, and the table they print, from one check.

Plain Python, no Ansible imports: the ray_cluster_check action plugin calls it on the
controller after the check module ran on the head.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.rlinf.cluster.plugins.module_utils import disk
from ansible_collections.rlinf.cluster.plugins.module_utils.gpu_check import gpu_problems

_HEADER = ("RANK", "HOST", "IP", "STATE", "CPUS", "GPUS", "CUSTOM", "RAY", "PYTHON", "TEMP_FREE", "VENV_FREE")


def parse_manifest(result: Mapping | None) -> dict:
    """One node's version manifest: the ``versions`` of its node read (rlinf.cluster.node_state), an
    ``error`` where the venv could not be read; empty where it was not asked for."""
    versions = (result or {}).get("versions")
    return dict(versions) if isinstance(versions, Mapping) else {}


def gpu_readings(probes: Mapping[str, Mapping], registered: Mapping[str, Mapping]) -> dict:
    """Each host's GPU reading: gpu_facts' where it ran, else the node read's (preflight read the
    GPUs through an unchanged venv, and gpu_facts did not run again)."""
    found = {name: {"gpus": probe["gpus"]} for name, probe in probes.items() if probe.get("gpus")}
    found.update(registered)
    return found


def parse_gpus(result: Mapping | None) -> dict | None:
    """One node's GPU facts from the result of rlinf.cluster.gpu_facts; None when it did not run."""
    if not result or not isinstance(result.get("gpus"), Mapping):
        return None
    return dict(result["gpus"])


def _with_problems(summary: str, problems: list[str], found: Sequence[str], kind: str) -> str:
    if not found:
        return summary
    problems.extend(found)
    count = f"{len(found)} {kind} problem{'s' if len(found) != 1 else ''}"
    if summary.startswith("OK: "):
        return f"FAILED: {summary[4:]}; but {count}"
    return f"{summary}; {count}"


def build(
    check: Mapping,
    expected: Sequence[Mapping],
    manifests: Mapping[str, Mapping],
    head: str,
    address: str,
    generated_at: str,
    gpus: Mapping[str, Mapping] | None = None,
    gpu_nodes: Sequence[Mapping] = (),
    disks: Mapping[str, Mapping] | None = None,
    disk_limits: Mapping | None = None,
) -> dict:
    """The JSON report: the check's verdict, and per expected node its state and manifest.

    ``gpus`` maps a host to its rlinf.cluster.gpu_facts result (kept as ``manifest.gpus``);
    with ``gpu_nodes`` (the plan's, plan.gpu_nodes) the GPU rules (gpu_check.py) add their
    problems to the check's. ``disks`` maps a host to its node_state ``disk`` (kept as ``disk``);
    with ``disk_limits`` (the plan's cluster.disk) a filesystem below ``fail_percent`` free is a
    problem and one below ``warn_percent`` a warning (disk.py).
    """
    summary = check.get("summary") or f"FAILED: the check did not run: {check.get('msg') or 'unknown error'}"
    found = {node.get("name"): node for node in check.get("nodes") or []}
    nodes = []
    for exp in expected:
        node = dict(
            found.get(exp["name"]) or {"name": exp["name"], "rank": exp["rank"], "ip": exp["ip"], "state": "UNKNOWN"}
        )
        node["manifest"] = parse_manifest(manifests.get(exp["name"]))
        facts = parse_gpus((gpus or {}).get(exp["name"]))
        if facts is not None:
            node["manifest"] = dict(node["manifest"], gpus=facts)
        node["disk"] = dict((disks or {}).get(exp["name"]) or {})
        nodes.append(node)
    problems = list(check["problems"]) if "problems" in check else [check.get("msg") or "the check did not run"]
    gpu_found = gpu_problems(nodes, gpu_nodes) if gpu_nodes else []
    for names, sentence in gpu_found:
        for node in nodes:
            if node["name"] in names:
                node["problems"] = [*(node.get("problems") or []), sentence]
    summary = _with_problems(str(summary), problems, [sentence for _host, sentence in gpu_found], "GPU")
    disk_found, warnings = [], []
    for node in nodes if disk_limits else ():
        failed, warned = disk.judge(node["name"], node["disk"], disk_limits)
        if failed:
            node["problems"] = [*(node.get("problems") or []), *failed]
        disk_found.extend(failed)
        warnings.extend(warned)
    summary = _with_problems(summary, problems, disk_found, "disk")
    return {
        "generated_at": generated_at,
        "head": head,
        "address": address,
        "ok": str(summary).startswith("OK"),
        "summary": summary,
        "problems": problems,
        "warnings": warnings,
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


def _nvidia(manifest: Mapping) -> str:
    """The NVIDIA column: what NVML sees, e.g. '8x A100-SXM4-80GB 535.129.03 CUDA 12.2'."""
    facts = manifest.get("gpus") or {}
    if not facts:
        return "?"
    if not facts.get("count"):
        return "-"
    models = ",".join(f"{n}x {m.removeprefix('NVIDIA ')}" for m, n in (facts.get("models") or {}).items())
    cuda = f" CUDA {facts['cuda_driver_version']}" if facts.get("cuda_driver_version") else ""
    return f"{models or facts['count']} {facts.get('driver_version') or '?'}{cuda}"


def table(report: Mapping) -> list[str]:
    """The lines status prints: one row per node (extra nodes last), the summary, the problems.

    An NVIDIA column (NVML's view: count, model, driver, CUDA) is added when a node has NVIDIA GPUs.
    """
    names = [str(n["name"]) for n in report["nodes"]]
    width = max([4, *([18] if report["extra"] else []), *map(len, names)])
    nvidia = any(((n.get("manifest") or {}).get("gpus") or {}).get("count") for n in report["nodes"])
    row = f"%-4s  %-{width}s  %-15s  %-7s  %4s  %4s  %-20s  %-7s  %-7s  %-12s  %" + ("-12s  %s" if nvidia else "s")
    lines = [row % (*_HEADER, *(["NVIDIA"] if nvidia else []))]
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
                disk.column((n.get("disk") or {}).get("temp_dir")),
                disk.column((n.get("disk") or {}).get("venv")),
                *([_nvidia(manifest)] if nvidia else []),
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
                "?",
                "?",
                *(["?"] if nvidia else []),
            )
        )
    warnings = [f"- warning: {w}" for w in report.get("warnings") or []]
    return [*lines, "", report["summary"], *(f"- {p}" for p in report["problems"]), *warnings]
