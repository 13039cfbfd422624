#!/usr/bin/env python3
"""Wall times of the lab's life cycle, printed as a table and as JSON. Figures only.

    fresh      site.yml on purged hosts (venv from the pushed wheelhouse, Ray started)
    no-op      site.yml again on the healthy cluster, with its changed count
    teardown   teardown.yml (Ray stopped everywhere)
    raw        only the essential steps over SSH: head `ray start`, workers in parallel,
               poll until every node is ALIVE (then `ray stop` inside each host)
    restart    site.yml from stopped Ray (venv and env present); ratio restart/raw

Run with the controller venv on the lab (`make bench` brings the lab up first). The
cluster is left up. The controller's wheelhouse is kept between runs, as on a real site.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ansible_runner
import yaml

ROOT = Path(__file__).resolve().parent.parent
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


def run(playbook: str, inventory: Path, extravars: dict | None = None) -> dict:
    with tempfile.TemporaryDirectory() as private:
        started = time.monotonic()
        runner = ansible_runner.run(
            private_data_dir=private,
            project_dir=str(ROOT),
            playbook=str(ROOT / playbook),
            inventory=str(inventory),
            extravars=extravars or {},
            envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")},
            quiet=True,
        )
        seconds = time.monotonic() - started
        if runner.rc != 0:
            sys.exit(f"bench: {playbook} failed (rc={runner.rc}):\n{runner.stdout.read()[-3000:]}")
        changed = sum((runner.stats or {}).get("changed", {}).values())
    return {"seconds": round(seconds, 1), "changed": changed}


def lab_hosts(inventory: Path) -> tuple[list[str], str]:
    """Addresses in rank order and the SSH key, from a lab inventory written by lab/lab.py."""
    data = yaml.safe_load((inventory / "hosts.yml").read_text())
    groups = data["all"]["children"]["rlinf_cluster"]["children"]
    addresses = [
        hostvars["ansible_host"]
        for group in ("ray_head", "ray_workers")
        for hostvars in (groups[group].get("hosts") or {}).values()
    ]
    return addresses, data["all"]["vars"]["ansible_ssh_private_key_file"]


def ssh(key: str, address: str, command: str) -> str:
    argv = ["ssh", "-i", key, "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"]
    argv += ["-o", "LogLevel=ERROR", f"root@{address}", command]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def raw_bringup(inventory: Path) -> dict:
    """The manual procedure, scripted: what any bring-up must at least cost."""
    addresses, key = lab_hosts(inventory)
    head = addresses[0]
    env = "set -a; . /etc/rlinf/rlinf.env; set +a;"
    common = "--disable-usage-stats --object-store-memory=200000000"
    count_alive = (
        f"{env} /opt/rlinf/venv/bin/python -c 'import ray; "
        f'ray.init(address="{head}:6379", logging_level="ERROR"); '
        'print(sum(n["Alive"] for n in ray.nodes()))\''
    )
    ray_start = f"{env} /opt/rlinf/venv/bin/ray start {common}"
    started = time.monotonic()
    ssh(key, head, f"{ray_start} --head --port=6379 --node-ip-address={head}")
    with ThreadPoolExecutor(max_workers=len(addresses)) as pool:
        joins = [
            pool.submit(ssh, key, ip, f"{ray_start} --address={head}:6379 --node-ip-address={ip}")
            for ip in addresses[1:]
        ]
        for join in joins:
            join.result()
    while int(ssh(key, head, count_alive).strip().splitlines()[-1]) < len(addresses):
        time.sleep(0.5)
    seconds = time.monotonic() - started
    with ThreadPoolExecutor(max_workers=len(addresses)) as pool:
        list(pool.map(lambda ip: ssh(key, ip, "/opt/rlinf/venv/bin/ray stop"), addresses))
    return {"seconds": round(seconds, 1), "changed": None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-i", "--inventory", type=Path, default=ROOT / "inventories" / "lab")
    parser.add_argument("--json", type=Path, default=ROOT / "artifacts" / "bench-bringup.json")
    args = parser.parse_args()

    purge = {"teardown_purge": True, "teardown_confirm": "yes"}
    run("teardown.yml", args.inventory, purge)
    figures = {
        "fresh": run("site.yml", args.inventory),
        "no-op": run("site.yml", args.inventory),
        "teardown": run("teardown.yml", args.inventory),
        "raw": raw_bringup(args.inventory),
        "restart": run("site.yml", args.inventory),
    }
    figures["ratio restart/raw"] = {"seconds": round(figures["restart"]["seconds"] / figures["raw"]["seconds"], 2)}

    print(f"{'step':<18} {'seconds':>8} {'changed':>8}")
    for step, figure in figures.items():
        changed = "" if figure.get("changed") is None else figure["changed"]
        print(f"{step:<18} {figure['seconds']:>8} {changed:>8}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"bench: wrote {args.json}")


if __name__ == "__main__":
    main()
