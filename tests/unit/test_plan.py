"""The cluster plan (plugins/plugin_utils/plan/): static checks, the address rule, what each node gets."""

from __future__ import annotations

import copy
import re

import pytest

from ansible_collections.rlinf.cluster.plugins.module_utils import firewall
from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, sentences
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P

GROUPS = {"ray_head": ["h"], "ray_workers": ["w1", "w2"]}


def hostvars(**per_host):
    base = {name: {"ansible_host": f"10.0.0.{i + 1}"} for i, name in enumerate(["h", "w1", "w2"])}
    for name, extra in per_host.items():
        base[name].update(extra)
    return base


def second_ray_node(address, **extra):
    """A second Ray node on the machine at ``address``, with what validation already demands of it
    (its own ray_port, temp dir, env files and unit, no GPUs of its own)."""
    return {
        "ansible_host": address,
        "ray_port": 7379,
        "ray_temp_dir": "/tmp/ray-b",
        "rlinf_env_file": "/etc/rlinf/b.env",
        "rlinf_env_profile_script": "/etc/profile.d/rlinf-b.sh",
        "ray_node_unit_name": "rlinf-ray-b",
        "rlinf_gpus_per_node": 0,
        **extra,
    }


def probe(address, device="eth0", **extra):
    data = {
        "systemd": True,
        "apt": True,
        "python": {"version": "3.11.2", "machine": "x86_64", "glibc": "2.36"},
        "interfaces": {"lo": ["127.0.0.1"], device: [address]},
        "default_route": {"device": device, "address": address},
        "paths": {},
        "manifest": [],
        "record": {},
        "unit": {"active": "active"},
    }
    data.update(extra)
    return data


def probes(**overrides):
    found = {name: probe(f"10.0.0.{i + 1}") for i, name in enumerate(["h", "w1", "w2"])}
    found.update(overrides)
    return found


def problems_of(call) -> list[str]:
    with pytest.raises(PlanError) as err:
        call()
    return sentences(err.value.problems)


def test_ranks_paths_and_units_come_from_the_inventory():
    plan = P.static_plan(GROUPS, hostvars(w2={"ray_node_unit_name": "rlinf-ray-b"}))
    assert plan["order"] == ["h", "w1", "w2"]
    assert [plan["nodes"][n]["rank"] for n in plan["order"]] == [0, 1, 2]
    w2 = plan["nodes"]["w2"]
    assert w2["paths"]["unit_file"] == "/etc/systemd/system/rlinf-ray-b.service"
    assert w2["paths"]["record"] == "/etc/rlinf/state/rlinf-ray-b.json"
    assert plan["cluster"]["requirements"] == ["ray[default]==2.60.0"]


def test_every_problem_is_one_report_naming_host_and_variable():
    found = problems_of(
        lambda: P.static_plan(
            GROUPS, hostvars(w1={"rlinf_venv_dir": "/usr", "ray_port": 0}, w2={"ray_node_unit_name": "ssh"})
        )
    )
    assert any(s.startswith("host 'w1': rlinf_venv_dir='/usr'") for s in found)
    assert any(s.startswith("host 'w1': ray_port=0") for s in found)
    assert any(s.startswith("host 'w2': ray_node_unit_name='ssh'") for s in found)


def test_the_same_bad_value_on_every_host_is_reported_once():
    found = problems_of(lambda: P.static_plan(GROUPS, {n: {"rlinf_ray_version": "2.46.0"} for n in ["h", "w1", "w2"]}))
    assert [s for s in found if "rlinf_ray_version" in s] == [found[0]]
    assert found[0].startswith("hosts h, w1, w2: rlinf_ray_version='2.46.0'")


def test_a_cluster_wide_setting_that_differs_between_hosts_is_refused():
    found = problems_of(lambda: P.static_plan(GROUPS, hostvars(w2={"ray_auth_enabled": False})))
    assert any("ray_auth_enabled differs between hosts" in s for s in found)


def test_a_secret_is_never_shown():
    found = problems_of(lambda: P.static_plan(GROUPS, hostvars(h={"ray_auth_token": "tooShortTokQ7x"})))
    assert found and all("tooShortTokQ7x" not in s for s in found)
    assert any("ray_auth_token (value hidden)" in s for s in found)


def test_variables_are_still_checked_when_the_topology_is_broken():
    found = problems_of(lambda: P.static_plan({"ray_head": ["h", "w1"]}, hostvars(w1={"ray_port": "x"})))
    assert any("exactly one head" in s for s in found)
    assert any("ray_port='x'" in s for s in found)


@pytest.mark.parametrize(
    ("extra", "phrase"),
    [
        ({"rlinf_venv_dir": "/etc/rlinf/x", "rlinf_env_file": "/etc/rlinf/x/rlinf.env"}, "overlap"),
        ({"ray_node_unit_name": "rlinf-firewall"}, "must differ"),
    ],
)
def test_settings_of_one_node_that_collide_are_refused(extra, phrase):
    found = problems_of(lambda: P.static_plan(GROUPS, hostvars(w1=extra)))
    assert any(phrase in s and "w1" in s for s in found)


@pytest.mark.parametrize(
    ("extra", "sentence"),
    [
        (
            {"ray_node_unit_name": "easytier"},
            "host 'w1': ray_node_unit_name='easytier' and firewall_unit_name='rlinf-firewall' must differ from each "
            "other and from 'easytier' (the overlay's unit); give each its own name.",
        ),
        (
            {"rlinf_secret_env_vars": {"RAY_AUTH_MODE": "x"}},
            "host 'w1': rlinf_secret_env_vars sets RAY_AUTH_MODE, which must not be set there: the env file sets it "
            "from ray_auth_enabled.",
        ),
    ],
)
def test_unit_names_and_secret_env_names_are_judged_with_a_broken_topology_too(extra, sentence):
    # Two heads: no topology, and still one report with every host's own mistakes (issue 25's corpus).
    found = problems_of(lambda: P.static_plan({"ray_head": ["h", "w1"]}, hostvars(w1=extra)))
    assert any("exactly one head" in s for s in found)
    assert sentence in found, found


def test_launch_and_remove_node_need_their_run_settings():
    assert any(
        "rlinf_entry is empty" in s
        for s in problems_of(lambda: P.static_plan(GROUPS, hostvars(), {"purpose": "launch"}))
    )
    found = problems_of(lambda: P.static_plan(GROUPS, hostvars(h={"node": "h"}), {"purpose": "remove-node"}))
    assert any("is the Ray head" in s for s in found)


