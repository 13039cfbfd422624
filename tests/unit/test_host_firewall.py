"""ufw and firewalld on a node, judged against the other nodes' addresses (module_utils/host_firewall.py)."""

from __future__ import annotations

import pytest
from test_plan import GROUPS, hostvars, probes

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
    assert out["nodes"]["w2"]["host_firewall"] == {"ufw_add": ["10.0.0.2"]}
    assert out["nodes"]["h"]["host_firewall"] == {"ufw_add": []}
