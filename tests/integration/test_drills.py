"""Fault drills on the lab: break something for real, see it detected, then ONE site.yml run
repairs it (every host ALIVE with its rank). Complements test_faults.py; leaves the lab healthy.
"""

from __future__ import annotations

import json
import secrets
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from lab_helpers import (
    NODE_ENV,
    gcs_alive,
    lab_container,
    probe_cluster,
    repaired_by_site,
    run_playbook,
    run_site,
    run_status,
    ssh,
    write_inventory,
)
from secret_audit import controller_files_holding, node_audit, node_leaks

# Each test starts on the lab inventory's healthy cluster (conftest.py), whatever ran before.
pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

VENV_PYTHON = "/opt/rlinf/venv/bin/python"
# The login snippet site.yml writes on every node (rlinf_env_profile_script's default).
PROFILE = "/etc/profile.d/rlinf.sh"


def session_of(address: str) -> str:
    return ssh(address, "readlink /tmp/ray/session_latest").stdout.strip()


def test_killed_head_every_worker_rejoins_the_new_head_with_one_site_run(tmp_path, hosts):
    (_, head), *workers = hosts.items()
    old_head_id = probe_cluster(head)[head]["node_id"]
    # Every Ray process of the head at once; systemd starts a new head (new GCS: Ray keeps
    # no cluster state without GCS fault tolerance), the workers' raylets are orphaned.
    ssh(head, "systemctl kill -s KILL rlinf-ray")
    script = (Path(__file__).parent / "new_gcs_alive.py").read_text()
    proc = ssh(head, f"{NODE_ENV} {VENV_PYTHON} - {head}:6379 {old_head_id}", stdin=script)
    alive_in_new_gcs = json.loads(proc.stdout.strip().splitlines()[-1])
    # Detected: the new cluster has none of the workers (they can only join after their raylet
    # exits and systemd restarts it, RestartSec=5, while this answer comes within ~0.2 s).
    assert not {address for _, address in workers} & set(alive_in_new_gcs), alive_in_new_gcs
    repaired_by_site(tmp_path, hosts)
    # Every worker is a member of the new head's cluster (same session), not of the old one.
    head_session = session_of(head)
    assert {name: session_of(address) for name, address in workers} == {name: head_session for name, _ in workers}


def test_hung_worker_raylet_is_detected_and_restarted_by_one_site_run(tmp_path, hosts):
    head = next(iter(hosts.values()))
    name, address = list(hosts.items())[2]
    # A frozen raylet: its process stays, so neither `ray start --block` nor systemd notices;
    # Ray marks the node DEAD after its health checks and nothing brings it back.
    ssh(address, "kill -STOP $(pgrep -x raylet)")
    try:
        status, report = run_status(tmp_path, ray_check_timeout=10)
        assert status.rc != 0
        problems = "\n".join(report["problems"])
        assert name in problems and "rank 2" in problems, problems
        deadline = time.monotonic() + 180
        while address in gcs_alive(head, timeout=5).values():
            assert time.monotonic() < deadline, f"the GCS still lists {name} ALIVE after 180 s"
            time.sleep(5)
        assert ssh(address, "systemctl is-active rlinf-ray").stdout.strip() == "active"
        run = run_playbook("site.yml", tmp_path)
        assert run.rc == 0, run.stdout[-3000:]
        # site.yml restarted exactly that worker (the head's GCS did not have it ALIVE).
        changed = {n: run.changed().get(n, 0) for n in hosts}
        assert changed == {n: (1 if n == name else 0) for n in hosts}, changed
    finally:
        # A frozen raylet left behind would stop every later test; SIGCONT is harmless otherwise.
        ssh(address, "kill -CONT $(pgrep -x raylet) || true", check=False)
    status, report = run_status(tmp_path)
    assert status.rc == 0 and report["ok"], report["problems"]
    assert [n["state"] for n in report["nodes"]] == ["ALIVE"] * len(hosts)