# Stage 2: the address rule and what each node gets ----------------------------------


def resolved(hv=None, found=None, purpose="site"):
    return P.resolve(P.static_plan(GROUPS, hv or hostvars()), found or probes(), purpose)


def test_the_default_route_gives_the_address_and_the_collective_nic():
    plan = resolved()
    w1 = plan["nodes"]["w1"]
    assert (w1["ip"], w1["ip_source"], w1["comm_device"]) == ("10.0.0.2", "default route", "eth0")
    assert w1["env"]["RLINF_COMM_NET_DEVICES"] == "eth0"
    assert plan["cluster"]["head_address"] == "10.0.0.1:6379"


def test_a_data_nic_gives_its_own_address_everywhere():
    two_nics = {
        name: probe(f"10.0.0.{i + 1}", interfaces={"eth0": [f"10.0.0.{i + 1}"], "eth1": [f"10.9.0.{i + 1}"]})
        for i, name in enumerate(["h", "w1", "w2"])
    }
    plan = resolved({n: {"rlinf_comm_net_device": "eth1"} for n in ["h", "w1", "w2"]}, two_nics)
    assert [plan["nodes"][n]["ip"] for n in plan["order"]] == ["10.9.0.1", "10.9.0.2", "10.9.0.3"]
    assert plan["cluster"]["head_address"] == "10.9.0.1:6379"
    assert "--address=10.9.0.1:6379" in plan["nodes"]["w1"]["ray_args"]
    assert [e["ip"] for e in plan["expected_nodes"]] == ["10.9.0.1", "10.9.0.2", "10.9.0.3"]
    assert all(e["env"]["RLINF_COMM_NET_DEVICES"] == "eth1" for e in plan["expected_nodes"])
    record = plan["nodes"]["w2"]["files"][3]["content"]
    assert '"ip": "10.9.0.3"' in record and '"comm_device": "eth1"' in record


@pytest.mark.parametrize(
    ("hv", "node_probe", "phrase"),
    [
        ({"rlinf_comm_net_device": "eth9"}, probe("10.0.0.2"), "does not exist here"),
        (
            {"rlinf_comm_net_device": "eth1"},
            probe("10.0.0.2", interfaces={"eth0": ["10.0.0.2"], "eth1": []}),
            "no IPv4",
        ),
        ({"ray_node_ip": "10.7.7.7"}, probe("10.0.0.2"), "not an address of any interface"),
        ({}, probe("10.0.0.2", default_route={}), "no default route"),
        ({}, probe("127.0.1.1", device="lo2"), "other nodes cannot reach"),
    ],
)
def test_an_address_other_nodes_cannot_use_is_refused_naming_the_host(hv, node_probe, phrase):
    found = problems_of(lambda: resolved(hostvars(w1=hv), probes(w1=node_probe)))
    assert any(s.startswith("host 'w1'") and phrase in s for s in found), found


@pytest.mark.parametrize(
    ("node_probe", "phrase"),
    [
        (probe("10.0.0.2", python={"version": "3.9.2"}), "Python 3.9.2; RLinf needs Python >= 3.10"),
        (probe("10.0.0.2", python={"error": "python3 is not installed"}), "cannot run rlinf_python"),
        (probe("10.0.0.2", apt=False, os={"pretty_name": "Rocky Linux 9"}), "Rocky Linux 9 has no apt"),
        (probe("10.0.0.2", systemd=False), "systemd does not manage services"),
        (
            probe("10.0.0.2", paths={"env_file": {"path": "/srv/env", "exists": True, "kind": "file", "ours": False}}),
            "rlinf-ansible did not write",
        ),
        (probe("10.0.0.2", os_units=["/lib/systemd/system/rlinf-ray.service"]), "already has /lib/systemd"),
    ],
)
def test_what_only_a_host_can_tell_is_refused_before_anything_changes(node_probe, phrase):
    found = problems_of(lambda: resolved(found=probes(w1=node_probe)))
    assert any(s.startswith("host 'w1'") and phrase in s for s in found), found


def test_an_unrecorded_file_in_our_project_directories_is_an_earlier_install_adopted():
    own = probe("10.0.0.2", paths={"env_file": {"path": "/etc/rlinf/rlinf.env", "exists": True, "kind": "file"}})
    assert resolved(found=probes(w1=own))["nodes"]["w1"]["files"]


def test_different_pythons_are_refused():
    found = problems_of(lambda: resolved(found=probes(w2=probe("10.0.0.3", python={"version": "3.11.9"}))))
    assert any("Python differs between nodes" in s and "w2=3.11.9" in s for s in found)


def test_the_head_must_be_in_the_run():
    found = problems_of(lambda: P.resolve(P.static_plan(GROUPS, hostvars()), {"w1": probe("10.0.0.2")}))
    assert any("the head 'h' is not in this run" in s for s in found)


def test_a_busy_head_port_is_refused():
    found = problems_of(lambda: resolved(found=probes(h=probe("10.0.0.1", port_busy=True))))
    assert any("port 6379 is already in use" in s for s in found)


def test_status_reads_the_addresses_the_records_keep():
    recorded = {
        n: probe("10.0.0.9", record={"ip": f"192.0.2.{i}", "comm_device": "eth1"})
        for i, n in enumerate(["h", "w1", "w2"])
    }
    plan = resolved(found=recorded, purpose="status")
    assert [e["ip"] for e in plan["expected_nodes"]] == ["192.0.2.0", "192.0.2.1", "192.0.2.2"]
    assert plan["cluster"]["head_address"] == "192.0.2.0:6379"
    unrecorded = dict(recorded, w2=probe("10.0.0.3"))
    assert resolved(found=unrecorded, purpose="status")["nodes"]["w2"]["ip"] == ""


def test_status_asks_the_head_at_the_port_its_record_keeps_not_a_new_one_in_the_inventory():
    # ray_port changed in the inventory, site.yml not run yet: the head's Ray still listens where it started.
    record = {"ip": "192.0.2.1", "ports": {"ray_port": 6379}}
    found = dict(probes(), h=probe("192.0.2.1", record=record))
    plan = resolved(hostvars(h={"ray_port": 7000}), found=found, purpose="status")
    assert plan["cluster"]["head_address"] == "192.0.2.1:6379" and plan["cluster"]["head_port"] == 6379
    # A site run applies the new port: it is the inventory's.
    assert resolved(hostvars(h={"ray_port": 7000}), purpose="site")["cluster"]["head_port"] == 7000
    # No record (never deployed): the inventory's.
    assert resolved(hostvars(h={"ray_port": 7000}), purpose="status")["cluster"]["head_port"] == 7000


