#!/usr/bin/env python3
"""Run one EasyTier node from an easytier-core TOML file, with the easytier-pyo3 binding.

    easytier-pyo3-runner -c /etc/rlinf/easytier/NETWORK.toml

Shipped by the rlinf.cluster.easytier role. It reads the same TOML file that
``easytier-core -c`` takes, so the config never reaches a command line or the
environment. It tells systemd READY=1 (Type=notify) once the node runs and its TUN
device is up, stops the node on SIGTERM/SIGINT, and exits non-zero when the node stops
on its own so that systemd restarts it. It never prints the config.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
import time
import tomllib

KNOWN_TOP_LEVEL = {
    "instance_name", "instance_id", "hostname", "netns", "ipv4", "ipv6", "dhcp",
    "network_identity", "listeners", "mapped_listeners", "exit_nodes", "peer",
    "proxy_network", "routes", "socks5_proxy", "port_forward", "vpn_portal_config",
    "secure_mode", "acl", "tcp_whitelist", "udp_whitelist", "stun_servers",
    "tcp_stun_servers", "stun_servers_v6", "credential_file", "flags", "rpc_portal",
    "rpc_portal_whitelist", "console_logger", "file_logger", "ipv6_public_addr_provider",
    "ipv6_public_addr_auto", "ipv6_public_addr_prefix",
}  # fmt: skip


def log(msg: str) -> None:
    print(f"easytier-pyo3-runner: {msg}", file=sys.stderr, flush=True)


def sd_notify(state: str) -> None:
    """Send a sd_notify(3) message when started by systemd with Type=notify."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.connect(address)
        sock.sendall(state.encode())


def read_config(path: str) -> tuple[str, dict]:
    with open(path, "rb") as handle:
        raw = handle.read()
    try:
        parsed = tomllib.loads(raw.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        # The error names a line and column, never the file's content.
        sys.exit(f"easytier-pyo3-runner: {path} is not valid TOML: {err}")
    unknown = sorted(set(parsed) - KNOWN_TOP_LEVEL)
    if unknown:
        # easytier-pyo3 silently ignores unknown top-level keys: refuse them instead.
        sys.exit(f"easytier-pyo3-runner: {path}: unknown top-level keys {unknown}")
    return raw.decode(), parsed


def device_up(name: str) -> bool:
    try:
        with open(f"/sys/class/net/{name}/operstate") as handle:
            state = handle.read().strip()
    except OSError:
        return False
    return state in ("up", "unknown")  # TUN devices report "unknown" while running


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-c", "--config-file", required=True, help="easytier-core TOML config file")
    parser.add_argument("--ready-timeout", type=float, default=60.0, help="seconds to wait for the device")
    parser.add_argument("--check", action="store_true", help="parse the config and the binding, then exit")
    args = parser.parse_args()

    text, parsed = read_config(args.config_file)
    import easytier_pyo3  # imported late so --help works without the binding

    if args.check:
        easytier_pyo3.Node(text)  # raises ValueError on unknown flags
        print(f"config ok (EasyTier core {easytier_pyo3.version()})")
        return 0

    dev_name = (parsed.get("flags") or {}).get("dev_name") or ""
    no_tun = bool((parsed.get("flags") or {}).get("no_tun"))
    stop = threading.Event()

    def on_signal(signum, _frame):
        log(f"signal {signum}: stopping")
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    node = easytier_pyo3.Node(text)
    del text
    name = parsed.get("instance_name", "default")
    log(f"starting instance {name!r} (EasyTier core {easytier_pyo3.version()})")
    node.start()
    deadline = time.monotonic() + args.ready_timeout
    while dev_name and not no_tun and not device_up(dev_name):
        if stop.is_set() or time.monotonic() > deadline:
            log(f"device {dev_name} did not come up (last error: {node.latest_error()})")
            node.stop()
            return 1
        time.sleep(0.1)
    sd_notify(f"READY=1\nSTATUS=running, device {dev_name or '(auto)'} up")
    log(f"running; device {dev_name or '(auto)'} up")

    status = 0
    while not stop.wait(2.0):
        state = node.state()
        if state not in ("Running", "Starting"):
            log(f"node left the Running state ({state}): {node.latest_error()}")
            status = 1
            break
    sd_notify("STOPPING=1")
    node.stop()
    log("stopped")
    return status


if __name__ == "__main__":
    sys.exit(main())
