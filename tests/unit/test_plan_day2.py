"""Day-2 decisions of the plan (plugins/plugin_utils/plan/): where the controller keeps its
state, which nodes a run restarts and whether a driver forbids it, removing any worker, the
wheelhouses a new pin needs, the Ray version token authentication needs."""

from __future__ import annotations

import pytest
from test_plan import GROUPS, hostvars, probe, probes, problems_of

from ansible_collections.rlinf.cluster.plugins.module_utils import restarts as R
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P

FOUR = {"ray_head": ["h"], "ray_workers": ["w1", "w2", "w3"]}


def four_hostvars(**per_host):
    base = {name: {"ansible_host": f"10.0.0.{i + 1}"} for i, name in enumerate(["h", "w1", "w2", "w3"])}
    for name, extra in per_host.items():
        base[name].update(extra)
    return base


# Controller state ----------------------------------------------------------------------


def test_state_lives_next_to_the_inventory_and_a_checkouts_reports_next_to_its_playbooks():
    plan = P.static_plan(
        GROUPS,
        hostvars(h={"inventory_dir": "/sites/prod"}),
        {"playbook_dir": "/home/me/rlinf-ansible/playbooks"},
    )
    controller = plan["cluster"]["controller"]
    assert controller["state_dir"] == "/sites/prod/.rlinf"
    assert controller["token_file"] == "/sites/prod/.rlinf/secrets/ray-auth-token"
    assert controller["wheelhouse_dir"] == "/sites/prod/.rlinf/wheelhouse"
    assert controller["code_wheel_dir"] == "/sites/prod/.rlinf/code-sync"
    artifacts = "/home/me/rlinf-ansible/artifacts"
    assert controller["report_path"] == artifacts + "/cluster-report.json"
    # Where earlier releases generated the token: adopted once, so the move rotates nothing.
    assert controller["legacy_token_file"] == artifacts + "/secrets/ray-auth-token"


def test_an_installed_collection_writes_its_reports_in_the_inventorys_state_dir_not_inside_itself():
    collection = "/usr/share/ansible/collections/ansible_collections/rlinf/cluster"
    context = {"playbook_dir": collection + "/playbooks", "installed_collection": True, "cwd": "/home/me"}
    controller = P.static_plan(GROUPS, hostvars(h={"inventory_dir": "/sites/prod"}), context)["cluster"]["controller"]
    # Under the hidden state dir: Ansible would read a report beside hosts.yml as inventory.
    assert controller["report_path"] == "/sites/prod/.rlinf/artifacts/cluster-report.json"
    assert controller["plan_path"] == "/sites/prod/.rlinf/artifacts/cluster-plan.json"
    assert controller["metrics_dashboards_dir"].startswith("/sites/prod/.rlinf/artifacts/")
    assert controller["token_file"] == "/sites/prod/.rlinf/secrets/ray-auth-token"
    # Only read (adopted once), never written: where earlier releases kept the token.
    assert controller["legacy_token_file"] == collection + "/artifacts/secrets/ray-auth-token"
    # An inventory without a directory (-i a,b,): the working directory, still not the collection.
    bare = P.static_plan(GROUPS, hostvars(), context)["cluster"]["controller"]
    assert bare["report_path"] == "/home/me/artifacts/cluster-report.json"
    assert bare["token_file"] == "/home/me/artifacts/secrets/ray-auth-token"
    assert not any(str(v).startswith(collection) for k, v in bare.items() if k != "legacy_token_file")
    # rlinf_artifacts_dir still wins.
    mine = {"rlinf_artifacts_dir": "/srv/reports"}
    chosen = P.static_plan(GROUPS, hostvars(h=mine, w1=mine, w2=mine), context)["cluster"]["controller"]
    assert chosen["report_path"] == "/srv/reports/cluster-report.json"


def test_a_checkout_and_an_installed_collection_share_the_state_of_one_inventory():
    inventory = hostvars(h={"inventory_dir": "/sites/prod/"})
    checkout = P.static_plan(GROUPS, inventory, {"playbook_dir": "/home/me/rlinf-ansible/playbooks"})
    installed = P.static_plan(GROUPS, inventory, {"playbook_dir": "/opt/collections/ansible_collections/rlinf/cluster"})
    for key in ("state_dir", "token_file", "wheelhouse_dir", "code_wheel_dir"):
        assert checkout["cluster"]["controller"][key] == installed["cluster"]["controller"][key]
    assert checkout["cluster"]["controller"]["report_path"] != installed["cluster"]["controller"]["report_path"]