def test_the_env_file_and_the_unit_carry_the_auth_settings():
    node = resolved()["nodes"]["w1"]
    env = node["files"][0]["content"]
    unit = node["files"][1]["content"]
    assert "RAY_AUTH_MODE='token'" in env and "RAY_AUTH_TOKEN_PATH='/etc/rlinf/ray-auth-token'" in env
    assert "Environment=RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH=/etc/rlinf/ray-auth-token" in unit
    assert "EnvironmentFile=/etc/rlinf/rlinf.env\n" in unit
    off = resolved({n: {"ray_auth_enabled": False} for n in ["h", "w1", "w2"]})["nodes"]["w1"]
    assert "RAY_AUTH_MODE='disabled'" in off["files"][0]["content"]


def test_expected_nodes_ask_the_check_for_auth_and_the_collective_nic():
    for entry in resolved()["expected_nodes"]:
        assert entry["env"] == {"RLINF_COMM_NET_DEVICES": "eth0", "RAY_AUTH_MODE": "token"}


def test_the_ray_start_port_flags_are_the_firewall_port_table():
    hv = {n: {"rlinf_firewall_enabled": True} for n in ["h", "w1", "w2"]}
    hv["w1"]["ray_node_manager_port"] = 7380
    plan = resolved(hv)
    for name in plan["order"]:
        node = plan["nodes"][name]
        pinned = {
            int(value)
            for arg in node["ray_args"]
            if (m := re.match(r"--(?!address|num-|object-store)[a-z-]*port=(\d+)$", arg)) and (value := m.group(1))
        }
        low = next(int(a.split("=")[1]) for a in node["ray_args"] if a.startswith("--min-worker-port="))
        high = next(int(a.split("=")[1]) for a in node["ray_args"] if a.startswith("--max-worker-port="))
        table = firewall.node_ports(node)
        guarded = set(table["single"].values()) | ({table["client"]} if table["client"] else set())
        assert pinned == guarded | {low, high}, name
        assert (low, high) == table["workers"]
        rules = firewall.machine_rules(plan, name)
        assert set(firewall.nft_ports(table)) <= set(rules["cluster_ports"])
    assert "--node-manager-port=7380" in plan["nodes"]["w1"]["ray_args"]
    assert not [a for a in resolved()["nodes"]["w1"]["ray_args"] if "manager-port" in a]


def test_firewall_sources_are_every_nodes_resolved_address():
    hv = {n: {"rlinf_firewall_enabled": True} for n in ["h", "w1", "w2"]}
    hv["h"]["rlinf_firewall_allowed_sources"] = ["192.0.2.0/24"]
    rules = firewall.machine_rules(resolved(hv), "h")
    assert rules["cluster_sources"] == ["10.0.0.1", "10.0.0.2", "10.0.0.3", "192.0.2.0/24"]
    assert rules["missing"] == []


def test_adopted_and_owned_trees_follow_the_manifest():
    own = probe(
        "10.0.0.2",
        paths={
            "venv": {"path": "/opt/rlinf/venv", "exists": True, "kind": "dir", "is_venv": True},
            "wheelhouse": {"path": "/opt/rlinf/wheelhouse", "exists": False, "kind": "none"},
        },
    )
    node = resolved(found=probes(w1=own))["nodes"]["w1"]
    assert node["adopt"] == [{"path": "/opt/rlinf/venv", "kind": "venv"}]
    assert {t["path"] for t in node["own_trees"]} == {"/opt/rlinf/venv", "/opt/rlinf/wheelhouse"}


def test_a_venv_that_exists_outside_our_project_directories_is_not_adopted():
    theirs = probe(
        "10.0.0.2",
        paths={
            "venv": {"path": "/var/lib/rlinf/venv", "exists": True, "kind": "dir", "is_venv": True},
            "wheelhouse": {"path": "/opt/rlinf/wheelhouse", "exists": False, "kind": "none"},
        },
    )
    node = resolved(hostvars(w1={"rlinf_venv_dir": "/var/lib/rlinf/venv"}), probes(w1=theirs))["nodes"]["w1"]
    assert node["adopt"] == []
    assert [t["path"] for t in node["own_trees"]] == ["/opt/rlinf/wheelhouse"]


def test_the_plan_summary_holds_no_secret_and_no_file_content():
    plan = P.static_plan(GROUPS, {n: {"ray_auth_token": "x" * 40} for n in ["h", "w1", "w2"]})
    text = repr(P.summary(plan))
    assert "x" * 40 not in text and "ray_auth_token" not in text


def test_the_plan_is_not_changed_by_resolving_it():
    static = P.static_plan(GROUPS, hostvars())
    before = copy.deepcopy(static)
    P.resolve(static, probes())
    assert static == before


def gcs_node(ip, node_id, alive=True, temp_dir="/tmp/ray"):
    return {
        "NodeID": node_id,
        "NodeManagerAddress": ip,
        "NodeManagerPort": 40000,
        "Alive": alive,
        "RayletSocketName": f"{temp_dir}/session_x/sockets/raylet",
    }


def with_gcs(gcs, found=None):
    found = found or probes()
    found["h"] = dict(found["h"], gcs=gcs)
    return found


def test_workers_the_running_heads_gcs_has_no_alive_node_for_are_marked_missing():
    # A head restarted behind our back: its new GCS knows w1 only as DEAD and not w2 at all.
    gcs = {"address": "10.0.0.1:6379", "nodes": [gcs_node("10.0.0.1", "aa"), gcs_node("10.0.0.2", "bb", False)]}
    plan = resolved(found=with_gcs(gcs))
    assert [plan["nodes"][n].get("missing_from_gcs", False) for n in plan["order"]] == [False, True, True]
    assert plan["nodes"]["h"]["gcs_error"] == ""
    every = [gcs_node(f"10.0.0.{i}", f"{i:02x}") for i in (1, 2, 3)]
    plan = resolved(found=with_gcs({"address": "10.0.0.1:6379", "nodes": every}))
    assert not any(plan["nodes"][n].get("missing_from_gcs") for n in plan["order"])
    # No read (the head's Ray was not running, or status): nothing marked, nothing to stop for.
    for plan in (resolved(), resolved(found=with_gcs({"address": "10.0.0.1:6379", "nodes": []}), purpose="status")):
        assert not any(
            plan["nodes"][n].get("missing_from_gcs") or plan["nodes"][n].get("gcs_error") for n in plan["order"]
        )


