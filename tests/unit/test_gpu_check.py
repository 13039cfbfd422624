"""The check's GPU rules: NVML's count (RLinf's) against Ray's GPU resource, the plan and the drivers."""

from __future__ import annotations

from ansible_collections.rlinf.cluster.plugins.module_utils.gpu_check import gpu_problems

A100 = "NVIDIA A100-SXM4-80GB"


def facts(count, driver="535.129.03", nvml_count=None, uuids=None, **extra):
    out = {
        "count": count,
        "nvml_count": count if nvml_count is None else nvml_count,
        "driver_version": driver if count else None,
        "cuda_driver_version": "12.2" if count else None,
        "models": {A100: count} if count else {},
        "uuids": list(uuids or []),
        "source": "nvml" if count else None,
    }
    out.update(extra)
    return out


def node(name, rank, gpus_facts, ray_gpus=0, state="ALIVE"):
    resources = {"CPU": 8.0, **({"GPU": float(ray_gpus)} if ray_gpus else {})}
    return {"name": name, "rank": rank, "state": state, "resources": resources, "manifest": {"gpus": gpus_facts}}


def plan(
    name, machine=None, groups=(), devices=None, isolated=False, ray_num_gpus=None, rlinf_gpus=None, accel="NV_GPU"
):
    return {
        "name": name,
        "machine": machine or f"10.0.0.{name[-1]}",
        "node_groups": list(groups),
        "cuda_visible_devices": devices,
        "gpu_isolated": isolated,
        "ray_num_gpus": ray_num_gpus,
        "rlinf_gpus": rlinf_gpus,
        "accelerator_type": accel,
    }


def sentences(nodes, plans):
    return [sentence for _, sentence in gpu_problems(nodes, plans)]


def test_cpu_nodes_without_driver_have_no_problem():
    nodes = [node("h0", 0, facts(0)), node("w1", 1, facts(0, nvml_error="NVML Shared Library Not Found"))]
    assert gpu_problems(nodes, [plan("h0"), plan("w1", rlinf_gpus=0)]) == []


def test_gpu_nodes_that_agree_have_no_problem():
    nodes = [node("h0", 0, facts(8), ray_gpus=8), node("w1", 1, facts(8), ray_gpus=8)]
    assert gpu_problems(nodes, [plan("h0", rlinf_gpus=8), plan("w1", rlinf_gpus=8)]) == []


def test_a_node_without_facts_or_not_nvidia_is_left_out():
    nodes = [node("h0", 0, None, ray_gpus=8), node("w1", 1, facts(8), ray_gpus=2)]
    assert gpu_problems(nodes, [plan("h0"), plan("w1", accel="AMD_GPU")]) == []


def test_cuda_visible_devices_subset_is_named_with_the_fix():
    found = gpu_problems([node("w1", 1, facts(8), ray_gpus=2)], [plan("w1", devices=["0", "1"])])
    assert [names for names, _ in found] == [["w1"]]
    sentence = found[0][1]
    assert sentence.startswith("host 'w1' (rank 1): Ray advertises 2 GPU(s) but NVML sees 8 on this node")
    assert "rlinf_cuda_visible_devices=0,1" in sentence and "rlinf_gpu_isolated: true" in sentence
    assert "get_current_node_num_accelerators" in sentence


def test_ray_num_gpus_below_nvml_is_named():
    [sentence] = sentences([node("w1", 1, facts(8), ray_gpus=4)], [plan("w1", ray_num_gpus=4)])
    assert "ray_num_gpus=4 does not keep RLinf off the other 4 GPU(s)" in sentence
    assert "remove ray_num_gpus (or set it to 8)" in sentence


def test_ray_advertising_more_than_nvml_sees_is_named():
    [sentence] = sentences([node("w1", 1, facts(4), ray_gpus=8)], [plan("w1", ray_num_gpus=8)])
    assert "Ray advertises 8 GPU(s) but NVML sees 4" in sentence
    assert "set ray_num_gpus: 4 (or remove it)" in sentence


