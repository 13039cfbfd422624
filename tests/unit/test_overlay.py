"""Overlay members and addresses (plugins/module_utils/overlay.py)."""

from __future__ import annotations

import pytest

from ansible_collections.rlinf.cluster.plugins.filter.overlay import FilterModule
from ansible_collections.rlinf.cluster.plugins.module_utils.overlay import (
    OverlayError,
    interface_addresses,
    overlay_members,
    overlay_problems,
    parse_subnet,
)


def groups(bootstrap=("bs",), head=("head",), workers=("edge1", "edge2")):
    return {"easytier_bootstrap": list(bootstrap), "ray_head": list(head), "ray_workers": list(workers)}


def facts(**devices):
    """ansible_facts with one IPv4 address per device: facts(eth0='192.168.1.5/24')."""
    loopback = {"ipv4": {"address": "127.0.0.1", "netmask": "255.0.0.0"}}
    result = {"interfaces": [*devices, "lo"], "lo": loopback}
    for device, cidr in devices.items():
        address, prefix = cidr.split("/")
        result[device.replace("-", "_")] = {"device": device, "ipv4": {"address": address, "netmask": prefix}}
    return result


def test_positions_bootstrap_head_then_workers():
    members = overlay_members(groups(), {})
    assert [(m["name"], m["role"], m["ipv4"]) for m in members] == [
        ("bs", "bootstrap", "10.144.0.1"),
        ("head", "head", "10.144.0.2"),
        ("edge1", "worker", "10.144.0.3"),
        ("edge2", "worker", "10.144.0.4"),
    ]
    assert members[0]["bootstrap"] and not members[0]["ray_node"]
    assert members[1]["ray_node"] and not members[1]["bootstrap"]
    assert members[2]["cidr"] == "10.144.0.3/24"


def test_bootstrap_inside_the_ray_cluster_is_listed_once():
    members = overlay_members(groups(bootstrap=("head",)), {})
    assert [(m["name"], m["role"], m["ray_node"], m["bootstrap"]) for m in members] == [
        ("head", "bootstrap", True, True),
        ("edge1", "worker", True, False),
        ("edge2", "worker", True, False),
    ]


def test_explicit_addresses_and_other_subnet():
    hv = {"bs": {"easytier_ipv4": "10.10.0.1"}, "edge1": {"easytier_ipv4": "10.10.0.11/24"}}
    members = overlay_members(groups(workers=("edge1",)), hv, "10.10.0.0/24")
    assert [m["ipv4"] for m in members] == ["10.10.0.1", "10.10.0.2", "10.10.0.11"]


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("10.145.0.3", "outside the overlay subnet"),
        ("10.144.0.0", "network or broadcast"),
        ("10.144.0.255", "network or broadcast"),
        ("not-an-ip", "is not an IPv4 address"),
        ("fd00::1", "must be an IPv4 address"),
        ("10.144.0.9/16", "has prefix /16"),
    ],
)
def test_bad_explicit_address(value, needle):
    problems = overlay_problems(groups(), {"edge1": {"easytier_ipv4": value}})
    assert len(problems) == 1
    assert needle in problems[0]
    assert "'edge1'" in problems[0]


def test_duplicate_addresses_name_both_hosts():
    problems = overlay_problems(groups(), {"edge2": {"easytier_ipv4": "10.144.0.2"}})
    assert problems == [
        "hosts head, edge2: they share the overlay address 10.144.0.2; every member needs its own "
        "easytier_ipv4 (derived addresses follow inventory position)."
    ]


def test_collision_with_a_real_interface_address():
    hv = {"edge1": {"ansible_facts": facts(eth0="10.144.0.3/16")}}
    problems = overlay_problems(groups(), hv)
    assert any("already the address of its interface eth0" in p and "'edge1'" in p for p in problems)


def test_overlapping_real_network_is_reported():
    hv = {"head": {"ansible_facts": facts(eth0="10.144.0.200/24")}}
    problems = overlay_problems(groups(), hv)
    assert problems and "overlaps the network 10.144.0.0/24 of its interface eth0" in problems[0]