def test_a_heads_gcs_that_could_not_be_read_is_named_on_the_head_with_the_fix():
    plan = resolved(found=with_gcs({"address": "10.0.0.1:6379", "error": "RuntimeError: Authentication failed"}))
    error = plan["nodes"]["h"]["gcs_error"]
    assert error.startswith("cannot read the node table of the Ray GCS at 10.0.0.1:6379 (RuntimeError: Authentication")
    assert "journalctl -u rlinf-ray" in error and "RAY_AUTH_*" in error
    assert not any(plan["nodes"][n].get("missing_from_gcs") for n in plan["order"])


def test_two_ray_nodes_on_one_machine_are_told_apart_in_the_gcs_by_their_temp_dir():
    groups = {"ray_head": ["h"], "ray_workers": ["w1", "b"]}
    hv = hostvars()
    hv["b"] = second_ray_node("10.0.0.2")
    hv["w1"]["rlinf_gpus_per_node"] = 0
    gcs = {
        "address": "10.0.0.1:6379",
        "nodes": [gcs_node("10.0.0.1", "aa"), gcs_node("10.0.0.2", "bb", temp_dir="/tmp/ray-b")],
    }
    found = with_gcs(gcs, {"h": probe("10.0.0.1"), "w1": probe("10.0.0.2"), "b": probe("10.0.0.2")})
    plan = P.resolve(P.static_plan(groups, hv), found)
    assert [plan["nodes"][n].get("missing_from_gcs", False) for n in ("h", "w1", "b")] == [False, True, False]


def test_ray_nodes_sharing_a_machine_share_its_venv_and_firewall_installed_once():
    groups = {"ray_head": ["h"], "ray_workers": ["w1", "b"]}
    hv = hostvars()
    hv["b"] = second_ray_node("10.0.0.2")
    hv["w1"]["rlinf_gpus_per_node"] = 0
    plan = P.static_plan(groups, hv)
    assert [plan["nodes"][n]["installs_venv"] for n in ("h", "w1", "b")] == [True, True, False]
    assert [plan["nodes"][n]["machine_owner"] for n in ("h", "w1", "b")] == [True, True, False]
    # Each purge keeps what the machine's other Ray node lists (the token file both use).
    manifests = {n: plan["nodes"][n]["paths"]["manifest"] for n in ("h", "w1", "b")}
    assert plan["nodes"]["h"]["peer_manifests"] == []
    assert plan["nodes"]["w1"]["peer_manifests"] == [manifests["b"]]
    assert plan["nodes"]["b"]["peer_manifests"] == [manifests["w1"]]
    # The venv exists (the first node installed it): the other Ray node of the machine, which runs from it,
    # lists it too (adopt, recorded with its files), so purging either node keeps it while the other runs.
    venv = {key: {"exists": True, "kind": "dir", "ours": True} for key in ("venv", "wheelhouse")}
    shared = probe("10.0.0.2", paths=venv)
    out = P.resolve(plan, {"h": probe("10.0.0.1", paths=venv), "w1": shared, "b": shared})
    assert out["nodes"]["w1"]["own_trees"] and out["nodes"]["w1"]["adopt"]
    assert out["nodes"]["b"]["own_trees"] == []
    assert out["nodes"]["b"]["adopt"] == [{"path": "/opt/rlinf/venv", "kind": "venv"}]
    # Once listed there, nothing more to list; a node of another machine never lists it.
    listed = probe("10.0.0.2", paths=venv, manifest=[{"path": "/opt/rlinf/venv", "kind": "venv"}])
    out = P.resolve(plan, {"h": probe("10.0.0.1", paths=venv), "w1": shared, "b": listed})
    assert out["nodes"]["b"]["adopt"] == [] and out["nodes"]["h"]["adopt"] == out["nodes"]["w1"]["adopt"]
    # Without the installing node in the run (--limit), it does not know whether the venv is ours: not listed.
    out = P.resolve(plan, {"h": probe("10.0.0.1", paths=venv), "b": shared})
    assert out["nodes"]["b"]["adopt"] == []
    # A venv that is not ours (outside our project directories, not listed by the installing node) neither.
    hv["w1"]["rlinf_venv_dir"] = hv["b"]["rlinf_venv_dir"] = "/var/lib/rlinf/venv"
    theirs = probe(
        "10.0.0.2", paths={"venv": {"path": "/var/lib/rlinf/venv", "exists": True, "kind": "dir", "is_venv": True}}
    )
    out = P.resolve(P.static_plan(groups, hv), {"h": probe("10.0.0.1"), "w1": theirs, "b": theirs})
    assert [t["path"] for t in out["nodes"]["w1"]["own_trees"]] == ["/opt/rlinf/wheelhouse"]
    assert out["nodes"]["b"]["adopt"] == []
    del hv["w1"]["rlinf_venv_dir"]
    hv["b"]["rlinf_venv_dir"] = "/opt/rlinf/venv-b"
    assert P.static_plan(groups, hv)["nodes"]["b"]["installs_venv"] is True
    del hv["b"]["rlinf_env_profile_script"]
    found = problems_of(lambda: P.static_plan(groups, hv))
    assert any("same rlinf_env_profile_script" in s for s in found)


def test_gpu_nodes_tell_the_check_what_the_inventory_says_of_each_nodes_gpus():
    hv = hostvars(
        h={"rlinf_gpus_per_node": 0, "rlinf_node_group": "ctl"},
        w1={"rlinf_cuda_visible_devices": "0,1", "rlinf_gpu_isolated": True, "rlinf_node_group": "train"},
        w2={"ray_num_gpus": 4, "rlinf_node_group": "train"},
    )
    gpu = {e["name"]: e for e in resolved(hv)["gpu_nodes"]}
    assert list(gpu) == ["h", "w1", "w2"]
    assert gpu["h"] == {
        "name": "h",
        "machine": "10.0.0.1",
        "node_groups": ["ctl"],
        "cuda_visible_devices": None,
        "gpu_isolated": False,
        "ray_num_gpus": None,
        "rlinf_gpus": 0,
        "machine_gpu_node": None,
        "accelerator_type": "NV_GPU",
    }
    w1 = gpu["w1"]
    assert (w1["cuda_visible_devices"], w1["gpu_isolated"], w1["rlinf_gpus"]) == (["0", "1"], True, 2)
    assert (gpu["w2"]["ray_num_gpus"], gpu["w2"]["rlinf_gpus"], gpu["w2"]["node_groups"]) == (4, None, ["train"])


