"""ray_drivers: the running launch units and the live jobs of the GCS, each driver once; a fake
GCS client and systemctl are the only mocks."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from module_docs import assert_read_only_module_documented
from module_results import ExitJson

from ansible_collections.rlinf.cluster.plugins.module_utils import ray_drivers as D
from ansible_collections.rlinf.cluster.plugins.modules import ray_drivers as mod


def test_the_launch_unit_is_read_from_a_cgroup():
    text = "0::/system.slice/rlinf-launch-20261201-1300.service\n"
    assert D.unit_of_cgroup(text) == "rlinf-launch-20261201-1300"
    assert D.unit_of_cgroup("0::/system.slice/rlinf-ray.service\n") == ""
    v1 = "12:pids:/system.slice/rlinf-launch-a.service\n11:memory:/system.slice/rlinf-launch-a.service\n1:cpu:/\n"
    assert D.unit_of_cgroup(v1) == "rlinf-launch-a"
    assert D.unit_of_cgroup("0::/user.slice/user-0.slice/session-3.scope\n") == ""


def test_a_job_of_a_launch_unit_is_shown_with_it_and_the_others_alone():
    units = [{"unit": "rlinf-launch-a", "entry": "bash run.sh"}]
    jobs = [
        {"job_id": "02000000", "driver_ip": "10.0.0.1", "driver_pid": 10, "namespace": "RLinf", "entrypoint": "a"},
        {"job_id": "03000000", "driver_ip": "10.0.0.2", "driver_pid": 20, "entrypoint": "x " * 200},
    ]
    found = D.drivers(units, jobs, lambda ip, pid: "rlinf-launch-a" if pid == 10 else "")
    assert found[0] == {"unit": "rlinf-launch-a", "entry": "bash run.sh", "kind": "launch", "job_id": "02000000"}
    assert found[1]["kind"] == "ray" and found[1]["job_id"] == "03000000" and found[1]["driver_pid"] == 20
    assert len(found[1]["command"]) == 160 and found[1]["command"].endswith("...")
    assert len(found) == 2


def test_dead_jobs_are_not_drivers():
    jobs = [{"job_id": "01", "is_dead": True}, {"job_id": "02", "is_dead": False}]
    assert [j["job_id"] for j in D.live_jobs(jobs)] == ["02"]


class JobID(bytes):
    pass


def job(job_id, dead, pid, namespace, entrypoint, ip="10.0.0.1"):
    data = SimpleNamespace(
        is_dead=dead,
        driver_ip_address=ip,
        driver_pid=pid,
        config=SimpleNamespace(ray_namespace=namespace),
        entrypoint=entrypoint,
    )
    return JobID(bytes.fromhex(job_id)), data


class FakeClient:
    def __init__(self, jobs=(), error=None):
        self.jobs = dict(jobs)
        self.error = error

    def get_all_job_info(self, timeout=None):
        if self.error:
            raise self.error
        return self.jobs


def run(monkeypatch, tmp_path, client, units=(), **params):
    def run_command(self, argv):
        assert argv[:2] == ["systemctl", "list-units"]
        return 0, "".join(f"{u}.service loaded active running RLinf driver\n" for u in units), ""

    monkeypatch.setattr(AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(mod, "gcs_client", lambda address: client)
    args = {"address": "10.0.0.1:6379", "node_ip": "10.0.0.1", "state_dir": str(tmp_path), **params}
    with patch_module_args(args), pytest.raises(ExitJson) as exc:
        mod.main()
    return exc.value.args[0]


def test_the_module_lists_running_units_with_their_record_and_live_jobs(monkeypatch, module_exits, tmp_path):
    (tmp_path / "rlinf-launch-a.json").write_text(
        json.dumps({"unit": "rlinf-launch-a", "entry": "bash run.sh", "started_at": "T0", "log": "/l"})
    )
    client = FakeClient(
        [job("01000000", True, 5, "rlinf_cluster_check", "check"), job("02000000", False, 99, "RLinf", "python t.py")]
    )
    result = run(monkeypatch, tmp_path, client, units=["rlinf-launch-a"])
    assert result["gcs_error"] == ""
    assert result["drivers"][0]["unit"] == "rlinf-launch-a" and result["drivers"][0]["entry"] == "bash run.sh"
    # pid 99 is not a process of this test's machine in a launch unit: shown on its own.
    assert [d["job_id"] for d in result["drivers"][1:]] == ["02000000"]
    assert result["drivers"][1]["namespace"] == "RLinf"


def test_nothing_attached_is_an_empty_list(monkeypatch, module_exits, tmp_path):
    assert run(monkeypatch, tmp_path, FakeClient())["drivers"] == []


def test_an_unreadable_job_table_of_a_running_head_is_a_possible_driver(monkeypatch, module_exits, tmp_path):
    result = run(monkeypatch, tmp_path, FakeClient(error=ConnectionError("refused")))
    assert result["drivers"] == [
        {"kind": "unreadable", "error": "ConnectionError: refused", "address": "10.0.0.1:6379"}
    ]
    stopped = run(monkeypatch, tmp_path, FakeClient(error=ConnectionError("refused")), head_active=False)
    assert stopped["drivers"] == [] and stopped["gcs_error"] == "ConnectionError: refused"


def test_documentation_matches_the_argument_spec():
    assert_read_only_module_documented(mod, mod.ARGUMENT_SPEC)
