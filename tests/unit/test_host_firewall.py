"""ufw and firewalld on a node, judged against the other nodes' addresses (module_utils/host_firewall.py)."""

from __future__ import annotations

import pytest
from test_plan import GROUPS, hostvars, probes, second_ray_node

from ansible_collections.rlinf.cluster.plugins.module_utils.host_firewall import closed_peers, parse_ufw, problems
from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, sentences
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P

ACTIVE = """Status: active
Logging: on (low)
Default: deny (incoming), allow (outgoing), disabled (routed)
New profiles: skip

To                         Action      From
--                         ------      ----
22/tcp                     ALLOW IN    Anywhere
Anywhere                   ALLOW IN    10.0.0.11                  # rlinf-ansible
Anywhere                   ALLOW IN    192.168.5.0/24
6379/tcp                   ALLOW IN    10.0.0.12
22/tcp (v6)                ALLOW IN    Anywhere (v6)
"""


def test_ufw_status_is_read_as_data():
    assert parse_ufw(ACTIVE) == {
        "active": True,
        "incoming": "deny",
        "sources": ["10.0.0.11", "192.168.5.0/24"],
        "ours": ["10.0.0.11"],
    }
    assert parse_ufw("Status: inactive\n")["active"] is False


def test_only_a_rule_for_every_port_lets_a_peer_in():
    found = {"ufw": parse_ufw(ACTIVE)}
    # 10.0.0.12 has one port open only: Ray needs them all.
    assert closed_peers(found, ["10.0.0.11", "192.168.5.9", "10.0.0.12"]) == ["10.0.0.12"]


def test_inactive_or_allow_by_default_closes_nothing():
    assert closed_peers({"ufw": parse_ufw("Status: inactive\n")}, ["10.0.0.12"]) == []
    allowing = ACTIVE.replace("Default: deny (incoming)", "Default: allow (incoming)")
    assert closed_peers({"ufw": parse_ufw(allowing)}, ["10.0.0.12"]) == []


def test_the_refusal_names_ufw_the_peer_and_both_fixes():
    [text] = problems({"ufw": parse_ufw(ACTIVE)}, ["10.0.0.11", "10.0.0.12"], manage=False)
    assert "ufw is active" in text and "from 10.0.0.12 would never arrive" in text
    assert "rlinf_firewall_manage_host: true" in text and "ufw allow from 10.0.0.12 comment rlinf-ansible" in text
    assert problems({"ufw": parse_ufw(ACTIVE)}, ["10.0.0.12"], manage=True) == []


def test_firewalld_is_refused_unless_its_trusted_zone_holds_the_peers():
    [text] = problems({"firewalld": True, "firewalld_trusted": "10.0.0.11"}, ["10.0.0.11", "10.0.0.12"], manage=True)
    assert "firewalld is running" in text and "--add-source=10.0.0.12" in text and "10.0.0.11" not in text
    assert problems({"firewalld": True, "firewalld_trusted": "10.0.0.0/24"}, ["10.0.0.12"], manage=False) == []


def _plan(manage: bool):
    extra = {"rlinf_firewall_manage_host": manage}
    return P.static_plan(GROUPS, hostvars(h=dict(extra), w1=dict(extra), w2=dict(extra)))


def test_site_refuses_the_node_whose_ufw_drops_its_peers_and_names_them():
    static = _plan(manage=False)
    found = probes(w2={**probes()["w2"], "host_firewall": {"ufw": parse_ufw(ACTIVE)}})
    with pytest.raises(PlanError) as err:
        P.resolve(static, found, purpose="site")
    [text] = [s for s in sentences(err.value.problems) if "ufw" in s]
    assert text.startswith("host 'w2': ufw is active here") and "from 10.0.0.1, 10.0.0.2 would never arrive" in text
    # status reports the cluster as it is; only site.yml is refused.
    assert P.resolve(static, found, purpose="status")


def test_with_manage_host_the_plan_lists_exactly_the_rules_ufw_lacks():
    static = _plan(manage=True)
    ufw = parse_ufw(ACTIVE.replace("10.0.0.11", "10.0.0.1"))
    out = P.resolve(static, probes(w2={**probes()["w2"], "host_firewall": {"ufw": ufw}}), purpose="site")
    assert out["nodes"]["w2"]["host_firewall"] == {"ufw_add": ["10.0.0.2"], "our_table": "leave"}
    assert out["nodes"]["h"]["host_firewall"] == {"ufw_add": [], "our_table": "leave"}


def test_the_machines_owner_applies_our_table_and_a_second_ray_node_of_that_machine_leaves_it():
    # The firewall pins every port: the second node's must differ from the first's too.
    second = second_ray_node(
        "10.0.0.2",
        ray_node_manager_port=7380,
        ray_object_manager_port=7381,
        ray_dashboard_agent_grpc_port=7382,
        ray_runtime_env_agent_port=7383,
        ray_metrics_export_port=7384,
        ray_dashboard_agent_listen_port=7385,
    )
    hv = hostvars(w2=second)
    hv["w1"]["rlinf_gpus_per_node"] = 0
    for name in hv:
        hv[name]["rlinf_firewall_enabled"] = True
    out = P.resolve(P.static_plan(GROUPS, hv), probes(w2=probes()["w1"]), purpose="site")["nodes"]
    assert [out[n]["host_firewall"]["our_table"] for n in ("h", "w1", "w2")] == ["apply", "apply", "leave"]


def test_with_the_firewall_off_only_a_node_holding_our_rules_removes_them():
    static = P.static_plan(GROUPS, hostvars())
    rules = {"firewall_rules": {"exists": True, "kind": "file", "ours": True}}
    found = probes(w1={**probes()["w1"], "paths": rules})
    out = P.resolve(static, found, purpose="site")["nodes"]
    assert [out[n]["host_firewall"]["our_table"] for n in ("h", "w1", "w2")] == ["leave", "remove", "leave"]


@pytest.mark.parametrize(
    ("firewall_on", "owner", "rules_found", "expected"),
    [
        (True, True, False, "apply"),
        (True, True, True, "apply"),
        (True, False, True, "leave"),
        (True, False, False, "leave"),
        (False, True, True, "remove"),
        (False, False, True, "remove"),
        (False, True, False, "leave"),
        (False, False, False, "leave"),
    ],
)
def test_our_table_is_one_decision_of_three_inputs(firewall_on, owner, rules_found, expected):
    assert P.resolution.our_table(firewall_on, owner, rules_found) == expected