def test_compute_and_control_on_one_gpu_host_plan_and_pass_the_gpu_check():
    # RLinf's single-machine guide: compute head and control node on one host, own venv and temp dir.
    from ansible_collections.rlinf.cluster.plugins.module_utils.gpu_check import gpu_problems

    hv = hostvars(
        h={"rlinf_gpus_per_node": 8, "ray_temp_dir": "/tmp/rlinf_compute", "rlinf_venv_dir": "/opt/rlinf/compute-venv"},
        w1={
            "ansible_host": "10.0.0.1",
            "rlinf_gpus_per_node": 0,
            "ray_temp_dir": "/tmp/rlinf_control",
            "ray_port": 6380,
            "rlinf_env_file": "/etc/rlinf/control.env",
            "ray_node_unit_name": "rlinf-ray-control",
            "rlinf_venv_dir": "/opt/rlinf/control-venv",
            "rlinf_env_profile_script": "/etc/profile.d/rlinf-control.sh",
        },
    )
    plan = resolved(hv, probes(w1=probe("10.0.0.1")))
    assert [(n["name"], n["installs_venv"]) for n in (plan["nodes"]["h"], plan["nodes"]["w1"])] == [
        ("h", True),
        ("w1", True),
    ]
    gpu_plans = plan["gpu_nodes"]
    assert [g["machine_gpu_node"] for g in gpu_plans] == ["h", "h", None]
    uuids = [f"GPU-{i}" for i in range(8)]
    seen = {"count": 8, "nvml_count": 8, "driver_version": "535.129.03", "uuids": uuids}
    nodes = [
        {
            "name": name,
            "rank": rank,
            "state": "ALIVE",
            "resources": {"CPU": 8.0, "GPU": 8.0},
            "manifest": {"gpus": seen},
        }
        for rank, name in enumerate(["h", "w1"])
    ]
    assert gpu_problems(nodes, gpu_plans) == []


@pytest.mark.parametrize(("var", "host", "run"), [("rlinf_env_vars", "w1", None), ("rlinf_launch_env", "h", "launch")])
def test_rlinf_code_working_dir_by_hand_is_refused_with_code_sync_as_the_fix(var, host, run):
    hv = hostvars(**{host: {var: {"RLINF_CODE_WORKING_DIR": "/srv/RLinf"}, "rlinf_entry": "python train.py"}})
    found = problems_of(lambda: P.static_plan(GROUPS, hv, {"purpose": run} if run else None))
    [problem] = [s for s in found if "RLINF_CODE_WORKING_DIR" in s]
    assert host in problem and var in problem
    assert "use rlinf_code_sync: ray" in problem


def _interpreter_cluster(path):
    return {
        "num_nodes": 3,
        "component_placement": {"actor": {"node_group": "train", "placement": "0-1"}},
        "node_groups": [
            {
                "label": "train",
                "node_ranks": "1-2",
                "env_configs": [{"node_ranks": "1-2", "python_interpreter_path": path}],
            }
        ],
    }


def test_env_configs_interpreters_are_read_on_each_node_of_the_group():
    hv = hostvars(h={"rlinf_cluster": _interpreter_cluster("/opt/openpi/bin/python3")})
    plan = P.static_plan(GROUPS, hv)
    assert "env_config_python_0" not in plan["nodes"]["h"]["paths"]
    for name in ("w1", "w2"):
        assert plan["nodes"][name]["paths"]["env_config_python_0"] == "/opt/openpi/bin/python3"
        assert plan["nodes"][name]["env_config_pythons"] == {
            "env_config_python_0": "rlinf_cluster node_groups[0] 'train' env_configs[0]"
        }


def test_an_env_configs_interpreter_missing_on_a_node_is_refused_naming_host_path_and_fix():
    hv = hostvars(h={"rlinf_cluster": _interpreter_cluster("/opt/openpi/bin/python3")})
    there = {"path": "/opt/openpi/bin/python3", "exists": True, "kind": "file", "ours": False}
    found = probes(w1=probe("10.0.0.2", paths={"env_config_python_0": there}))
    with pytest.raises(PlanError) as err:
        P.resolve(P.static_plan(GROUPS, hv), found, "site")
    [problem] = [p for p in err.value.problems if "python_interpreter_path" in p.text]
    assert problem.host == "w2"
    assert problem.text.startswith(
        "rlinf_cluster node_groups[0] 'train' env_configs[0]: python_interpreter_path /opt/openpi/bin/python3 does not "
        "exist on this node (rank 2)"
    )
    assert "install that Python here, or point python_interpreter_path at one that exists" in problem.text


def test_an_env_configs_interpreter_in_the_nodes_own_venv_is_installed_by_the_run():
    hv = hostvars(h={"rlinf_cluster": _interpreter_cluster("/opt/rlinf/venv/bin/python")})
    assert resolved(hv)["nodes"]["w1"]["paths"]["env_config_python_0"] == "/opt/rlinf/venv/bin/python"


@pytest.mark.parametrize("purpose", ["site", "teardown"])
def test_the_restart_guard_asks_the_ray_that_runs_now_under_the_venv_it_started_from(purpose):
    """A run that moves rlinf_venv_dir installs the new venv only after the guard read the drivers."""
    moved = {n: {"rlinf_venv_dir": "/opt/rlinf/venv-2"} for n in ["h", "w1", "w2"]}
    recorded = probes(h=probe("10.0.0.1", record={"ip": "10.0.0.1", "venv": "/opt/rlinf/venv"}))
    plan = resolved(moved, found=recorded, purpose=purpose)
    assert plan["nodes"]["h"]["running_python"] == "/opt/rlinf/venv/bin/python"
    assert plan["nodes"]["w1"]["running_python"] == "/opt/rlinf/venv-2/bin/python"  # no record: nothing runs yet