def test_rlinf_state_dir_and_the_explicit_paths_win():
    shared = {"rlinf_state_dir": "/srv/rlinf-state", "python_env_wheelhouse_dir": "/w"}
    plan = P.static_plan(
        GROUPS,
        hostvars(h={"inventory_dir": "/sites/prod", **shared}, w1=shared, w2=shared),
        {"playbook_dir": "/x/playbooks"},
    )
    controller = plan["cluster"]["controller"]
    assert controller["token_file"] == "/srv/rlinf-state/secrets/ray-auth-token"
    assert controller["wheelhouse_dir"] == "/w"
    explicit = P.static_plan(
        GROUPS, {n: {"ray_auth_controller_token_file": "/vault/token"} for n in ["h", "w1", "w2"]}, {}
    )
    assert explicit["cluster"]["controller"]["token_file"] == "/vault/token"
    assert explicit["cluster"]["controller"]["legacy_token_file"] == ""


def test_an_inventory_without_a_directory_keeps_its_state_in_artifacts():
    plan = P.static_plan(GROUPS, hostvars(), {"playbook_dir": "/repo/playbooks"})
    assert plan["cluster"]["controller"]["token_file"] == "/repo/artifacts/secrets/ray-auth-token"
    assert plan["cluster"]["controller"]["legacy_token_file"] == ""


def test_a_bad_state_dir_is_refused_before_contact():
    found = problems_of(lambda: P.static_plan(GROUPS, {n: {"rlinf_state_dir": "/etc"} for n in ["h", "w1", "w2"]}))
    assert any("rlinf_state_dir='/etc'" in s for s in found)


# Ray version --------------------------------------------------------------------------


def test_token_auth_needs_a_ray_that_has_it():
    found = problems_of(lambda: P.static_plan(GROUPS, {n: {"rlinf_ray_version": "2.50.0"} for n in ["h", "w1", "w2"]}))
    assert any("rlinf_ray_version='2.50.0' has no token authentication" in s and "2.52.0" in s for s in found)
    off = {n: {"rlinf_ray_version": "2.50.0", "ray_auth_enabled": False} for n in ["h", "w1", "w2"]}
    assert P.static_plan(GROUPS, off)["cluster"]["ray_version"] == "2.50.0"


def test_a_new_pin_downloads_one_wheelhouse_per_platform_before_any_node_changes():
    static = P.static_plan(GROUPS, hostvars(h={"inventory_dir": "/inv"}), {})
    found = probes()
    for name in found:
        found[name]["venv"] = {"exists": True, "satisfied": False, "unsatisfied": ["ray[default]==2.60.0: 2.59.0"]}
    resolved = P.resolve(static, found)
    (build,) = resolved["wheelhouses"]
    assert build["key"] == "cp311-x86_64"
    assert build["dir"] == "/inv/.rlinf/wheelhouse/cp311-x86_64"
    assert build["hosts"] == ["h", "w1", "w2"]
    assert "--only-binary=:all:" in build["args"] and "manylinux_2_36_x86_64" in build["args"]
    assert all(resolved["nodes"][n]["venv_install"] for n in ["h", "w1", "w2"])
    # Another pin is another set: another stamp.
    other = P.resolve(P.static_plan(GROUPS, {n: {"rlinf_ray_version": "2.59.0"} for n in ["h", "w1", "w2"]}), found)
    assert other["wheelhouses"][0]["stamp"] != build["stamp"]


def test_venvs_that_hold_the_pin_download_nothing():
    found = probes()
    for name in found:
        found[name]["venv"] = {"exists": True, "satisfied": True, "unsatisfied": []}
    resolved = P.resolve(P.static_plan(GROUPS, hostvars()), found)
    assert resolved["wheelhouses"] == []
    assert not any(resolved["nodes"][n]["venv_install"] for n in ["h", "w1", "w2"])
    assert resolved["nodes"]["w1"]["wheelhouse_key"] == "cp311-x86_64"


def test_an_index_the_nodes_reach_needs_no_wheelhouse():
    found = probes()
    for name in found:
        found[name]["venv"] = {"exists": False, "satisfied": False, "unsatisfied": []}
    idx = {n: {"python_env_index_url": "https://mirror.example/simple"} for n in ["h", "w1", "w2"]}
    resolved = P.resolve(P.static_plan(GROUPS, idx), found)
    assert resolved["wheelhouses"] == []
    assert resolved["nodes"]["w2"]["venv_install"]


