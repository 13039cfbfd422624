"""plugins/module_utils/firewall.py over the plan's nodes: Ray's ports, allowed sources, shared machines."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from test_plan import second_ray_node

from ansible_collections.rlinf.cluster.plugins.module_utils.firewall import (
    DEFAULT_CLIENT_PORT,
    DEFAULT_WORKER_RANGE,
    HEAD_FIXED_PORTS,
    HEAD_PORTS,
    NODE_PORTS,
    FirewallError,
    machine_rules,
    nft_ports,
    node_ports,
    sources,
)
from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, sentences
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P

ROOT = Path(__file__).resolve().parents[2]
GROUPS = {"ray_head": ["head"], "ray_workers": ["w1", "w2"]}
ADDRESSES = {"head": "10.1.0.10", "w1": "10.1.0.11", "w2": "10.1.0.12", "b": "10.1.0.10"}
# A second Ray node on the head's machine, with what validation already demands.
SHARED = second_ray_node("192.0.2.10")


def hostvars(**per_host):
    base = {
        name: {"ansible_host": f"192.0.2.{10 + i}", "rlinf_firewall_enabled": True}
        for i, name in enumerate(GROUPS["ray_head"] + GROUPS["ray_workers"])
    }
    for name, extra in per_host.items():
        base[name] = {**base.get(name, {"rlinf_firewall_enabled": True}), **extra}
    return base


def probe(name):
    ip = ADDRESSES[name]
    return {
        "systemd": True,
        "apt": True,
        "python": {"version": "3.11.2"},
        "interfaces": {"eth0": [ip]},
        "default_route": {"device": "eth0", "address": ip},
    }


def resolved(groups=GROUPS, hv=None, probed=None):
    static = P.static_plan(groups, hv or hostvars())
    names = probed if probed is not None else static["order"]
    return P.resolve(static, {name: probe(name) for name in names})


def problems(groups=GROUPS, hv=None) -> list[str]:
    with pytest.raises(PlanError) as err:
        P.static_plan(groups, hv)
    return sentences(err.value.problems)


def test_defaults_match_cluster_defaults():
    defaults = yaml.safe_load((ROOT / "roles/cluster_defaults/defaults/main.yml").read_text())
    for var, port in NODE_PORTS.items():
        assert defaults[var] == port, var
    assert defaults["ray_client_server_port"] == DEFAULT_CLIENT_PORT
    assert (defaults["ray_min_worker_port"], defaults["ray_max_worker_port"]) == DEFAULT_WORKER_RANGE
    specs = yaml.safe_load((ROOT / "roles/cluster_defaults/meta/argument_specs.yml").read_text())
    options = specs["argument_specs"]["main"]["options"]
    for var in [*NODE_PORTS, "ray_client_server_port", "ray_min_worker_port", "ray_max_worker_port"]:
        assert options[var]["default"] == defaults[var], var
    assert HEAD_PORTS["ray_port"] == defaults["ray_port"]
    ray_node = yaml.safe_load((ROOT / "roles/ray_node/defaults/main.yml").read_text())
    assert HEAD_PORTS["ray_node_dashboard_port"] == ray_node["ray_node_dashboard_port"]


def test_worker_ports_by_default():
    ports = node_ports(resolved()["nodes"]["w1"])
    assert ports["client"] is None
    assert nft_ports(ports) == ["6380", "6381", "6382", "6383", "6384", "52365", "10002-19999"]


def test_head_adds_gcs_dashboard_metrics_and_client():
    ports = node_ports(resolved(hv=hostvars(head={"ray_port": 7000}))["nodes"]["head"])
    assert ports["client"] == 10001
    elements = nft_ports(ports)
    assert "7000" in elements and "8265" in elements and "10001" not in elements
    for port in HEAD_FIXED_PORTS.values():
        assert str(port) in elements


def test_single_port_range():
    node = resolved(hv=hostvars(w1={"ray_min_worker_port": 20000, "ray_max_worker_port": "20000"}))["nodes"]["w1"]
    assert nft_ports(node_ports(node))[-1] == "20000"


@pytest.mark.parametrize(
    ("node_vars", "fragment"),
    [
        ({"ray_node_manager_port": 80}, "ray_node_manager_port=80 is outside 1024..65535"),
        ({"ray_object_manager_port": "x"}, "ray_object_manager_port='x' is not a whole number"),
        ({"ray_node_manager_port": 10005}, "ray_node_manager_port=10005 lies in the worker port range 10002-19999"),
        ({"ray_metrics_export_port": 6380}, "ray_node_manager_port, ray_metrics_export_port are all 6380"),
        ({"ray_min_worker_port": 20000, "ray_max_worker_port": 19000}, "ray_min_worker_port=20000 is above"),
    ],
)
def test_bad_ports_name_host_and_variable(node_vars, fragment):
    found = problems(hv=hostvars(w1=node_vars))
    assert any(s.startswith("host 'w1'") and fragment in s for s in found), found


def test_client_port_inside_worker_range_is_refused_on_the_head():
    found = problems(hv=hostvars(head={"ray_client_server_port": 10003}))
    assert any("ray_client_server_port=10003 lies in the worker port range" in s for s in found), found


def test_sources_are_normalised_unique_and_sorted():
    assert sources(["10.0.0.2", "10.0.0.1/32", "192.0.2.0/24", "10.0.0.2", "192.0.2.7/24"], "x") == [
        "10.0.0.1",
        "10.0.0.2",
        "192.0.2.0/24",
    ]
    with pytest.raises(FirewallError):
        sources(["not-an-address"], "x")


def test_machine_rules_for_separate_machines():
    plan = resolved(hv=hostvars(w1={"rlinf_firewall_allowed_sources": ["192.0.2.0/24"]}))
    rules = machine_rules(plan, "w1")
    assert rules["cluster_sources"] == ["10.1.0.10", "10.1.0.11", "10.1.0.12", "192.0.2.0/24"]
    assert rules["client_ports"] == [] and rules["client_sources"] == []
    assert machine_rules(plan, "head")["client_ports"] == ["10001"]
    assert rules["missing"] == []


def test_machine_rules_reports_nodes_left_out_of_the_run():
    static = P.static_plan(GROUPS, hostvars())
    plan = P.resolve(static, {name: probe(name) for name in ("head", "w1")}, purpose="site")
    assert machine_rules(plan, "w1")["missing"] == ["w2"]


def test_machine_rules_union_of_nodes_sharing_a_machine():
    groups = {"ray_head": ["head"], "ray_workers": ["w1", "w2", "b"]}
    hv = hostvars(
        b={
            **SHARED,
            "ray_node_manager_port": 7380,
            "ray_object_manager_port": 7381,
            "ray_dashboard_agent_grpc_port": 7382,
            "ray_runtime_env_agent_port": 7383,
            "ray_metrics_export_port": 7384,
            "ray_dashboard_agent_listen_port": 7385,
            "ray_min_worker_port": 20000,
            "ray_max_worker_port": 29999,
        },
        head={"rlinf_gpus_per_node": 0},
    )
    plan = resolved(groups, hv)
    rules = machine_rules(plan, "head")
    assert "7380" in rules["cluster_ports"] and "6380" in rules["cluster_ports"]
    assert "20000-29999" in rules["cluster_ports"] and "10002-19999" in rules["cluster_ports"]
    assert rules == machine_rules(plan, "b")


def test_machine_rules_rejects_a_host_outside_the_cluster():
    with pytest.raises(FirewallError):
        machine_rules(resolved(), "elsewhere")


def test_shared_machine_needs_distinct_ports():
    groups = {"ray_head": ["head"], "ray_workers": ["w1", "w2", "b"]}
    found = problems(groups, hostvars(b=SHARED, head={"rlinf_gpus_per_node": 0}))
    assert any("hosts head, b: both pin port 6380 (ray_node_manager_port) on machine 192.0.2.10" in s for s in found), (
        found
    )


def test_problems_collect_every_host():
    found = problems(hv=hostvars(w1={"ray_node_manager_port": 80}, w2={"ray_min_worker_port": "x"}))
    assert any(s.startswith("host 'w1'") for s in found) and any(s.startswith("host 'w2'") for s in found)


# The port boundaries: a worker range is inclusive at both ends, a port is 1024..65535 inclusive.
@pytest.mark.parametrize("port", [10002, 19999])
def test_a_port_on_either_end_of_the_worker_range_lies_in_it(port):
    found = problems(hv=hostvars(w1={"ray_node_manager_port": port}))
    assert f"host 'w1': ray_node_manager_port={port} lies in the worker port range 10002-19999; " in " ".join(found)


@pytest.mark.parametrize("port", [10001, 20000])
def test_a_port_just_outside_the_worker_range_is_accepted(port):
    node = resolved(hv=hostvars(w1={"ray_node_manager_port": port}))["nodes"]["w1"]
    assert node["ports"]["ray_node_manager_port"] == port
    assert f"--node-manager-port={port}" in node["ray_args"]


def test_a_range_of_one_port_is_not_reversed_and_is_one_element():
    node = resolved(hv=hostvars(w1={"ray_min_worker_port": 20000, "ray_max_worker_port": 20000}))["nodes"]["w1"]
    assert node_ports(node)["workers"] == (20000, 20000)
    assert nft_ports(node_ports(node))[-1] == "20000"


@pytest.mark.parametrize(("port", "ok"), [(1023, False), (1024, True), (65535, True), (65536, False)])
def test_a_pinned_port_is_1024_to_65535_inclusive(port, ok):
    hv = hostvars(w1={"ray_node_manager_port": port})
    if ok:
        assert resolved(hv=hv)["nodes"]["w1"]["ports"]["ray_node_manager_port"] == port
    else:
        found = problems(hv=hv)
        assert any(
            s.startswith("host 'w1'") and f"ray_node_manager_port={port} is outside 1024..65535" in s for s in found
        ), found


@pytest.mark.parametrize(("b_high", "refused"), [(6379, True), (6378, False)])
def test_a_port_of_another_node_on_the_machine_at_the_end_of_a_worker_range_is_refused(b_high, refused):
    groups = {"ray_head": ["head"], "ray_workers": ["w1", "w2", "b"]}
    b_ports = {var: 7380 + i for i, var in enumerate(NODE_PORTS)}
    hv = hostvars(
        b={**SHARED, **b_ports, "ray_min_worker_port": 5000, "ray_max_worker_port": b_high},
        head={"rlinf_gpus_per_node": 0},
    )
    if refused:
        assert problems(groups, hv) == [
            "hosts head, b: port 6379 of head lies in b's worker range 5000-6379 on machine 192.0.2.10; "
            "move one of them."
        ]
    else:
        assert resolved(groups, hv)["nodes"]["b"]["ports"]["ray_max_worker_port"] == 6378


@pytest.mark.parametrize(("b_low", "refused"), [(6384, True), (6385, False)])
def test_a_port_of_another_node_on_the_machine_at_the_start_of_a_worker_range_is_refused(b_low, refused):
    groups = {"ray_head": ["head"], "ray_workers": ["w1", "w2", "b"]}
    b_ports = {var: 7380 + i for i, var in enumerate(NODE_PORTS)}
    hv = hostvars(
        b={**SHARED, **b_ports, "ray_min_worker_port": b_low, "ray_max_worker_port": 7000},
        head={"rlinf_gpus_per_node": 0},
    )
    if refused:
        assert problems(groups, hv) == [
            "hosts head, b: port 6384 of head lies in b's worker range 6384-7000 on machine 192.0.2.10; "
            "move one of them."
        ]
    else:
        # 6384, the head's ray_metrics_export_port, is its highest pinned port below 7000.
        assert resolved(groups, hv)["nodes"]["b"]["ports"]["ray_min_worker_port"] == 6385


@pytest.mark.parametrize(
    ("values", "problems_found"),
    [
        ("10.0.0.1", ["x='10.0.0.1' must be a list of IPv4 addresses or networks, e.g. [192.0.2.7]."]),
        (5, ["x=5 must be a list of IPv4 addresses or networks, e.g. [192.0.2.7]."]),
        (
            ["fd00::1", "bad", "10.0.0.1"],
            [
                "x: 'fd00::1' is IPv6; Ray binds IPv4 node addresses, list IPv4 only.",
                "x: 'bad' is not an IPv4 address or network; write e.g. 192.0.2.7 or 192.0.2.0/24.",
            ],
        ),
    ],
)
def test_bad_sources_are_every_problem_named(values, problems_found):
    with pytest.raises(FirewallError) as err:
        sources(values, "x")
    assert err.value.problems == problems_found
    assert sources(None, "x") == []


def test_the_client_port_is_open_to_the_client_sources_of_the_heads_machine():
    plan = resolved(hv=hostvars(head={"rlinf_firewall_client_sources": ["198.51.100.7", "198.51.100.0/28"]}))
    rules = machine_rules(plan, "head")
    assert (rules["client_ports"], rules["client_sources"]) == (["10001"], ["198.51.100.0/28", "198.51.100.7"])
    assert machine_rules(plan, "w1")["client_sources"] == []
