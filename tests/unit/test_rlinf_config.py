"""Unit tests for plugins/plugin_utils/rlinf_config/: grammar, placement, cross-check, generation."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.rlinf.cluster.plugins.module_utils.topology import cluster_nodes
from ansible_collections.rlinf.cluster.plugins.plugin_utils.rlinf_config import (
    PlacementError,
    RankError,
    RLinfConfigError,
    check_cluster,
    cluster_block,
    cluster_block_yaml,
    env_config_interpreters,
    load_config_file,
    load_config_text,
    parse_placement,
    parse_rank_config,
    resolve_cluster,
)

CORPUS = Path(__file__).parent / "corpus"
BAD = yaml.safe_load((CORPUS / "bad_configs.yml").read_text())
GOOD = yaml.safe_load((CORPUS / "good_configs.yml").read_text())["configs"]
RANKS = yaml.safe_load((CORPUS / "rank_expressions.yml").read_text())
PLACEMENTS = yaml.safe_load((CORPUS / "placements.yml").read_text())


def _expand(ranks):
    """A list as is, or "a-b" -> [a, ..., b] (keeps long process lists out of the corpus)."""
    if isinstance(ranks, str):
        start, end = (int(x) for x in ranks.split("-"))
        return list(range(start, end + 1))
    return ranks


def nodes_from(spec: str | None):
    """'name:gpus[:label+label] ...' (head first) -> topology.cluster_nodes output."""
    if spec is None:
        return None
    names, hostvars = [], {}
    for item in spec.split():
        name, gpus, *labels = item.split(":")
        names.append(name)
        hostvars[name] = {"rlinf_gpus_per_node": int(gpus)}
        if labels:
            hostvars[name]["rlinf_node_group"] = labels[0].split("+")
    return cluster_nodes({"ray_head": names[:1], "ray_workers": names[1:]}, hostvars)


def problems_for(case) -> list[str]:
    try:
        cluster = load_config_text(case["yaml"], "test.yaml") if "yaml" in case else case["cluster"]
    except RLinfConfigError as err:
        return err.problems
    return check_cluster(cluster, nodes_from(case.get("hosts")))["problems"]


@pytest.mark.parametrize("case", BAD, ids=[c["name"] for c in BAD])
def test_bad_config(case):
    problems = problems_for(case)
    expected = case["expect"] if isinstance(case["expect"], list) else [case["expect"]]
    for fragment in expected:
        assert any(fragment in p for p in problems), f"{fragment!r} not in {problems}"
    for problem in problems:
        assert problem.endswith("."), problem


@pytest.mark.parametrize("case", GOOD, ids=[c["file"].rsplit("/", 1)[-1] for c in GOOD])
def test_good_config(case):
    cluster = load_config_file(str(CORPUS / case["file"]))
    nodes = nodes_from(case["hosts"])
    report = check_cluster(cluster, nodes, case["file"])
    assert report["problems"] == []
    assert report["warnings"] == []
    # The generated block agrees with the hand-written one on num_nodes and node_groups.
    block = cluster_block(nodes)
    assert block["num_nodes"] == cluster["num_nodes"]
    generated = {g["label"]: g["node_ranks"] for g in block.get("node_groups", [])}
    for group in cluster.get("node_groups") or []:
        if str(group["label"]) in generated:
            assert generated[str(group["label"])] == str(group["node_ranks"])


@pytest.mark.parametrize("case", GOOD, ids=[c["file"].rsplit("/", 1)[-1] for c in GOOD])
def test_good_config_alone_has_no_problems(case):
    report = check_cluster(load_config_file(str(CORPUS / case["file"])))
    assert report["problems"] == []


@pytest.mark.parametrize("case", RANKS, ids=[repr(c["expr"]) for c in RANKS])
def test_rank_expressions(case):
    available = None if case["available"] is None else list(range(case["available"]))
    if case.get("error"):
        with pytest.raises(RankError):
            parse_rank_config(case["expr"], available)
    else:
        assert parse_rank_config(case["expr"], available) == case["ranks"]


@pytest.mark.parametrize("case", PLACEMENTS, ids=[repr(c["placement"]) for c in PLACEMENTS])
def test_placement_strings(case):
    if case.get("error"):
        with pytest.raises(PlacementError):
            parse_placement(case["placement"], case["resources"])
    else:
        got = [[r, p] for r, p in parse_placement(case["placement"], case["resources"])]
        assert got == [[_expand(r), _expand(p)] for r, p in case["map"]]


def test_generated_block_for_sample_layout():
    nodes = nodes_from("h:4:cloud g1:8:cloud g2:8:cloud e1:0:edge e2:0:edge")
    assert cluster_block_yaml(nodes) == (
        "cluster:\n"
        "  num_nodes: 5\n"
        "  node_groups:\n"
        "  - label: cloud\n"
        "    node_ranks: 0-2\n"
        "  - label: edge\n"
        "    node_ranks: 3-4\n"
    )


def test_generated_block_node_ranks_are_strings_and_parse_back():
    nodes = nodes_from("h:8:a w:8:b x:8:a")
    block = cluster_block(nodes)
    assert block["node_groups"] == [{"label": "a", "node_ranks": "0,2"}, {"label": "b", "node_ranks": "1"}]
    text = yaml.safe_load(cluster_block_yaml(nodes))["cluster"]
    assert all(isinstance(g["node_ranks"], str) for g in text["node_groups"])
    text["component_placement"] = {"actor": {"node_group": "a", "placement": "0-15"}}
    assert check_cluster(text, nodes)["problems"] == []


def test_no_node_groups_when_inventory_has_none():
    assert cluster_block(nodes_from("h:8 w:8")) == {"num_nodes": 2}


def test_unknown_gpu_count_is_a_warning_not_a_problem():
    nodes = cluster_nodes({"ray_head": ["h"], "ray_workers": []}, {})
    report = check_cluster({"num_nodes": 1, "component_placement": {"actor": "0-7"}}, nodes)
    assert report["problems"] == []
    assert any("set rlinf_gpus_per_node" in w for w in report["warnings"])


def test_unknown_cluster_key_is_a_warning():
    report = check_cluster({"num_nodes": 1, "node_group": [], "component_placement": {"a": "all"}})
    assert report["problems"] == []
    assert any("'node_group' (did you mean 'node_groups'?) is ignored" in w for w in report["warnings"])


def test_inventory_group_missing_from_config_is_a_warning():
    report = check_cluster({"num_nodes": 2, "component_placement": {"a": "all"}}, nodes_from("h:1 e:0:edge"))
    assert report["problems"] == []
    assert any("inventory node group 'edge' has no entry" in w for w in report["warnings"])


def test_all_problems_are_collected():
    cluster = {
        "num_nodes": 3,
        "node_groups": [{"label": "node", "node_ranks": [0]}, {"label": "x", "node_ranks": "9"}],
        "component_placement": {"actor": "0-99", "env": {"node_group": "nope", "placement": 0}},
    }
    problems = check_cluster(cluster, nodes_from("h:8 w:8"))["problems"]
    # One pass lists the problems of num_nodes and of each node group, not only the first.
    assert problems == [
        "cluster: num_nodes=3 but the inventory has 2 Ray nodes; RLinf would wait forever for the missing nodes: "
        "set num_nodes to 2 or add hosts.",
        "cluster node_groups[0] 'node': label 'node' is reserved by RLinf (cluster, node); choose another.",
        "cluster node_groups[0] 'node' node_ranks: a YAML list ([0]) is not accepted by RLinf; write a string "
        "such as '0'.",
        "cluster node_groups[1] 'x' node_ranks: node rank 9 in '9' is outside 0..2; use ranks within 0..2.",
    ]


def test_resolve_cluster_forms(tmp_path):
    whole = {"cluster": {"num_nodes": 1, "component_placement": {"a": "all"}}}
    assert resolve_cluster(whole)[0] == whole["cluster"]
    assert resolve_cluster(whole["cluster"])[0] == whole["cluster"]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(whole))
    assert resolve_cluster(str(path)) == (whole["cluster"], f"rlinf_config '{path}'")
    with pytest.raises(RLinfConfigError, match="got int"):
        resolve_cluster(3)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(RLinfConfigError, match="does not exist"):
        load_config_file(str(tmp_path / "nope.yaml"))
    with pytest.raises(RLinfConfigError, match="is a directory"):
        load_config_file(str(tmp_path))


def test_yaml_tags_are_not_executed():
    with pytest.raises(RLinfConfigError, match="not valid YAML"):
        load_config_text("cluster: !!python/object/apply:os.system ['true']\n")


# ------------------------------------------------------------ issue 15: RLinf fidelity, round 2

ROBOT_CASES = yaml.safe_load((CORPUS / "robot_env_cases.yml").read_text())


def _robot_cluster(case, placement):
    return {
        "num_nodes": 1,
        "component_placement": {"env": {"node_group": "arms", "placement": placement}},
        "node_groups": [
            {"label": "arms", "node_ranks": "0", "hardware": {"type": case["type"], "configs": case["configs"]}}
        ],
    }


@pytest.mark.parametrize("case", ROBOT_CASES, ids=[c["name"] for c in ROBOT_CASES])
def test_robots_counted_from_rlinf_env_vars(case):
    """The same cases RLinf's RobotAutoConfig runs in the differential test: same robot count."""
    nodes = cluster_nodes({"ray_head": ["arm-pc"]}, {"arm-pc": {"rlinf_env_vars": case["env"]}})
    if "error" in case:
        problems = check_cluster(_robot_cluster(case, "0"), nodes)["problems"]
        assert any("rlinf_env_vars of rank 0 (host arm-pc)" in p and "RLinf raises" in p for p in problems), problems
        return
    robots = case["robots"]
    fits = check_cluster(_robot_cluster(case, f"0-{robots - 1}" if robots else "0"), nodes)
    beyond = check_cluster(_robot_cluster(case, f"0-{robots}"), nodes)
    if robots:
        assert fits["problems"] == []
    else:
        assert any(f"there are no {case['type']} resources" in p for p in fits["problems"])
    assert beyond["problems"], f"{robots} robot(s) but placement 0-{robots} passed"


