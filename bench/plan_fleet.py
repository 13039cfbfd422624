#!/usr/bin/env python3
"""The cluster plan on generated inventories of N hosts (controller only, no host is contacted).

    .venv/bin/python bench/plan_fleet.py [--hosts 100 400 1000]

For each N: the CPU seconds of the plan itself, computed the way the collection's action
computes it (Ansible's own inventory and HostVars, every variable of every host read and
checked, ranks, paths, ports), and the wall time of `validate.yml`, which runs it. Then the
ratio of the largest N to the smallest, against the ratio of the host counts (linear). Prints a
table and the figures as JSON. Figures only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "collections"))


def fleet_inventory(hosts: int) -> str:
    """1 head with 8 GPUs, the rest 8-GPU workers split into a cloud and an edge node group."""
    lines = ["all:", "  children:", "    ray_head:", "      hosts:", "        head: {ansible_host: 10.0.0.1}"]
    lines += ["    ray_workers:", "      children:"]
    half = (hosts - 1) // 2
    groups = {"cloud": range(1, half + 1), "edge": range(half + 1, hosts)}
    for group, indexes in groups.items():
        lines += [f"        {group}:", f"          vars: {{rlinf_node_group: {group}}}", "          hosts:"]
        for i in indexes:
            address = f"10.{1 + i // 65536}.{i // 256 % 256}.{i % 256}"
            lines.append(f"            {group}-{i:04d}: {{ansible_host: {address}}}")
    lines += ["  vars:", "    rlinf_gpus_per_node: 8"]
    return "\n".join(lines) + "\n"


def plan_cpu_seconds(inventory: Path) -> tuple[float, int]:
    """CPU seconds of static_plan over the inventory, read through Ansible's real HostVars."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader
    from ansible.vars.hostvars import HostVars
    from ansible.vars.manager import VariableManager

    from ansible_collections.rlinf.cluster.plugins.plugin_utils.plan import static_plan

    init_plugin_loader()
    loader = DataLoader()
    manager = InventoryManager(loader=loader, sources=[str(inventory)])
    variables = VariableManager(loader=loader, inventory=manager)
    hostvars = HostVars(inventory=manager, variable_manager=variables, loader=loader)
    groups = {group.name: [host.name for host in group.get_hosts()] for group in manager.groups.values()}
    started = time.process_time()
    plan = static_plan(groups, hostvars, {"playbook_dir": str(ROOT / "playbooks"), "purpose": "validate"})
    return time.process_time() - started, len(plan["order"])


def validate_wall_seconds(inventory: Path, tmp: Path) -> float:
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")}
    started = time.monotonic()
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "validate.yml",
            "-i",
            str(inventory),
            "-e",
            f"cluster_plan_path={tmp / 'plan.json'}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"bench: validate.yml failed on the generated fleet:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, nargs="+", default=[100, 400, 1000])
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for hosts in args.hosts:
            inventory = Path(tmp) / f"hosts-{hosts}.yml"
            inventory.write_text(fleet_inventory(hosts))
            # A fresh interpreter per N: no cache of an earlier inventory helps the next.
            proc = subprocess.run(
                [sys.executable, __file__, "--one", str(inventory)], capture_output=True, text=True, check=True
            )
            cpu, nodes = json.loads(proc.stdout)
            wall = validate_wall_seconds(inventory, Path(tmp))
            rows.append({"hosts": nodes, "plan_cpu_s": round(cpu, 3), "validate_wall_s": round(wall, 2)})
    first, last = rows[0], rows[-1]
    summary = {
        "hosts_ratio": round(last["hosts"] / first["hosts"], 1),
        "plan_cpu_ratio": round(last["plan_cpu_s"] / max(first["plan_cpu_s"], 1e-9), 1),
        "validate_wall_ratio": round(last["validate_wall_s"] / first["validate_wall_s"], 1),
    }
    print(f"{'hosts':>6} {'plan CPU s':>11} {'validate.yml s':>15} {'ms/host':>8}")
    for row in rows:
        per_host = 1000 * row["validate_wall_s"] / row["hosts"]
        print(f"{row['hosts']:>6} {row['plan_cpu_s']:>11.3f} {row['validate_wall_s']:>15.2f} {per_host:>8.2f}")
    print(
        f"{last['hosts']}/{first['hosts']} hosts = {summary['hosts_ratio']}x: plan CPU {summary['plan_cpu_ratio']}x, "
        f"validate.yml {summary['validate_wall_ratio']}x"
    )
    print(json.dumps({"rows": rows, **summary}))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(plan_cpu_seconds(Path(sys.argv[2]))))
    else:
        main()
