"""Unit tests for plugins/module_utils/firewall.py: Ray's ports, allowed sources, shared machines."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.rlinf.cluster.plugins.module_utils.firewall import (
    DEFAULT_CLIENT_PORT,
    DEFAULT_WORKER_RANGE,
    HEAD_FIXED_PORTS,
    NODE_PORTS,
    FirewallError,
    firewall_problems,
    machine_rules,
    nft_ports,
    node_ports,
    sources,
)

ROOT = Path(__file__).resolve().parents[2]
GROUPS = {"ray_head": ["head"], "ray_workers": ["w1", "w2"]}
# A second Ray node on the head's machine, with what validate_inventory already demands.
SHARED = {
    "ansible_host": "192.0.2.10",
    "ray_port": 7379,
    "ray_temp_dir": "/tmp/ray-b",
    "rlinf_env_file": "/etc/rlinf/b.env",
    "ray_node_unit_name": "rlinf-ray-b",
    "rlinf_gpus_per_node": 0,
}


def hostvars(**per_host):
    base = {
        "head": {"ansible_host": "192.0.2.10", "rlinf_node_ip": "10.1.0.10"},
        "w1": {"ansible_host": "192.0.2.11", "rlinf_node_ip": "10.1.0.11"},
        "w2": {"ansible_host": "192.0.2.12", "rlinf_node_ip": "10.1.0.12"},
    }
    for name, extra in per_host.items():
        base[name] = {**base[name], **extra}
    return base


def test_defaults_match_cluster_defaults():
    defaults = yaml.safe_load((ROOT / "roles/cluster_defaults/defaults/main.yml").read_text())
    for var, port in NODE_PORTS.items():
        assert defaults[var] == port, var
    assert defaults["ray_client_server_port"] == DEFAULT_CLIENT_PORT
    assert (defaults["ray_min_worker_port"], defaults["ray_max_worker_port"]) == DEFAULT_WORKER_RANGE
    assert defaults["ray_port"] == 6379
    specs = yaml.safe_load((ROOT / "roles/cluster_defaults/meta/argument_specs.yml").read_text())
    options = specs["argument_specs"]["main"]["options"]
    for var in [*NODE_PORTS, "ray_client_server_port", "ray_min_worker_port", "ray_max_worker_port"]:
        assert options[var]["default"] == defaults[var], var


def test_worker_ports_by_default():
    ports = node_ports("w1", {}, is_head=False)
    assert ports["client"] is None
    assert nft_ports(ports) == ["6380", "6381", "6382", "6383", "6384", "52365", "10002-19999"]


def test_head_adds_gcs_dashboard_metrics_and_client():
    ports = node_ports("head", {"ray_port": 7000}, is_head=True)
    assert ports["client"] == 10001
    elements = nft_ports(ports)
    assert "7000" in elements and "8265" in elements and "10001" not in elements
    for port in HEAD_FIXED_PORTS.values():
        assert str(port) in elements


def test_single_port_range():
    ports = node_ports("w1", {"ray_min_worker_port": 20000, "ray_max_worker_port": "20000"}, is_head=False)
    assert nft_ports(ports)[-1] == "20000"


@pytest.mark.parametrize(
    ("node_vars", "fragment"),
    [
        ({"ray_node_manager_port": 80}, "ray_node_manager_port=80 is not a port Ray accepts"),
        ({"ray_object_manager_port": "x"}, "ray_object_manager_port='x'"),
        ({"ray_metrics_export_port": True}, "ray_metrics_export_port=True"),
        ({"ray_object_manager_port": 6380}, "ray_node_manager_port, ray_object_manager_port are all 6380"),
        ({"ray_node_manager_port": 10005}, "ray_node_manager_port=10005 lies in the worker port range"),
        ({"ray_min_worker_port": 20001, "ray_max_worker_port": 20000}, "is above ray_max_worker_port=20000"),
    ],
)
def test_bad_ports_name_host_and_variable(node_vars, fragment):
    with pytest.raises(FirewallError) as err:
        node_ports("w1", node_vars, is_head=False)
    assert any(fragment in p and p.startswith("host 'w1'") for p in err.value.problems), err.value.problems


def test_client_port_inside_worker_range_is_refused_on_the_head():
    with pytest.raises(FirewallError, match="ray_client_server_port=10005 lies in the worker port range"):
        node_ports("head", {"ray_client_server_port": 10005}, is_head=True)


def test_sources_are_normalised_unique_and_sorted():
    assert sources(["10.0.0.2", " 10.0.0.0/24", "10.0.0.2/32", "192.0.2.9/24"], "x") == [
        "10.0.0.0/24",
        "10.0.0.2",
        "192.0.2.0/24",
    ]
    assert sources(None, "x") == []


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("10.0.0.1", "must be a list"),
        (["nope"], "'nope' is not an IPv4 address or network"),
        (["::1"], "is IPv6"),
    ],
)
def test_bad_sources(value, fragment):
    with pytest.raises(FirewallError, match=fragment):
        sources(value, "rlinf_firewall_allowed_sources")


def test_machine_rules_for_separate_machines():
    rules = machine_rules(GROUPS, hostvars(w1={"rlinf_firewall_allowed_sources": ["198.51.100.0/24"]}), "w1")
    assert rules["cluster_sources"] == ["10.1.0.10", "10.1.0.11", "10.1.0.12", "198.51.100.0/24"]
    assert rules["client_ports"] == [] and rules["client_sources"] == []
    assert rules["missing"] == []
    assert "6379" not in rules["cluster_ports"]
    head = machine_rules(GROUPS, hostvars(head={"rlinf_firewall_client_sources": ["203.0.113.5"]}), "head")
    assert head["client_ports"] == ["10001"] and head["client_sources"] == ["203.0.113.5"]
    assert "6379" in head["cluster_ports"]


def test_machine_rules_reports_nodes_left_out_of_the_run():
    found = hostvars()
    del found["w2"]["rlinf_node_ip"]
    assert machine_rules(GROUPS, found, "head")["missing"] == ["w2"]


def test_machine_rules_union_of_nodes_sharing_a_machine():
    shared = {"ansible_host": "192.0.2.10", "rlinf_gpus_per_node": 0}
    second = {
        **SHARED,
        "ray_node_manager_port": 7380,
        "ray_object_manager_port": 7381,
        "ray_dashboard_agent_grpc_port": 7382,
        "ray_runtime_env_agent_port": 7383,
        "ray_metrics_export_port": 7384,
        "ray_dashboard_agent_listen_port": 52366,
        "ray_min_worker_port": 20002,
        "ray_max_worker_port": 29999,
    }
    found = hostvars(w1=second, head=shared)
    for host in ("head", "w1"):
        rules = machine_rules(GROUPS, found, host)
        assert {"6380", "7380", "10002-19999", "20002-29999"} <= set(rules["cluster_ports"])
    assert firewall_problems(GROUPS, found) == []


def test_machine_rules_rejects_a_host_outside_the_cluster():
    with pytest.raises(FirewallError, match="not a Ray node"):
        machine_rules(GROUPS, hostvars(), "bootstrap")


def test_shared_machine_needs_distinct_ports():
    shared = {"ansible_host": "192.0.2.10", "rlinf_gpus_per_node": 0}
    problems = firewall_problems(GROUPS, hostvars(head=shared, w1=SHARED))
    assert any("hosts head, w1: both pin port 6380 (ray_node_manager_port)" in p for p in problems), problems
    assert all(p.endswith(".") for p in problems)


def test_shared_machine_port_inside_the_other_nodes_worker_range():
    shared = {"ansible_host": "192.0.2.10", "rlinf_gpus_per_node": 0}
    moved = {var: port + 1000 for var, port in NODE_PORTS.items()}
    moved.update(SHARED, ray_min_worker_port=6000, ray_max_worker_port=6379)
    problems = firewall_problems(GROUPS, hostvars(head=shared, w1=moved))
    assert any("port 6379 of head lies in w1's worker range 6000-6379" in p for p in problems), problems


def test_problems_collect_every_host():
    problems = firewall_problems(
        GROUPS,
        hostvars(w1={"ray_node_manager_port": 1}, w2={"rlinf_firewall_client_sources": ["bad"]}),
    )
    assert len(problems) == 2
    assert problems[0].startswith("host 'w1'") and problems[1].startswith("host 'w2'")


def test_problems_leave_topology_errors_to_validation():
    assert firewall_problems({"ray_workers": ["w1"]}, hostvars()) == []