@pytest.mark.parametrize(
    "bad, said",
    [
        ({"ray_port": "abc"}, "ray_port='abc' is not a whole number"),
        ({"rlinf_node_rank": "x"}, "rlinf_node_rank"),
    ],
)
def test_a_bad_value_is_one_sentence_not_one_per_checker(bad, said):
    found = problems_of(lambda: P.static_plan(GROUPS, hostvars(h=bad)))
    var = next(iter(bad))
    about = [s for s in found if f"{var}=" in s or f"{var} " in s]
    assert len(about) == 1, found
    assert said in about[0]


def test_launch_names_the_run_from_its_name_or_the_time_and_the_heads_checkout():
    from datetime import UTC, datetime

    now = datetime(2026, 12, 3, 11, 5, 9, tzinfo=UTC)
    every = {"rlinf_src": "/srv/RLinf/"}
    hv = hostvars(h={**every, "rlinf_entry": "bash run.sh"}, w1=every, w2=every)
    plan = P.static_plan(GROUPS, hv, {"purpose": "launch", "now": now})
    assert plan["launch"] == {
        "unit": "rlinf-launch-20261203-110509",
        "dir": "/srv/RLinf",
        "script": "/var/log/rlinf/rlinf-launch-20261203-110509.sh",
        "log": "/var/log/rlinf/rlinf-launch-20261203-110509.log",
        "record": "/etc/rlinf/state/launches/rlinf-launch-20261203-110509.json",
        "outcome": "/etc/rlinf/state/launches/rlinf-launch-20261203-110509.outcome.json",
    }
    named = hostvars(h={**every, "rlinf_entry": "x", "rlinf_launch_name": "rlinf-launch-ppo.1"}, w1=every, w2=every)
    assert P.static_plan(GROUPS, named, {"purpose": "launch"})["launch"]["unit"] == "rlinf-launch-ppo.1"
    assert "launch" not in P.static_plan(GROUPS, hostvars(), {"purpose": "site"})


def test_launch_without_an_absolute_checkout_on_the_head_is_refused_naming_the_head():
    found = problems_of(lambda: P.static_plan(GROUPS, hostvars(h={"rlinf_entry": "x"}), {"purpose": "launch"}))
    assert any(s.startswith("host 'h': launch.yml runs rlinf_entry in the RLinf checkout") for s in found), found


def two_nic_probes():
    return {
        name: probe(f"10.0.0.{i + 1}", interfaces={"eth0": [f"10.0.0.{i + 1}"], "eth1": [f"10.9.0.{i + 1}"]})
        for i, name in enumerate(["h", "w1", "w2"])
    }


def test_ray_node_ip_beats_the_comm_device_for_the_address_and_the_comm_device_names_the_nic():
    # docs/variables.md, "How Ray's address is chosen": ray_node_ip if set, else the overlay, else
    # rlinf_comm_net_device's IPv4; RLINF_COMM_NET_DEVICES is the NIC holding the address unless
    # rlinf_comm_net_device names one.
    plan = resolved(hostvars(w1={"ray_node_ip": "10.0.0.2", "rlinf_comm_net_device": "eth1"}), two_nic_probes())
    w1 = plan["nodes"]["w1"]
    assert (w1["ip"], w1["ip_source"], w1["comm_device"]) == ("10.0.0.2", "ray_node_ip", "eth1")
    assert w1["env"]["RLINF_COMM_NET_DEVICES"] == "eth1"
    assert "--node-ip-address=10.0.0.2" in w1["ray_args"]


def test_ray_node_ip_alone_names_the_nic_that_holds_it_not_the_default_routes():
    plan = resolved(hostvars(w1={"ray_node_ip": "10.9.0.2"}), two_nic_probes())
    w1 = plan["nodes"]["w1"]
    assert (w1["ip"], w1["ip_source"], w1["comm_device"]) == ("10.9.0.2", "ray_node_ip", "eth1")
    assert w1["env"]["RLINF_COMM_NET_DEVICES"] == "eth1"
    # the other nodes keep the default route's address and NIC
    assert (plan["nodes"]["w2"]["ip"], plan["nodes"]["w2"]["comm_device"]) == ("10.0.0.3", "eth0")


def test_the_overlay_beats_the_comm_device_for_the_address_but_not_for_the_nic():
    groups = dict(GROUPS, easytier_bootstrap=["h"])
    hv = hostvars(w1={"rlinf_comm_net_device": "eth1"})
    for host in hv.values():
        host.update(easytier_enabled=True, easytier_network_name="lab", easytier_network_secret="s" * 24)
    static = P.static_plan(groups, hv)
    found = two_nic_probes()
    for name, data in found.items():
        data["interfaces"]["et0"] = [static["nodes"][name]["address_rule"]["value"]]
    plan = P.resolve(static, found, "site")
    w1, w2 = plan["nodes"]["w1"], plan["nodes"]["w2"]
    overlay_ip = static["nodes"]["w1"]["address_rule"]["value"]
    assert (w1["ip"], w1["ip_source"], w1["comm_device"]) == (overlay_ip, "overlay", "eth1")
    assert (w2["ip_source"], w2["comm_device"]) == ("overlay", static["nodes"]["w2"]["address_rule"]["device"])


# What the mutation run (tests/mutate.py) found untested -------------------------------------

EASYTIER_GROUPS = dict(GROUPS, easytier_bootstrap=["h"])


def overlay_hostvars(**w1):
    hv = hostvars(w1=w1)
    for host in hv.values():
        host.update(easytier_enabled=True, easytier_network_name="lab", easytier_network_secret="s" * 24)
    hv["w1"].update(w1)
    return hv


def all_hosts(**settings):
    return hostvars(**{name: dict(settings) for name in ["h", "w1", "w2"]})


@pytest.mark.parametrize(
    ("w1", "sentence"),
    [
        (
            {"easytier_peer_protocol": "wg", "easytier_listen_protocols": ["tcp"]},
            "host 'w1': easytier_peer_protocol='wg' is not one of easytier_listen_protocols ['tcp']; "
            "add it there or change it.",
        ),
        (
            {"easytier_install_source": "archive", "easytier_archive_path": "/srv/easytier.zip"},
            "host 'w1': easytier_install_source=archive needs easytier_archive_path and easytier_archive_sha256 "
            "(64 hex digits); set both.",
        ),
        (
            {"easytier_install_source": "archive", "easytier_archive_sha256": "a" * 64},
            "host 'w1': easytier_install_source=archive needs easytier_archive_path and easytier_archive_sha256 "
            "(64 hex digits); set both.",
        ),
    ],
)
def test_an_overlay_members_inconsistent_settings_are_refused_naming_it(w1, sentence):
    assert problems_of(lambda: P.static_plan(EASYTIER_GROUPS, overlay_hostvars(**w1))) == [sentence]


