"""The restart guard's first step (roles/restart_guard, the cluster_plan action's stage=restarts):
whether any node would restart, which alone decides whether the drivers are read at all."""

from __future__ import annotations

from pathlib import Path

import yaml
from test_plan import GROUPS, hostvars

from ansible_collections.rlinf.cluster.plugins.action.cluster_plan import ActionModule
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P

ROOT = Path(__file__).resolve().parents[2]
ARGS = {
    "plan": None,
    "probe_var": "rlinf_probe",
    "files_var": "ray_node_files_check",
    "code_var": "code_sync_install_needed",
    "every": "",
    "drivers": None,
    "allow": False,
}


def stage_restarts(per_host, drivers=None):
    """The action's stage=restarts over three running nodes; ``per_host`` adds a host's facts."""
    names = ["h", "w1", "w2"]
    facts = {n: {"rlinf_probe": {"unit": {"active": "active"}, "venv": {"satisfied": True}}} for n in names}
    for name, extra in per_host.items():
        facts[name].update(extra)
    args = dict(ARGS, plan=P.static_plan(GROUPS, hostvars()), drivers=drivers)
    return ActionModule._restarts(None, args, {"hostvars": facts, "ansible_play_hosts": names})


def test_a_run_that_restarts_nothing_needs_no_driver_read():
    result = stage_restarts({"w1": {"ray_node_files_check": {"restart": False, "changed_paths": ["/x"]}}})
    assert result == {"changed": False, "restarts": {}, "restart_needed": False, "stop_first": []}


def test_a_file_that_restarts_ray_needs_the_driver_read():
    result = stage_restarts(
        {"w1": {"ray_node_files_check": {"restart": True, "changed_paths": ["/etc/rlinf/rlinf.env"]}}}
    )
    assert result["restart_needed"] is True
    assert result["restarts"] == {"w1": ["its files change (/etc/rlinf/rlinf.env)"]}
    assert "refused" not in result  # no drivers given: this is the first step, no verdict yet


def test_a_venv_or_a_code_wheel_needs_the_driver_read_and_a_restarted_head_takes_the_workers():
    venv = {"rlinf_probe": {"unit": {"active": "active"}, "venv": {"satisfied": False, "unsatisfied": ["ray: 2.59"]}}}
    result = stage_restarts({"h": venv, "w2": {"code_sync_install_needed": True}})
    assert result["restart_needed"] is True
    assert result["restarts"] == {
        "h": ["its venv changes (ray: 2.59)"],
        "w1": ["the head restarts (workers rejoin a new head only when restarted)"],
        "w2": [
            "a new code-sync wheel is installed into its venv",
            "the head restarts (workers rejoin a new head only when restarted)",
        ],
    }
    # Stopped before the head goes, the workers do not spin against a GCS that is gone.
    assert result["stop_first"] == ["w1", "w2"]


def test_only_a_restarting_head_stops_the_workers_first():
    files = {"ray_node_files_check": {"restart": True, "changed_paths": ["/etc/rlinf/rlinf.env"]}}
    assert stage_restarts({"w1": files})["stop_first"] == []
    stopped_worker = {"rlinf_probe": {"unit": {"active": "inactive"}, "venv": {"satisfied": True}}}
    result = stage_restarts({"h": files, "w2": stopped_worker})
    assert list(result["restarts"]) == ["h", "w1"]
    assert result["stop_first"] == ["w1"]


def test_a_stopped_node_only_starts_and_needs_no_driver_read():
    stopped = {"rlinf_probe": {"unit": {"active": "inactive"}, "venv": {"satisfied": False}}}
    result = stage_restarts({"h": stopped, "w1": {"code_sync_install_needed": False}})
    assert result["restart_needed"] is False


def test_the_judgement_with_drivers_refuses_and_names_them():
    files = {"ray_node_files_check": {"restart": True, "changed_paths": ["/etc/rlinf/rlinf.env"]}}
    launch = {"kind": "launch", "unit": "rlinf-launch-train"}
    result = stage_restarts({"w2": files}, drivers=[launch])
    assert result["refused"] is True
    assert result["msg"].startswith("An RLinf driver is attached to the cluster: RLinf driver rlinf-launch-train")
    assert stage_restarts({}, drivers=[launch]) | {"restarts": None} == {
        "changed": False,
        "restarts": None,
        "restart_needed": False,
        "stop_first": [],
        "refused": False,
        "msg": "no Ray node restarts in this run",
    }


def test_the_role_ends_before_reading_drivers_when_no_node_restarts():
    tasks = yaml.safe_load((ROOT / "roles/restart_guard/tasks/main.yml").read_text())
    plan_step, end_step, judge = tasks
    assert plan_step["rlinf.cluster.cluster_plan"]["stage"] == "restarts"
    assert "drivers" not in plan_step["rlinf.cluster.cluster_plan"]
    assert plan_step["register"] == "restart_guard_planned"
    assert end_step["ansible.builtin.meta"] == "end_role"
    assert end_step["when"] == "not restart_guard_planned.restart_needed"
    assert judge["ansible.builtin.include_tasks"] == "judge.yml"
    judged = yaml.safe_load((ROOT / "roles/restart_guard/tasks/judge.yml").read_text())
    assert "rlinf.cluster.ray_drivers" in judged[0]