def _needing_install(**settings):
    found = probes()
    for name in found:
        found[name]["venv"] = {"exists": False, "satisfied": False, "unsatisfied": []}
    return P.resolve(P.static_plan(GROUPS, {n: dict(settings) for n in ["h", "w1", "w2"]}), found)


def test_each_set_has_its_locks_and_the_nodes_install_the_pinned_set_from_the_wheelhouse():
    resolved = _needing_install(
        python_env_no_deps_packages=["rlinf==0.3.0"], python_env_pip_extra_args=["--no-compile"]
    )
    (build,) = resolved["wheelhouses"]
    stamp = build["stamp"]
    assert build["locks"] == {"deps": f"requirements-{stamp}.lock", "no_deps": f"requirements-{stamp}-no-deps.lock"}
    node = resolved["nodes"]["w1"]
    assert node["wheelhouse_locks"] == {
        "deps": f"/opt/rlinf/wheelhouse/requirements-{stamp}.lock",
        "no_deps": f"/opt/rlinf/wheelhouse/requirements-{stamp}-no-deps.lock",
    }
    # Without python_env_require_hashes: the requirements, as before the locks existed.
    source = ["--no-index", "--find-links", "/opt/rlinf/wheelhouse", "--no-compile"]
    assert node["pip_install"] == {
        "deps": [*source, *resolved["cluster"]["requirements"]],
        "no_deps": ["--no-deps", *source, "rlinf==0.3.0"],
    }


def test_require_hashes_installs_from_the_pushed_locks():
    resolved = _needing_install(python_env_require_hashes=True, python_env_no_deps_packages=["rlinf==0.3.0"])
    node = resolved["nodes"]["h"]
    source = ["--no-index", "--find-links", "/opt/rlinf/wheelhouse"]
    assert node["pip_install"] == {
        "deps": [*source, "--require-hashes", "-r", node["wheelhouse_locks"]["deps"]],
        "no_deps": ["--no-deps", *source, "--require-hashes", "-r", node["wheelhouse_locks"]["no_deps"]],
    }
    assert not any(r in node["pip_install"]["deps"] for r in resolved["cluster"]["requirements"])


def test_a_set_without_no_deps_packages_has_one_lock_and_installs_nothing_without_deps():
    resolved = _needing_install(python_env_require_hashes=True)
    assert resolved["wheelhouses"][0]["locks"]["no_deps"] == ""
    assert resolved["nodes"]["w2"]["pip_install"]["no_deps"] == []


def test_nodes_that_hold_the_pin_install_nothing():
    found = probes()
    for name in found:
        found[name]["venv"] = {"exists": True, "satisfied": True, "unsatisfied": []}
    resolved = P.resolve(P.static_plan(GROUPS, hostvars()), found)
    assert resolved["nodes"]["w1"]["pip_install"] == {"deps": [], "no_deps": []}


def test_an_index_installs_by_requirements_from_it():
    resolved = _needing_install(python_env_index_url="https://mirror.example/simple")
    node = resolved["nodes"]["w1"]
    assert node["pip_install"]["deps"] == [
        "--index-url",
        "https://mirror.example/simple",
        *resolved["cluster"]["requirements"],
    ]


def test_require_hashes_with_an_index_is_refused_before_contact():
    settings = {"python_env_index_url": "https://mirror.example/simple", "python_env_require_hashes": True}
    found = problems_of(lambda: P.static_plan(GROUPS, {n: dict(settings) for n in ["h", "w1", "w2"]}))
    assert found == [
        "python_env_require_hashes is true and python_env_index_url is set: the lock holds the hashes of the "
        "wheelhouse the controller pushes, and with an index the nodes install from there; set one of them."
    ]


# Restarts and drivers -----------------------------------------------------------------


def plan3():
    return P.static_plan(GROUPS, hostvars())


def test_a_run_that_changes_nothing_restarts_nothing():
    states = {n: {"active": True, "files": [], "venv": [], "code": False} for n in ["h", "w1", "w2"]}
    assert R.restarts(plan3(), states) == {}
    assert R.restart_verdict({}, [{"kind": "launch", "unit": "rlinf-launch-x"}], allow=False)["refused"] is False


