"""lab/cpu_use.py's report: CPU seconds per container group and for the controller, from a recording."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("cpu_use", ROOT / "lab" / "cpu_use.py")
cpu_use = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cpu_use)


def sample(t, busy, containers):
    # Two cores: the machine's total CPU time grows by 2 s each second.
    return {"t": t, "busy": busy, "total": 2.0 * t, "load": 1.0, "containers": containers}


def test_groups_count_what_each_used_while_recorded_and_the_rest_is_the_controllers(tmp_path):
    recording = tmp_path / "cpu.jsonl"
    samples = [
        sample(0, 100.0, {"rlinf-lab-head": 50.0, "rlinf-lab-b-head": 10.0}),
        sample(300, 400.0, {"rlinf-lab-head": 150.0, "rlinf-lab-b-head": 40.0, "rlinf-mol-ce-edge1": 30.0}),
        # The molecule container is gone: what it had used at its last sample stays counted.
        sample(600, 700.0, {"rlinf-lab-head": 200.0, "rlinf-lab-b-head": 60.0}),
    ]
    recording.write_text("".join(json.dumps(s) + "\n" for s in samples))
    lines = cpu_use.report(recording, window=300).splitlines()
    assert lines[0] == "cpu: 600 s wall, 600 CPU s used of 1200 (50% busy)"
    # 600 busy, of which 150 lab A, 50 lab B, 30 molecule: 370 for everything outside a container.
    assert lines[1] == "cpu:   controller and host (not in a container) 370 CPU s"
    assert lines[2:5] == [
        "cpu:   lab A 150 CPU s",
        "cpu:   lab B 50 CPU s",
        "cpu:   molecule cloud-edge 30 CPU s",
    ]
    assert lines[5:] == ["cpu:        0-   300 s:  50% busy, load 1.0", "cpu:      300-   600 s:  50% busy, load 1.0"]


def test_lab_b_and_the_fleet_are_not_counted_as_lab_a():
    assert cpu_use.group_of("rlinf-lab-b-worker1") == "lab B"
    assert cpu_use.group_of("rlinf-lab-fleet-head") == "fleet scenario"
    assert cpu_use.group_of("rlinf-lab-worker2") == "lab A"
    assert cpu_use.group_of("rlinf-mol-default-head") == "molecule default"
    assert cpu_use.group_of("rdev-head") == "other containers"


def test_a_containers_cgroup_is_found_under_either_name_and_its_cpu_read(tmp_path, monkeypatch):
    scope = tmp_path / "libpod-abc.scope"
    scope.mkdir()
    (scope / "cpu.stat").write_text("usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n")
    monkeypatch.setattr(cpu_use, "CGROUP_ROOTS", (tmp_path / "absent", tmp_path))
    stat = cpu_use.cgroup_cpu_stat("abc")
    assert stat == scope / "cpu.stat" and cpu_use.cpu_seconds(stat) == 2.5
    assert cpu_use.cgroup_cpu_stat("other") is None
