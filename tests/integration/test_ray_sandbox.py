"""The Ray unit's sandbox on real hosts (issues 19, 24): systemd reads and scores the default unit
(the training profile) and the strict one, Ray runs off the system's files with only root's access to
other users' files, and a host whose systemd cannot set up the sandbox is refused before anything is
installed. RLinf's workload under the default unit is tests/integration/test_rlinf_workload.py.

The first three start from the cluster site.yml makes with the lab's own inventory (the
``cluster`` fixture checks it, and repairs it only when broken) and change nothing.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from lab_helpers import DATA, NODE_ENV, lab_key, run_playbook, ssh, write_inventory

pytestmark = pytest.mark.lab

UNIT = "rlinf-ray"
# systemd-analyze's 0-10 scale: 9.6 without the sandbox. Reported, not a target: training decides
# the defaults (issue 24); the bound only says the sandbox is really there.
MAX_EXPOSURE = 6.0
# CAP_DAC_OVERRIDE (1), CAP_DAC_READ_SEARCH (2), CAP_FOWNER (3): root reads and writes other users' files.
TRAINING_CAPS = (1 << 1) | (1 << 2) | (1 << 3)


def training_caps(address: str) -> str:
    """What the unit can hold of them: a podman host's own bounding set has no CAP_DAC_READ_SEARCH."""
    status = ssh(address, "cat /proc/1/status").stdout
    host = int(next(line.split()[1] for line in status.splitlines() if line.startswith("CapBnd:")), 16)
    return f"{TRAINING_CAPS & host:016x}"


def main_pid(address: str) -> str:
    pid = ssh(address, f"systemctl show -p MainPID --value {UNIT}").stdout.strip()
    assert pid not in ("", "0"), f"{UNIT} is not running on {address}"
    return pid


def exposure(address: str) -> float:
    out = ssh(address, f"systemd-analyze security --no-pager {UNIT}").stdout
    found = re.search(rf"Overall exposure level for {UNIT}\.service: ([0-9.]+)", out)
    assert found, out[-500:]
    return float(found.group(1))


def mount_namespaces(address: str, pid: str) -> tuple[str, str]:
    """The mount namespace of ``pid`` and of the host's init."""
    mine, init = ssh(address, f"readlink /proc/{pid}/ns/mnt /proc/1/ns/mnt").stdout.split()
    return mine, init


def sandbox_probe(head: str) -> dict[str, dict]:
    script = (DATA / "sandbox_probe.py").read_text()
    proc = ssh(head, f"{NODE_ENV} /opt/rlinf/venv/bin/python - {head}:6379", stdin=script)
    return {n["ip"]: n for n in json.loads(proc.stdout.strip().splitlines()[-1])}


@pytest.mark.usefixtures("cluster")
def test_systemd_reads_the_default_unit_and_the_strict_one_and_rates_both(hosts):
    for name, address in hosts.items():
        verify = ssh(address, f"systemd-analyze verify /etc/systemd/system/{UNIT}.service", check=False)
        assert verify.returncode == 0 and verify.stderr.strip() == "", (name, verify.stderr)
        score = exposure(address)
        print(f"{name}: systemd-analyze security {UNIT} (training): exposure {score}")
        assert score <= MAX_EXPOSURE, f"{name}: exposure {score} > {MAX_EXPOSURE}"
    # The strict profile, rendered as the plan would and scored offline beside it (not started).
    name, address = next(iter(hosts.items()))
    strict = strict_unit(address)
    ssh(address, f"install -d /tmp/strict-unit && cat > /tmp/strict-unit/{UNIT}.service", stdin=strict)
    out = ssh(address, f"systemd-analyze security --no-pager --offline=true /tmp/strict-unit/{UNIT}.service").stdout
    found = re.search(r"Overall exposure level for [^:]+: ([0-9.]+)", out)
    assert found, out[-500:]
    print(f"{name}: systemd-analyze security {UNIT} (strict, offline): exposure {found.group(1)}")
    assert float(found.group(1)) <= exposure(address), "the strict profile scores worse than the training one"


@pytest.mark.usefixtures("cluster")
def test_ray_runs_with_only_roots_file_access_no_new_privileges_and_a_syscall_filter(hosts):
    for name, address in hosts.items():
        pid = main_pid(address)
        status = ssh(address, f"cat /proc/{pid}/status").stdout
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        caps = training_caps(address)
        assert int(caps, 16) & (1 << 1) and int(caps, 16) & (1 << 3), caps  # DAC_OVERRIDE, FOWNER at least
        assert fields["CapBnd"] == caps, (name, fields["CapBnd"])
        assert fields["CapEff"] == caps, (name, fields["CapEff"])
        assert fields["NoNewPrivs"] == "1", name
        assert fields["Seccomp"] == "2", name  # filter mode
        assert fields["Umask"] == "0022", name
        # systemd really set up the file-system sandbox (it skips it silently where it cannot).
        mine, init = mount_namespaces(address, pid)
        assert mine != init, f"{name}: Ray runs in init's mount namespace, without ProtectSystem="