def test_gimarm_from_env_vars_is_accepted_and_says_which_env_vars_on_which_node():
    cluster = {
        "num_nodes": 2,
        "component_placement": {
            "actor": {"node_group": "gpu", "placement": "0-7"},
            "env": {"node_group": "arms", "placement": "0-1"},
        },
        "node_groups": [
            {"label": "gpu", "node_ranks": "0"},
            {"label": "arms", "node_ranks": "1", "hardware": {"type": "GimArm", "configs": []}},
        ],
    }
    alone = check_cluster(cluster)
    assert alone["problems"] == []
    assert any(
        "node rank 1 has no GimArm config, so RLinf creates its GimArm robots from CAN_INTERFACE" in w
        for w in alone["warnings"]
    )
    hostvars = {
        "g": {"rlinf_gpus_per_node": 8, "rlinf_node_group": "gpu"},
        "a": {"rlinf_gpus_per_node": 0, "rlinf_node_group": "arms"},
    }
    groups = {"ray_head": ["g"], "ray_workers": ["a"]}
    without = check_cluster(cluster, cluster_nodes(groups, hostvars))
    assert any(
        "rank 1 (host a) has no GimArm config and its rlinf_env_vars set no CAN_INTERFACE" in w
        for w in without["warnings"]
    )
    assert any("there are no GimArm resources" in p for p in without["problems"])
    hostvars["a"]["rlinf_env_vars"] = {"CAN_INTERFACE": "can0,can1"}
    assert check_cluster(cluster, cluster_nodes(groups, hostvars)) == {"problems": [], "warnings": []}


