"""Which Ray token a site run uses (plugins/module_utils/auth_token.py, through plan.resolve):
the Vault variable, else the controller's file, else the one the nodes already hold (an AWX job's
fresh container must not mint a new one and restart Ray), a new one only for a fresh cluster,
a rotation only on request, and a refusal when the nodes disagree."""

from __future__ import annotations

import copy

from test_plan import GROUPS, hostvars, probe, probes, problems_of

from ansible_collections.rlinf.cluster.plugins.module_utils import auth_token
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P

ONE = "a" * 64
OTHER = "b" * 64


def with_tokens(**digests):
    """Probes where each named node holds a token with that digest (None: no token file)."""
    found = probes()
    for name, digest in digests.items():
        found[name] = probe(
            found[name]["default_route"]["address"],
            token={"present": digest is not None, "sha256": digest or ""},
        )
    return found


def planned(found, hv=None, on_controller=False, purpose="site"):
    static = P.static_plan(GROUPS, hv or hostvars())
    static = copy.deepcopy(static)
    static["cluster"]["controller"]["token_present"] = on_controller
    return P.resolve(static, found, purpose)


def test_without_a_controller_token_the_heads_token_is_used():
    plan = planned(with_tokens(h=ONE, w1=ONE, w2=None))
    assert plan["cluster"]["token"] == {"source": "node", "read_from": "h", "read_path": "/etc/rlinf/ray-auth-token"}


def test_a_worker_holds_the_token_when_the_head_has_none():
    plan = planned(with_tokens(h=None, w1=None, w2=ONE), hv=hostvars(w2={"ray_auth_token_file": "/etc/rlinf/w2-token"}))
    # The run reads that worker's own token file.
    assert plan["cluster"]["token"] == {"source": "node", "read_from": "w2", "read_path": "/etc/rlinf/w2-token"}


def test_a_new_token_only_when_no_node_has_one():
    assert planned(with_tokens(h=None, w1=None, w2=None))["cluster"]["token"]["source"] == "new"
    # A probe without the token part (an older node_state) counts as no token, not as a failure.
    assert planned(probes())["cluster"]["token"]["source"] == "new"


def test_the_controllers_token_and_vault_win_over_the_nodes():
    assert planned(with_tokens(h=ONE), on_controller=True)["cluster"]["token"]["source"] == "controller"
    vault = {"ray_auth_token": "v" * 40}
    hv = hostvars(h=vault, w1=vault, w2=vault)
    assert planned(with_tokens(h=ONE, w1=OTHER), hv=hv)["cluster"]["token"]["source"] == "vault"


def test_nodes_that_disagree_are_refused_naming_the_hosts_and_the_fix():
    found = problems_of(lambda: planned(with_tokens(h=ONE, w1=OTHER, w2=ONE)))
    (problem,) = [s for s in found if "different" in s]
    assert "h, w2 hold token #1" in problem and "w1 hold token #2" in problem
    assert "ray_auth_rotate=true" in problem and "ray_auth_token" in problem
    # No digest (nor token) in the message.
    assert ONE not in problem and OTHER not in problem


def test_a_rotation_happens_only_on_request_and_not_with_vault():
    rotate = {"ray_auth_rotate": True}
    hv = hostvars(h=rotate, w1=rotate, w2=rotate)
    assert planned(with_tokens(h=ONE, w1=OTHER), hv=hv)["cluster"]["token"]["source"] == "rotate"
    both = {"ray_auth_rotate": True, "ray_auth_token": "v" * 40}
    found = problems_of(lambda: planned(with_tokens(h=ONE), hv=hostvars(h=both, w1=both, w2=both)))
    assert any("ray_auth_rotate=true and ray_auth_token is set" in s and "Vault" in s for s in found)


def test_without_auth_or_outside_site_no_token_is_chosen():
    off = {"ray_auth_enabled": False}
    assert "token" not in planned(with_tokens(h=ONE, w1=OTHER), hv=hostvars(h=off, w1=off, w2=off))["cluster"]
    assert "token" not in planned(with_tokens(h=ONE, w1=OTHER), purpose="status")["cluster"]


def test_choose_is_pure_and_orders_the_sources():
    digests = {"w1": ONE}
    assert auth_token.choose(False, False, False, digests, "h") == ({"source": "node", "read_from": "w1"}, [])
    assert auth_token.choose(False, True, False, digests, "h")[0]["source"] == "controller"
    assert auth_token.choose(True, True, False, digests, "h")[0]["source"] == "vault"
    assert auth_token.choose(False, True, True, digests, "h")[0]["source"] == "rotate"
    assert auth_token.choose(False, False, False, {}, "h")[0]["source"] == "new"


def test_node_digests_keep_inventory_order_and_skip_absent_tokens():
    found = {"w1": {"token": {"present": True, "sha256": OTHER}}, "h": {"token": {"present": True, "sha256": ONE}}}
    found["w2"] = {"token": {"present": False, "sha256": ""}}
    assert list(auth_token.node_digests(["h", "w1", "w2"], found).items()) == [("h", ONE), ("w1", OTHER)]