def test_a_worker_whose_env_file_changes_restarts_alone():
    states = {n: {"active": True} for n in ["h", "w1", "w2"]}
    states["w2"]["files"] = ["/etc/rlinf/rlinf.env"]
    assert R.restarts(plan3(), states) == {"w2": ["its files change (/etc/rlinf/rlinf.env)"]}


def test_a_restarted_head_restarts_every_running_worker():
    states = {n: {"active": True} for n in ["h", "w1", "w2"]}
    states["h"]["files"] = ["/etc/rlinf/ray-auth-token"]
    states["w2"]["active"] = False  # stopped: it only starts
    found = R.restarts(plan3(), states)
    assert list(found) == ["h", "w1"]
    assert "the head restarts" in found["w1"][0]


def test_a_new_pin_restarts_every_node_for_its_venv_and_stopped_nodes_only_start():
    states = {n: {"active": True, "venv": ["ray[default]==2.60.0: installed 2.59.0"]} for n in ["h", "w1", "w2"]}
    states["w1"]["active"] = False
    found = R.restarts(plan3(), states)
    assert list(found) == ["h", "w2"]
    assert found["h"] == ["its venv changes (ray[default]==2.60.0: installed 2.59.0)"]
    assert found["w2"][0].startswith("its venv changes") and "the head restarts" in found["w2"][1]
    code = R.restarts(plan3(), {"w1": {"active": True, "code": True}})
    assert code == {"w1": ["a new code-sync wheel is installed into its venv"]}


def test_rebuild_restarts_every_running_node():
    states = {n: {"active": n != "w2"} for n in ["h", "w1", "w2"]}
    found = R.restarts(plan3(), states, every="rebuild.yml stops it")
    assert found["h"] == ["rebuild.yml stops it"] and "w2" not in found


LAUNCH = {"kind": "launch", "unit": "rlinf-launch-train", "entry": "bash run.sh cfg", "job_id": "02000000"}
JOB = {"kind": "ray", "job_id": "03000000", "driver_ip": "10.0.0.2", "driver_pid": 4242, "command": "python x.py"}


def test_a_restart_under_a_driver_is_refused_naming_driver_nodes_and_reasons():
    verdict = R.restart_verdict({"w1": ["its files change (/etc/rlinf/rlinf.env)"]}, [LAUNCH, JOB], allow=False)
    assert verdict["refused"] is True
    msg = verdict["msg"]
    assert "2 drivers are attached" in msg
    assert "RLinf driver rlinf-launch-train (running 'bash run.sh cfg'" in msg and "Ray job 02000000" in msg
    assert "Ray job 03000000 (driver pid 4242 on 10.0.0.2: python x.py)" in msg
    assert "w1: its files change (/etc/rlinf/rlinf.env)" in msg
    assert "-e rlinf_allow_restart=true" in msg


def test_allow_restart_goes_ahead_and_says_so():
    verdict = R.restart_verdict({"h": ["its venv changes (x)"]}, [LAUNCH], allow=True)
    assert verdict["refused"] is False and verdict["msg"].startswith("rlinf_allow_restart=true")
    assert R.restart_verdict({"h": ["x"]}, [], allow=False) == {
        "refused": False,
        "msg": "no RLinf driver runs; restarting Ray on h: x",
    }


def test_a_driver_table_that_cannot_be_read_counts_as_a_driver():
    unreadable = {"kind": "unreadable", "address": "10.0.0.1:6379", "error": "ConnectionError: refused"}
    verdict = R.restart_verdict({"h": ["x"]}, [unreadable], allow=False)
    assert verdict["refused"] is True
    assert "job table of the Ray head at 10.0.0.1:6379 could not be read (ConnectionError: refused)" in verdict["msg"]


# Removing any worker ------------------------------------------------------------------


def removal_of(node, hv=None):
    return P.static_plan(FOUR, hv or four_hostvars(h={"node": node}), {"purpose": "remove-node"})


def test_removing_a_middle_worker_moves_the_ranks_above_it_down():
    plan = removal_of("w1")
    assert plan["order"] == ["h", "w2", "w3"]
    assert [plan["nodes"][n]["rank"] for n in plan["order"]] == [0, 1, 2]
    removal = plan["removal"]
    assert removal["node"] == "w1" and removal["rank"] == 1
    assert removal["renumbered"] == [{"name": "w2", "from": 2, "to": 1}, {"name": "w3", "from": 3, "to": 2}]
    assert removal["node_plan"]["unit"] == "rlinf-ray"
    assert plan["cluster"]["num_nodes"] == 3
    assert "w1" not in plan["nodes"]


