"""The plan's thresholds at their exact boundary values (the side each one falls on)."""

from __future__ import annotations

from test_plan import GROUPS

from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P


def test_token_auth_is_accepted_from_the_first_ray_that_has_it():
    first = {n: {"rlinf_ray_version": P.MIN_RAY_AUTH} for n in ("h", "w1", "w2")}
    cluster = P.static_plan(GROUPS, first)["cluster"]
    assert (cluster["ray_version"], cluster["auth"]) == (P.MIN_RAY_AUTH, True)