@pytest.mark.parametrize(
    "key", ["auto_scheduler", "use_pre_process_policy", "use_wait_before_last_iter_policy", "recreate_nccl_groups"]
)
def test_cluster_keys_rlinfs_runners_read_are_not_flagged(key):
    report = check_cluster({"num_nodes": 1, "component_placement": {"actor": "0"}, key: True})
    assert report == {"problems": [], "warnings": []}


def test_net_emulation_and_tracer_are_read_on_main():
    # tests/e2e_tests/embodied/*.yaml in RLinf main use these shapes.
    cluster = {
        "num_nodes": 1,
        "component_placement": {"actor": "0"},
        "net_emulation": {"enabled": True, "symmetric": True},
        "tracer": {"enable": True, "output_file": None},
    }
    assert check_cluster(cluster) == {"problems": [], "warnings": []}
    cluster["tracer"] = {"enabled": True}
    assert any("rename it to enable" in w for w in check_cluster(cluster)["warnings"])
    cluster["net_emulation"] = True
    assert any(
        "net_emulation is bool; RLinf reads net_emulation.enabled" in p for p in check_cluster(cluster)["problems"]
    )


def test_profiling_warns_that_nsys_must_be_on_the_units_path():
    cluster = {
        "num_nodes": 1,
        "component_placement": {"actor": "0"},
        "profiling": {"backend": "nsight", "worker_groups": ["actor"]},
    }
    nodes = cluster_nodes({"ray_head": ["h"]}, {"h": {"rlinf_gpus_per_node": 1}})
    (warning,) = check_cluster(cluster, nodes)["warnings"]
    assert "wraps the profiled workers in nsys" in warning
    assert "PATH is /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" in warning
    nodes = cluster_nodes(
        {"ray_head": ["h"]}, {"h": {"rlinf_gpus_per_node": 1, "rlinf_env_vars": {"PATH": "/opt/nsys/bin:/usr/bin"}}}
    )
    assert "PATH is /opt/nsys/bin:/usr/bin" in check_cluster(cluster, nodes)["warnings"][0]
    cluster["profiling"]["enabled"] = False
    assert check_cluster(cluster, nodes)["warnings"] == []
    cluster["profiling"] = {"backend": "rocprof_sys", "worker_groups": "actor"}
    assert "rocprof-sys-python" in check_cluster(cluster, nodes)["warnings"][0]


