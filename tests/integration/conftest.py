"""Fixtures of the tests that drive the real playbooks against the podman lab (helpers: lab_helpers.py).

Every test module sets up the cluster it needs through these fixtures, so any module runs
alone and in any order: ``cluster`` checks the lab cheaply before each test and runs
site.yml only when a test before it left the cluster broken, stopped or changed.
"""

from __future__ import annotations

import cpu_account
import pytest
from lab_helpers import close_ssh_masters, lab_cluster, lab_containers, lab_hosts
from longest_first import DURATIONS, LongestFirst


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """make test's two labs: the longest module left goes to the lab that is free (longest_first.py).
    Without measured durations, xdist's own order (by test count)."""
    if config.getoption("dist") == "loadfile" and DURATIONS.exists():
        return LongestFirst(config, log)
    return None


def pytest_sessionfinish(session, exitstatus):
    """The SSH connections the tests kept open (lab_helpers.ssh_argv) end with the run."""
    close_ssh_masters()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """RLINF_TEST_CPU_LOG: each test's CPU, its setup and teardown included (cpu_account.py)."""
    if not cpu_account.LOG or item.get_closest_marker("lab") is None:
        return (yield)
    containers = lab_containers()
    before = cpu_account.snapshot(containers)
    try:
        return (yield)
    finally:
        cpu_account.record("test", item.nodeid, before, cpu_account.snapshot(containers))


@pytest.fixture(scope="module")
def hosts() -> dict[str, str]:
    """The lab hosts, name -> address, in rank order."""
    return lab_hosts()


@pytest.fixture
def cluster(hosts, tmp_path_factory) -> dict[str, str]:
    """The lab hosts (as ``hosts``) running the cluster site.yml makes from the lab inventory:
    checked, and repaired by one site.yml run when it is not that cluster."""
    return lab_cluster(hosts, tmp_path_factory)
