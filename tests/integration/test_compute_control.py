"""RLinf's single-machine layout (issue 24 item 5; RLinf PR #1457, the Franka single-machine
guide, ray_utils/realworld/setup_compute_node.sh and setup_franka_node.sh): one host runs a
compute head (rank 0, its own venv, ``--temp-dir /tmp/rlinf_compute``) and a control node
(rank 1, another venv, ``/tmp/rlinf_control``). The lab has no GPUs, so both declare
``rlinf_gpus_per_node: 0``; the inventory's shape is the guide's. Site, status and readiness
pass on it, each Ray node runs from its own venv and temp dir, and the lab's cluster is
restored afterwards."""

from __future__ import annotations

import pytest
from lab_helpers import lab_hosts, purge_node, run_playbook, run_status, ssh, write_inventory

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

COMPUTE = {
    "rlinf_gpus_per_node": 0,
    "rlinf_venv_dir": "/opt/rlinf/compute-venv",
    "ray_temp_dir": "/tmp/rlinf_compute",
}
CONTROL = {
    "rlinf_gpus_per_node": 0,
    "rlinf_venv_dir": "/opt/rlinf/control-venv",
    "ray_temp_dir": "/tmp/rlinf_control",
    "ray_port": 6390,
    "ray_node_unit_name": "rlinf-ray-control",
    "rlinf_env_file": "/etc/rlinf/rlinf-control.env",
    "rlinf_env_profile_script": "/etc/profile.d/rlinf-control.sh",
}


def test_compute_and_control_nodes_on_one_machine(tmp_path):
    hosts = lab_hosts()
    names = list(hosts)
    head_name, head = names[0], hosts[names[0]]
    control = f"{head_name}-control"

    def compute_and_control(groups):
        groups["ray_head"]["hosts"][head_name].update(COMPUTE)
        # The control node is rank 1, as in the guide; the lab's other hosts follow it.
        workers = groups["ray_workers"]["hosts"]
        groups["ray_workers"]["hosts"] = {control: {"ansible_host": head, **CONTROL}, **workers}

    inventory = write_inventory(tmp_path, compute_and_control)
    try:
        # Moving the running lab cluster to this layout restarts its head on a new venv; the restart
        # guard reads the job table with the head's planned Python, which is not installed yet.
        run = run_playbook("site.yml", tmp_path, inventory=inventory, extravars={"rlinf_allow_restart": True})
        assert run.rc == 0, run.stdout[-3000:]
        units = ssh(head, "systemctl is-active rlinf-ray rlinf-ray-control", check=False).stdout.split()
        assert units == ["active", "active"], units
        # Each Ray node runs from its own venv and keeps its own temp dir.
        for unit, venv, temp in (
            ("rlinf-ray", "/opt/rlinf/compute-venv", "/tmp/rlinf_compute"),
            ("rlinf-ray-control", "/opt/rlinf/control-venv", "/tmp/rlinf_control"),
        ):
            start = ssh(head, f"systemctl show -p ExecStart --value {unit}").stdout
            assert f"{venv}/bin/python" in start and f"--temp-dir={temp}" in start, (unit, start)
            assert ssh(head, f"test -d {temp}/session_latest", check=False).returncode == 0, f"{temp} unused"

        status, report = run_status(tmp_path, inventory=inventory, rlinf_readiness=True)
        assert status.rc == 0 and report["ok"], report["problems"]
        expected = [head_name, control, *names[1:]]
        assert [(n["name"], n["rank"], n["state"]) for n in report["nodes"]] == [
            (name, rank, "ALIVE") for rank, name in enumerate(expected)
        ]
    finally:
        purge_node(tmp_path, inventory, control)
        # The lab's own cluster again: the head back on the default venv and temp dir.
        back = run_playbook("site.yml", tmp_path, extravars={"rlinf_allow_restart": True})
        assert back.rc == 0, back.stdout[-3000:]
    left = ssh(head, "ls -d /etc/rlinf/rlinf-control.env /etc/systemd/system/rlinf-ray-control.service", check=False)
    assert left.stdout == "", f"purge left the control node's files: {left.stdout}"