def test_the_overlay_device_itself_is_not_a_collision():
    hv = {"head": {"ansible_facts": facts(et0="10.144.0.2/24", eth0="10.89.80.10/24")}}
    assert overlay_problems(groups(), hv, "10.144.0.0/24", "et0") == []
    assert overlay_problems(groups(), hv, "10.144.0.0/24", "tun9") != []


def test_bootstrap_group_must_hold_exactly_one_host():
    assert "missing or empty" in overlay_problems(groups(bootstrap=()), {})[0]
    assert "has 2 hosts" in overlay_problems(groups(bootstrap=("a", "b")), {})[0]


def test_subnet_too_small_for_members():
    problems = overlay_problems(groups(), {}, "10.144.0.0/30")
    assert any("no address left in 10.144.0.0/30" in p for p in problems)


def test_per_host_subnet_must_agree():
    problems = overlay_problems(groups(), {"edge2": {"easytier_subnet": "10.9.0.0/24"}})
    assert any("differs from" in p and "'edge2'" in p for p in problems)


@pytest.mark.parametrize(
    ("subnet", "needle"),
    [
        ("10.144.0.1/24", "did you mean 10.144.0.0/24"),
        ("banana", "not a network address"),
        ("fd00::/64", "must be an IPv4 network"),
        ("10.144.0.0/31", "too small"),
    ],
)
def test_bad_subnet(subnet, needle):
    with pytest.raises(OverlayError) as err:
        parse_subnet(subnet)
    assert needle in str(err.value)
    assert overlay_problems(groups(), {}, subnet) == err.value.problems


def test_interface_addresses_reads_secondaries_and_skips_garbage():
    f = facts(eth0="192.168.1.5/24")
    f["eth0"]["ipv4_secondaries"] = [{"address": "192.168.2.5", "netmask": "255.255.255.0"}]
    f["interfaces"].append("weird")
    f["weird"] = "not a dict"
    got = [(d, str(i)) for d, i in interface_addresses(f)]
    assert ("eth0", "192.168.1.5/24") in got
    assert ("eth0", "192.168.2.5/24") in got
    assert interface_addresses(None) == []


def test_filter_raises_a_readable_error():
    from ansible.errors import AnsibleFilterError

    filters = FilterModule().filters()
    assert filters["overlay_members"](groups(), {})[0]["ipv4"] == "10.144.0.1"
    with pytest.raises(AnsibleFilterError, match="missing or empty"):
        filters["overlay_members"](groups(bootstrap=()), {})
    assert filters["overlay_problems"](groups(), {}, "bad") != []


@pytest.mark.parametrize(
    ("subnet", "kind"),
    [
        ("127.0.0.0/24", "loopback"),
        ("169.254.0.0/24", "link-local"),
        ("224.0.0.0/24", "multicast"),
        ("240.0.0.0/24", "reserved"),
        ("0.0.0.0/24", "reserved"),
    ],
)
def test_a_range_every_member_needs_is_refused_even_when_public_is_allowed(subnet, kind):
    with pytest.raises(OverlayError) as err:
        parse_subnet(subnet, allow_public=True)
    assert f"easytier_subnet='{subnet}' is {kind}" in str(err.value)


def test_a_public_range_needs_easytier_allow_public_subnet():
    with pytest.raises(OverlayError) as err:
        parse_subnet("8.8.8.0/24")
    assert "is a public range" in str(err.value) and "easytier_allow_public_subnet: true" in str(err.value)
    assert str(parse_subnet("8.8.8.0/24", allow_public=True)) == "8.8.8.0/24"


@pytest.mark.parametrize("subnet", ["10.144.0.0/24", "172.16.5.0/24", "192.168.7.0/24", "100.64.0.0/24"])
def test_private_and_shared_ranges_are_accepted(subnet):
    assert str(parse_subnet(subnet)) == subnet