@pytest.mark.usefixtures("cluster")
def test_code_sent_to_ray_cannot_write_the_system_but_a_job_can_work(hosts):
    head = next(iter(hosts.values()))
    found = sandbox_probe(head)
    assert sorted(found) == sorted(hosts.values())
    for ip, node in found.items():
        assert node["uid"] == 0 and node["cap_eff"] == training_caps(ip), (ip, node)
        assert node["no_new_privs"] == "1" and node["umask"] == "0022", (ip, node)
        # Root's own home, as the driver has it: caches land where root's tools put theirs.
        assert node["home"] == "/root" and node["home_write"] == "ok", (ip, node)
        for path in ("/opt/rlinf/venv/probe", "/opt/rlinf/probe", "/etc/probe", "/var/spool/probe", "/usr/local/probe"):
            assert node["write"][path] == "OSError:Read-only file system", (ip, path, node["write"][path])
        # Drivers reach Ray's files in the machine's /tmp: the unit writes there, and tempfile works.
        assert node["write"]["/tmp/probe"] == "ok" and node["tempfile"] == "ok", (ip, node)
        # A job's checkpoint dir anywhere outside the system (here /srv) and the homes: writable.
        assert node["write"]["/srv/probe"] == "ok", (ip, node)
        assert node["list_root_home"] == "ok", (ip, node)
        assert node["kernel_tunable"] == "OSError:Read-only file system", (ip, node)


def strict_unit(address: str) -> str:
    """The Ray unit of the strict profile for this node: today's unit with its sandbox section swapped."""
    from ansible_collections.rlinf.cluster.plugins.module_utils import render

    current = ssh(address, f"cat /etc/systemd/system/{UNIT}.service").stdout
    head, _, _ = current.partition("NoNewPrivileges=yes")
    head = head.replace("User=root\n", "")
    service = {"realtime": False, "user": "", "profile": "strict"}
    mounts = {"read_write": ["/tmp", "/var/tmp"], "protect_home": "yes"}
    lines = render.sandbox_lines(service, mounts)
    return head + "\n".join(lines) + "\n\n[Install]\nWantedBy=multi-user.target\n"


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc


@pytest.fixture
def host_without_sys_admin(hosts):
    """One more container like the lab's hosts (image, network), but without CAP_SYS_ADMIN: its
    systemd cannot give a unit a mount namespace. Reached over SSH with the lab's key."""
    head = next(iter(hosts))
    info = json.loads(podman("container", "inspect", head).stdout)[0]
    network = next(iter(info["NetworkSettings"]["Networks"]))
    name = f"{head}-nocap"
    podman("rm", "-f", "-t", "0", name, check=False)
    podman(
        "run", "-d", "--name", name, "--hostname", name, "--network", network, "--systemd=always",
        "--cap-add", "NET_ADMIN", "--shm-size=1g", "--label", f"rlinf.lab={name}", info["ImageName"],
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while podman("exec", name, "systemctl", "is-system-running", check=False).stdout.strip() not in (
            "running",
            "degraded",
        ):
            assert time.monotonic() < deadline, f"systemd in {name} did not come up"
            time.sleep(1)
        pubkey = Path(lab_key() + ".pub").read_text()
        setup = (
            "install -d -m 0700 /root/.ssh && cat > /root/.ssh/authorized_keys && chmod 0600 /root/.ssh/authorized_keys"
        )
        subprocess.run(["podman", "exec", "-i", name, "sh", "-c", setup], input=pubkey, text=True, check=True)
        address = json.loads(podman("container", "inspect", name).stdout)[0]["NetworkSettings"]["Networks"][network][
            "IPAddress"
        ]
        while ssh(address, "true", check=False).returncode != 0:
            assert time.monotonic() < deadline, f"no SSH to {name} at {address}"
            time.sleep(1)
        yield name, address
    finally:
        podman("rm", "-f", "-t", "0", name, check=False)


def test_a_host_whose_systemd_cannot_sandbox_is_refused_before_anything_is_installed(host_without_sys_admin, tmp_path):
    name, address = host_without_sys_admin

    def only_that_host(groups):
        groups["ray_head"]["hosts"] = {name: {"ansible_host": address}}
        groups["ray_workers"]["hosts"] = {}

    inventory = write_inventory(tmp_path, only_that_host)
    run = run_playbook("site.yml", tmp_path, inventory=inventory)
    assert run.rc != 0, run.stdout[-3000:]
    text = " ".join(run.stdout.split())
    assert f"host '{name}': systemd here cannot set up a mount namespace for a unit" in text, run.stdout[-3000:]
    assert "--cap-add SYS_ADMIN" in text and "ray_node_sandbox: false" in text, run.stdout[-3000:]
    left = ssh(address, f"ls -d /etc/systemd/system/{UNIT}.service /etc/rlinf /opt/rlinf", check=False)
    assert left.stdout == "", f"site.yml installed something on {name}: {left.stdout}"

    # The operator's way out: without the sandbox the same host passes the preflight.
    def unsandboxed(groups):
        only_that_host(groups)
        groups["ray_head"]["hosts"][name]["ray_node_sandbox"] = False

    check = run_playbook(
        "site.yml", tmp_path, inventory=write_inventory(tmp_path, unsandboxed), tags="validate,preflight"
    )
    assert check.rc == 0, check.stdout[-3000:]
