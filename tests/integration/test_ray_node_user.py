"""ray_node_user on real hosts (issue 19): site.yml switches Ray from root to a system user the
role creates, status.yml and the root drivers still see every node, a re-run changes nothing,
teardown stops Ray; then the module switches the lab back to root (the default), over the files
the user's Ray left behind.

Cost: four playbook runs with the user (site, site again, status, teardown) and one site.yml back.
"""

from __future__ import annotations

import json
import time

import pytest
from lab_helpers import cluster_problems, run_playbook, run_status, ssh

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

USER = "ray"
UNIT = "rlinf-ray"
AS_USER = {"ray_node_user": USER}
# The [x] brackets keep the grep and the ssh shell from matching themselves.
RAY_PROCESSES = "ps -eo user:32=,args= | grep -E '[r]aylet|[g]cs_server|[r]ay start|[d]efault_worker' || true"


def ray_process_users(address: str) -> set[str]:
    lines = [line.split(None, 1) for line in ssh(address, RAY_PROCESSES).stdout.splitlines() if line.strip()]
    assert lines, f"no Ray process runs on {address}"
    return {user for user, _ in lines}


def wait_until_healthy(hosts: dict[str, str], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while problems := cluster_problems(hosts):
        assert time.monotonic() < deadline, problems
        time.sleep(3)


@pytest.fixture(scope="module")
def as_user(hosts, tmp_path_factory):
    """The lab switched to ray_node_user by one site.yml run; switched back to root afterwards."""
    tmp_path = tmp_path_factory.mktemp("ray-node-user")
    started = time.monotonic()
    run = run_playbook("site.yml", tmp_path, extravars=AS_USER)
    print(f"site.yml with ray_node_user={USER}: {time.monotonic() - started:.0f}s")
    yield run, tmp_path
    # Back to the default over what the user's Ray left (its temp dir, its home).
    started = time.monotonic()
    back = run_playbook("site.yml", tmp_path)
    print(f"site.yml back to root: {time.monotonic() - started:.0f}s")
    assert back.rc == 0, back.stdout[-3000:]
    for name, address in hosts.items():
        assert ray_process_users(address) == {"root"}, name
    wait_until_healthy(hosts)


def test_site_runs_ray_as_the_user_it_creates_on_every_node(as_user, hosts):
    run, _ = as_user
    assert run.rc == 0, run.stdout[-3000:]
    for name, address in hosts.items():
        assert ray_process_users(address) == {USER}, name
        # A system account: no login shell, no password.
        entry = ssh(address, f"getent passwd {USER}").stdout.strip().split(":")
        assert int(entry[2]) < 1000 and entry[5] == f"/var/lib/{UNIT}" and entry[6] == "/usr/sbin/nologin", entry
        assert ssh(address, f"getent shadow {USER}").stdout.split(":")[1] in ("!", "*", "!*"), name
        # It owns what Ray writes: the temp dir and the session it runs in, and its home.
        owners = ssh(address, f"stat -c '%U:%G' /tmp/ray /tmp/ray/session_latest/ /var/lib/{UNIT}").stdout.split()
        assert owners == [f"{USER}:{USER}"] * 3, (name, owners)
        # The token stays root's, readable by the user's group alone.
        assert ssh(address, "stat -c '%U:%G %a' /etc/rlinf/ray-auth-token").stdout.strip() == f"root:{USER} 640"
        # Nothing else changed hands: the venv and the env file are root's.
        assert ssh(address, "stat -c %U /opt/rlinf/venv /etc/rlinf/rlinf.env").stdout.split() == ["root", "root"]
        # The role created the user: its record is in the manifest, for purge.
        manifest = json.loads(ssh(address, f"cat /etc/rlinf/state/{UNIT}.manifest.json").stdout)
        record = f"/etc/rlinf/state/{UNIT}.user"
        assert {"kind": "file", "path": record} in [{k: e[k] for k in ("kind", "path")} for e in manifest["entries"]]
        assert ssh(address, f"cat {record}").stdout == f"{USER}\n", name


def test_status_sees_every_node_alive_through_a_root_driver(as_user, hosts):
    _, tmp_path = as_user
    status, report = run_status(tmp_path, **AS_USER)
    assert status.rc == 0 and report["ok"], report["problems"]
    assert [n["state"] for n in report["nodes"]] == ["ALIVE"] * len(hosts)


def test_a_rerun_with_the_user_changes_nothing(as_user):
    _, tmp_path = as_user
    started = time.monotonic()
    again = run_playbook("site.yml", tmp_path, extravars=AS_USER)
    print(f"site.yml re-run with ray_node_user: {time.monotonic() - started:.0f}s")
    assert again.rc == 0, again.stdout[-3000:]
    assert set(again.changed().values()) <= {0}, (again.changed(), again.stdout[-3000:])


def test_teardown_stops_the_users_ray(as_user, hosts):
    _, tmp_path = as_user
    down = run_playbook("teardown.yml", tmp_path, extravars=AS_USER)
    assert down.rc == 0, down.stdout[-3000:]
    for name, address in hosts.items():
        assert ssh(address, RAY_PROCESSES).stdout.strip() == "", name
        assert ssh(address, f"systemctl is-active {UNIT}", check=False).stdout.strip() == "inactive", name
