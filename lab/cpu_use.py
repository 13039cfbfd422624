#!/usr/bin/env python3
"""Where make test's CPU goes: samples this machine's CPU (/proc/stat) and each podman container's
(its cgroup's cpu.stat) until stopped, then prints, per container group (lab A, lab B, molecule's,
the fleet's) and for the controller (everything else), the CPU seconds used, and the machine's busy
share per window. Stdlib only.

  lab/cpu_use.py record FILE [--every S]    sample until SIGTERM/SIGINT, one JSON line per sample
  lab/cpu_use.py report FILE [--window S]   the summary of a recording
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

CGROUP_ROOTS = (
    Path("/sys/fs/cgroup/unified/libpod_parent"),
    Path("/sys/fs/cgroup/libpod_parent"),
    Path("/sys/fs/cgroup/machine.slice"),
    Path("/sys/fs/cgroup"),
)
# Container name prefix -> group, first match wins.
GROUPS = (
    ("rlinf-lab-b-", "lab B"),
    ("rlinf-lab-fleet-", "fleet scenario"),
    ("rlinf-lab-", "lab A"),
    ("rlinf-mol-ce-", "molecule cloud-edge"),
    ("rlinf-mol-default-", "molecule default"),
)


def group_of(name: str) -> str:
    return next((label for prefix, label in GROUPS if name.startswith(prefix)), "other containers")


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds since boot, all cores."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    ticks = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]
    total = sum(fields[:8])
    return (total - idle) / ticks, total / ticks


def cgroup_cpu_stat(container_id: str) -> Path | None:
    """The cpu.stat of a container's cgroup (its full ID), wherever this podman puts it."""
    for root in CGROUP_ROOTS:
        for candidate in (root / f"libpod-{container_id}", root / f"libpod-{container_id}.scope"):
            if (candidate / "cpu.stat").exists():
                return candidate / "cpu.stat"
    return None


def cpu_seconds(stat: Path) -> float:
    """The CPU seconds a cgroup used (its cpu.stat's usage_usec)."""
    return next(int(v.split()[1]) for v in stat.read_text().splitlines() if v.startswith("usage_usec")) / 1e6


def container_usage() -> dict[str, float]:
    """container name -> CPU seconds its cgroup used, for every running container."""
    listing = subprocess.run(
        ["podman", "ps", "--no-trunc", "--format", "{{.ID}} {{.Names}}"], capture_output=True, text=True, check=False
    ).stdout.split("\n")
    usage: dict[str, float] = {}
    for line in filter(None, listing):
        cid, name = line.split(" ", 1)
        stat = cgroup_cpu_stat(cid)
        if stat is not None:
            usage[name] = cpu_seconds(stat)
    return usage


def record(path: Path, every: float) -> None:
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(True))
    with path.open("a") as out:
        while not stop:
            busy, total = machine_busy()
            sample = {"t": time.time(), "busy": busy, "total": total, "load": os.getloadavg()[0]}
            sample["containers"] = container_usage()
            out.write(json.dumps(sample) + "\n")
            out.flush()
            for _ in range(int(every * 10)):
                if stop:
                    break
                time.sleep(0.1)


def report(path: Path, window: float) -> str:
    samples = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if len(samples) < 2:
        return "cpu: fewer than two samples, nothing to report"
    first, last = samples[0], samples[-1]
    # A container's CPU is its last sample's (removed containers keep what they had used then),
    # less what it had already used at the first sample.
    seen: dict[str, float] = {}
    start: dict[str, float] = first["containers"]
    for sample in samples:
        seen.update(sample["containers"])
    by_group: dict[str, float] = {}
    for name, used in seen.items():
        group = group_of(name)
        by_group[group] = by_group.get(group, 0.0) + used - start.get(name, 0.0)
    busy = last["busy"] - first["busy"]
    wall = last["t"] - first["t"]
    capacity = last["total"] - first["total"]
    lines = [
        f"cpu: {wall:.0f} s wall, {busy:.0f} CPU s used of {capacity:.0f}"
        f" ({100 * busy / max(capacity, 1e-9):.0f}% busy)",
        f"cpu:   controller and host (not in a container) {busy - sum(by_group.values()):.0f} CPU s",
    ]
    lines += [f"cpu:   {group} {used:.0f} CPU s" for group, used in sorted(by_group.items(), key=lambda g: -g[1])]
    begin = first
    for sample in samples[1:]:
        if sample["t"] - begin["t"] >= window or sample is last:
            share = (sample["busy"] - begin["busy"]) / max(sample["total"] - begin["total"], 1e-9)
            lines.append(
                f"cpu:   {begin['t'] - first['t']:6.0f}-{sample['t'] - first['t']:6.0f} s: "
                f"{100 * share:3.0f}% busy, load {sample['load']:.1f}"
            )
            begin = sample
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("record", "report"))
    parser.add_argument("file", type=Path)
    parser.add_argument("--every", type=float, default=15.0)
    parser.add_argument("--window", type=float, default=300.0)
    args = parser.parse_args()
    if args.action == "record":
        record(args.file, args.every)
    else:
        print(report(args.file, args.window))


if __name__ == "__main__":
    sys.exit(main())