def test_host_unreachable_mid_run_is_named_and_the_others_finish(tmp_path, hosts):
    (head_name, head), (other_name, other), (lost_name, _) = hosts.items()
    container = lab_container(lost_name)
    reached_by = {}

    def on_event(event):
        data = event.get("event_data") or {}
        # A host reached a task when it ran it or skipped it (nothing to change): it was still in the run.
        if event.get("event") in ("runner_on_ok", "runner_on_skipped"):
            reached_by.setdefault(data.get("host"), []).append(data.get("task"))
        return True

    # Something to write on every node after the pause, that restarts nothing: the login snippet
    # (not a file Ray reads). On a node with nothing to write, a no-op run reaches the lost host
    # again only through the head's view of it, which depends on how fast Ray sees it gone.
    for address in hosts.values():
        ssh(address, f"echo '# edited by the drill' >> {PROFILE}")
    try:
        # Paused after validation and preflight (which refuse an unreachable host up front), before the
        # first task of the Python environment, when the run has started changing nodes.
        run = run_playbook(
            "site.yml",
            tmp_path,
            events=True,
            event_handler=on_event,
            extravars={"ray_check_timeout": 10},
            pause_at_role=(container, "python_env"),
        )
        paused = f"pause_at_role: paused {container} before the task"
        assert paused in run.stdout, "the run never reached the Python environment"
        assert run.rc != 0
        assert f"fatal: [{lost_name}]: UNREACHABLE!" in run.stdout, run.stdout[-3000:]
        said = " ".join(run.stdout.split())
        assert f"{lost_name}: failed or became unreachable during this run" in said, run.stdout[-3000:]
        assert f"Make {lost_name} reachable" in said and "then re-run site.yml" in said
        # The other hosts went on past the lost one: they wrote their files (after the pause) and
        # the check ran on the head. (Their GPU read has no event: the node read read the GPUs and
        # a meta task ends the GPU play for them.)
        written = "Write this node's files and the directories Ray may write (only what differs)"
        assert written in reached_by.get(head_name, []) and written in reached_by.get(other_name, [])
        assert "Check the Ray cluster against the inventory" in reached_by.get(head_name, [])
        assert "Check the Ray cluster against the inventory" not in reached_by.get(lost_name, [])
        for address in (head, other):
            assert ssh(address, "systemctl is-active rlinf-ray").stdout.strip() == "active"
        assert {head, other} <= set(probe_cluster(head))
        # The others' snippets were written back as the plan renders them.
        for address in (head, other):
            assert "edited by the drill" not in ssh(address, f"cat {PROFILE}").stdout
    finally:
        subprocess.run(["podman", "unpause", container], capture_output=True)
    repaired_by_site(tmp_path, hosts)


PURGE_EASYTIER = """
- name: Remove the drill's EasyTier overlay
  hosts: ray_head:ray_workers:easytier_bootstrap
  gather_facts: false
  tasks:
    - name: Purge EasyTier
      ansible.builtin.include_role:
        name: rlinf.cluster.easytier
        tasks_from: purge.yml
"""


def overlay_inventory(tmp_path, hosts, network_secret):
    """The lab with an EasyTier overlay: the head is the bootstrap, Ray runs on overlay IPs."""
    head_name = next(iter(hosts))
    overlay_vars = {
        "easytier_enabled": True,
        "easytier_network_name": "rlinf-drill",
        "easytier_network_secret": network_secret,
    }

    def add_overlay(groups):
        groups["easytier_bootstrap"] = {"hosts": {head_name: None}}
        for group in groups.values():
            group["vars"] = dict(group.get("vars") or {}, **overlay_vars)

    return write_inventory(tmp_path, add_overlay)


def unit_pid(address: str, unit: str) -> tuple[str, str]:
    out = ssh(address, f"systemctl is-active {unit}; systemctl show -p MainPID --value {unit}", check=False)
    state, pid = [*out.stdout.split(), "", ""][:2]
    return state, pid


