"""bench/bringup.py's table of issue 28's targets: each figure against its bound, met or not."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bringup", ROOT / "bench" / "bringup.py")
bringup = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bringup)

FIGURES = {
    "no-op": {"seconds": 4.8, "changed": 0},
    "ratio restart/raw": {"seconds": 1.2},
    "raw 2 nodes": {"seconds": 10.0},
    "bring-up 2 nodes": {"seconds": 12.0, "controller cpu": 2.0},
    "raw 8 nodes": {"seconds": 20.0},
    "bring-up 8 nodes": {"seconds": 26.0, "controller cpu": 6.4},
}


def test_each_target_is_its_figure_against_its_bound():
    assert bringup.targets(FIGURES) == [
        ("site.yml from stopped / raw, life-cycle lab", "1.20x", "<= 1.15x", "NO"),
        ("site.yml from stopped / raw, 8 nodes", "1.30x", "<= 1.3x", "yes"),
        ("controller CPU per host, 8 nodes", "0.80 s", "<= 0.8 s", "yes"),
        ("no-op site.yml", "4.8 s, changed=0", "<= 5.0 s, changed=0", "yes"),
    ]


def test_a_fast_no_op_that_changed_something_misses_its_target():
    rows = bringup.targets({"no-op": {"seconds": 3.0, "changed": 2}})
    assert rows == [("no-op site.yml", "3.0 s, changed=2", "<= 5.0 s, changed=0", "NO")]


def test_cpu_ratios_add_the_hosts_and_the_controller_for_each_size():
    figures = {
        "raw": {"seconds": 9.2, "node cpu": 11.5, "controller cpu": 0.8},
        "restart": {"seconds": 13.6, "node cpu": 14.4, "controller cpu": 4.3},
        "raw 8 nodes": {"seconds": 15.1, "node cpu": 24.0, "controller cpu": 1.0},
        "bring-up 8 nodes": {"seconds": 23.9, "node cpu": 33.6, "controller cpu": 6.1},
    }
    assert bringup.cpu_ratios(figures) == [("life-cycle lab", 18.7, 12.3), ("8 nodes", 39.7, 25.0)]


def test_changed_count_adds_the_play_recap_of_every_host():
    stdout = (
        "TASK [x] ***\nchanged: [head]\n\nPLAY RECAP *********\n"
        "head                       : ok=35   changed=2    unreachable=0    failed=0    skipped=23\n"
        "worker1                    : ok=24   changed=1    unreachable=0    failed=0    skipped=8\n"
        "worker2                    : ok=24   changed=0    unreachable=0    failed=0    skipped=8\n"
        "\nTASKS RECAP ****\nMonday 07 December 2026  12:31:26 +0000 (0:00:00.026)       0:00:05.225 ***\n"
    )
    assert bringup.changed_count(stdout) == 3
