"""The Ray unit's sandbox on real hosts (issue 19): systemd reads and scores the default unit,
Ray runs without capabilities and off the system's files, and ray_node_user runs it as an
account of its own through site, status, launch, teardown and purge.

Each test starts from the cluster site.yml makes with the lab's own inventory (the fixture
runs it: a no-op when the cluster is up) and leaves it so.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from conftest import NODE_ENV, run_playbook, run_status, ssh, write_inventory

pytestmark = pytest.mark.lab

DATA = Path(__file__).parent / "data"
UNIT = "rlinf-ray"
TARGET_EXPOSURE = 6.0
# ray_node_user in the test: created by the role on the head, an existing account on the workers.
CREATED = "rlinf-ray"
EXISTING = "rlinf-ext"


@pytest.fixture(scope="module")
def deployed(hosts, tmp_path_factory):
    """The cluster as the lab inventory makes it (the default, sandboxed, root unit)."""
    run = run_playbook("site.yml", tmp_path_factory.mktemp("site"))
    assert run.rc == 0, run.stdout[-3000:]
    return hosts


def main_pid(address: str) -> str:
    pid = ssh(address, f"systemctl show -p MainPID --value {UNIT}").stdout.strip()
    assert pid not in ("", "0"), f"{UNIT} is not running on {address}"
    return pid


def exposure(address: str) -> float:
    out = ssh(address, f"systemd-analyze security --no-pager {UNIT}").stdout
    found = re.search(rf"Overall exposure level for {UNIT}\.service: ([0-9.]+)", out)
    assert found, out[-500:]
    return float(found.group(1))


def own_mount_namespace(address: str, pid: str) -> bool:
    mine, init = ssh(address, f"readlink /proc/{pid}/ns/mnt /proc/1/ns/mnt").stdout.split()
    return mine != init


def sandbox_probe(head: str) -> dict[str, dict]:
    script = (DATA / "sandbox_probe.py").read_text()
    proc = ssh(head, f"{NODE_ENV} /opt/rlinf/venv/bin/python - {head}:6379", stdin=script)
    return {n["ip"]: n for n in json.loads(proc.stdout.strip().splitlines()[-1])}


def test_systemd_reads_the_default_unit_and_rates_it_at_most_6(deployed):
    for name, address in deployed.items():
        verify = ssh(address, f"systemd-analyze verify /etc/systemd/system/{UNIT}.service", check=False)
        assert verify.returncode == 0 and verify.stderr.strip() == "", (name, verify.stderr)
        score = exposure(address)
        print(f"{name}: systemd-analyze security {UNIT}: exposure {score}")
        assert score <= TARGET_EXPOSURE, f"{name}: exposure {score} > {TARGET_EXPOSURE}"


def test_ray_runs_with_no_capability_no_new_privileges_and_a_syscall_filter(deployed):
    for name, address in deployed.items():
        status = ssh(address, f"cat /proc/{main_pid(address)}/status").stdout
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        assert fields["CapBnd"] == "0000000000000000", (name, fields["CapBnd"])
        assert fields["CapEff"] == "0000000000000000", (name, fields["CapEff"])
        assert fields["NoNewPrivs"] == "1", name
        assert fields["Seccomp"] == "2", name  # filter mode
        assert fields["Umask"] == "0027", name


def test_code_sent_to_ray_cannot_write_the_system_but_ray_works(deployed):
    head = next(iter(deployed.values()))
    if not own_mount_namespace(head, main_pid(head)):
        pytest.skip(
            "systemd on this lab host could not set up a mount namespace (a container without CAP_SYS_ADMIN) and "
            "skipped ProtectSystem=, ProtectHome=, ReadWritePaths=: recreate the lab with LAB_CAP_ADD=SYS_ADMIN"
        )
    found = sandbox_probe(head)
    assert sorted(found) == sorted(deployed.values())
    for ip, node in found.items():
        assert node["uid"] == 0 and node["cap_eff"] == "0000000000000000", (ip, node)
        assert node["home"] == f"/var/lib/{UNIT}" and node["home_write"] == "ok", (ip, node)
        for path in ("/opt/rlinf/venv/probe", "/etc/probe", "/var/spool/probe", "/usr/local/probe"):
            assert node["write"][path] == "OSError:Read-only file system", (ip, path, node["write"][path])
        assert node["write"]["/tmp/probe"] == "ok" and node["tempfile"] == "ok", (ip, node)
        assert node["list_root_home"] == "PermissionError:Permission denied", (ip, node)
        assert node["kernel_tunable"] == "OSError:Read-only file system", (ip, node)


def per_host_user(groups):
    """The head creates its account; the workers use one that exists already."""
    for group, user in (("ray_head", CREATED), ("ray_workers", EXISTING)):
        for host in groups[group]["hosts"].values():
            host["ray_node_user"] = user


def account_exists(address: str, user: str) -> bool:
    return ssh(address, f"getent passwd {user}", check=False).returncode == 0


def test_ray_node_user_through_site_status_launch_teardown_and_purge(deployed, tmp_path):
    head, *workers = deployed.values()
    for address in deployed.values():
        assert not account_exists(address, CREATED), f"{CREATED} exists on {address} before the test"
        ssh(address, f"useradd --system --user-group --no-create-home --shell /usr/sbin/nologin {EXISTING}")
    inventory = write_inventory(tmp_path, per_host_user)
    stamp = time.time_ns()
    workdir = f"/srv/rlinf-sandbox-launch-{stamp}"
    try:
        run = run_playbook("site.yml", tmp_path, inventory=inventory)
        assert run.rc == 0, run.stdout[-3000:]
        for address, user in [(head, CREATED)] + [(w, EXISTING) for w in workers]:
            owners = ssh(address, "ps -o user= -C raylet,gcs_server").stdout.split()
            assert owners and set(owners) == {user}, (address, owners)
            token = ssh(address, "stat -c '%a %U %G' /etc/rlinf/ray-auth-token").stdout.split()
            assert token == ["640", "root", user], (address, token)
            assert ssh(address, f"find /tmp/ray ! -user {user} | head -3").stdout == "", address
        # status: the check is a driver, run as the account Ray runs as on the head.
        status, report = run_status(tmp_path, inventory=inventory)
        assert status.rc == 0 and report["ok"], report["problems"]
        assert report["driver"]["user"] == CREATED

        # launch.yml runs the driver as that account too: it writes where the account may.
        ssh(
            head,
            f"mkdir -p {workdir} && cat > {workdir}/launch_driver.py",
            stdin=(DATA / "launch_driver.py").read_text(),
        )
        ssh(head, f"chown -R {CREATED}: {workdir}")
        result_file = f"{workdir}/result.json"
        launch = run_playbook(
            "launch.yml",
            tmp_path,
            inventory=inventory,
            extravars={"rlinf_src": workdir, "rlinf_entry": f"python launch_driver.py {result_file}"},
        )
        assert launch.rc == 0, launch.stdout[-3000:]
        deadline = time.monotonic() + 90
        while ssh(head, f"test -s {result_file}", check=False).returncode != 0:
            assert time.monotonic() < deadline, "the launched driver wrote no result"
            time.sleep(1)
        assert ssh(head, f"stat -c %U {result_file}").stdout.strip() == CREATED
        result = json.loads(ssh(head, f"cat {result_file}").stdout)
        assert sorted(n["ip"] for n in result["nodes"]) == sorted(deployed.values())

        stop = run_playbook("teardown.yml", tmp_path, inventory=inventory)
        assert stop.rc == 0, stop.stdout[-3000:]
        assert account_exists(head, CREATED), "a plain teardown removed the account"
        purge = run_playbook(
            "teardown.yml", tmp_path, inventory=inventory, extravars={"teardown_purge": True, "teardown_confirm": "yes"}
        )
        assert purge.rc == 0, purge.stdout[-3000:]
        # The account the role created is gone with its group; the one that existed stays.
        assert not account_exists(head, CREATED)
        assert ssh(head, f"getent group {CREATED}", check=False).returncode != 0
        for address in workers:
            assert account_exists(address, EXISTING), f"purge removed {EXISTING}, which it did not create"
        for address in deployed.values():
            left = ssh(address, f"ls -d /etc/rlinf/state/{UNIT}.users /etc/systemd/system/{UNIT}.service", check=False)
            assert left.stdout == "", (address, left.stdout)
    finally:
        ssh(head, f"rm -rf {workdir}; systemctl reset-failed 'rlinf-launch-*'", check=False)
        for address in deployed.values():
            ssh(address, f"userdel {EXISTING}", check=False)

    # Back to root on top of files the account left in /tmp/ray (the unit hands them over).
    run = run_playbook("site.yml", tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    status, report = run_status(tmp_path)
    assert status.rc == 0 and report["ok"], report["problems"]
    assert report["driver"]["user"] == "root"