def test_an_archive_with_its_path_and_checksum_is_accepted():
    w1 = {
        "easytier_install_source": "archive",
        "easytier_archive_path": "/srv/et.zip",
        "easytier_archive_sha256": "a" * 64,
    }
    assert P.static_plan(EASYTIER_GROUPS, overlay_hostvars(**w1))["nodes"]["w1"]["rank"] == 1


@pytest.mark.parametrize(
    ("settings", "sentence"),
    [
        (
            {"rlinf_code_sync": "rsync"},
            "rlinf_code_sync=rsync needs rlinf_src, the absolute path of your RLinf checkout on the controller "
            "(for ray: on the head); set it.",
        ),
        (
            {"rlinf_code_sync": "rsync", "rlinf_src": "RLinf"},
            "rlinf_src='RLinf' is not an absolute path; write the full path.",
        ),
    ],
)
def test_code_sync_needs_an_absolute_source(settings, sentence):
    assert problems_of(lambda: P.static_plan(GROUPS, all_hosts(**settings))) == [sentence]


def test_only_rsync_puts_the_checkout_among_the_nodes_paths():
    rsync = P.static_plan(GROUPS, all_hosts(rlinf_code_sync="rsync", rlinf_src="/srv/RLinf"))["nodes"]["w1"]
    assert rsync["paths"]["code_dest"] == "/srv/RLinf"
    other = P.static_plan(GROUPS, all_hosts(rlinf_code_sync="none", rlinf_src="/srv/RLinf"))["nodes"]["w1"]
    assert other["code_dest"] == "/srv/RLinf" and "code_dest" not in other["paths"]


def test_a_variable_that_cannot_be_evaluated_is_named_not_raised():
    class Undefined(dict):
        def __getitem__(self, key):
            if key == "ray_temp_dir":
                raise RuntimeError("'scratch' is undefined")
            return super().__getitem__(key)

    hv = hostvars()
    hv["w1"] = Undefined(hv["w1"], ray_temp_dir="{{ scratch }}")
    assert problems_of(lambda: P.static_plan(GROUPS, hv)) == [
        "host 'w1': ray_temp_dir cannot be evaluated ('scratch' is undefined); fix its value."
    ]


@pytest.mark.parametrize(
    ("settings", "resources"),
    [
        ({"rlinf_gpus_per_node": 2}, {"GPU": 2}),  # the accelerators the inventory counts are expected
        ({"rlinf_gpus_per_node": 2, "ray_num_gpus": 1}, {"GPU": 1}),  # what ray start advertises wins
        ({"rlinf_gpus_per_node": 2, "rlinf_accelerator_type": "NPU"}, {"NPU": 2}),  # under Ray's name for them
        (
            {"rlinf_gpus_per_node": 2, "rlinf_accelerator_type": "NPU", "ray_resources": {"NPU": 1}},
            {"NPU": 1},
        ),
        ({"rlinf_gpus_per_node": 2, "rlinf_accelerator_type": "MUSA_GPU"}, {}),  # Ray shows none for MUSA
        ({}, {}),
    ],
)
def test_the_check_expects_the_accelerators_the_inventory_counts(settings, resources):
    plan = P.static_plan(GROUPS, hostvars(w1=settings))
    assert plan["nodes"]["w1"]["resources"] == resources


def test_an_unusual_value_passes_through_plain_unchanged():
    from decimal import Decimal

    assert P._plain({"a": [Decimal("1.5"), (1, "x")], "b": None}) == {"a": [Decimal("1.5"), [1, "x"]], "b": None}


def test_launch_needs_the_heads_checkout_not_a_workers():
    hv = hostvars(w1={"rlinf_code_dest": "/srv/RLinf"}, w2={"rlinf_code_dest": "/srv/RLinf"}, h={"rlinf_entry": "x"})
    assert problems_of(lambda: P.static_plan(GROUPS, hv, {"purpose": "launch"})) == [
        "host 'h': launch.yml runs rlinf_entry in the RLinf checkout on the head: set rlinf_src (or rlinf_code_dest) "
        "to its absolute path there (now '')."
    ]


def test_an_rlinf_config_that_cannot_be_read_is_one_problem_naming_the_path():
    assert problems_of(lambda: P.static_plan(GROUPS, hostvars(h={"rlinf_config": "/nonexistent/x.yaml"}))) == [
        "rlinf_config: file '/nonexistent/x.yaml' does not exist (looked at /nonexistent/x.yaml); "
        "give a path to the RLinf YAML."
    ]


@pytest.mark.parametrize(
    ("hv", "interfaces", "sentence"),
    [
        (
            {"ray_node_ip": "10.7.7.7"},
            {"lo": ["127.0.0.1"], "eth0": ["10.0.0.2"], "eth1": []},
            "host 'w1': ray_node_ip=10.7.7.7 is not an address of any interface of this host (eth0 10.0.0.2; eth1 "
            "(no IPv4)); Ray and the collectives bind local addresses: set it to one of them, or leave it empty.",
        ),
        (
            {"rlinf_comm_net_device": "eth9"},
            {"lo": ["127.0.0.1"]},
            "host 'w1': rlinf_comm_net_device=eth9 does not exist here (interfaces: none); set it to one of them, "
            "or leave it empty for the default route's NIC.",
        ),
    ],
)
def test_an_address_problem_lists_the_hosts_interfaces_but_loopback(hv, interfaces, sentence):
    node_probe = probe("10.0.0.2", interfaces=interfaces)
    assert problems_of(lambda: resolved(hostvars(w1=hv), probes(w1=node_probe))) == [sentence]


def test_an_env_configs_interpreter_anywhere_in_the_nodes_own_venv_is_installed_by_the_run():
    hv = hostvars(h={"rlinf_cluster": _interpreter_cluster("/opt/rlinf/venv/bin/python3.11")})
    assert resolved(hv)["nodes"]["w1"]["paths"]["env_config_python_0"] == "/opt/rlinf/venv/bin/python3.11"


