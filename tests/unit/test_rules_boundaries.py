"""The path rules at their shortest inputs: a directory directly under /var is judged as what is below it."""

from __future__ import annotations

from ansible_collections.rlinf.cluster.plugins.plugin_utils import rules as r


def test_a_system_directory_right_under_var_is_the_systems():
    assert r.system_clash("/var/spool") == "is under /var/spool, which the operating system or a package owns"
    assert r.system_clash("/var/tmp") is None
