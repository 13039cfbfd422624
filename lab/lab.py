#!/usr/bin/env python3
"""The local lab: N rootful podman containers running systemd, reached over SSH.

Lab hosts are infrastructure, not the cluster: this script creates and removes them and
writes ``inventories/lab/hosts.yml``; bringing up Ray on them is site.yml's job.

    lab.py up [--nodes N]   create or repair the lab (idempotent), write the inventory
    lab.py down             remove every lab container, the network, the key, the inventory
    lab.py status           list lab containers

Several labs can run side by side: LAB_NAME (default rlinf-lab) names the containers and
the network, LAB_SUBNET gives each its own addresses. The default lab's inventory is
inventories/lab/hosts.yml; another lab's is .lab/<LAB_NAME>/inventory/ (sharing
inventories/lab/group_vars). LAB_CAP_ADD=SYS_ADMIN gives the containers that capability
too: without it systemd inside them cannot set up mount namespaces and silently skips the
Ray unit's file-system sandbox (ProtectSystem=, ProtectHome=, ReadWritePaths=, ...).

Stdlib only, so it runs before the controller venv exists.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAB = os.environ.get("LAB_NAME", "rlinf-lab")
DEFAULT_LAB = LAB == "rlinf-lab"
STATE_DIR = ROOT / ".lab" if DEFAULT_LAB else ROOT / ".lab" / LAB
KEY = STATE_DIR / "id_ed25519"
LAB_GROUP_VARS = ROOT / "inventories" / "lab" / "group_vars"
INVENTORY = (ROOT / "inventories" / "lab" if DEFAULT_LAB else STATE_DIR / "inventory") / "hosts.yml"

IMAGE = os.environ.get("LAB_IMAGE", "localhost/rlinf-lab:bookworm")
SUBNET = ipaddress.ip_network(os.environ.get("LAB_SUBNET", "10.89.77.0/24"))
FIRST_HOST_OFFSET = 10
LABEL = "rlinf.lab"
# Further capabilities for the containers, comma-separated (e.g. SYS_ADMIN, see above).
CAP_ADD = [cap for cap in os.environ.get("LAB_CAP_ADD", "").split(",") if cap.strip()]
READY_TIMEOUT = 90


def log(msg: str) -> None:
    print(f"lab: {msg}", flush=True)


def podman(*args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(["podman", *args], input=stdin, capture_output=True, text=True)
    if check and proc.returncode != 0:
        sys.exit(f"lab: podman {' '.join(args)} failed:\n{proc.stderr.strip()}")
    return proc


def host_names(count: int) -> list[str]:
    return [f"{LAB}-head"] + [f"{LAB}-worker{i}" for i in range(1, count)]


def host_ip(index: int) -> str:
    return str(SUBNET.network_address + FIRST_HOST_OFFSET + index)


def lab_containers() -> list[dict]:
    out = podman("ps", "-a", "--filter", f"label={LABEL}={LAB}", "--format", "json").stdout
    return json.loads(out or "[]")


def ensure_key() -> None:
    STATE_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not KEY.exists():
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{LAB}-key", "-f", str(KEY)],
            check=True,
        )
        log(f"generated SSH key {KEY.relative_to(ROOT)}")


def ensure_network() -> None:
    if podman("network", "exists", LAB, check=False).returncode == 0:
        return
    podman("network", "create", "--subnet", str(SUBNET), "--label", f"{LABEL}={LAB}", LAB)
    log(f"created network {LAB} ({SUBNET})")


def ensure_container(name: str, ip: str, existing: dict[str, dict]) -> None:
    info = existing.get(name)
    if info and info.get("State") == "running":
        return
    if info:
        log(f"starting {name}")
        podman("start", name)
        return
    log(f"creating {name} ({ip})")
    podman(
        "run",
        "-d",
        "--name",
        name,
        "--hostname",
        name,
        "--label",
        f"{LABEL}={LAB}",
        "--network",
        LAB,
        "--ip",
        ip,
        "--systemd=always",
        "--cap-add",
        "NET_ADMIN",
        *(arg for cap in CAP_ADD for arg in ("--cap-add", cap.strip())),
        "--device",
        "/dev/net/tun",
        "--shm-size=1g",
        IMAGE,
    )


def wait_ready(name: str, ip: str, pubkey: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    state = ""
    while time.monotonic() < deadline:
        state = podman("exec", name, "systemctl", "is-system-running", check=False).stdout.strip()
        if state in ("running", "degraded"):
            break
        time.sleep(0.5)
    else:
        sys.exit(f"lab: {name} did not finish booting in {READY_TIMEOUT}s (systemd says {state!r})")
    podman(
        "exec",
        "-i",
        name,
        "sh",
        "-c",
        "install -d -m 0700 /root/.ssh && cat > /root/.ssh/authorized_keys && chmod 0600 /root/.ssh/authorized_keys",
        stdin=pubkey,
    )
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((ip, 22), timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    sys.exit(f"lab: sshd on {name} ({ip}:22) did not answer in {READY_TIMEOUT}s")


def write_inventory(count: int) -> None:
    names = host_names(count)
    lines = [
        f"# Generated by lab/lab.py for the {count}-node lab; `make lab-down` removes it.",
        "all:",
        "  vars:",
        "    ansible_user: root",
        f"    ansible_ssh_private_key_file: {KEY}",
        "    # Lab hosts are recreated with new host keys; they are throwaway test hosts.",
        "    ansible_ssh_common_args: -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        "  children:",
        "    rlinf_cluster:",
        "      children:",
        "        ray_head:",
        "          hosts:",
        f"            {names[0]}:",
        f"              ansible_host: {host_ip(0)}",
        "        ray_workers:",
        "          hosts:" if count > 1 else "          hosts: {}",
    ]
    for index, name in enumerate(names[1:], start=1):
        lines += [f"            {name}:", f"              ansible_host: {host_ip(index)}"]
    text = "\n".join(lines) + "\n"
    if not DEFAULT_LAB:
        INVENTORY.parent.mkdir(parents=True, exist_ok=True)
        group_vars = INVENTORY.parent / "group_vars"
        if not group_vars.is_symlink():
            group_vars.symlink_to(LAB_GROUP_VARS)
    if not INVENTORY.exists() or INVENTORY.read_text() != text:
        INVENTORY.write_text(text)
        log(f"wrote {INVENTORY.relative_to(ROOT)}")


def up(count: int) -> None:
    if count < 1 or count > SUBNET.num_addresses - FIRST_HOST_OFFSET - 2:
        sys.exit(f"lab: --nodes must be between 1 and {SUBNET.num_addresses - FIRST_HOST_OFFSET - 2}")
    if podman("image", "exists", IMAGE, check=False).returncode != 0:
        sys.exit(f"lab: image {IMAGE} is missing; run lab/build-image.sh (or `make lab-up`).")
    ensure_key()
    pubkey = (KEY.with_suffix(".pub")).read_text()
    ensure_network()
    existing = {c["Names"][0]: c for c in lab_containers()}
    wanted = host_names(count)
    for extra in sorted(set(existing) - set(wanted)):
        log(f"removing {extra} (lab is now {count} nodes)")
        podman("rm", "-f", "-t", "0", extra)
    for index, name in enumerate(wanted):
        ensure_container(name, host_ip(index), existing)
    for index, name in enumerate(wanted):
        wait_ready(name, host_ip(index), pubkey)
    write_inventory(count)
    log(f"{count} hosts ready: {', '.join(wanted)}")


def down() -> None:
    names = [c["Names"][0] for c in lab_containers()]
    if names:
        podman("rm", "-f", "-t", "0", *names)
        log(f"removed {', '.join(sorted(names))}")
    if podman("network", "exists", LAB, check=False).returncode == 0:
        podman("network", "rm", "-f", LAB)
        log(f"removed network {LAB}")
    for path in (INVENTORY, KEY, KEY.with_suffix(".pub")):
        path.unlink(missing_ok=True)
    if not DEFAULT_LAB:
        (INVENTORY.parent / "group_vars").unlink(missing_ok=True)
        for empty in (INVENTORY.parent, STATE_DIR):
            if empty.exists() and not any(empty.iterdir()):
                empty.rmdir()
    elif STATE_DIR.exists() and not any(STATE_DIR.iterdir()):
        STATE_DIR.rmdir()


def status() -> None:
    for c in sorted(lab_containers(), key=lambda c: c["Names"][0]):
        print(f"{c['Names'][0]:<24} {c['State']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    up_parser = sub.add_parser("up")
    up_parser.add_argument("--nodes", type=int, default=int(os.environ.get("LAB_NODES", "3")))
    sub.add_parser("down")
    sub.add_parser("status")
    args = parser.parse_args()
    if args.command == "up":
        up(args.nodes)
    elif args.command == "down":
        down()
    else:
        status()


if __name__ == "__main__":
    main()
