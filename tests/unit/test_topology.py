"""Unit tests for plugins/module_utils/topology.py: ranks, node groups, shared machines."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.rlinf.cluster.plugins.module_utils.topology import (
    TopologyError,
    cluster_nodes,
    format_ranks,
    inventory_node_groups,
    parse_device_ids,
    rank_table,
    topology_problems,
    topology_warnings,
)

CORPUS = Path(__file__).parent / "corpus"
BAD = yaml.safe_load((CORPUS / "bad_inventories.yml").read_text())


@pytest.mark.parametrize("case", BAD, ids=[c["name"] for c in BAD])
def test_bad_inventory(case):
    problems = topology_problems(case["groups"], case["hostvars"])
    expected = case["expect"] if isinstance(case["expect"], list) else [case["expect"]]
    for fragment in expected:
        assert any(fragment in p for p in problems), f"{fragment!r} not in {problems}"
    with pytest.raises(TopologyError) as err:
        cluster_nodes(case["groups"], case["hostvars"])
    assert err.value.problems == problems
    for problem in problems:
        assert problem.endswith("."), problem  # one sentence each
        assert "Traceback" not in problem


def test_head_first_then_workers_in_inventory_order():
    groups = {"ray_head": ["h"], "ray_workers": ["b", "a", "c"], "all": ["h", "b", "a", "c"]}
    nodes = cluster_nodes(groups, {"h": {"ansible_host": "10.0.0.1"}})
    assert [(n["name"], n["rank"], n["role"]) for n in nodes] == [
        ("h", 0, "head"),
        ("b", 1, "worker"),
        ("a", 2, "worker"),
        ("c", 3, "worker"),
    ]
    assert nodes[0]["address"] == "10.0.0.1"
    assert nodes[1]["address"] == "b"


def test_explicit_ranks_reorder_and_are_returned_sorted():
    groups = {"ray_head": ["h"], "ray_workers": ["a", "b"]}
    hostvars = {"h": {"rlinf_node_rank": "0"}, "a": {"rlinf_node_rank": 2}, "b": {"rlinf_node_rank": 1}}
    nodes = cluster_nodes(groups, hostvars)
    assert [n["name"] for n in nodes] == ["h", "b", "a"]
    assert all(n["explicit_rank"] for n in nodes)


def test_appending_a_worker_keeps_existing_ranks():
    before = cluster_nodes({"ray_head": ["h"], "ray_workers": ["a", "b"]}, {})
    after = cluster_nodes({"ray_head": ["h"], "ray_workers": ["a", "b", "new"]}, {})
    assert [(n["name"], n["rank"]) for n in after][:3] == [(n["name"], n["rank"]) for n in before]


def test_node_groups_from_host_var_and_group_list():
    groups = {
        "ray_head": ["h"],
        "ray_workers": ["w1", "e1", "e2"],
        "edge": ["e1", "e2"],
        "arms": ["e2"],
    }
    hostvars = {
        "h": {"rlinf_node_group": "cloud", "rlinf_node_groups": ["edge"]},
        "w1": {"rlinf_node_group": "cloud", "rlinf_node_groups": ["edge"]},
        "e1": {"rlinf_node_groups": ["edge"]},
        "e2": {"rlinf_node_group": ["arms"], "rlinf_node_groups": ["edge"]},
    }
    nodes = cluster_nodes(groups, hostvars)
    assert [n["node_groups"] for n in nodes] == [["cloud"], ["cloud"], ["edge"], ["edge", "arms"]]
    assert nodes[3]["node_group"] == "edge,arms"
    assert inventory_node_groups(nodes) == {"cloud": [0, 1], "edge": [2, 3], "arms": [3]}


SHARED = {
    "a": {
        "ansible_host": "10.0.0.2",
        "ray_port": 6380,
        "ray_temp_dir": "/tmp/ray-a",
        "rlinf_env_file": "/etc/rlinf/a.env",
        "ray_node_unit_name": "rlinf-ray-a",
    },
    "b": {
        "ansible_host": "10.0.0.2",
        "ray_port": 6381,
        "ray_temp_dir": "/tmp/ray-b",
        "rlinf_env_file": "/etc/rlinf/b.env",
        "ray_node_unit_name": "rlinf-ray-b",
    },
}


def _shared(**per_host):
    return {name: {**SHARED[name], **per_host.get(name, {})} for name in SHARED}


def test_shared_machine_isolated_containers_may_each_have_gpus():
    # Each Ray node in its own container whose NVML sees only its 4 GPUs: ids are container-local.
    groups = {"ray_head": ["h"], "ray_workers": ["a", "b"]}
    iso = {"rlinf_gpu_isolated": True, "rlinf_cuda_visible_devices": "0,1,2,3"}
    nodes = cluster_nodes(groups, _shared(a=iso, b={**iso, "rlinf_gpu_isolated": "yes"}))
    assert [(n["gpus"], n["rlinf_gpus"], n["gpu_isolated"]) for n in nodes] == [
        (None, None, False),
        (4, 4, True),
        (4, 4, True),
    ]
    assert nodes[2]["cuda_visible_devices"] == ["0", "1", "2", "3"]


def test_gpu_split_is_refused_with_rlinf_reason_and_isolation_is_the_fix():
    groups = {"ray_head": ["h"], "ray_workers": ["a", "b"]}
    split = _shared(a={"rlinf_cuda_visible_devices": "0,1,2,3"}, b={"rlinf_cuda_visible_devices": [4, 5, 6, 7]})
    problems = topology_problems(groups, split)
    assert len(problems) == 1
    assert problems[0].startswith("hosts a, b: they are Ray nodes of one machine (10.0.0.2) and split its GPUs")
    assert "nvidia_gpu.py get_num_devices" in problems[0]
    isolated = {name: {**hv, "rlinf_gpu_isolated": True} for name, hv in split.items()}
    assert topology_problems(groups, isolated) == []


def test_rlinf_counts_all_gpus_when_only_a_device_list_is_given():
    # RLinf sets CUDA_VISIBLE_DEVICES=<0..n-1 of its NVML count> in workers, so a list says
    # what Ray's GPU resource holds, not how many GPUs RLinf uses.
    groups = {"ray_head": ["h"], "ray_workers": ["w", "x"]}
    hostvars = {
        "h": {"rlinf_cuda_visible_devices": "4,5"},
        "w": {"rlinf_cuda_visible_devices": "0,1", "rlinf_gpus_per_node": 2},
        "x": {"rlinf_gpus_per_node": 8},
    }
    nodes = cluster_nodes(groups, hostvars)
    assert [(n["gpus"], n["rlinf_gpus"]) for n in nodes] == [(2, None), (2, 2), (8, 8)]
    warnings = topology_warnings(groups, hostvars)
    assert [w.split(":")[0] for w in warnings] == ["host 'h'", "host 'w'"]
    assert "limits Ray's GPU resource, not RLinf's workers" in warnings[0]
    assert "without rlinf_gpus_per_node the placement checks do not know" in warnings[0]
    assert "RLinf counts 2 GPU(s) here" in warnings[1]


def test_topology_warnings_empty_when_topology_is_broken():
    assert topology_warnings({"ray_workers": ["w"]}, {"w": {"rlinf_cuda_visible_devices": "0"}}) == []


def test_accelerator_types_and_their_ray_resources():
    groups = {"ray_head": ["h"], "ray_workers": ["npu", "amd", "musa"]}
    hostvars = {
        "npu": {"rlinf_accelerator_type": "NPU", "rlinf_gpus_per_node": 8, "ray_resources": {"NPU": 8}},
        "amd": {"rlinf_accelerator_type": "AMD_GPU", "ray_num_gpus": 8, "rlinf_gpus_per_node": 8},
        "musa": {"rlinf_accelerator_type": "MUSA_GPU", "rlinf_gpus_per_node": 8},
    }
    nodes = cluster_nodes(groups, hostvars)
    assert [(n["accelerator_type"], n["ray_accelerator_resource"]) for n in nodes] == [
        ("NV_GPU", "GPU"),
        ("NPU", "NPU"),
        ("AMD_GPU", "GPU"),
        ("MUSA_GPU", None),
    ]


def test_inventory_groups_and_env_vars_are_returned():
    groups = {
        "all": ["h", "e1"],
        "ungrouped": [],
        "rlinf_cluster": ["h", "e1"],
        "ray_head": ["h"],
        "ray_workers": ["e1"],
        "edge": ["e1"],
    }
    nodes = cluster_nodes(groups, {"e1": {"rlinf_env_vars": {"CAN_INTERFACE": "can0,can1"}}})
    assert [n["inventory_groups"] for n in nodes] == [
        ["rlinf_cluster", "ray_head"],
        ["rlinf_cluster", "ray_workers", "edge"],
    ]
    assert [n["env_vars"] for n in nodes] == [{}, {"CAN_INTERFACE": "can0,can1"}]
    assert nodes[1]["node_groups"] == []  # an inventory group is not a node group by itself


def test_shared_machine_cpu_only_nodes_need_no_gpu_lists():
    groups = {"ray_head": ["h"], "ray_workers": ["a"]}
    hostvars = {
        "h": {"ansible_host": "m", "rlinf_gpus_per_node": 0},
        "a": {
            "ansible_host": "m",
            "rlinf_gpus_per_node": 0,
            "ray_port": 6380,
            "ray_temp_dir": "/tmp/r",
            "rlinf_env_file": "/etc/rlinf/a.env",
            "ray_node_unit_name": "rlinf-ray-a",
        },
    }
    assert topology_problems(groups, hostvars) == []


def test_shared_machine_needs_one_env_file_and_one_unit_per_node():
    # One env file would hold one rank for two Ray nodes; one unit would run only one of them.
    groups = {"ray_head": ["h"], "ray_workers": ["a"]}
    hostvars = {
        "h": {"ansible_host": "m", "rlinf_gpus_per_node": 0},
        "a": {"ansible_host": "m", "rlinf_gpus_per_node": 0, "ray_port": 6380, "ray_temp_dir": "/tmp/r"},
    }
    problems = "\n".join(topology_problems(groups, hostvars))
    assert "same rlinf_env_file='/etc/rlinf/rlinf.env'" in problems
    assert "same ray_node_unit_name='rlinf-ray'" in problems


def test_hostvars_like_object_and_missing_entries():
    class HostVars(dict):
        def __getitem__(self, key):  # Ansible's HostVars raises for unknown hosts too
            return super().__getitem__(key)

    nodes = cluster_nodes({"ray_head": ["h"], "ray_workers": ["w"]}, HostVars(h={"ray_port": "6379"}))
    assert [n["ray_port"] for n in nodes] == [6379, 6379]


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("0,1", ["0", "1"]), (3, ["3"]), ([0, "1"], ["0", "1"]), ("", []), ("GPU-ab", ["GPU-ab"])],
)
def test_parse_device_ids(value, expected):
    assert parse_device_ids(value) == expected


# The ids land in the env file as CUDA_VISIBLE_DEVICES (issue 25: a quote or newline crashed
# preflight or wrote a second variable): an index or a GPU/MIG UUID, nothing a parser reads otherwise.
@pytest.mark.parametrize(
    ("value", "odd"), [("0,1'", "1'"), ("0\n1", "0\n1"), ("0;id", "0;id"), ("$(id)", "$(id)"), ([0, '1"'], '1"')]
)
def test_a_gpu_id_with_a_quote_newline_or_shell_character_is_refused(value, odd):
    with pytest.raises(ValueError) as err:
        parse_device_ids(value)
    assert str(err.value) == f"the id {odd!r} is neither an index nor a GPU UUID"
    problems = topology_problems({"ray_head": ["h"]}, {"h": {"rlinf_cuda_visible_devices": value}})
    assert problems == [
        f"host 'h': rlinf_cuda_visible_devices={value!r} is not a GPU list (the id {odd!r} is neither an index "
        "nor a GPU UUID); write GPU ids as a list or a comma-separated string such as '0,1'."
    ]


def test_gpu_and_mig_uuids_are_gpu_ids():
    mig = "MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/0"
    assert parse_device_ids(f"GPU-8932f937-d72c-4106-c12f-20bd9faed9f6,{mig}")[1] == mig


@pytest.mark.parametrize(
    ("ranks", "text"), [([], ""), ([0], "0"), ([0, 1, 2, 5], "0-2,5"), ([3, 1, 2], "1-3"), ([0, 2, 4], "0,2,4")]
)
def test_format_ranks(ranks, text):
    assert format_ranks(ranks) == text


def test_rank_table():
    nodes = cluster_nodes(
        {"ray_head": ["head"], "ray_workers": ["edge-1"]},
        {"head": {"ansible_host": "10.0.0.1", "rlinf_gpus_per_node": 4, "rlinf_node_group": "cloud"}},
    )
    assert rank_table(nodes).splitlines() == [
        "rank  host    address   role    group  gpus",
        "0     head    10.0.0.1  head    cloud  4",
        "1     edge-1  edge-1    worker  -      ?",
    ]


def test_sample_inventory_topology():
    inv = yaml.safe_load((Path(__file__).parents[2] / "inventories/sample/hosts.yml").read_text())
    cluster = inv["all"]["children"]["rlinf_cluster"]["children"]
    groups = {name: list((body or {}).get("hosts") or {}) for name, body in cluster.items()}
    hostvars = {}
    for body in cluster.values():
        for host, hv in ((body or {}).get("hosts") or {}).items():
            hostvars.setdefault(host, {}).update(hv or {})
    for host in groups["cloud"]:
        hostvars[host]["rlinf_node_group"] = "cloud"
    for host in groups["edge"]:
        hostvars[host]["rlinf_node_group"] = "edge"
    nodes = cluster_nodes(groups, hostvars)
    assert inventory_node_groups(nodes) == {"cloud": [0, 1, 2], "edge": [3, 4]}


def test_undefined_template_values_name_host_and_variable():
    class Undefined:  # what Ansible hands over for "{{ nope }}": it raises when rendered
        def __str__(self):
            raise ValueError("'nope' is undefined")

    problems = topology_problems(
        {"ray_head": ["h"]}, {"h": {"ansible_host": Undefined(), "rlinf_gpus_per_node": Undefined()}}
    )
    assert (
        "host 'h': ansible_host cannot be evaluated ('nope' is undefined); fix its value in the inventory." in problems
    )
    assert any(p.startswith("host 'h': rlinf_gpus_per_node cannot be evaluated") for p in problems)


# RLinf's single-machine guide (PR #1457, ray_utils/realworld/setup_compute_node.sh and
# setup_franka_node.sh): a compute head and a control node on one GPU host, each with its own
# venv and --temp-dir.
COMPUTE_CONTROL = {
    "compute": {
        "ansible_host": "10.0.0.9",
        "rlinf_gpus_per_node": 8,
        "rlinf_venv_dir": "/opt/rlinf/compute-venv",
        "ray_temp_dir": "/tmp/rlinf_compute",
        "rlinf_node_group": "gpu",
    },
    "control": {
        "ansible_host": "10.0.0.9",
        "rlinf_gpus_per_node": 0,
        "rlinf_venv_dir": "/opt/rlinf/control-venv",
        "ray_temp_dir": "/tmp/rlinf_control",
        "ray_port": 6380,
        "rlinf_env_file": "/etc/rlinf/control.env",
        "ray_node_unit_name": "rlinf-ray-control",
        "rlinf_node_group": "franka",
    },
}
COMPUTE_CONTROL_GROUPS = {"ray_head": ["compute"], "ray_workers": ["control"]}


def test_compute_and_control_on_one_gpu_machine_are_accepted_with_the_cluster_group_warning():
    nodes = cluster_nodes(COMPUTE_CONTROL_GROUPS, COMPUTE_CONTROL)
    assert [(n["name"], n["rlinf_gpus"], n["machine_gpu_node"], n["machine_peers"]) for n in nodes] == [
        ("compute", 8, "compute", ["control"]),
        ("control", 0, "compute", ["compute"]),
    ]
    warnings = topology_warnings(COMPUTE_CONTROL_GROUPS, COMPUTE_CONTROL)
    assert len(warnings) == 1
    assert warnings[0].startswith(
        "hosts compute, control: they are Ray nodes of one machine (10.0.0.9) and only compute (rank 0) has GPUs"
    )
    assert "'cluster' counts the machine's GPUs (NVML) on each of them, control (rank 1) included" in warnings[0]
    assert "node_ranks: 0) and place every GPU component on it with node_group" in warnings[0]


def test_compute_and_control_still_need_their_own_temp_dir_port_unit_and_env_file():
    keys = ("ray_temp_dir", "ray_port", "rlinf_env_file", "ray_node_unit_name")
    same = {name: {k: v for k, v in hv.items() if k not in keys} for name, hv in COMPUTE_CONTROL.items()}
    problems = topology_problems(COMPUTE_CONTROL_GROUPS, same)
    for var in ("ray_temp_dir", "ray_port", "rlinf_env_file", "ray_node_unit_name"):
        assert any(
            p.startswith("hosts compute, control: they run Ray nodes on the same machine") and f"same {var}=" in p
            for p in problems
        ), var
    assert all("split its GPUs" not in p for p in problems)


def test_compute_and_control_may_share_a_venv():
    # RLinf's guide gives each its own venv; one venv serves two Ray nodes too (the plan installs it once).
    shared = {name: {**hv, "rlinf_venv_dir": "/opt/rlinf/venv"} for name, hv in COMPUTE_CONTROL.items()}
    assert topology_problems(COMPUTE_CONTROL_GROUPS, shared) == []


def test_control_node_with_a_device_list_is_still_a_split():
    split = {**COMPUTE_CONTROL, "control": {**COMPUTE_CONTROL["control"], "rlinf_cuda_visible_devices": "7"}}
    problems = topology_problems(COMPUTE_CONTROL_GROUPS, split)
    assert len(problems) == 2  # id 7 on a 0-GPU count, and the split
    assert any("split its GPUs" in p and "set rlinf_gpus_per_node: 0 on the others" in p for p in problems)


def test_the_device_list_warning_and_the_gpu_count_rule_agree():
    # Doing what the warning says (gpus_per_node = the machine's count) is accepted.
    groups = {"ray_head": ["h"]}
    hostvars = {"h": {"rlinf_gpus_per_node": 8, "rlinf_cuda_visible_devices": "2,3"}}
    assert topology_problems(groups, hostvars) == []
    warning = topology_warnings(groups, hostvars)[0]
    assert "RLinf counts 8 GPU(s) here (rlinf_gpus_per_node)" in warning
    assert "Set rlinf_gpus_per_node to the machine's GPU count" in warning
    node = cluster_nodes(groups, hostvars)[0]
    assert (node["gpus"], node["rlinf_gpus"], node["gpus_per_node"]) == (2, 8, 8)
    assert topology_problems(groups, {"h": {"rlinf_gpus_per_node": 8, "rlinf_cuda_visible_devices": "GPU-1f2e"}}) == []