@pytest.mark.parametrize(
    ("profiling", "fragment"),
    [
        ({"worker_groups": ["actor"]}, "backend is missing; RLinf raises without it"),
        ({"backend": "nsys"}, "backend 'nsys' is unknown to RLinf; use one of nsight, rocprof_sys"),
        ({"backend": "nsight", "option": {}}, "unknown key 'option' (did you mean 'options'?)"),
        ({"backend": "nsight", "steps": [-1]}, "steps must be a list of step indices >= 0"),
        ({"backend": "nsight", "options": {"o": "a", "output": "b"}}, "sets both o and output"),
        ("nsight", "is str; RLinf needs a mapping"),
    ],
)
def test_profiling_checked_as_rlinf_does(profiling, fragment):
    problems = check_cluster({"num_nodes": 1, "component_placement": {"a": "0"}, "profiling": profiling})["problems"]
    assert any(fragment in p for p in problems), problems


def test_config_labels_equal_to_inventory_groups_must_have_their_ranks():
    # Issue 15 item 6: child groups cloud/edge, not declared node groups, ranks swapped in the config.
    groups = {"ray_head": ["c0"], "ray_workers": ["c1", "e0"], "cloud": ["c0", "c1"], "edge": ["e0"]}
    nodes = cluster_nodes(groups, {n: {"rlinf_gpus_per_node": 0} for n in ("c0", "c1", "e0")})
    swapped = {
        "num_nodes": 3,
        "component_placement": {"env": {"node_group": "edge", "placement": "0"}},
        "node_groups": [{"label": "cloud", "node_ranks": "2"}, {"label": "edge", "node_ranks": "0-1"}],
    }
    problems = check_cluster(swapped, nodes)["problems"]
    assert problems == [
        "cluster node_groups 'cloud': node_ranks '2' but the inventory group 'cloud' holds c0, c1 (ranks '0-1'); "
        "set node_ranks to '0-1', or rename the label if it is not that group.",
        "cluster node_groups 'edge': node_ranks '0-1' but the inventory group 'edge' holds e0 (ranks '2'); "
        "set node_ranks to '2', or rename the label if it is not that group.",
    ]
    swapped["node_groups"] = [{"label": "cloud", "node_ranks": "0-1"}, {"label": "edge", "node_ranks": "2"}]
    assert check_cluster(swapped, nodes)["problems"] == []


