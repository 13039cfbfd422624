"""Never adopt what exists: preflight refuses a directory a role would fill (sync into with
--delete, keep records in) and list as ours when it exists, holds files or is not a directory,
and is not in the node's manifest; an empty one, a missing one or one of ours passes."""

from __future__ import annotations

import pytest

from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, sentences
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P

GROUPS = {"ray_head": ["h"], "ray_workers": ["w1"]}


def hostvars(**settings):
    return {
        "h": {"ansible_host": "10.0.0.1", **settings},
        "w1": {"ansible_host": "10.0.0.2", **settings},
    }


def probe(address, paths=None, manifest=None):
    return {
        "systemd": True,
        "apt": True,
        "python": {"version": "3.11.2", "machine": "x86_64", "glibc": "2.36"},
        "interfaces": {"lo": ["127.0.0.1"], "eth0": [address]},
        "default_route": {"device": "eth0", "address": address},
        "paths": paths or {},
        "manifest": manifest or [],
        "record": {},
        "unit": {"active": "active"},
    }


def found_dir(path, empty=False, ours=False, kind="dir"):
    info = {"path": path, "exists": True, "kind": kind, "ours": ours}
    if kind == "dir":
        info.update(empty=empty, is_venv=False)
    return info


def resolve(settings, w1_paths, manifest=None, purpose="site"):
    plan = P.static_plan(GROUPS, hostvars(**settings))
    return P.resolve(plan, {"h": probe("10.0.0.1"), "w1": probe("10.0.0.2", w1_paths, manifest)}, purpose)


def problems(settings, w1_paths, manifest=None) -> list[str]:
    with pytest.raises(PlanError) as err:
        resolve(settings, w1_paths, manifest)
    return sentences(err.value.problems)


CASES = [
    (
        {},
        "wheelhouse",
        "/opt/rlinf/models",
        "python_env_node_wheelhouse_dir",
        "syncs the wheelhouse into it with --delete",
    ),
    (
        {"rlinf_code_sync": "package", "rlinf_src": "/srv/RLinf"},
        "code_wheel_dir",
        "/opt/rlinf/code-sync",
        "code_sync_node_wheel_dir",
        "syncs the code wheel into it with --delete",
    ),
    (
        {"rlinf_code_sync": "rsync", "rlinf_src": "/srv/RLinf"},
        "code_record_dir",
        "/opt/rlinf/code-sync-checkouts",
        "code_sync_node_record_dir",
        "keeps its records of the checkouts in it",
    ),
]


@pytest.mark.parametrize(("settings", "key", "path", "var", "use"), CASES)
def test_a_full_directory_not_in_the_manifest_is_refused_naming_the_variable(settings, key, path, var, use):
    if key == "wheelhouse":
        settings = {**settings, "python_env_node_wheelhouse_dir": path}
    (found,) = problems(settings, {key: found_dir(path)})
    assert found.startswith(
        f"host 'w1': {var}: {path} exists, is a directory with files in it, and rlinf-ansible did not create it "
        "(not in its manifest)"
    ), found
    assert use in found and f"set {var} to a path of its own" in found, found


@pytest.mark.parametrize(("settings", "key", "path", "var", "use"), CASES)
def test_a_file_where_a_directory_would_be_filled_is_refused(settings, key, path, var, use):
    (found,) = problems(settings, {key: found_dir(path, kind="file")})
    assert found.startswith(
        f"host 'w1': {var}: {path} exists, is not a directory (a file?), and rlinf-ansible did not"
    ), found


@pytest.mark.parametrize(("settings", "key", "path", "var", "use"), CASES)
def test_an_empty_one_a_missing_one_and_one_of_ours_pass(settings, key, path, var, use):
    resolve(settings, {key: found_dir(path, empty=True)})
    resolve(settings, {key: {"path": path, "exists": False, "kind": "none", "ours": False}})
    resolve(settings, {key: found_dir(path, ours=True)})
    resolve(settings, {key: found_dir(path)}, manifest=[{"path": path, "kind": "tree"}])


def test_a_directory_the_run_does_not_fill_is_not_judged():
    # With an index the wheelhouse is not pushed; without code sync no code dir is used.
    resolve(
        {"python_env_index_url": "https://mirror.example/simple"}, {"wheelhouse": found_dir("/opt/rlinf/wheelhouse")}
    )
    resolve({}, {"code_wheel_dir": found_dir("/opt/rlinf/code-sync")})


def test_other_purposes_do_not_refuse_it():
    resolve({}, {"wheelhouse": found_dir("/opt/rlinf/wheelhouse")}, purpose="remove-node")


def test_a_full_wheelhouse_under_our_prefix_is_no_longer_adopted_but_an_empty_one_is():
    node = resolve({}, {"wheelhouse": found_dir("/opt/rlinf/wheelhouse", empty=True)})["nodes"]["w1"]
    assert node["adopt"] == [{"path": "/opt/rlinf/wheelhouse", "kind": "tree"}]
    assert node["own_wheelhouse"] == [{"path": "/opt/rlinf/wheelhouse", "kind": "tree"}]
    manifest = [{"path": "/opt/rlinf/wheelhouse", "kind": "tree"}]
    ours = resolve({}, {"wheelhouse": found_dir("/opt/rlinf/wheelhouse", ours=True)}, manifest)["nodes"]["w1"]
    assert ours["adopt"] == [] and ours["own_wheelhouse"] == [{"path": "/opt/rlinf/wheelhouse", "kind": "tree"}]


