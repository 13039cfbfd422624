"""module_utils/child_read.py: a read in a child process, collected as the JSON object it printed last or as
the reason there is none."""

from __future__ import annotations

import sys

from ansible_collections.rlinf.cluster.plugins.module_utils.child_read import ChildRead


def child(code: str) -> ChildRead:
    return ChildRead([sys.executable, "-c", code])


def test_the_last_line_printed_is_the_result():
    assert child("print('starting'); print('{\"a\": 1}')").result(10) == {"a": 1}


def test_an_object_printed_before_a_failing_exit_is_still_the_result():
    assert child('import sys; print(\'{"error": "no GCS"}\'); sys.exit(1)').result(10) == {"error": "no GCS"}


def test_output_that_is_no_object_is_reported_with_what_the_child_said():
    assert child("import sys; print('[1]'); sys.stderr.write('Traceback: boom')").result(10) == {
        "error": "Traceback: boom [1]"
    }


def test_a_silent_child_is_reported_by_its_exit_status():
    assert child("import sys; sys.exit(3)").result(10) == {"error": "exit status 3"}


def test_a_child_that_does_not_end_in_time_is_killed_and_named_so():
    read = child("import time; time.sleep(30)")
    assert read.result(0.5) == {"error": "no answer within 0.5 s"}
    assert read.proc.returncode is not None


def test_a_program_that_cannot_start_is_named(tmp_path):
    assert ChildRead([str(tmp_path / "missing")]).result(10)["error"].startswith("FileNotFoundError: ")


def test_the_environment_given_is_the_childs_own():
    code = "import os, json; print(json.dumps({'v': os.environ.get('V')}))"
    read = ChildRead([sys.executable, "-c", code], {"V": "x"})
    assert read.result(10) == {"v": "x"}
