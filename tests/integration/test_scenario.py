"""A lab flavour end to end on fresh hosts: site.yml, Ray and the collectives on the NIC the
inventory names, a no-op re-run, status, the code pushed by rsync and by package, teardown,
rebuild and purge, run by lab/scenario.sh on a lab of its own (`make test-fleet`: trixie, an
SSH user with sudo, a management NIC and a data NIC, the worker reached only through the head
with ProxyJump). The tests run in file order and share the lab.

With a non-root SSH user the controller refuses sudo, as an operator's workstation does
(sudo there asks for a password): a task run on the controller that asks for become fails.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest
from lab_helpers import (
    fake_checkout,
    lab_inventory,
    lab_key,
    lab_user,
    probe_cluster,
    ray_processes,
    run_playbook,
    run_status,
    ssh,
    ssh_options,
    wait_for_alive,
)

pytestmark = [pytest.mark.lab, pytest.mark.scenario]

# Debian's python3 per release (what the venv is made from).
DISTRO_PYTHON = {"bullseye": "3.9", "bookworm": "3.11", "trixie": "3.13"}
# Where the rsync test puts the code.
CODE_DEST = "/srv/rlinf-fleet-code"
INSTALLED = (
    "/opt/rlinf/venv /opt/rlinf/wheelhouse /etc/rlinf/rlinf.env /etc/rlinf/ray-auth-token"
    f" /etc/systemd/system/rlinf-ray.service /etc/profile.d/rlinf.sh /etc/rlinf/state {CODE_DEST}"
)
# Where site.yml puts its files; on fresh hosts it makes both.
PROJECT_DIRS = ("/opt/rlinf", "/etc/rlinf")
# Stands in for sudo on the controller: refuses, as sudo without a password does.
CONTROLLER_SUDO = """#!/bin/sh
echo "sudo: a password is required (the controller's sudo; a controller-side task asked for become)" >&2
exit 1
"""


@pytest.fixture(scope="module", autouse=True)
def controller_refuses_sudo(tmp_path_factory):
    """For a non-root SSH user: a become on the controller fails instead of passing unseen.

    Ansible skips become when the user it runs as is already the become user (root here), so
    allow that, and put a sudo that refuses first on the controller's PATH (remote hosts use
    their own)."""
    if lab_user() == "root":
        yield
        return
    shim = tmp_path_factory.mktemp("controller-sudo")
    (shim / "sudo").write_text(CONTROLLER_SUDO)
    (shim / "sudo").chmod(0o755)
    saved = {key: os.environ.get(key) for key in ("PATH", "ANSIBLE_BECOME_ALLOW_SAME_USER")}
    os.environ["PATH"] = f"{shim}{os.pathsep}{os.environ['PATH']}"
    os.environ["ANSIBLE_BECOME_ALLOW_SAME_USER"] = "true"
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def head(hosts):
    return next(iter(hosts.values()))


@pytest.fixture(scope="module")
def distro():
    return lab_inventory()["all"]["vars"]["lab_distro"]


@pytest.fixture(scope="module")
def ray_device(head):
    """The NIC Ray and the collectives must use: the one the inventory names (LAB_NICS=2: the
    data NIC), else the default route's, read on the head."""
    named = lab_inventory()["all"]["vars"].get("rlinf_comm_net_device")
    return named or ssh(head, "ip -o route show default").stdout.split(" dev ")[1].split()[0]


@pytest.fixture(scope="module")
def ray_addresses(hosts, ray_device):
    """Each host's IPv4 on that NIC, read on the host, in rank order. With two NICs it is not
    the management (SSH) address."""
    addresses = {}
    for name, address in hosts.items():
        addresses[name] = ssh(address, f"ip -4 -o addr show dev {ray_device}").stdout.split()[3].split("/")[0]
    if lab_inventory()["all"]["vars"].get("rlinf_comm_net_device"):
        assert not set(addresses.values()) & set(hosts.values()), f"the data NIC holds SSH addresses: {addresses}"
    return addresses


def alive(head, hosts, ray_addresses):
    return wait_for_alive(head, len(hosts), ray_address=ray_addresses[next(iter(hosts))])