def test_empty_placement_string_is_refused_like_rlinf():
    nodes = cluster_nodes({"ray_head": ["h"]}, {"h": {"rlinf_gpus_per_node": 8}})
    problems = check_cluster({"num_nodes": 1, "component_placement": {"actor": ""}}, nodes)["problems"]
    assert problems == [
        "cluster component_placement 'actor': placement '' selects no resources; RLinf refuses it (its placement "
        "strategies assert the rank list is not empty): give resource ranks such as '0-3' or 'all'."
    ]


def test_missing_component_placement_says_rlinf_requires_it():
    (problem,) = check_cluster({"num_nodes": 1})["problems"]
    assert "RLinf's ClusterConfig requires it" in problem and "Missing fields ['component_placement']" in problem


def test_placement_counts_gpus_as_rlinf_does_not_as_cuda_visible_devices():
    # Only a device list: RLinf counts every GPU of the machine, so the count is unknown.
    nodes = cluster_nodes({"ray_head": ["h"]}, {"h": {"rlinf_cuda_visible_devices": "0,1"}})
    report = check_cluster({"num_nodes": 1, "component_placement": {"actor": "0-7"}}, nodes)
    assert report["problems"] == []
    assert any("GPU count of node group 'cluster' is unknown" in w for w in report["warnings"])
    # Isolated (a container that sees only these GPUs): the list is RLinf's count.
    nodes = cluster_nodes({"ray_head": ["h"]}, {"h": {"rlinf_cuda_visible_devices": "0,1", "rlinf_gpu_isolated": True}})
    report = check_cluster({"num_nodes": 1, "component_placement": {"actor": "0-7"}}, nodes)
    assert any("resource ranks of '0-7'" in p for p in report["problems"])


def test_ascend_npus_are_the_accelerators_of_their_nodes():
    nodes = cluster_nodes({"ray_head": ["n"]}, {"n": {"rlinf_accelerator_type": "NPU", "rlinf_gpus_per_node": 8}})
    assert check_cluster({"num_nodes": 1, "component_placement": {"actor": "0-7"}}, nodes)["problems"] == []
    assert check_cluster({"num_nodes": 1, "component_placement": {"actor": "0-8"}}, nodes)["problems"]


def test_config_alone_does_not_ask_for_inventory_variables():
    report = check_cluster({"num_nodes": 2, "component_placement": {"actor": "0-15"}})
    assert report == {"problems": [], "warnings": []}


# RLinf's single-machine guide (PR #1457): compute head (rank 0, 8 GPUs) and control node
# (rank 1, rlinf_gpus_per_node: 0) on one host; the guide's config places GPU components on a
# group holding only rank 0 and the Franka env on the control node.
def _compute_control_nodes():
    hostvars = {
        "compute": {"ansible_host": "gpu-box", "rlinf_gpus_per_node": 8, "ray_temp_dir": "/tmp/rlinf_compute"},
        "control": {
            "ansible_host": "gpu-box",
            "rlinf_gpus_per_node": 0,
            "ray_temp_dir": "/tmp/rlinf_control",
            "ray_port": 6380,
            "rlinf_env_file": "/etc/rlinf/control.env",
            "ray_node_unit_name": "rlinf-ray-control",
        },
    }
    return cluster_nodes({"ray_head": ["compute"], "ray_workers": ["control"]}, hostvars)


def _compute_control_cluster(placement):
    return {
        "num_nodes": 2,
        "component_placement": placement,
        "node_groups": [
            {"label": "gpu", "node_ranks": "0"},
            {
                "label": "franka",
                "node_ranks": "1",
                "hardware": {"type": "Franka", "configs": [{"node_rank": 1, "robot_ip": "10.0.0.2"}]},
            },
        ],
    }


def test_guide_placement_on_the_compute_group_is_accepted():
    placement = {
        "actor": {"node_group": "gpu", "placement": "0"},
        "env": {"node_group": "franka", "placement": "0"},
        "rollout": {"node_group": "gpu", "placement": "0:0-1"},
    }
    assert check_cluster(_compute_control_cluster(placement), _compute_control_nodes())["problems"] == []


