#!/usr/bin/env python3
"""validate.yml on a generated inventory of N hosts (controller only, no host is contacted).

    .venv/bin/python bench/validate_fleet.py [--hosts 1000]

Prints the wall time and the time per host, as a table and as JSON. Figures only.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        inventory = Path(tmp) / "hosts.yml"
        inventory.write_text(fleet_inventory(args.hosts))
        env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")}
        started = time.monotonic()
        proc = subprocess.run(
            [str(Path(sys.executable).parent / "ansible-playbook"), "validate.yml", "-i", str(inventory)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        seconds = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"bench: validate.yml failed on the generated fleet:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
    figures = {"hosts": args.hosts, "seconds": round(seconds, 2), "ms_per_host": round(1000 * seconds / args.hosts, 2)}
    print(f"{'hosts':>6} {'seconds':>8} {'ms/host':>8}")
    print(f"{figures['hosts']:>6} {figures['seconds']:>8.2f} {figures['ms_per_host']:>8.2f}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
