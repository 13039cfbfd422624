#!/usr/bin/env python3
"""Wall times of the cluster's life cycle on a lab of its own, as a table and as JSON. Figures only.

On the first --nodes hosts (3, the lab's size):
    fresh      site.yml on purged hosts (venv from the controller's wheelhouse, Ray started)  (e)
    no-op      site.yml again on the healthy cluster, with its changed count              (c)
    teardown   teardown.yml (Ray stopped everywhere)
    raw        only the essential steps over SSH: head `ray start`, workers in parallel,
               poll until every node is ALIVE (then `ray stop` inside each host)          (b)
    restart    site.yml from stopped Ray (venv and env file present)                      (a)
Then, for each --scale N, on the first N hosts from stopped Ray: the raw baseline and
site.yml, and for each the ratio of the largest N to the smallest                        (d)

The lab is LAB_NAME=rlinf-bench (10.89.79.0/24), sized for the largest N and removed at the
end unless --keep; the default lab is not touched. Each playbook runs as `ansible-playbook`, as an
operator types it, with the profile_tasks callback; the slowest tasks of each run are kept in the
JSON. Each step also gets the CPU seconds the lab hosts (their cgroups) and the controller (child
processes) spent: all lab hosts share this machine's cores, which real fleets do not.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
LAB_ENV = {"LAB_NAME": "rlinf-bench", "LAB_SUBNET": "10.89.79.0/24"}
LAB_INVENTORY = ROOT / ".lab" / LAB_ENV["LAB_NAME"] / "inventory"
PROFILE_LINE = re.compile(r"^(?P<task>.+?) -+ (?P<seconds>\d+\.\d+)s$")
RECAP_LINE = re.compile(r"^\S+\s+: ok=\d+\s+changed=(?P<changed>\d+)", re.MULTILINE)
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


def lab(*args: str) -> None:
    subprocess.run([sys.executable, str(ROOT / "lab" / "lab.py"), *args], env=os.environ | LAB_ENV, check=True)


def node_cpu_seconds() -> float:
    """CPU time used so far by every bench lab container (cgroup v1 cpuacct or v2 cpu.stat)."""
    names = subprocess.run(
        ["podman", "ps", "--filter", f"name=^{LAB_ENV['LAB_NAME']}-", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    total = 0.0
    for name in names:
        cgroup = subprocess.run(
            ["podman", "inspect", "--format", "{{.State.CgroupPath}}", name], capture_output=True, text=True, check=True
        ).stdout.strip()
        v1 = Path("/sys/fs/cgroup/cpuacct") / cgroup.lstrip("/") / "cpuacct.usage"
        if v1.exists():
            total += int(v1.read_text()) / 1e9
        else:
            stat = (Path("/sys/fs/cgroup") / cgroup.lstrip("/") / "cpu.stat").read_text()
            total += int(stat.split("usage_usec ", 1)[1].split()[0]) / 1e6
    return total


def controller_cpu_seconds() -> float:
    """CPU time of the finished child processes (ansible-playbook and its forks, ssh)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(step):
    """Wall time plus the CPU seconds the lab hosts and the controller spent on the step."""

    def measured(*args, **kwargs):
        nodes, controller = node_cpu_seconds(), controller_cpu_seconds()
        figure = step(*args, **kwargs)
        figure["node cpu"] = round(node_cpu_seconds() - nodes, 1)
        figure["controller cpu"] = round(controller_cpu_seconds() - controller, 1)
        return figure

    return measured


def slowest_tasks(stdout: str, count: int = 8) -> list[dict]:
    """The profile_tasks recap: the first `count` tasks by time, as printed (slowest first)."""
    recap = stdout.split("TASKS RECAP", 1)[-1]
    tasks = []
    for line in recap.splitlines():
        match = PROFILE_LINE.match(line.strip())
        if match:
            tasks.append({"task": match["task"], "seconds": float(match["seconds"])})
    return tasks[:count]


def changed_count(stdout: str) -> int:
    """The sum of changed= over the hosts of the PLAY RECAP."""
    recap = stdout.rsplit("PLAY RECAP", 1)[-1]
    return sum(int(match["changed"]) for match in RECAP_LINE.finditer(recap))


