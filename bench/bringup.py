#!/usr/bin/env python3
"""Wall times of the lab's life cycle, printed as a table and as JSON. Figures only.

    fresh      site.yml on purged hosts (venv from the pushed wheelhouse, Ray started)
    no-op      site.yml again on the healthy cluster, with its changed count
    teardown   teardown.yml (Ray stopped everywhere)
    restart    site.yml from stopped Ray (venv and env present)

Run with the controller venv on the lab (`make bench` brings the lab up first). The
cluster is left up. The controller's wheelhouse is kept between runs, as on a real site.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import ansible_runner

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
        "restart": run("site.yml", args.inventory),
    }

    print(f"{'step':<10} {'seconds':>8} {'changed':>8}")
    for step, figure in figures.items():
        print(f"{step:<10} {figure['seconds']:>8.1f} {figure['changed']:>8}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"bench: wrote {args.json}")


if __name__ == "__main__":
    main()
