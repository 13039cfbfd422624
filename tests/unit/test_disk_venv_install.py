"""Which nodes site.yml holds to the venv install's free space: the ones about to create a venv
(none there yet, or nothing known of one), never one whose venv already exists."""

from __future__ import annotations

from test_disk import GIB, fs
from test_plan import GROUPS, hostvars, probe, probes, problems_of

from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P

SMALL = {"venv": fs(50, path="/opt/rlinf/venv", total=2 * GIB, probed="/opt")}
NEEDS_ROOM = "less than the 2.0G the install needs"


def test_an_existing_venv_is_not_held_to_the_install_size():
    node = probe("10.0.0.2", disk=SMALL, venv={"exists": True, "satisfied": True, "unsatisfied": []})
    plan = P.resolve(P.static_plan(GROUPS, hostvars()), probes(w1=node), "site")
    assert not [w for w in plan["disk_warnings"] if NEEDS_ROOM in w], plan["disk_warnings"]


def test_a_node_whose_venv_was_not_read_counts_as_installing():
    node = probe("10.0.0.2", disk=SMALL)
    assert "venv" not in node
    found = problems_of(lambda: P.resolve(P.static_plan(GROUPS, hostvars()), probes(w1=node), "site"))
    assert any(s.startswith("host 'w1'") and NEEDS_ROOM in s for s in found), found
