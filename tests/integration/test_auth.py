"""Ray token authentication on the lab: refused without the token, the token kept secret,
rotation restarts the cluster in order. Leaves the lab healthy on the controller's token.
"""

from __future__ import annotations

import pytest
from lab_helpers import CONTROLLER_TOKEN, NODE_ENV, probe_cluster, run_playbook, ssh, wait_for_alive

# Each test starts on the lab inventory's healthy cluster (conftest.py), whatever ran before.
pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

CONNECT = '/opt/rlinf/venv/bin/python -c \'import ray; ray.init(address="{head}:6379"); print("connected")\''


def test_a_client_needs_the_token(hosts):
    head = next(iter(hosts.values()))
    connect = CONNECT.format(head=head)
    with_token = ssh(head, f"{NODE_ENV} timeout 90 {connect}", check=False)
    assert with_token.returncode == 0 and "connected" in with_token.stdout, with_token.stderr[-2000:]
    no_token = ssh(head, f"env -i PATH=/usr/bin:/bin timeout 90 {connect}", check=False)
    assert no_token.returncode != 0 and "connected" not in no_token.stdout
    wrong = ssh(head, f"env -i RAY_AUTH_MODE=token RAY_AUTH_TOKEN=not-the-token timeout 90 {connect}", check=False)
    assert wrong.returncode != 0 and "connected" not in wrong.stdout


def test_the_token_is_only_in_its_0600_files(tmp_path, hosts):
    token = CONTROLLER_TOKEN.read_text().strip()
    assert len(token) >= 32
    assert oct(CONTROLLER_TOKEN.stat().st_mode & 0o777) == "0o600"
    run = run_playbook("site.yml", tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    assert token not in run.stdout
    for name, address in hosts.items():
        mode = ssh(address, "stat -c '%a %U' /etc/rlinf/ray-auth-token").stdout.split()
        assert mode == ["600", "root"], f"{name}: {mode}"
        # Every process's argv and environment, the journal and the env file: never the token.
        # grep reads the pattern from the 0600 file, so the token is in no command line here.
        pattern = "-F -f /etc/rlinf/ray-auth-token"
        found = ssh(
            address,
            f"grep -l -a {pattern} /proc/[0-9]*/cmdline /proc/[0-9]*/environ /etc/rlinf/rlinf.env 2>/dev/null;"
            f" journalctl --no-pager | grep -c {pattern}",
            check=False,
        ).stdout.split()
        assert found == ["0"], f"{name}: token found in {found[:-1]} / journal count {found[-1:]}"


def test_rotating_the_token_restarts_every_node(tmp_path, hosts):
    head = next(iter(hosts.values()))
    before = {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()}
    run = run_playbook("site.yml", tmp_path, extravars={"ray_auth_token": "rotated-" + "x" * 40})
    assert run.rc == 0, run.stdout[-3000:]
    assert "rotated-" not in run.stdout
    after = {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()}
    assert set(after) == set(before) and all(after[ip] != before[ip] for ip in before)
    # Back to the controller's token: another ordered restart, then a healthy cluster.
    run = run_playbook("site.yml", tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    assert len(probe_cluster(head)) == len(hosts)
