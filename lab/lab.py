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
inventories/lab/group_vars).

The containers get CAP_SYS_ADMIN besides NET_ADMIN (LAB_CAP_ADD, comma-separated, default
SYS_ADMIN; LAB_CAP_ADD= gives none): systemd inside a container needs it to set up the mount
namespace of the sandboxed Ray unit (ProtectSystem=, ProtectHome=, ReadWritePaths=). Without it
systemd skips the sandbox silently and the preflight refuses the hosts. A lab container fact:
systemd on a machine or VM has every capability.

The hosts' flavour (a host whose flavour differs is recreated):
    LAB_DISTRO=bullseye|bookworm|trixie   Debian release of the image (bookworm)
    LAB_SSH_USER=NAME                     log in as NAME (passwordless sudo, root login
                                          refused; the inventory sets ansible_become) (root)
    LAB_NICS=1|2                          2: a second, "data" network <LAB_NAME>-data
                                          (LAB_DATA_SUBNET, no default route); SSH stays on
                                          the first, the inventory points rlinf_comm_net_device
                                          at the data NIC (1)
    LAB_BASTION=0|1                       1: the workers sit on a network of their own
                                          <LAB_NAME>-private (LAB_PRIVATE_SUBNET) that the
                                          controller cannot reach (a REJECT rule in the
                                          controller's OUTPUT chain); the head is on both, and
                                          the inventory reaches the workers through it with
                                          ProxyJump (0)

Stdlib only, so it runs before the controller venv exists.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import shlex
import shutil
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

DISTROS = ("bullseye", "bookworm", "trixie")
DISTRO = os.environ.get("LAB_DISTRO") or "bookworm"
IMAGE = os.environ.get("LAB_IMAGE") or f"localhost/rlinf-lab:{DISTRO}"
SSH_USER = os.environ.get("LAB_SSH_USER") or "root"
NICS = os.environ.get("LAB_NICS") or "1"
SUBNET = ipaddress.ip_network(os.environ.get("LAB_SUBNET", "10.89.77.0/24"))
DATA_NETWORK = f"{LAB}-data"
DATA_SUBNET = ipaddress.ip_network(os.environ.get("LAB_DATA_SUBNET", "10.89.87.0/24"))
BASTION = os.environ.get("LAB_BASTION") or "0"
PRIVATE_NETWORK = f"{LAB}-private"
PRIVATE_SUBNET = ipaddress.ip_network(os.environ.get("LAB_PRIVATE_SUBNET", "10.89.85.0/24"))
# The ssh configuration the workers are reached through (LAB_BASTION=1): ProxyJump's own ssh
# reads -F, not -i or -o, so the jump host's key and options live in a file.
SSH_CONFIG = STATE_DIR / "ssh_config"
JUMP_HOST = f"{LAB}-jump"
# Marks the controller's rules that keep it off the workers (LAB_BASTION=1), to remove them again.
BLOCK_COMMENT = f"rlinf.lab={LAB}"
FIRST_HOST_OFFSET = 10
LABEL = "rlinf.lab"
# Further capabilities for the containers (see above).
CAP_ADD = [cap.strip() for cap in os.environ.get("LAB_CAP_ADD", "SYS_ADMIN").split(",") if cap.strip()]
# What the hosts were made as; a host made otherwise is recreated.
FLAVOUR_LABEL = "rlinf.lab.flavour"
FLAVOUR = f"image={IMAGE} user={SSH_USER} nics={NICS} caps={','.join(CAP_ADD) or '-'}" + (
    " bastion=1" if BASTION == "1" else ""
)
# Hosts made before the label existed were all this (and had no further capability).
LEGACY_FLAVOUR = "image=localhost/rlinf-lab:bookworm user=root nics=1"
READY_TIMEOUT = 90
SSH_OPTS = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"]
SSH_OPTS += ["-o", "LogLevel=ERROR", "-o", "ConnectTimeout=3"]
# Run in each host as root (podman exec) with the login user as $1 and the public key on stdin.
LOGIN_SETUP = r"""
set -eu
user=$1
if [ "$user" = root ]; then
  login="PermitRootLogin prohibit-password"
else
  id -u "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
  printf '%s ALL=(ALL:ALL) NOPASSWD: ALL\n' "$user" > /etc/sudoers.d/lab-ssh-user
  chmod 0440 /etc/sudoers.d/lab-ssh-user
  rm -f /root/.ssh/authorized_keys
  login="PermitRootLogin no"
fi
home=$(getent passwd "$user" | cut -d: -f6)
install -d -m 0700 -o "$user" -g "$(id -gn "$user")" "$home/.ssh"
cat > "$home/.ssh/authorized_keys"
chown "$user" "$home/.ssh/authorized_keys"
chmod 0600 "$home/.ssh/authorized_keys"
conf=/etc/ssh/sshd_config.d/lab-login.conf
if [ "$(cat "$conf" 2>/dev/null)" != "$login" ]; then
  echo "$login" > "$conf"
  systemctl try-reload-or-restart ssh.service
fi
"""


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


def data_ip(index: int) -> str:
    return str(DATA_SUBNET.network_address + FIRST_HOST_OFFSET + index)


def private_ip(index: int) -> str:
    return str(PRIVATE_SUBNET.network_address + FIRST_HOST_OFFSET + index)


def ssh_address(index: int) -> str:
    """Where the controller's ssh goes: a worker behind the bastion at its private address."""
    return private_ip(index) if BASTION == "1" and index > 0 else host_ip(index)


def worker_addresses(index: int) -> list[str]:
    """Every address of a worker (LAB_BASTION=1): what the controller must not reach."""
    return [private_ip(index), *([data_ip(index)] if NICS == "2" else [])]


def block_rules() -> list[list[str]]:
    """This lab's rules in the controller's OUTPUT chain, as iptables -D arguments."""
    if shutil.which("iptables") is None:
        return []
    listed = subprocess.run(["iptables", "-S", "OUTPUT"], capture_output=True, text=True, check=True).stdout
    rules = [shlex.split(line) for line in listed.splitlines() if line.startswith("-A OUTPUT ")]
    return [
        ["-D", *rule[1:]]
        for rule in rules
        if "--comment" in rule and rule[rule.index("--comment") + 1 :][:1] == [BLOCK_COMMENT]
    ]


def unblock() -> None:
    for rule in block_rules():
        subprocess.run(["iptables", *rule], check=True)


def block(addresses: list[str]) -> None:
    """The controller cannot reach these addresses any more (REJECT: a clear error, not a wait)."""
    for address in addresses:
        rule = ["OUTPUT", "-d", f"{address}/32", "-m", "comment", "--comment", BLOCK_COMMENT, "-j", "REJECT"]
        if subprocess.run(["iptables", "-C", *rule], capture_output=True).returncode != 0:
            subprocess.run(["iptables", "-I", *rule], check=True)


def check_flavour() -> None:
    if DISTRO not in DISTROS:
        sys.exit(f"lab: LAB_DISTRO={DISTRO} is not one of {', '.join(DISTROS)}")
    if not re.fullmatch(r"[a-z_][a-z0-9_-]{0,31}", SSH_USER):
        sys.exit(f"lab: LAB_SSH_USER={SSH_USER!r} is not a user name (lower case letters, digits, _ and -)")
    if NICS not in ("1", "2"):
        sys.exit(f"lab: LAB_NICS={NICS} must be 1 or 2")
    if BASTION not in ("0", "1"):
        sys.exit(f"lab: LAB_BASTION={BASTION} must be 0 or 1")


def ensure_network(name: str, subnet: ipaddress.IPv4Network, *options: str) -> None:
    if podman("network", "exists", name, check=False).returncode == 0:
        return
    podman("network", "create", *options, "--subnet", str(subnet), "--label", f"{LABEL}={LAB}", name)
    log(f"created network {name} ({subnet})")


def ensure_container(name: str, index: int, existing: dict[str, dict]) -> None:
    info = existing.get(name)
    made_as = info and (info.get("Labels") or {}).get(FLAVOUR_LABEL, LEGACY_FLAVOUR)
    if info and made_as != FLAVOUR:
        log(f"recreating {name} (it was made as {made_as})")
        podman("rm", "-f", "-t", "0", name)
        info = None
    if info and info.get("State") == "running":
        return
    if info:
        log(f"starting {name}")
        podman("start", name)
        return
    # podman orders a container's NICs as it likes (the data network came up as eth0 on some
    # hosts): name them.
    behind = BASTION == "1" and index > 0
    first = f"{PRIVATE_NETWORK}:ip={private_ip(index)}" if behind else f"{LAB}:ip={host_ip(index)}"
    networks = ["--network", f"{first},interface_name=eth0"]
    if NICS == "2":
        networks += ["--network", f"{DATA_NETWORK}:ip={data_ip(index)},interface_name=eth1"]
    if BASTION == "1" and not behind:
        networks += ["--network", f"{PRIVATE_NETWORK}:ip={private_ip(index)},interface_name=eth{NICS}"]
    log(f"creating {name} ({ssh_address(index)}{', data ' + data_ip(index) if NICS == '2' else ''}; {FLAVOUR})")
    podman(
        "run",
        "-d",
        "--name",
        name,
        "--hostname",
        name,
        "--label",
        f"{LABEL}={LAB}",
        "--label",
        f"{FLAVOUR_LABEL}={FLAVOUR}",
        *networks,
        "--systemd=always",
        "--cap-add",
        "NET_ADMIN",
        *(arg for cap in CAP_ADD for arg in ("--cap-add", cap)),
        "--device",
        "/dev/net/tun",
        "--shm-size=1g",
        IMAGE,
    )


def ssh(user: str, ip: str, command: str, behind: bool = False) -> subprocess.CompletedProcess:
    argv = ["ssh", "-i", str(KEY), *SSH_OPTS, *(jump_args() if behind else []), f"{user}@{ip}", command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


def wait_ready(name: str, index: int, pubkey: str) -> None:
    ip = ssh_address(index)
    behind = BASTION == "1" and index > 0
    deadline = time.monotonic() + READY_TIMEOUT
    state = ""
    while time.monotonic() < deadline:
        state = podman("exec", name, "systemctl", "is-system-running", check=False).stdout.strip()
        if state in ("running", "degraded"):
            break
        time.sleep(0.5)
    else:
        sys.exit(f"lab: {name} did not finish booting in {READY_TIMEOUT}s (systemd says {state!r})")
    podman("exec", "-i", name, "sh", "-c", LOGIN_SETUP, "lab-login", SSH_USER, stdin=pubkey)
    while time.monotonic() < deadline:
        listening = podman("exec", name, "ss", "-Htln", "sport = :22", check=False).stdout.strip()
        if listening:
            break
        time.sleep(0.5)
    else:
        sys.exit(f"lab: sshd on {name} did not listen on port 22 in {READY_TIMEOUT}s")
    # Log in as the inventory will (through the head for a worker behind it); a non-root user
    # must get root through sudo without a password.
    probe = "true" if SSH_USER == "root" else "sudo -n true"
    # Until the deadline: a host made again at the address of one just removed (test_scale.py, then
    # test_remove_node.py) may not be reachable on the first try while the bridge learns it anew.
    login = ssh(SSH_USER, ip, probe, behind)
    while login.returncode != 0 and time.monotonic() < deadline:
        time.sleep(1)
        login = ssh(SSH_USER, ip, probe, behind)
    if login.returncode != 0:
        sys.exit(f"lab: {SSH_USER}@{name} ({ip}) cannot log in and run {probe!r}: {login.stderr.strip()}")
    if SSH_USER != "root" and ssh("root", ip, "true", behind).returncode == 0:
        sys.exit(f"lab: {name} still accepts root logins over SSH")


def data_device(name: str, index: int) -> str:
    """The NIC that holds this host's data-network address (podman names it)."""
    out = podman("exec", name, "ip", "-4", "-o", "addr", "show", "to", f"{data_ip(index)}/32").stdout.split()
    if len(out) < 2:
        sys.exit(f"lab: {name} has no interface with its data address {data_ip(index)}")
    return out[1]


def write_inventory(count: int, comm_device: str | None) -> None:
    names = host_names(count)
    nics = f", data network {DATA_NETWORK} on {comm_device}" if comm_device else ""
    nics += ", the workers only through the head" if BASTION == "1" else ""
    lines = [
        f"# Generated by lab/lab.py for the {count}-node lab ({DISTRO}, SSH as {SSH_USER}{nics});",
        "# `make lab-down` removes it.",
        "all:",
        "  vars:",
        f"    ansible_user: {SSH_USER}",
        *(["    ansible_become: true"] if SSH_USER != "root" else []),
        f"    ansible_ssh_private_key_file: {KEY}",
        "    # Lab hosts are recreated with new host keys; they are throwaway test hosts, so this",
        "    # inventory alone does not check them (ansible.cfg does, for every other inventory).",
        "    ansible_host_key_checking: false",
        "    ansible_ssh_common_args: -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        f"    lab_distro: {DISTRO}",
        *(["    lab_workers_behind_head: true"] if BASTION == "1" else []),
        *(
            [
                "    # SSH and the default route on the first network, Ray and the collectives on the data network.",
                f"    rlinf_comm_net_device: {comm_device}",
            ]
            if comm_device
            else []
        ),
        "  children:",
        "    rlinf_cluster:",
        "      children:",
        "        ray_head:",
        "          hosts:",
        f"            {names[0]}:",
        f"              ansible_host: {host_ip(0)}",
        *(
            [
                "              # Ray on the network the workers are on (the head's default route is the controller's).",
                f"              rlinf_comm_net_device: eth{NICS}",
            ]
            if BASTION == "1" and not comm_device
            else []
        ),
        "        ray_workers:",
        "          hosts:" if count > 1 else "          hosts: {}",
    ]
    for index, name in enumerate(names[1:], start=1):
        lines += [f"            {name}:", f"              ansible_host: {ssh_address(index)}"]
        if BASTION == "1":
            lines += [
                "              # Only through the head: the controller cannot reach this host.",
                "              ansible_ssh_common_args: >-",
                "                -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
                f"                -F {SSH_CONFIG} -o ProxyJump={JUMP_HOST}",
            ]
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
    check_flavour()
    if podman("image", "exists", IMAGE, check=False).returncode != 0:
        sys.exit(f"lab: image {IMAGE} is missing; run `LAB_DISTRO={DISTRO} lab/build-image.sh` (or `make lab-up`).")
    ensure_key()
    pubkey = (KEY.with_suffix(".pub")).read_text()
    ensure_network(LAB, SUBNET)
    if NICS == "2":
        # --internal: no gateway, so the default route (and ansible_default_ipv4) stays on the first NIC.
        ensure_network(DATA_NETWORK, DATA_SUBNET, "--internal")
    if BASTION == "1":
        if count < 2:
            sys.exit("lab: LAB_BASTION=1 needs workers behind the head: --nodes 2 or more")
        # No gateway: the head's default route stays on the first network; the workers route through the head.
        # --disable-dns: no address of the controller on that bridge either.
        ensure_network(PRIVATE_NETWORK, PRIVATE_SUBNET, "--internal", "--disable-dns")
    existing = {c["Names"][0]: c for c in lab_containers()}
    wanted = host_names(count)
    for extra in sorted(set(existing) - set(wanted)):
        log(f"removing {extra} (lab is now {count} nodes)")
        podman("rm", "-f", "-t", "0", extra)
    for index, name in enumerate(wanted):
        ensure_container(name, index, existing)
    if BASTION == "1":
        behind_the_head(wanted)
    for index, name in enumerate(wanted):
        wait_ready(name, index, pubkey)
    if BASTION == "1":
        cut_off(wanted)
    comm_device = None
    if NICS == "2":
        devices = {name: data_device(name, index) for index, name in enumerate(wanted)}
        if len(set(devices.values())) != 1:
            sys.exit(f"lab: the data network has different device names on the hosts: {devices}")
        comm_device = next(iter(devices.values()))
    write_inventory(count, comm_device)
    behind = ", workers only through the head" if BASTION == "1" else ""
    log(f"{count} hosts ready ({DISTRO}, SSH as {SSH_USER}, NICs: {NICS}{behind}): {', '.join(wanted)}")


def behind_the_head(names: list[str]) -> None:
    """LAB_BASTION=1: the workers route through the head, the controller cannot reach them (a
    REJECT rule: without it a packet to them takes the controller's default route), and ssh
    reaches them through the head (ProxyJump, the key in SSH_CONFIG)."""
    for name in names[1:]:
        podman("exec", name, "ip", "route", "replace", "default", "via", private_ip(0))
    SSH_CONFIG.write_text(
        "# Generated by lab/lab.py: the head, the jump host the workers are reached through.\n"
        f"Host {JUMP_HOST}\n"
        f"  HostName {host_ip(0)}\n"
        f"  User {SSH_USER}\n"
        f"  IdentityFile {KEY}\n"
        "  IdentitiesOnly yes\n"
        "  BatchMode yes\n"
        "  StrictHostKeyChecking no\n"
        "  UserKnownHostsFile /dev/null\n"
        "  LogLevel ERROR\n"
    )
    block([address for index in range(1, len(names)) for address in worker_addresses(index)])


def cut_off(names: list[str]) -> None:
    """No address of a worker answers the controller (LAB_BASTION=1)."""
    for index, name in enumerate(names[1:], start=1):
        for address in worker_addresses(index):
            try:
                socket.create_connection((address, 22), timeout=2).close()
            except OSError:
                continue
            sys.exit(f"lab: the controller still reaches {name} at {address}:22; the bastion lab needs it cut off")


def jump_args() -> list[str]:
    return ["-F", str(SSH_CONFIG), "-o", f"ProxyJump={JUMP_HOST}"]


def down() -> None:
    names = [c["Names"][0] for c in lab_containers()]
    if names:
        podman("rm", "-f", "-t", "0", *names)
        log(f"removed {', '.join(sorted(names))}")
    unblock()
    for network in (LAB, DATA_NETWORK, PRIVATE_NETWORK):
        owner = podman("network", "inspect", "--format", f'{{{{index .Labels "{LABEL}"}}}}', network, check=False)
        # The main network predates its label; the data network is removed only when it is this lab's.
        if owner.returncode == 0 and (network == LAB or owner.stdout.strip() == LAB):
            podman("network", "rm", "-f", network)
            log(f"removed network {network}")
    for path in (INVENTORY, KEY, KEY.with_suffix(".pub"), SSH_CONFIG):
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