@pytest.mark.parametrize(("version", "ok"), [("3.9.18", False), ("3.10.0", True)])
def test_python_3_10_is_the_oldest_accepted(version, ok):
    found = {name: probe(f"10.0.0.{i + 1}", python={"version": version}) for i, name in enumerate(["h", "w1", "w2"])}
    if ok:
        assert resolved(found=found)["nodes"]["w1"]["ip"] == "10.0.0.2"
    else:
        assert problems_of(lambda: resolved(found=found))[0].startswith(
            f"hosts h, w1, w2: rlinf_python=python3 is Python {version}; RLinf needs Python >= 3.10 (and Ray "
        )


def test_a_host_that_could_not_be_probed_is_named_with_the_reason():
    found = probes(w2={"unreachable": True, "msg": "ssh: connect to host 10.0.0.3 port 22: No route to host"})
    assert problems_of(lambda: resolved(found=found))[0] == (
        "host 'w2': could not be probed: ssh: connect to host 10.0.0.3 port 22: No route to host."
    )


@pytest.mark.parametrize("purpose", ["status", "teardown"])
def test_a_run_that_writes_no_node_files_renders_none(purpose):
    w1 = resolved(purpose=purpose)["nodes"]["w1"]
    assert not {"files", "env", "ray_args", "files_digest", "metrics_files"} & set(w1)


def test_a_node_whose_probe_says_nothing_of_its_venv_installs_it():
    found = probes(w1=probe("10.0.0.2", venv={"satisfied": True}))
    plan = resolved(found=found)
    assert (plan["nodes"]["h"]["venv_install"], plan["nodes"]["w1"]["venv_install"]) == (True, False)


def test_ray_start_advertises_custom_resources_sorted_and_a_temp_dir_only_when_moved():
    hv = hostvars(w1={"ray_resources": {"zeta": 1, "alpha": 2}, "ray_temp_dir": "/tmp/ray-w1"})
    w1, w2 = (resolved(hv)["nodes"][n]["ray_args"] for n in ("w1", "w2"))
    assert '--resources={"alpha":2,"zeta":1}' in w1
    assert "--temp-dir=/tmp/ray-w1" in w1
    assert not [a for a in w2 if a.startswith(("--temp-dir", "--resources"))]


@pytest.mark.parametrize(("recorded", "port"), [(7000, 7000), (0, 6379), (65536, 6379), (True, 6379), ("7000", 6379)])
def test_status_asks_the_head_at_the_port_its_record_holds_when_it_is_a_port(recorded, port):
    head = probe("10.0.0.1", record={"ip": "10.0.0.1", "ports": {"ray_port": recorded}})
    plan = resolved(found=probes(h=head), purpose="status")
    assert plan["cluster"]["head_address"] == f"10.0.0.1:{port}"


def test_the_env_file_and_unit_restart_ray_the_profile_and_record_do_not():
    import hashlib

    w1 = resolved()["nodes"]["w1"]
    paths = w1["paths"]
    assert [(f["path"], f.get("restart", False)) for f in w1["files"]] == [
        (paths["env_file"], True),
        (paths["unit_file"], True),
        (paths["profile"], False),
        (paths["record"], False),
    ]
    contents = "".join(f["content"] for f in w1["files"]).encode()
    assert w1["files_digest"] == hashlib.sha256(contents).hexdigest()[:16]


def test_a_cluster_wide_mapping_written_in_another_key_order_is_the_same_value():
    hv = hostvars(h={"ray_check_expected_totals": {"GPU": 2, "CPU": 4}})
    hv["w1"]["ray_check_expected_totals"] = {"CPU": 4, "GPU": 2}
    hv["w2"]["ray_check_expected_totals"] = {"GPU": 2, "CPU": 4}
    assert P.static_plan(GROUPS, hv)["order"] == ["h", "w1", "w2"]
    hv["w2"]["ray_check_expected_totals"] = {"GPU": 1, "CPU": 4}
    assert problems_of(lambda: P.static_plan(GROUPS, hv)) == [
        'ray_check_expected_totals differs between hosts: h, w1 = {"CPU": 4, "GPU": 2}; w2 = {"CPU": 4, "GPU": 1}; '
        "it must be one value for the whole cluster (set it in group_vars/all)."
    ]


def test_the_overlays_network_settings_are_one_value_for_every_member():
    assert problems_of(lambda: P.static_plan(EASYTIER_GROUPS, overlay_hostvars(easytier_network_name="other"))) == [
        'easytier_network_name differs between hosts: h, w2 = "lab"; w1 = "other"; it must be one value for the '
        "whole cluster (set it in group_vars/all)."
    ]


def test_two_members_on_one_overlay_address_are_refused_naming_both():
    hv = overlay_hostvars(easytier_ipv4="10.144.0.9")
    hv["w2"]["easytier_ipv4"] = "10.144.0.9"
    assert problems_of(lambda: P.static_plan(EASYTIER_GROUPS, hv)) == [
        "hosts w1, w2: they share the overlay address 10.144.0.9; every member needs its own easytier_ipv4 "
        "(derived addresses follow inventory position)."
    ]


def test_a_typo_on_a_bootstrap_only_member_is_named():
    groups = dict(GROUPS, easytier_bootstrap=["b0"])
    hv = overlay_hostvars()
    hv["b0"] = {**hv["w2"], "ansible_host": "203.0.113.5", "rlinf_venv_dri": "/x"}
    assert problems_of(lambda: P.static_plan(groups, hv)) == [
        "host 'b0': rlinf_venv_dri is not a variable of rlinf.cluster and nothing reads it; did you mean "
        "rlinf_venv_dir? Rename it, or list it in rlinf_user_vars if it is a variable of yours."
    ]


def test_a_run_setting_is_read_on_the_head_alone():
    # -e reaches every host; a run setting a worker's host_vars holds is not this run's
    plan = P.static_plan(GROUPS, hostvars(w1={"teardown_purge": "maybe"}), {"purpose": "teardown"})
    assert plan["run"]["teardown_purge"] is False


def test_without_a_topology_the_plan_stops_after_the_inventorys_own_problems():
    # Nodes, ports and the cluster's code sync are judged only once there is a head and ranks.
    hv = all_hosts(rlinf_code_sync="rsync")
    groups = {"ray_head": [], "ray_workers": ["h", "w1", "w2"]}
    assert problems_of(lambda: P.static_plan(groups, hv)) == [
        "inventory: group 'ray_head' is missing or empty; put exactly one host in 'ray_head'."
    ]