def assert_ranks_follow_inventory(nodes, ray_addresses):
    ranks = {ip: node["env"].get("RLINF_NODE_RANK") for ip, node in nodes.items()}
    assert ranks == {ip: str(rank) for rank, ip in enumerate(ray_addresses.values())}


def test_site_brings_up_the_fresh_hosts(tmp_path, hosts, head, ray_addresses):
    for name, address in hosts.items():
        assert ssh(address, "test -e /opt/rlinf", check=False).returncode != 0, f"{name} is not a fresh host"
    run = run_playbook("site.yml", tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    assert_ranks_follow_inventory(alive(head, hosts, ray_addresses), ray_addresses)


def test_the_controller_reaches_the_workers_only_through_the_head(hosts, ray_addresses):
    """LAB_BASTION=1: site.yml above reached the worker with ProxyJump (the module transport and
    the wheelhouse push); no address of it answers the controller directly."""
    if not lab_inventory()["all"]["vars"].get("lab_workers_behind_head"):
        pytest.skip("this lab's workers are reached directly (LAB_BASTION=1 puts them behind the head)")
    for name in list(hosts)[1:]:
        assert "ProxyJump=" in " ".join(ssh_options(hosts[name])), f"{name} is not reached through the head"
        for address in (hosts[name], ray_addresses[name]):
            with pytest.raises(OSError):
                socket.create_connection((address, 22), timeout=3).close()


def test_ray_and_the_collectives_use_the_named_nic(hosts, head, ray_device, ray_addresses):
    nodes = alive(head, hosts, ray_addresses)
    assert sorted(nodes) == sorted(ray_addresses.values()), f"Ray's node addresses: {sorted(nodes)}"
    # What RLinf's collectives read in a Ray worker on each node (GLOO/NCCL_SOCKET_IFNAME).
    devices = {ip: node["env"].get("RLINF_COMM_NET_DEVICES") for ip, node in nodes.items()}
    assert set(devices.values()) == {ray_device}, devices


def test_hosts_are_the_flavour_asked_for(hosts, distro):
    python = DISTRO_PYTHON[distro]
    for name, address in hosts.items():
        release = ssh(address, ". /etc/os-release && echo $VERSION_CODENAME").stdout.strip()
        assert release == distro, f"{name} runs {release}, the lab was made for {distro}"
        venv = ssh(address, "/opt/rlinf/venv/bin/python -c 'import sys; print(*sys.version_info[:2], sep=\".\")'")
        assert venv.stdout.strip() == python, f"{name}'s venv runs Python {venv.stdout.strip()}, not {python}"
        # What site.yml wrote and started belongs to root, whoever logged in.
        token = ssh(address, "stat -c '%U %a' /etc/rlinf/ray-auth-token").stdout.strip()
        assert token == "root 600", f"{name}: /etc/rlinf/ray-auth-token is {token}"
        raylet = ssh(address, "ps -o user= -C raylet | sort -u").stdout.split()
        assert raylet == ["root"], f"{name}: raylet runs as {raylet}"


def test_logins_are_the_inventory_user_and_root_only_through_sudo(hosts):
    user = lab_user()
    for name, address in hosts.items():
        as_user = subprocess.run(
            ["ssh", "-i", lab_key(), *ssh_options(address), "-o", "BatchMode=yes", f"{user}@{address}", "id -un"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert as_user.returncode == 0 and as_user.stdout.strip() == user, (name, as_user.stdout, as_user.stderr)
        if user != "root":
            as_root = subprocess.run(
                ["ssh", "-i", lab_key(), *ssh_options(address), "-o", "BatchMode=yes", f"root@{address}", "true"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert as_root.returncode == 255, f"{name} lets root log in over SSH"


def test_second_run_changes_nothing_and_restarts_nothing(tmp_path, hosts, head, ray_addresses):
    before = {ip: n["node_id"] for ip, n in alive(head, hosts, ray_addresses).items()}
    run = run_playbook("site.yml", tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    assert run.changed() == {}, f"a re-run on a healthy cluster changed: {run.changed()}"
    after = probe_cluster(head, ray_address=ray_addresses[next(iter(hosts))])
    assert {ip: n["node_id"] for ip, n in after.items()} == before


def test_status_finds_the_cluster_at_the_ray_addresses(tmp_path, hosts, distro, ray_addresses):
    run, report = run_status(tmp_path)
    assert run.rc == 0 and report["ok"], report["problems"]
    assert [(n["name"], n["ip"], n["state"]) for n in report["nodes"]] == [
        (name, ray_addresses[name], "ALIVE") for name in hosts
    ]
    pythons = {n["python"].rsplit(".", 1)[0] for n in report["nodes"]}
    assert pythons == {DISTRO_PYTHON[distro]}, report["nodes"]


def test_the_code_reaches_every_node_by_rsync_and_by_package(tmp_path, hosts, head, ray_addresses):
    """The code push (rsync over Ansible's own ssh arguments: ProxyJump to a worker behind the
    head), by rsync into a checkout, then as a wheel installed in the venv."""
    marker = f"fleet-{time.time_ns()}"
    src = fake_checkout(tmp_path / "RLinf", marker)
    extra = {"rlinf_code_sync": "rsync", "rlinf_src": str(src), "rlinf_code_dest": CODE_DEST}
    run = run_playbook("tests/integration/data/code_sync.yml", tmp_path, extravars=extra)
    assert run.rc == 0, run.stdout[-3000:]
    for name, address in hosts.items():
        listing = ssh(address, f"cd {CODE_DEST} && find . -type f | sort").stdout.split()
        assert listing == ["./marker_driver.py", "./pyproject.toml", "./rlinf/__init__.py"], (name, listing)
        assert marker in ssh(address, f"cat {CODE_DEST}/rlinf/__init__.py").stdout, name
    extra = {"rlinf_code_sync": "package", "rlinf_src": str(src), "code_sync_wheel_dir": str(tmp_path / "wheels")}
    run = run_playbook("site.yml", tmp_path, extravars=extra)
    assert run.rc == 0, run.stdout[-3000:]
    for name, address in hosts.items():
        where = "cd / && /opt/rlinf/venv/bin/python -c 'import rlinf; print(rlinf.__version__, rlinf.__file__)'"
        version, path = ssh(address, where).stdout.split()
        assert version == marker and path.startswith("/opt/rlinf/venv/lib/"), (name, version, path)
    # The new wheel restarted Ray; the cluster is whole again with its ranks.
    assert_ranks_follow_inventory(alive(head, hosts, ray_addresses), ray_addresses)


def test_teardown_stops_ray_and_keeps_the_files(tmp_path, hosts):
    run = run_playbook("teardown.yml", tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    for name, address in hosts.items():
        assert ray_processes(address) == [], f"Ray still runs on {name}"
        kept = ssh(address, "test -x /opt/rlinf/venv/bin/ray && test -f /etc/rlinf/rlinf.env", check=False)
        assert kept.returncode == 0, f"plain teardown removed files on {name}"


def test_rebuild_restores_the_cluster(tmp_path, hosts, head, ray_addresses):
    run = run_playbook("rebuild.yml", tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    assert_ranks_follow_inventory(alive(head, hosts, ray_addresses), ray_addresses)


def test_purge_removes_what_we_installed(tmp_path, hosts):
    run = run_playbook("teardown.yml", tmp_path, extravars={"teardown_purge": True, "teardown_confirm": "yes"})
    assert run.rc == 0, run.stdout[-3000:]
    for name, address in hosts.items():
        assert ray_processes(address) == [], f"Ray still runs on {name}"
        gone = ssh(address, f"ls -d {INSTALLED}", check=False)
        assert gone.returncode != 0 and gone.stdout == "", f"purge left files on {name}: {gone.stdout}"
        # The directories site.yml made on these fresh hosts go too: nothing else is in them.
        left = ssh(address, f"ls -d {' '.join(PROJECT_DIRS)}", check=False)
        assert left.returncode != 0 and left.stdout == "", f"purge left {left.stdout.split()} on {name}"
