"""Where a lab test's CPU goes: the controller's (this pytest process and what it ran: ansible-playbook,
ssh) and the lab's containers' (their cgroups' cpu.stat), per test, per playbook run and per repair of
the lab (the site.yml run of a test that found the lab changed).

RLINF_TEST_CPU_LOG=FILE appends one JSON line per test, playbook run and repair to FILE; the two
streams of make test share two cores, so a test's CPU, not its wall time, says what it costs the
suite. ``python cpu_account.py FILE`` sums them per module, per playbook and per module that repaired.
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

LOG = os.environ.get("RLINF_TEST_CPU_LOG", "")
# lab/cpu_use.py finds a container's cgroup and reads its CPU (not a package: loaded from its path).
_spec = importlib.util.spec_from_file_location("cpu_use", Path(__file__).parents[2] / "lab" / "cpu_use.py")
cpu_use = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cpu_use)
_cgroups: dict[str, Path] = {}


def _container_stats(names: list[str]) -> list[Path]:
    missing = [n for n in names if n not in _cgroups]
    if missing:
        listing = subprocess.run(
            ["podman", "inspect", "--format", "{{.Name}} {{.Id}}", *missing], capture_output=True, text=True
        ).stdout.split("\n")
        for line in filter(None, listing):
            name, cid = line.split(" ", 1)
            stat = cpu_use.cgroup_cpu_stat(cid)
            if stat is not None:
                _cgroups[name] = stat
    return [_cgroups[n] for n in names if n in _cgroups]


def snapshot(containers: list[str]) -> tuple[float, float, float]:
    """(wall, controller CPU s, containers' CPU s) now."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    controller = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    nodes = 0.0
    for stat in _container_stats(containers):
        try:
            nodes += cpu_use.cpu_seconds(stat)
        except (OSError, StopIteration):
            continue
    return time.monotonic(), controller, nodes


def record(kind: str, name: str, before: tuple[float, float, float], after: tuple[float, float, float]) -> None:
    if not LOG:
        return
    line = {
        "kind": kind,
        "name": name,
        "wall": round(after[0] - before[0], 2),
        "controller": round(after[1] - before[1], 2),
        "nodes": round(after[2] - before[2], 2),
    }
    with open(LOG, "a") as log:
        log.write(json.dumps(line) + "\n")


def report(path: str) -> str:
    modules: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    playbooks: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    repairs: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    tables = {"test": modules, "playbook": playbooks, "repair": repairs}
    for line in Path(path).read_text().splitlines():
        entry = json.loads(line)
        key = entry["name"].split("::")[0] if entry["kind"] in ("test", "repair") else entry["name"]
        sums = tables[entry["kind"]][key]
        for i, field in enumerate(("wall", "controller", "nodes")):
            sums[i] += entry[field]
        sums[3] += 1
    out = []
    # A repair is also in its test's figures and among the site.yml runs: the lab as the module found it.
    for title, table in (("module", modules), ("playbook", playbooks), ("repaired at the start of", repairs)):
        out.append(f"{title:<48} {'n':>4} {'wall':>8} {'ctl CPU':>8} {'node CPU':>8}")
        for key, (wall, ctl, nodes, n) in sorted(table.items(), key=lambda kv: -(kv[1][1] + kv[1][2])):
            out.append(f"{key[-48:]:<48} {n:>4} {wall:>8.0f} {ctl:>8.0f} {nodes:>8.0f}")
        total = [sum(v[i] for v in table.values()) for i in range(3)]
        out.append(f"{'total':<48} {'':>4} {total[0]:>8.0f} {total[1]:>8.0f} {total[2]:>8.0f}")
    return "\n".join(out)


if __name__ == "__main__":
    print(report(sys.argv[1]))