def test_killed_easytier_is_restarted_by_systemd_and_ray_recovers_over_the_overlay(tmp_path, hosts):
    network_secret = f"rlinf-drill-TEST-ONLY-{secrets.token_hex(16)}"
    inventory = overlay_inventory(tmp_path, hosts, network_secret)
    name, address = list(hosts.items())[1]
    try:
        run, report = run_site(tmp_path, inventory, events=True)
        assert run.rc == 0, run.stdout[-3000:]
        assert report["ok"], report["problems"]
        assert all(n["ip"].startswith("10.144.") for n in report["nodes"]), report["nodes"]

        state, before = unit_pid(address, "easytier")
        assert state == "active" and before != "0"
        ssh(address, "systemctl kill -s KILL easytier")
        deadline = time.monotonic() + 90
        while True:
            state, pid = unit_pid(address, "easytier")
            if state == "active" and pid not in ("0", before):
                break
            assert time.monotonic() < deadline, f"{name}: easytier not back within 90 s ({state}, PID {pid})"
            time.sleep(2)
        # Ray over the overlay is whole again within the check's bounded wait.
        status, report = run_status(tmp_path, inventory, events=True, ray_check_timeout=120)
        assert status.rc == 0 and report["ok"], report["problems"]
        assert [n["state"] for n in report["nodes"]] == ["ALIVE"] * len(hosts)

        # The network secret: never in the Ansible output, only in 0600 files on the nodes.
        assert network_secret not in run.stdout
        leaks = {}
        runner_files = controller_files_holding(network_secret.encode(), *tmp_path.glob("runner-*"))
        if runner_files:
            leaks["ansible-runner output"] = runner_files
        for host, host_address in hosts.items():
            audit = node_audit(host_address, network_secret)
            assert audit["files"], f"{host}: the secret is in no file (is the overlay configured?)"
            leaks.update(node_leaks(host, audit))
        assert not leaks, f"the EasyTier secret leaked: {leaks}"
    finally:
        # Back to the lab's own addresses first (Ray leaves the overlay), then remove EasyTier.
        back = run_playbook("site.yml", tmp_path)
        purge = run_playbook(str(write_purge(tmp_path)), tmp_path, inventory=inventory)
    assert back.rc == 0, back.stdout[-3000:]
    assert purge.rc == 0, purge.stdout[-3000:]
    # Purge removed what the overlay's manifest listed: unit, config (the secret), venv, device.
    for host, host_address in hosts.items():
        left = ssh(host_address, f"ls -d {' '.join(OVERLAY_PATHS)} 2>/dev/null", check=False).stdout.split()
        assert left == [], f"{host}: the overlay's purge left {left}"
        assert network_secret not in ssh(host_address, "cat /etc/rlinf/*/*.toml 2>/dev/null", check=False).stdout
    repaired_by_site(tmp_path, hosts)


# What the overlay's role creates on a member (its defaults), all gone after its purge.
OVERLAY_PATHS = (
    "/etc/systemd/system/easytier.service",
    "/etc/rlinf/easytier",
    "/opt/rlinf/easytier",
    "/etc/rlinf/state/easytier.manifest.json",
    "/etc/rlinf/state/easytier.device",
    "/sys/class/net/et0",
)
THEIR_UNIT = "/etc/systemd/system/easytier.service"
THEIR_UNIT_TEXT = "[Unit]\nDescription=the operator's own EasyTier\n[Service]\nExecStart=/bin/true\n"


def test_the_overlay_never_replaces_or_purges_an_operators_easytier_unit_or_device(tmp_path, hosts):
    inventory = overlay_inventory(tmp_path, hosts, f"rlinf-drill-TEST-ONLY-{secrets.token_hex(16)}")
    name, address = list(hosts.items())[1]
    try:
        # Their unit, and a bridge (not TUN, like docker0) under the overlay device name, as its record says.
        ssh(
            address,
            f"printf %s {shlex.quote(THEIR_UNIT_TEXT)} > {THEIR_UNIT} && ip link add et0 type bridge"
            " && mkdir -p /etc/rlinf/state && echo et0 > /etc/rlinf/state/easytier.device",
        )
        run = run_playbook("site.yml", tmp_path, inventory=inventory)
        assert run.rc != 0
        assert f"{THEIR_UNIT} exists and rlinf-ansible did not write it" in run.stdout, run.stdout[-3000:]
        assert f"fatal: [{name}]" in run.stdout
        assert "systemctl disable --now easytier" in run.stdout
        # Refused before any member changed: no overlay install anywhere, their unit as it was.
        for host, host_address in hosts.items():
            made = ssh(host_address, "ls -d /opt/rlinf/easytier /etc/rlinf/easytier 2>/dev/null", check=False).stdout
            assert made == "", f"{host}: the refused run installed {made.split()}"
        assert ssh(address, f"cat {THEIR_UNIT}").stdout == THEIR_UNIT_TEXT

        purge = run_playbook(str(write_purge(tmp_path)), tmp_path, inventory=inventory)
        assert purge.rc == 0, purge.stdout[-3000:]
        assert ssh(address, f"cat {THEIR_UNIT}").stdout == THEIR_UNIT_TEXT
        kept = ssh(address, "ip -o link show et0", check=False)
        assert kept.returncode == 0, "purge deleted a device that is not TUN"
    finally:
        ssh(
            address,
            f"rm -f {THEIR_UNIT} /etc/rlinf/state/easytier.device; ip link delete et0; systemctl daemon-reload",
            check=False,
        )


def write_purge(tmp_path):
    playbook = tmp_path / "purge-easytier.yml"
    playbook.write_text(PURGE_EASYTIER)
    return playbook