@timed
def run(playbook: str, inventory: Path, extravars: dict | None = None) -> dict:
    """`ansible-playbook`, as an operator runs it (no ansible-runner: it adds ~0.3 s and ~0.45 CPU s a run)."""
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), str(ROOT / playbook), "-i", str(inventory)]
    if extravars:
        argv += ["-e", json.dumps(extravars)]
    env = os.environ | {
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks",
        "PROFILE_TASKS_TASK_OUTPUT_LIMIT": "100",
    }
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"bench: {playbook} failed (rc={proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-1000:]}")
    return {"seconds": round(seconds, 1), "changed": changed_count(proc.stdout), "slowest": slowest_tasks(proc.stdout)}


def subset_inventory(workdir: Path, nodes: int) -> Path:
    """The bench lab's inventory cut to its head and first nodes-1 workers."""
    inventory = workdir / f"inventory-{nodes}"
    if inventory.exists():
        return inventory
    data = yaml.safe_load((LAB_INVENTORY / "hosts.yml").read_text())
    workers = data["all"]["children"]["rlinf_cluster"]["children"]["ray_workers"]
    names = list(workers.get("hosts") or {})[: nodes - 1]
    workers["hosts"] = {name: workers["hosts"][name] for name in names}
    inventory.mkdir()
    (inventory / "hosts.yml").write_text(yaml.safe_dump(data, sort_keys=False))
    (inventory / "group_vars").symlink_to(ROOT / "inventories" / "lab" / "group_vars")
    return inventory


def lab_hosts(inventory: Path) -> tuple[list[str], str]:
    """Addresses in rank order and the SSH key."""
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


@timed
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
    return {"seconds": round(time.monotonic() - started, 1), "changed": None}


def raw_stop(inventory: Path) -> None:
    """`ray stop` inside each host that raw_bringup started Ray on."""
    addresses, key = lab_hosts(inventory)
    with ThreadPoolExecutor(max_workers=len(addresses)) as pool:
        list(pool.map(lambda ip: ssh(key, ip, "/opt/rlinf/venv/bin/ray stop"), addresses))


def measure(nodes: int, scale: list[int], workdir: Path) -> dict:
    everything = subset_inventory(workdir, max([*scale, nodes]))
    inventory = subset_inventory(workdir, nodes)
    purge = {"teardown_purge": True, "teardown_confirm": "yes"}
    run("teardown.yml", everything, purge)
    figures = {
        f"fresh ({nodes} nodes)": run("site.yml", inventory),
        "no-op": run("site.yml", inventory),
        "teardown": run("teardown.yml", inventory),
        "raw": raw_bringup(inventory),
    }
    raw_stop(inventory)
    figures["restart"] = run("site.yml", inventory)
    figures["ratio restart/raw"] = {"seconds": round(figures["restart"]["seconds"] / figures["raw"]["seconds"], 2)}
    # Every host gets its venv once (untimed), so each N starts from stopped Ray alone.
    run("site.yml", everything)
    for count in scale:
        run("teardown.yml", everything)
        figures[f"raw {count} nodes"] = raw_bringup(subset_inventory(workdir, count))
        raw_stop(subset_inventory(workdir, count))
        figures[f"bring-up {count} nodes"] = run("site.yml", subset_inventory(workdir, count))
    smallest, largest = min(scale), max(scale)
    # All lab hosts share this machine's cores, so Ray's own start-up slows down with N; the
    # raw ratio shows how much, the bring-up ratio what the playbooks add to it.
    for kind in ("bring-up", "raw"):
        ratio = figures[f"{kind} {largest} nodes"]["seconds"] / figures[f"{kind} {smallest} nodes"]["seconds"]
        figures[f"ratio {kind} {largest}/{smallest}"] = {"seconds": round(ratio, 2)}
    return figures


# Issue 28's targets: from stopped Ray at most 1.15x the raw script at 3 nodes and 1.3x at 8, a no-op
# in at most 5 s that changes nothing, at most 0.8 controller CPU s per host at 8 nodes.
TARGETS = {"ratio_small": 1.15, "ratio_large": 1.3, "noop_seconds": 5.0, "cpu_per_host": 0.8}


