"""What became of a launched run (plugins/module_utils/launch_runs.py and the launch_runs module):
real files in a temporary state directory; only systemctl is replaced."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from module_docs import assert_read_only_module_documented
from module_results import ExitJson

from ansible_collections.rlinf.cluster.plugins.module_utils import launch_runs as L
from ansible_collections.rlinf.cluster.plugins.modules import launch_runs as mod

HYDRA_FAILURE = (
    "Error executing job with overrides: ['runner.max_steps=1']\nTraceback (most recent call last):\n"
    "ValueError: boom\n\nSet the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n"
)
RECORD = {"unit": "rlinf-launch-a", "entry": "bash run.sh", "log": "/var/log/rlinf/a.log", "started_at": "T0"}


def test_running_unit_is_running_whatever_its_log_says():
    run = L.classify(RECORD, {}, "active", HYDRA_FAILURE)
    assert run["state"] == "RUNNING" and run["exit_status"] is None


def test_exit_zero_and_a_clean_log_succeeded():
    run = L.classify(RECORD, {"exit_status": 0, "finished_at": "T1"}, "inactive", "step 1 done\n")
    assert (run["state"], run["exit_status"], run["reason"], run["finished_at"]) == ("SUCCEEDED", 0, "exit 0", "T1")


def test_a_failed_pipeline_is_failed_with_its_status():
    run = L.classify(RECORD, {"exit_status": 1}, "failed", "")
    assert (run["state"], run["exit_status"], run["reason"]) == ("FAILED", 1, "exit 1")


def test_exit_zero_with_hydras_failure_line_is_failed():
    """RLinf main's atexit handler turns Hydra's sys.exit(1) into 0: the log tells the truth."""
    run = L.classify(RECORD, {"exit_status": 0}, "inactive", "...\n" + HYDRA_FAILURE)
    assert run["state"] == "FAILED" and run["exit_status"] == 0
    assert "Hydra reported an exception in the driver" in run["reason"]


def test_a_failed_status_and_a_failure_line_are_both_named():
    run = L.classify(RECORD, {"exit_status": 1}, "failed", HYDRA_FAILURE)
    assert run["reason"].startswith("exit 1; Hydra reported an exception in the driver")


def test_rlinf_worker_failure_line_is_failed():
    text = "Exiting main process due to a failure upon worker execution.\n"
    assert L.classify(RECORD, {"exit_status": 0}, "inactive", text)["state"] == "FAILED"


def test_a_stopped_run_names_the_signal_and_a_killed_one_has_no_status():
    stopped = L.classify(RECORD, {"exit_status": 143}, "inactive", "")
    assert stopped["state"] == "FAILED" and stopped["reason"] == "exit 143, killed by SIGTERM"
    killed = L.classify(RECORD, {}, "inactive", "")
    assert killed["state"] == "FAILED" and killed["exit_status"] is None
    assert "without recording its exit status" in killed["reason"]


def test_the_log_is_read_from_where_this_run_began(tmp_path):
    log = tmp_path / "a.log"
    log.write_text(HYDRA_FAILURE + "rlinf-launch: starting again\nall good\n")
    start = len(HYDRA_FAILURE.encode())
    assert L.failure_marker(L.log_tail(str(log), start)) is None
    assert L.failure_marker(L.log_tail(str(log), 0)) is not None
    assert L.log_tail(str(tmp_path / "missing.log")) == ""


def test_the_line_status_prints():
    run = L.classify(RECORD, {"exit_status": 2}, "failed", "")
    assert L.run_line(run) == "run rlinf-launch-a: FAILED (exit 2), log /var/log/rlinf/a.log"
    running = L.classify(RECORD, {}, "active", "")
    assert L.run_line(running) == "run rlinf-launch-a: RUNNING (since T0), log /var/log/rlinf/a.log"


def write_run(state_dir, log_dir, unit, started, outcome=None, log_text=""):
    log = log_dir / f"{unit}.log"
    log.write_text(log_text)
    record = {"unit": unit, "entry": "bash run.sh", "log": str(log), "started_at": started}
    (state_dir / f"{unit}.json").write_text(json.dumps(record))
    if outcome is not None:
        (state_dir / f"{unit}.outcome.json").write_text(json.dumps(outcome))


def run_module(monkeypatch, state_dir, active=(), **params):
    def run_command(self, argv):
        assert argv[:2] == ["systemctl", "show"]
        blocks = [f"Id={u}.service\nActiveState={'active' if u in active else 'inactive'}\n" for u in argv[4:]]
        return 0, "\n".join(blocks), ""

    monkeypatch.setattr(AnsibleModule, "run_command", run_command)
    with patch_module_args({"state_dir": str(state_dir), **params}), pytest.raises(ExitJson) as exc:
        mod.main()
    return exc.value.args[0]


def test_the_module_lists_every_run_oldest_first(monkeypatch, module_exits, tmp_path):
    state, logs = tmp_path / "launches", tmp_path / "logs"
    state.mkdir()
    logs.mkdir()
    write_run(state, logs, "rlinf-launch-ok", "2026-01-01T00:00:00Z", {"exit_status": 0, "log_offset": 0}, "done\n")
    write_run(state, logs, "rlinf-launch-lie", "2026-01-02T00:00:00Z", {"exit_status": 0}, HYDRA_FAILURE)
    write_run(state, logs, "rlinf-launch-now", "2026-01-03T00:00:00Z")
    result = run_module(monkeypatch, state, active={"rlinf-launch-now"})
    assert [(r["unit"], r["state"]) for r in result["runs"]] == [
        ("rlinf-launch-ok", "SUCCEEDED"),
        ("rlinf-launch-lie", "FAILED"),
        ("rlinf-launch-now", "RUNNING"),
    ]
    assert result["older"] == 0 and len(result["lines"]) == 3
    limited = run_module(monkeypatch, state, active={"rlinf-launch-now"}, limit=1)
    assert [r["unit"] for r in limited["runs"]] == ["rlinf-launch-now"] and limited["older"] == 2


def test_no_state_dir_means_no_run(monkeypatch, module_exits, tmp_path):
    result = run_module(monkeypatch, tmp_path / "none")
    assert result["runs"] == [] and result["lines"] == []


def test_documentation_matches_the_argument_spec():
    assert_read_only_module_documented(mod, mod.ARGUMENT_SPEC)