def test_removing_the_last_worker_renumbers_nothing():
    plan = removal_of("w3")
    assert plan["removal"]["renumbered"] == []
    assert "No other rank changes" in plan["removal"]["summary"][1]


def test_only_the_renumbered_nodes_restart_and_the_removed_one_stops():
    plan = removal_of("w1")
    # What the dry write finds: the renumbered nodes' env files (RLINF_NODE_RANK) change.
    states = {n: {"active": True} for n in plan["order"]}
    for name in ("w2", "w3"):
        states[name]["files"] = ["/etc/rlinf/rlinf.env", "/etc/systemd/system/rlinf-ray.service"]
    found = R.restarts(plan, states)
    assert list(found) == ["w1", "w2", "w3"]
    assert found["w1"] == ["it is removed from the cluster (rank 1): its Ray stops"]
    assert found["w2"][0] == "its rank changes from 2 to 1"
    assert "h" not in found


def test_the_renumbered_env_files_carry_the_new_ranks():
    plan = removal_of("w1")
    found = probes(w3=probe("10.0.0.4"))
    found.pop("w1")
    resolved = P.resolve(plan, found, purpose="remove-node")
    assert resolved["nodes"]["w2"]["env"]["RLINF_NODE_RANK"] == 1
    assert resolved["nodes"]["w3"]["env"]["RLINF_NODE_RANK"] == 2
    assert [e["name"] for e in resolved["expected_nodes"]] == ["h", "w2", "w3"]
    assert resolved["removal"]["node"] == "w1"


def test_the_summary_says_the_inventory_change_plainly():
    hv = four_hostvars(h={"node": "w1"}, w1={"inventory_file": "/sites/prod/hosts.yml"})
    summary = removal_of("w1", hv)["removal"]["summary"]
    assert summary[0] == "w1 (rank 1) leaves the cluster: its Ray stops there, its files stay."
    assert "w2 2 -> 1, w3 3 -> 2" in summary[1]
    assert summary[2].startswith("Then change the inventory in /sites/prod/hosts.yml: delete w1 from ray_workers")
    assert "cluster.num_nodes: 3" in summary[2]


def test_explicit_ranks_above_the_removed_node_are_named_in_the_inventory_change():
    hv = four_hostvars(
        h={"node": "w1", "rlinf_node_rank": 0},
        w1={"rlinf_node_rank": 1},
        w2={"rlinf_node_rank": 2},
        w3={"rlinf_node_rank": 3},
    )
    removal = removal_of("w1", hv)["removal"]
    assert removal["explicit"] == ["w2", "w3"]
    assert "set rlinf_node_rank: 1 on w2, rlinf_node_rank: 2 on w3" in removal["summary"][2]


@pytest.mark.parametrize(
    ("node", "needle"),
    [("", "name the node to remove"), ("ghost", "not a Ray node"), ("h", "is the Ray head")],
)
def test_remove_node_refuses_what_it_cannot_remove(node, needle):
    found = problems_of(lambda: removal_of(node))
    assert any(needle in s for s in found)


def test_a_removal_checks_the_rlinf_config_against_the_new_cluster():
    cluster = {"num_nodes": 4, "component_placement": {"actor": "all"}}
    hv = four_hostvars(h={"node": "w1", "rlinf_cluster": cluster})
    found = problems_of(lambda: removal_of("w1", hv))
    assert any("num_nodes" in s for s in found)
    hv = four_hostvars(h={"node": "w1", "rlinf_cluster": dict(cluster, num_nodes=3)})
    assert removal_of("w1", hv)["config_cluster"]["num_nodes"] == 3


def test_a_launch_driver_is_named_with_its_entry_start_and_job():
    full = dict(LAUNCH, started_at="2026-12-03T15:00:00Z")
    msg = R.restart_verdict({"h": ["x"]}, [full], allow=False)["msg"]
    assert msg.startswith(
        "An RLinf driver is attached to the cluster: RLinf driver rlinf-launch-train (running 'bash run.sh cfg', "
        "since 2026-12-03T15:00:00Z, Ray job 02000000). This run would restart Ray on 1 node and"
    )
    bare = R.restart_verdict({"h": ["x"], "w1": ["y"]}, [{"kind": "launch", "unit": "u"}], allow=False)["msg"]
    assert bare.startswith("An RLinf driver is attached to the cluster: RLinf driver u (unit u). This run would ")
    assert "restart Ray on 2 nodes and" in bare