def targets(figures: dict) -> list[tuple[str, str, str, str]]:
    """(what, figure, target, met) for each of issue 28's targets these figures measure."""
    rows = []
    small = figures.get("ratio restart/raw", {}).get("seconds")
    if small is not None:
        met = "yes" if small <= TARGETS["ratio_small"] else "NO"
        rows.append(
            ("site.yml from stopped / raw, life-cycle lab", f"{small:.2f}x", f"<= {TARGETS['ratio_small']}x", met)
        )
    sizes = sorted(int(step.split()[1]) for step in figures if step.startswith("bring-up "))
    if sizes:
        largest = sizes[-1]
        bringup, raw = figures[f"bring-up {largest} nodes"], figures[f"raw {largest} nodes"]
        ratio = bringup["seconds"] / raw["seconds"]
        met = "yes" if ratio <= TARGETS["ratio_large"] else "NO"
        rows.append(
            (f"site.yml from stopped / raw, {largest} nodes", f"{ratio:.2f}x", f"<= {TARGETS['ratio_large']}x", met)
        )
        if bringup.get("controller cpu") not in (None, ""):
            per_host = bringup["controller cpu"] / largest
            met = "yes" if per_host <= TARGETS["cpu_per_host"] else "NO"
            rows.append(
                (
                    f"controller CPU per host, {largest} nodes",
                    f"{per_host:.2f} s",
                    f"<= {TARGETS['cpu_per_host']} s",
                    met,
                )
            )
    noop = figures.get("no-op")
    if noop:
        met = "yes" if noop["seconds"] <= TARGETS["noop_seconds"] and noop.get("changed") == 0 else "NO"
        rows.append(
            (
                "no-op site.yml",
                f"{noop['seconds']} s, changed={noop.get('changed')}",
                f"<= {TARGETS['noop_seconds']} s, changed=0",
                met,
            )
        )
    return rows


def cpu_ratios(figures: dict) -> list[tuple[str, float, float]]:
    """(size, site.yml's CPU s, the raw script's) from stopped Ray, lab hosts and controller together.

    The lab's hosts and the controller share this machine's cores, so a bring-up is bound by CPU and
    its wall-time ratio to the raw script comes close to this one: what site.yml adds to Ray's own start."""
    pairs = [("life-cycle lab", figures.get("restart"), figures.get("raw"))]
    sizes = sorted(int(step.split()[1]) for step in figures if step.startswith("bring-up "))
    pairs += [(f"{n} nodes", figures[f"bring-up {n} nodes"], figures.get(f"raw {n} nodes")) for n in sizes]

    def total(figure: dict) -> float:
        return round(figure["node cpu"] + figure["controller cpu"], 1)

    return [(size, total(bringup), total(raw)) for size, bringup, raw in pairs if bringup and raw]


def report(figures: dict, path: Path) -> None:
    print(f"{'step':<22} {'seconds':>8} {'changed':>8} {'node cpu':>9} {'ctl cpu':>8}")
    for step, figure in figures.items():
        changed = "" if figure.get("changed") is None else figure["changed"]
        cpu = [figure.get(key, "") for key in ("node cpu", "controller cpu")]
        print(f"{step:<22} {figure['seconds']:>8} {changed:>8} {cpu[0]:>9} {cpu[1]:>8}")
    print("\ncontroller CPU seconds per host, site.yml from stopped Ray:")
    for step, figure in figures.items():
        if step.startswith("bring-up ") and figure.get("controller cpu") not in (None, ""):
            count = int(step.split()[1])
            print(f"  {count:>3} nodes  {figure['controller cpu'] / count:6.2f} s/host")
    print("\nCPU seconds (lab hosts and controller), site.yml from stopped Ray / the raw script:")
    for size, ours, raw in cpu_ratios(figures):
        print(f"  {size:<15} {ours:6.1f} / {raw:5.1f} = {ours / raw:.2f}x")
    for step in ("no-op", "restart"):
        print(f"\nslowest tasks of {step} (profile_tasks):")
        for task in figures[step]["slowest"]:
            print(f"  {task['seconds']:>6.2f}s  {task['task']}")
    print(f"\n{'target (issue 28)':<44} {'measured':>20} {'target':>24} {'met':>4}")
    for what, figure, target, met in targets(figures):
        print(f"{what:<44} {figure:>20} {target:>24} {met:>4}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"\nbench: wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=3, help="lab size for the life-cycle figures")
    parser.add_argument("--scale", type=int, nargs="+", default=[2, 4, 8], help="cluster sizes to bring up")
    parser.add_argument("--keep", action="store_true", help="leave the bench lab up")
    parser.add_argument("--json", type=Path, default=ROOT / "artifacts" / "bench-bringup.json")
    args = parser.parse_args()

    lab("up", "--nodes", str(max([*args.scale, args.nodes])))
    try:
        with tempfile.TemporaryDirectory() as workdir:
            figures = measure(args.nodes, sorted(args.scale), Path(workdir))
    finally:
        if not args.keep:
            lab("down")
    report(figures, args.json)


if __name__ == "__main__":
    main()