def test_a_cuda_visible_devices_from_elsewhere_is_named():
    [sentence] = sentences([node("w1", 1, facts(8), ray_gpus=2)], [plan("w1")])
    assert "Ray advertises 2 GPU(s) but NVML sees 8" in sentence and "from outside rlinf-ansible" in sentence


def test_an_isolated_node_that_sees_every_gpu_is_not_isolated():
    [sentence] = sentences(
        [node("w1", 1, facts(8), ray_gpus=4)], [plan("w1", devices=["0", "1", "2", "3"], isolated=True)]
    )
    assert "rlinf_gpu_isolated is true, but this node's container is not isolated" in sentence


def test_isolated_containers_that_each_see_their_gpus_pass():
    uuids = [f"GPU-{i}" for i in range(8)]
    nodes = [node("a1", 1, facts(4, uuids=uuids[:4]), ray_gpus=4), node("b2", 2, facts(4, uuids=uuids[4:]), ray_gpus=4)]
    plans = [plan(n, machine="big", isolated=True, rlinf_gpus=4) for n in ("a1", "b2")]
    assert gpu_problems(nodes, plans) == []


def test_isolated_containers_sharing_a_gpu_are_named():
    nodes = [node("a1", 1, facts(1, uuids=["GPU-x"]), ray_gpus=1), node("b2", 2, facts(1, uuids=["GPU-x"]), ray_gpus=1)]
    plans = [plan(n, machine="big", isolated=True, rlinf_gpus=1) for n in ("a1", "b2")]
    [(names, sentence)] = gpu_problems(nodes, plans)
    assert names == ["a1", "b2"] and "they see the same GPU(s) (GPU-x)" in sentence


def test_two_ray_nodes_of_one_gpu_machine_are_named():
    # The inventory says no GPUs (validation passes), but the machine has 8 and Ray detects them on both.
    uuids = [f"GPU-{i}" for i in range(8)]
    nodes = [node("a1", 1, facts(8, uuids=uuids), ray_gpus=8), node("b2", 2, facts(8, uuids=uuids), ray_gpus=8)]
    plans = [plan(n, machine="big", rlinf_gpus=0) for n in ("a1", "b2")]
    found = gpu_problems(nodes, plans)
    shared = [(names, s) for names, s in found if names == ["a1", "b2"]]
    assert len(shared) == 1, found  # one sentence for the machine, not another for the shared UUIDs
    assert "Ray nodes of one machine (big)" in shared[0][1] and "rlinf_gpu_isolated: true on a1, b2" in shared[0][1]
    # ...and each node's rlinf_gpus_per_node: 0 is not what RLinf counts.
    assert sum("rlinf_gpus_per_node=0 but NVML sees 8" in s for _, s in found) == 2


def test_ray_nodes_of_one_machine_without_gpus_pass():
    nodes = [node("a1", 1, facts(0)), node("b2", 2, facts(0))]
    assert gpu_problems(nodes, [plan(n, machine="small", rlinf_gpus=0) for n in ("a1", "b2")]) == []


def test_rlinf_gpus_per_node_other_than_nvml_is_named():
    [(names, sentence)] = gpu_problems([node("w1", 1, facts(4), ray_gpus=4)], [plan("w1", rlinf_gpus=8)])
    assert names == ["w1"] and "rlinf_gpus_per_node=8 but NVML sees 4 GPU(s)" in sentence
    assert "set rlinf_gpus_per_node: 4" in sentence


def test_a_dead_node_is_not_compared_with_ray():
    assert gpu_problems([node("w1", 1, facts(8), ray_gpus=0, state="MISSING")], [plan("w1")]) == []


def test_nvml_that_cannot_start_while_nvidia_smi_sees_gpus_is_named():
    broken = facts(8, nvml_count=0, source="nvidia-smi", nvml_error="Driver/library version mismatch")
    [sentence] = sentences([node("w1", 1, broken)], [plan("w1")])
    assert "nvidia-smi lists 8 GPU(s) but NVML cannot start" in sentence
    assert "Driver/library version mismatch" in sentence and "libnvidia-ml.so.1" in sentence


