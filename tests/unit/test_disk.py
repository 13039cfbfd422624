"""Free space on Ray's temp dir and the venv: the read, the thresholds, and where preflight and
status apply them."""

from __future__ import annotations

import os

import pytest
from test_plan import GROUPS, hostvars, probe, probes, problems_of

from ansible_collections.rlinf.cluster.plugins.module_utils import disk
from ansible_collections.rlinf.cluster.plugins.module_utils.cluster_report import build, table
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P

LIMITS = {"warn_percent": 20, "fail_percent": 5, "venv_min_free_mib": 2048}
GIB = 1024**3


def fs(percent, path="/tmp/ray", total=100 * GIB, probed=None):
    free = int(total * percent / 100)
    return {
        "path": path,
        "probed": probed or path,
        "exists": probed in (None, path),
        "total": total,
        "free": free,
        "percent_free": percent,
        "mount": "/",
    }


def test_a_temp_dir_not_created_yet_is_read_at_its_nearest_existing_parent(tmp_path):
    info = disk.usage(str(tmp_path / "ray" / "session_latest"))
    st = os.statvfs(tmp_path)
    assert info["probed"] == str(tmp_path) and info["exists"] is False
    assert info["total"] == st.f_blocks * st.f_frsize and info["free"] > 0
    assert 0 < info["percent_free"] <= 100 and os.path.ismount(info["mount"])
    assert disk.usage(str(tmp_path))["exists"] is True


@pytest.mark.parametrize(
    ("percent", "fails", "warns"),
    [(4.9, True, False), (5, False, True), (19.9, False, True), (20, False, False), (85, False, False)],
)
def test_below_fail_fails_below_warn_warns_and_the_boundary_passes(percent, fails, warns):
    problems, warnings = disk.judge("w1", {"temp_dir": fs(percent)}, LIMITS)
    assert bool(problems) is fails and bool(warnings) is warns, (problems, warnings)
    for sentence in problems + warnings:
        assert sentence.startswith("w1: Ray's temp dir /tmp/ray has")
        assert f"{percent:g}% free" in sentence
        assert "/tmp/ray/session_*" in sentence and "ray_temp_dir" in sentence
    if fails:
        assert "rlinf_disk_fail_percent=5%" in problems[0]
    if warns:
        assert "rlinf_disk_warn_percent=20%" in warnings[0]


def test_a_missing_temp_dir_is_judged_on_its_parents_filesystem_and_says_so():
    problems, _ = disk.judge("w1", {"temp_dir": fs(2, path="/var/tmp/ray", probed="/var/tmp")}, LIMITS)
    assert "Ray's temp dir /var/tmp/ray (not created yet; its filesystem at /var/tmp)" in problems[0]
    assert "/var/tmp/ray/session_*" in problems[0]


def test_a_new_venv_needs_the_install_size_free_an_existing_one_does_not():
    small = fs(50, path="/opt/rlinf/venv", total=2 * GIB, probed="/opt")  # 1 GiB free, 50%
    problems, warnings = disk.judge("h", {"venv": small}, LIMITS, venv_installs=True)
    assert not warnings and len(problems) == 1
    assert problems[0].startswith("h: the venv /opt/rlinf/venv (not created yet; its filesystem at /opt)")
    assert "1.0G free, less than the 2.0G" in problems[0] and "rlinf_disk_venv_min_free_mib=2048" in problems[0]
    assert "rlinf_venv_dir at a bigger disk" in problems[0]
    assert disk.judge("h", {"venv": small}, LIMITS, venv_installs=False) == ([], [])


def test_the_venv_filesystem_gets_the_same_percentages():
    problems, _ = disk.judge("h", {"venv": fs(3, path="/opt/rlinf/venv")}, LIMITS)
    assert "the venv /opt/rlinf/venv has only 3% free" in problems[0] and "rlinf_venv_dir" in problems[0]


def test_an_unreadable_filesystem_is_a_warning_not_a_guess():
    _, warnings = disk.judge("h", {"temp_dir": {"path": "/tmp/ray", "error": "cannot statvfs /tmp"}}, LIMITS)
    assert warnings == ["h: the free space of Ray's temp dir /tmp/ray could not be read (cannot statvfs /tmp)."]


