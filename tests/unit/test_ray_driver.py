"""The skeleton every Ray-driver module runs its work in (ray_cluster_check, ray_readiness)."""

from __future__ import annotations

import os

from ansible_collections.rlinf.cluster.plugins.module_utils.ray_driver import (
    CheckFailed,
    run_checked,
    split_address,
)


def test_work_that_runs_through_is_no_failure():
    assert run_checked("ray_x", lambda: None) == (None, None)


def test_a_check_that_fails_is_its_own_sentence_without_a_trace():
    def work():
        raise CheckFailed("FAILED: 2/3 nodes ALIVE")

    assert run_checked("ray_x", work) == ("FAILED: 2/3 nodes ALIVE", None)


def test_any_other_exception_is_one_sentence_naming_the_module_and_the_trace_as_data():
    def work():
        raise KeyError("rank")

    failure, trace = run_checked("ray_x", work)
    assert failure == (
        "ray_x failed unexpectedly (KeyError: 'rank'); this is a bug in the module: report it with the exception text."
    )
    assert trace.startswith("Traceback") and "KeyError: 'rank'" in trace


def test_what_the_work_prints_goes_to_stderr_and_stdout_stays_for_the_json(capfd):
    def work():
        print("from ray", flush=True)
        os.write(1, b"from a child\n")

    run_checked("ray_x", work)
    # After the work, fd 1 is stdout again: the module's JSON result goes there.
    os.write(1, b"{}\n")
    out, err = capfd.readouterr()
    assert out == "{}\n"
    assert "from ray" in err and "from a child" in err


def test_an_address_is_host_and_port():
    assert split_address(" 10.0.0.1:6379 ") == ("10.0.0.1", 6379)
    assert split_address("[fd00::1]:6379") == ("fd00::1", 6379)
    assert split_address("10.0.0.1") == (None, None)
    assert split_address("10.0.0.1:x") == (None, None)
