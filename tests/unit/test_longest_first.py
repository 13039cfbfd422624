"""The lab suite's module order (tests/integration/longest_first.py): pure logic, no labs."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "integration"))

from longest_first import junit_durations, order

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.integration.test_drills" name="test_a" time="100.5" />
<testcase classname="tests.integration.test_drills" name="test_b" time="20.0" />
<testcase classname="tests.integration.test_status.TestTable" name="test_c" time="7.25" />
<testcase classname="tests.integration.test_status" name="test_d" time="3.0" />
</testsuite></testsuites>"""


def test_a_module_is_the_sum_of_its_tests_and_its_classes():
    assert junit_durations(JUNIT) == {
        "tests/integration/test_drills.py": 120.5,
        "tests/integration/test_status.py": 10.2,
    }


def test_the_longest_goes_first_and_one_not_measured_counts_as_the_mean():
    durations = {"a.py": 300.0, "b.py": 100.0, "c.py": 10.0}
    assert order(["c.py", "new.py", "a.py", "b.py"], durations) == ["a.py", "new.py", "b.py", "c.py"]


def test_without_figures_the_order_is_by_name():
    assert order(["b.py", "a.py"], {}) == ["a.py", "b.py"]