def test_the_thresholds_are_percentages_and_fail_is_below_warn():
    found = problems_of(lambda: P.static_plan(GROUPS, hostvars(h={"rlinf_disk_warn_percent": 101})))
    assert any("rlinf_disk_warn_percent" in s and "101" in s for s in found), found
    both = {"rlinf_disk_warn_percent": 10, "rlinf_disk_fail_percent": 10}
    found = problems_of(lambda: P.static_plan(GROUPS, hostvars(**{n: both for n in ("h", "w1", "w2")})))
    assert any("rlinf_disk_fail_percent=10 is not below rlinf_disk_warn_percent=10" in s for s in found), found
    off = {"rlinf_disk_warn_percent": 0, "rlinf_disk_fail_percent": 0}
    assert P.static_plan(GROUPS, hostvars(**{n: off for n in ("h", "w1", "w2")}))["cluster"]["disk"] == {
        "warn_percent": 0,
        "fail_percent": 0,
        "venv_min_free_mib": 2048,
    }


def test_site_refuses_a_nearly_full_temp_dir_naming_the_host_and_warns_of_a_low_one():
    full = probe("10.0.0.2", disk={"temp_dir": fs(3)})
    found = problems_of(lambda: P.resolve(P.static_plan(GROUPS, hostvars()), probes(w1=full), "site"))
    assert any(s.startswith("host 'w1'") and "Ray's temp dir /tmp/ray has only 3% free" in s for s in found), found
    low = probe("10.0.0.2", disk={"temp_dir": fs(12)})
    plan = P.resolve(P.static_plan(GROUPS, hostvars()), probes(w1=low), "site")
    assert len(plan["disk_warnings"]) == 1
    assert plan["disk_warnings"][0].startswith("w1: Ray's temp dir /tmp/ray has 12%")


def test_site_refuses_a_new_venv_without_room_but_status_reads_on():
    small = {"venv": fs(50, path="/opt/rlinf/venv", total=2 * GIB, probed="/opt")}
    node = probe("10.0.0.2", disk=small, venv={"exists": False, "satisfied": False, "unsatisfied": []})
    found = problems_of(lambda: P.resolve(P.static_plan(GROUPS, hostvars()), probes(w1=node), "site"))
    assert any(s.startswith("host 'w1'") and "less than the 2.0G the install needs" in s for s in found), found
    # status and teardown must still run on a full disk (they are how an operator finds and fixes it).
    P.resolve(P.static_plan(GROUPS, hostvars(), {"purpose": "status"}), probes(w1=node), "status")


OK_CHECK = {"summary": "OK: 2/2 nodes ALIVE", "problems": [], "nodes": []}
EXPECTED = [{"name": "head", "rank": 0, "ip": "10.0.0.1"}, {"name": "w1", "rank": 1, "ip": "10.0.0.2"}]


def test_status_fails_below_fail_and_warns_below_warn_naming_node_and_path():
    disks = {
        "head": {"temp_dir": fs(12), "venv": fs(60, path="/opt/rlinf/venv")},
        "w1": {"temp_dir": fs(3, path="/var/tmp/ray-small", total=64 * 1024**2), "venv": fs(60)},
    }
    report = build(OK_CHECK, EXPECTED, {}, "head", "10.0.0.1:6379", "t", disks=disks, disk_limits=LIMITS)
    assert not report["ok"] and report["summary"] == "FAILED: 2/2 nodes ALIVE; but 1 disk problem"
    assert report["problems"][0].startswith("w1: Ray's temp dir /var/tmp/ray-small has only 3% free (1.9M of 64.0M)")
    assert report["nodes"][1]["problems"] == report["problems"]
    assert report["warnings"][0].startswith("head: Ray's temp dir /tmp/ray has 12% free")
    assert report["nodes"][0]["disk"]["venv"]["percent_free"] == 60
    lines = table(report)
    assert lines[1].split()[-4:] == ["12%", "12.0G", "60%", "60.0G"]
    assert lines[-1].startswith("- warning: head: Ray's temp dir /tmp/ray has 12% free")


def test_a_healthy_disk_only_shows_its_free_space():
    disks = {"head": {"temp_dir": fs(20), "venv": fs(90)}}
    report = build(OK_CHECK, EXPECTED, {}, "head", "10.0.0.1:6379", "t", disks=disks, disk_limits=LIMITS)
    assert report["ok"] and report["warnings"] == [] and report["problems"] == []
    assert table(report)[2].split()[-2:] == ["?", "?"]