def test_unreadable_facts_are_not_judged():
    unreadable = facts(0, nvml_count=None, error="NVML: Unknown Error; nvidia-smi: exit status 255")
    unreadable["nvml_count"] = None
    assert gpu_problems([node("w1", 1, unreadable, ray_gpus=8)], [plan("w1")]) == []


def test_drivers_differing_within_a_node_group_name_the_odd_node():
    nodes = [
        node("h0", 0, facts(8), ray_gpus=8),
        node("w1", 1, facts(8), ray_gpus=8),
        node("w2", 2, facts(8, driver="550.54.15"), ray_gpus=8),
    ]
    found = gpu_problems(nodes, [plan(n, groups=["train"]) for n in ("h0", "w1", "w2")])
    [(names, sentence)] = found
    assert names == ["w2"]
    assert "NVIDIA driver versions differ within node group 'train'" in sentence
    assert "(535.129.03 on h0, w1; 550.54.15 on w2)" in sentence and "install driver 535.129.03 on w2" in sentence


def test_drivers_may_differ_between_node_groups():
    nodes = [node("h0", 0, facts(8), ray_gpus=8), node("w1", 1, facts(8, driver="550.54.15"), ray_gpus=8)]
    assert gpu_problems(nodes, [plan("h0", groups=["a100"]), plan("w1", groups=["h100"])]) == []


def test_without_node_groups_the_whole_cluster_is_one_group():
    nodes = [node("h0", 0, facts(8), ray_gpus=8), node("w1", 1, facts(8, driver="550.54.15"), ray_gpus=8)]
    [(names, sentence)] = gpu_problems(nodes, [plan("h0"), plan("w1")])
    assert names == ["h0"] or names == ["w1"]
    assert "differ within the cluster" in sentence


def test_cpu_nodes_of_a_gpu_group_do_not_count_as_another_driver():
    nodes = [node("h0", 0, facts(0)), node("w1", 1, facts(8), ray_gpus=8), node("w2", 2, facts(8), ray_gpus=8)]
    assert gpu_problems(nodes, [plan(n, groups=["train"]) for n in ("h0", "w1", "w2")]) == []


def _compute_control(control_ray_gpus=8, compute_nvml=8):
    # RLinf's single-machine layout: both Ray nodes see the machine's 8 GPUs (NVML, and Ray's
    # autodetection); only the compute node declares them, and the plan says it holds them.
    uuids = [f"GPU-{i}" for i in range(8)]
    nodes = [
        node("compute0", 0, facts(8, nvml_count=compute_nvml, uuids=uuids), ray_gpus=8),
        node("control1", 1, facts(8, uuids=uuids), ray_gpus=control_ray_gpus),
    ]
    plans = [
        {**plan("compute0", machine="box", rlinf_gpus=8), "machine_gpu_node": "compute0"},
        {**plan("control1", machine="box", rlinf_gpus=0), "machine_gpu_node": "compute0"},
    ]
    return nodes, plans


def test_compute_and_control_on_one_gpu_machine_pass():
    assert gpu_problems(*_compute_control()) == []
    # Ray told to advertise no GPU on the control node is fine too.
    assert gpu_problems(*_compute_control(control_ray_gpus=0)) == []


def test_compute_and_control_still_check_the_compute_nodes_count():
    found = gpu_problems(*_compute_control(compute_nvml=4))
    assert any(names == ["compute0"] and "rlinf_gpus_per_node=8 but NVML sees 4" in s for names, s in found), found
    assert all(names == ["compute0"] for names, _ in found)


def test_the_same_layout_without_the_plans_gpu_node_is_still_named():
    nodes, plans = _compute_control()
    plans = [{k: v for k, v in p.items() if k != "machine_gpu_node"} for p in plans]
    found = gpu_problems(nodes, plans)
    shared = [s for names, s in found if names == ["compute0", "control1"]]
    assert len(shared) == 1 and "rlinf_gpus_per_node: <the machine's count> on it and 0 on the others" in shared[0]
