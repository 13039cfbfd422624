"""The rule roles/ray_node applies after a run applied a node's changes (restarts.ray_node_restart),
through its filter as the role calls it."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rlinf.cluster.plugins.filter.restarts import FilterModule
from ansible_collections.rlinf.cluster.plugins.module_utils.restarts import RESTART_FACTS

RULE = FilterModule().filters()["ray_node_restart"]
QUIET = {
    "was_active": True,
    "files_restart": False,
    "venv_satisfied": True,
    "code_changed": False,
    "head_started": False,
    "missing_from_gcs": False,
    "stopped_first": False,
}


def facts(role="worker", **changed):
    return {"role": role, **QUIET, **changed}


@pytest.mark.parametrize("role", ["head", "worker"])
def test_a_running_node_nothing_changed_on_keeps_its_ray(role):
    assert RULE(facts(role)) is False


@pytest.mark.parametrize(
    "changed",
    [
        {"was_active": False},  # a stopped Ray starts
        {"files_restart": True},  # env file, unit, token: read at ray start
        {"venv_satisfied": False},  # a new pin or package was installed
        {"code_changed": True},  # a new code-sync wheel
        {"missing_from_gcs": True},  # the head's GCS lost it
        {"stopped_first": True},  # stopped before its head restarted
    ],
    ids=lambda c: next(iter(c)),
)
@pytest.mark.parametrize("role", ["head", "worker"])
def test_what_ray_reads_at_start_changed_restarts_the_node(role, changed):
    assert RULE(facts(role, **changed)) is True


def test_workers_restart_after_their_head_restarted_and_the_head_does_not_follow_itself():
    # A worker does not rejoin a restarted head promptly on its own.
    assert RULE(facts("worker", head_started=True)) is True
    assert RULE(facts("head", head_started=True)) is False


@pytest.mark.parametrize(
    "bad",
    [
        {k: v for k, v in facts().items() if k != "head_started"},
        {**facts(), "head_restarted": True},
        facts(role="driver"),
    ],
    ids=["missing", "unknown", "role"],
)
def test_facts_it_does_not_know_are_an_error_naming_them(bad):
    with pytest.raises(AnsibleFilterError, match="ray_node_restart"):
        RULE(bad)


def test_the_role_passes_exactly_the_facts_the_rule_reads():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "roles/ray_node/vars/main.yml").read_text()
    block = text.split("ray_node_restart: >-", 1)[1].split("| rlinf.cluster.ray_node_restart", 1)[0]
    assert {*RESTART_FACTS, "role"} == {key for key in QUIET | {"role": 0} if f"'{key}':" in block}