def test_with_an_index_no_wheelhouse_is_owned():
    node = resolve({"python_env_index_url": "https://mirror.example/simple"}, {})["nodes"]["w1"]
    assert node["own_wheelhouse"] == [] and [t["path"] for t in node["own_trees"]] == ["/opt/rlinf/venv"]


def test_every_host_problem_is_reported_at_once():
    settings = {"rlinf_code_sync": "package", "rlinf_src": "/srv/RLinf"}
    found = problems(
        settings,
        {"wheelhouse": found_dir("/opt/rlinf/wheelhouse"), "code_wheel_dir": found_dir("/opt/rlinf/code-sync")},
    )
    assert [f.split(":", 2)[1].strip() for f in found] == ["python_env_node_wheelhouse_dir", "code_sync_node_wheel_dir"]


def test_a_wheelhouse_another_ray_node_of_the_machine_recorded_is_ours_too():
    """RLinf's compute + control layout: two Ray nodes of one machine, each with its own venv, share the
    wheelhouse the first recorded; the second must not call it somebody else's."""
    groups = {"ray_head": ["h"], "ray_workers": ["h-b"]}
    second = {
        "ray_port": 6390,
        "ray_node_unit_name": "rlinf-ray-b",
        "rlinf_env_file": "/etc/rlinf/rlinf-b.env",
        "rlinf_env_profile_script": "/etc/profile.d/rlinf-b.sh",
        "ray_temp_dir": "/tmp/ray-b",
        "rlinf_venv_dir": "/opt/rlinf/venv-b",
    }
    hv = {
        "h": {"ansible_host": "10.0.0.1", "rlinf_gpus_per_node": 0},
        "h-b": {"ansible_host": "10.0.0.1", "rlinf_gpus_per_node": 0, **second},
    }
    plan = P.static_plan(groups, hv)
    full = {"wheelhouse": found_dir("/opt/rlinf/wheelhouse")}
    mine = [{"path": "/opt/rlinf/wheelhouse", "kind": "tree"}]
    resolved = P.resolve(plan, {"h": probe("10.0.0.1", full, mine), "h-b": probe("10.0.0.1", full)}, "site")
    assert set(resolved["nodes"]) == {"h", "h-b"}
    with pytest.raises(PlanError) as err:
        P.resolve(plan, {"h": probe("10.0.0.1", full), "h-b": probe("10.0.0.1", full)}, "site")
    assert any("h-b" in p and "python_env_node_wheelhouse_dir" in p for p in sentences(err.value.problems))


def test_one_ray_node_of_a_machine_pushes_its_shared_wheelhouse():
    """Two Ray nodes of one machine, each installing a venv of its own: only the first by rank
    pushes the wheelhouse they share (two rsync --delete into one directory race)."""
    groups = {"ray_head": ["h"], "ray_workers": ["c", "w"]}
    hostvars = {
        "h": {"ansible_host": "10.0.0.1", "rlinf_gpus_per_node": 0, "rlinf_venv_dir": "/opt/rlinf/compute-venv"},
        "c": {
            "ansible_host": "10.0.0.1",
            "rlinf_gpus_per_node": 0,
            "rlinf_venv_dir": "/opt/rlinf/control-venv",
            "ray_port": 6390,
            "ray_temp_dir": "/tmp/rlinf_control",
            "ray_node_unit_name": "rlinf-ray-control",
            "rlinf_env_file": "/etc/rlinf/rlinf-control.env",
            "rlinf_env_profile_script": "/etc/profile.d/rlinf-control.sh",
        },
        "w": {"ansible_host": "10.0.0.2"},
    }
    found = {"h": probe("10.0.0.1"), "c": probe("10.0.0.1"), "w": probe("10.0.0.2")}
    done = P.resolve(P.static_plan(groups, hostvars), found, "site")
    nodes = done["nodes"]
    assert nodes["h"]["venv_install"] and nodes["c"]["venv_install"]
    assert [n for n in ("h", "c", "w") if nodes[n]["pushes_wheelhouse"]] == ["h", "w"]
    # A node whose venv holds the pinned set pushes nothing; the next installing node of its machine does.
    found["h"] = dict(probe("10.0.0.1"), venv={"exists": True, "satisfied": True})
    done = P.resolve(P.static_plan(groups, hostvars), found, "site")
    assert [n for n in ("h", "c", "w") if done["nodes"][n]["pushes_wheelhouse"]] == ["c", "w"]


def test_what_a_node_of_another_machine_recorded_does_not_make_a_directory_ours():
    full = {"wheelhouse": found_dir("/opt/rlinf/wheelhouse")}
    theirs = [{"path": "/opt/rlinf/wheelhouse", "kind": "tree"}]
    plan = P.static_plan(GROUPS, hostvars())
    with pytest.raises(PlanError) as err:
        P.resolve(plan, {"h": probe("10.0.0.1", full, theirs), "w1": probe("10.0.0.2", full)}, "site")
    found = sentences(err.value.problems)
    assert len(found) == 1 and found[0].startswith(
        "host 'w1': python_env_node_wheelhouse_dir: /opt/rlinf/wheelhouse exists"
    ), found
