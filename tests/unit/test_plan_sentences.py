"""What the mutation run (tests/mutate.py) found unpinned in the plan: refusals where only the exact
sentences tell a mistake apart (what is said, and what is not said twice), and small outputs."""

from __future__ import annotations

import pytest
from test_plan import EASYTIER_GROUPS, GROUPS, all_hosts, hostvars, overlay_hostvars, problems_of, resolved

from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P
from ansible_collections.rlinf.cluster.plugins.plugin_utils import schema
from ansible_collections.rlinf.cluster.plugins.plugin_utils.plan.common import _plain
from ansible_collections.rlinf.cluster.plugins.plugin_utils.plan.static import _OncePerHost


def test_a_list_that_cannot_be_evaluated_is_one_sentence_and_the_rest_is_judged_by_its_default():
    class Undefined(dict):
        def __getitem__(self, key):
            if key == "rlinf_node_path_roots":
                raise RuntimeError("'roots' is undefined")
            return super().__getitem__(key)

    hv = hostvars()
    hv["w1"] = Undefined(hv["w1"], rlinf_node_path_roots="{{ roots }}")
    assert problems_of(lambda: P.static_plan(GROUPS, hv)) == [
        "host 'w1': rlinf_node_path_roots cannot be evaluated ('roots' is undefined); fix its value."
    ]


def test_a_login_snippet_under_our_roots_at_another_path_of_ours_is_an_overlap():
    hv = hostvars(w1={"rlinf_env_profile_script": "/etc/rlinf/rlinf.env"})
    assert problems_of(lambda: P.static_plan(GROUPS, hv)) == [
        "host 'w1': rlinf_env_file='/etc/rlinf/rlinf.env' and rlinf_env_profile_script='/etc/rlinf/rlinf.env' "
        "overlap; give each its own path."
    ]


def test_a_login_snippet_refused_for_its_place_is_not_also_an_overlap():
    # /srv/data holds the launch logs (under a root of their own), but the snippet is not under a root:
    # one sentence, the place's, not also "overlap".
    roots = [*schema.BY_NAME["rlinf_node_path_roots"].default, "/srv/data/rlinf"]
    settings = {
        "rlinf_node_path_roots": roots,
        "rlinf_launch_log_dir": "/srv/data/rlinf/logs",
        "rlinf_env_profile_script": "/srv/data",
    }
    assert problems_of(lambda: P.static_plan(GROUPS, all_hosts(**settings))) == [
        "hosts h, w1, w2: rlinf_env_profile_script='/srv/data' is not under one of rlinf_node_path_roots "
        f"({', '.join(roots)}); write /etc/profile.d/rlinf*.sh (e.g. /etc/profile.d/rlinf.sh), or move it under "
        "one of them, or add a directory of its own to rlinf_node_path_roots."
    ]


def test_the_extra_vars_opt_out_is_the_heads():
    hv = hostvars(h={"rlinf_user_vars": ["rlinf_team"]})
    plan = P.static_plan(GROUPS, hv, {"extra_vars": {"rlinf_team": "vision"}})
    assert plan["order"] == ["h", "w1", "w2"]
    hv = hostvars(w1={"rlinf_user_vars": ["rlinf_team"]})
    found = problems_of(lambda: P.static_plan(GROUPS, hv, {"extra_vars": {"rlinf_team": "vision"}}))
    assert len(found) == 1 and found[0].startswith("extra vars: rlinf_team"), found


def test_hostvars_read_once_per_host_still_list_and_count_every_host():
    seen = _OncePerHost({"h": {}, "w1": {}})
    assert (list(seen), len(seen), "w1" in seen) == (["h", "w1"], 2, True)


@pytest.mark.parametrize("groups", [{}, {"ray_head": [], "ray_workers": []}, {"other": ["x"]}])
def test_an_inventory_without_ray_nodes_is_told_which_group_to_fill(groups):
    assert problems_of(lambda: P.static_plan(groups, {})) == [
        "inventory: group 'ray_head' is missing or empty; put exactly one host in 'ray_head'."
    ]


def test_an_overlay_member_without_a_secret_is_told_how_to_make_one():
    hv = overlay_hostvars()
    for host in hv.values():
        host["easytier_network_secret"] = ""
    assert problems_of(lambda: P.static_plan(EASYTIER_GROUPS, hv)) == [
        "hosts h, w1, w2: easytier_network_secret is empty; set a long random secret once for all members, encrypted "
        "with `ansible-vault encrypt_string --name easytier_network_secret` (docs/cloud-edge.md)."
    ]


def test_a_nodes_object_store_size_reaches_ray_start_and_only_that_nodes():
    plan = resolved(hostvars(w1={"ray_node_object_store_memory": 2_000_000_000}))
    assert "--object-store-memory=2000000000" in plan["nodes"]["w1"]["ray_args"]
    assert not any(a.startswith("--object-store-memory") for a in plan["nodes"]["w2"]["ray_args"])


def test_ansibles_tagged_strings_and_numbers_become_plain_ones():
    class Tagged(str):
        pass

    class TaggedInt(int):
        pass

    class TaggedFloat(float):
        pass

    plain = _plain({"a": [Tagged("x"), TaggedInt(2), TaggedFloat(0.5), None, True]})
    assert plain == {"a": ["x", 2, 0.5, None, True]}
    assert [type(v) for v in plain["a"]] == [str, int, float, type(None), bool]