def test_gpu_placement_on_the_cluster_group_over_both_nodes_is_refused_naming_hosts_component_and_fix():
    placement = {"actor,rollout": "all", "env": {"node_group": "franka", "placement": "0"}}
    problems = check_cluster(_compute_control_cluster(placement), _compute_control_nodes())["problems"]
    assert len(problems) == 1
    assert problems[0].startswith(
        "cluster component_placement 'actor,rollout': placement 'all' on node group 'cluster'"
    )
    assert "puts GPU workers on compute (rank 0), control (rank 1), Ray nodes of one machine (gpu-box)" in problems[0]
    assert (
        "place GPU components on a node group that holds only compute (node_groups: - label: gpu, node_ranks: 0"
        in problems[0]
    )


def test_gpu_placement_on_the_cluster_group_touching_only_the_compute_node_is_accepted():
    # RLinf numbers the cluster group's GPUs node by node: 0-7 are rank 0's, 8-15 the control node's.
    placement = {"actor": "0-7", "env": {"node_group": "franka", "placement": "0"}}
    assert check_cluster(_compute_control_cluster(placement), _compute_control_nodes())["problems"] == []
    spill = {"actor": "4-11", "env": {"node_group": "franka", "placement": "0"}}
    problems = check_cluster(_compute_control_cluster(spill), _compute_control_nodes())["problems"]
    assert [p.split(":")[0] for p in problems] == ["cluster component_placement 'actor'"]
    assert "compute (rank 0), control (rank 1)" in problems[0]


def test_a_node_group_over_both_nodes_of_the_machine_is_refused_for_gpus():
    cluster = _compute_control_cluster({"actor": {"node_group": "both", "placement": "all"}})
    cluster["node_groups"].append({"label": "both", "node_ranks": "0-1"})
    problems = check_cluster(cluster, _compute_control_nodes())["problems"]
    assert any(
        p.startswith("cluster component_placement 'actor': placement 'all' on node group 'both'")
        and "Ray nodes of one machine (gpu-box)" in p
        for p in problems
    ), problems


def _one_robot_cluster(hw_type, configs, placement="0"):
    return {
        "num_nodes": 1,
        "component_placement": {"env": {"node_group": "arms", "placement": placement}},
        "node_groups": [{"label": "arms", "node_ranks": "0", "hardware": {"type": hw_type, "configs": configs}}],
    }


def test_robotics_refactor_keys_are_accepted_and_a_misspelt_one_is_not():
    # FrankaConfig.camera_node_rank and DualFrankaConfig.disable_validate: RLinf PR #1481 (rlinf/robotics).
    franka = [{"node_rank": 0, "robot_ip": "10.0.0.2", "camera_node_rank": 0}]
    dual = [{"node_rank": 0, "left_robot_ip": "10.0.0.2", "right_robot_ip": "10.0.0.3", "disable_validate": True}]
    assert check_cluster(_one_robot_cluster("Franka", franka))["problems"] == []
    assert check_cluster(_one_robot_cluster("DualFranka", dual))["problems"] == []
    typo = [{"node_rank": 0, "robot_ip": "10.0.0.2", "camera_node_rnk": 0}]
    [problem] = check_cluster(_one_robot_cluster("Franka", typo))["problems"]
    assert "unknown key 'camera_node_rnk' (did you mean 'camera_node_rank'?) for a Franka" in problem


def _env_robots(env, placement="0"):
    nodes = cluster_nodes({"ray_head": ["arm-pc"]}, {"arm-pc": {"rlinf_env_vars": env}})
    return check_cluster(_one_robot_cluster("Franka", [], placement), nodes)


def test_robots_from_env_without_the_identifier_depend_on_the_rlinf_version():
    # 0.3.0/main: ROBOT_IP unset -> no robot; PR #1481: the largest scalar count (GRIPPER_TYPE) -> one.
    report = _env_robots({"GRIPPER_TYPE": "robotiq"}, placement="0-3")
    assert report["problems"] == []
    [warning] = [w for w in report["warnings"] if "depends on the RLinf version" in w]
    assert "rlinf_env_vars of rank 0 (host arm-pc) give a Franka count that depends on the RLinf version" in warning
    assert "counts robots by ROBOT_IP, unset here, so it finds none" in warning
    assert "robotics refactor (PR #1481) creates 1 from GRIPPER_TYPE='robotiq'" in warning


def test_a_scalar_env_var_with_more_values_than_robots_depends_on_the_rlinf_version():
    report = _env_robots({"ROBOT_IP": "10.0.0.2", "GRIPPER_CONNECTION": "/dev/ttyUSB0,/dev/ttyUSB1"})
    [warning] = [w for w in report["warnings"] if "depends on the RLinf version" in w]
    assert "creates 1 from ROBOT_IP and gives it GRIPPER_CONNECTION whole" in warning
    assert "raises because ROBOT_IP has 1 value(s)" in warning


def test_list_env_vars_do_not_size_robots_in_either_version():
    report = _env_robots({"ROBOT_IP": "10.0.0.2", "CAMERA_SERIALS": "a,b,c"}, placement="0")
    assert report == {"problems": [], "warnings": []}
    assert _env_robots({"ROBOT_IP": "10.0.0.2", "CAMERA_SERIALS": "a,b,c"}, placement="0-1")["problems"]


def test_env_config_interpreters_per_rank_leave_malformed_entries_to_check_cluster():
    cluster = {
        "node_groups": [
            {
                "label": "a",
                "node_ranks": "0-1",
                "env_configs": [{"node_ranks": "1", "python_interpreter_path": "/p/a"}],
            },
            {
                "label": "b",
                "node_ranks": "all",
                "env_configs": [{"node_ranks": "0-2", "python_interpreter_path": "/p/b"}],
            },
            {"label": "c", "node_ranks": "x", "env_configs": [{"node_ranks": "0", "python_interpreter_path": "/p/c"}]},
            {"label": "d", "node_ranks": "0", "env_configs": [{"node_ranks": "0", "python_interpreter_path": "rel"}]},
        ]
    }
    assert env_config_interpreters(cluster, 3, "x.yaml cluster") == {
        0: [("/p/b", "x.yaml cluster node_groups[1] 'b' env_configs[0]")],
        1: [
            ("/p/a", "x.yaml cluster node_groups[0] 'a' env_configs[0]"),
            ("/p/b", "x.yaml cluster node_groups[1] 'b' env_configs[0]"),
        ],
        2: [("/p/b", "x.yaml cluster node_groups[1] 'b' env_configs[0]")],
    }


# RLinf's CPUs (issue 24): Ray schedules an actor only where 1 CPU is -------------------------


def nodes_with_cpus(cpus_by_name: dict):
    names = ["head", "w1", "w2"]
    hostvars = {n: {"rlinf_gpus_per_node": 0} for n in names}
    for name, cpus in cpus_by_name.items():
        hostvars[name]["ray_num_cpus"] = cpus
    hostvars["w2"]["rlinf_node_group"] = ["robots"]
    return cluster_nodes({"ray_head": names[:1], "ray_workers": names[1:]}, hostvars)


@pytest.mark.parametrize(
    ("placement", "starved"),
    [
        ({"env": {"node_group": "node", "placement": "0-2"}}, ["w2 (rank 2)"]),
        ({"env": {"node_group": "robots", "placement": "0"}}, ["w2 (rank 2)"]),
        ({"env": {"node_group": "node", "placement": "0-1"}}, []),
    ],
)
def test_a_placement_on_a_node_without_cpus_is_refused_and_one_elsewhere_is_not(placement, starved):
    cluster = {
        "num_nodes": 3,
        "node_groups": [{"label": "robots", "node_ranks": "2"}],
        "component_placement": placement,
    }
    found = check_cluster(cluster, nodes_with_cpus({"w2": 0}))["problems"]
    hits = [p for p in found if "whose ray_num_cpus is 0" in p]
    assert len(hits) == len(starved), found
    for host, problem in zip(starved, hits, strict=True):
        assert f"puts workers on {host}, whose ray_num_cpus is 0; every RLinf worker asks Ray for 1 CPU" in problem
