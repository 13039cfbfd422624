"""files_as_planned (the controller's judgement from the node read's digests) against owned_files
itself: wherever it says the files are as planned, owned_files in check mode changes and creates
nothing; each way a file can differ makes it say no."""

from __future__ import annotations

import grp
import os
import pwd

import pytest
from ansible.module_utils.testing import patch_module_args
from module_results import ExitJson, FailJson

from ansible_collections.rlinf.cluster.plugins.filter.files_as_planned import FilterModule
from ansible_collections.rlinf.cluster.plugins.module_utils.node_files import file_state, read_manifest
from ansible_collections.rlinf.cluster.plugins.modules import owned_files as mod
from ansible_collections.rlinf.cluster.plugins.plugin_utils.files_as_planned import files_as_planned

pytestmark = pytest.mark.usefixtures("module_exits")
ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name


def owned_files(args, check):
    args = dict(args, _ansible_check_mode=check)
    with patch_module_args(args), pytest.raises((ExitJson, FailJson)) as outcome:
        mod.main()
    return outcome.value.args[0]


@pytest.fixture
def node(tmp_path):
    paths = {
        "manifest": str(tmp_path / "etc" / "state" / "node.manifest.json"),
        "env": str(tmp_path / "etc" / "rlinf.env"),
        "unit": str(tmp_path / "units" / "rlinf-ray.service"),
        "token": str(tmp_path / "etc" / "token"),
        "gone": str(tmp_path / "etc" / "rlinf.secret.env"),
        "venv": str(tmp_path / "venv"),
    }
    os.makedirs(paths["venv"])
    return paths


def plan(node, env="A='1'\n", token="t0ken", mode="0644", owner=None, record_kind="venv"):
    return {
        "manifest": node["manifest"],
        "files": [
            {"path": node["env"], "content": env, "mode": mode, "restart": True},
            {"path": node["unit"], "content": "[Unit]\n", "reload": True, "restart": True, "owner": owner},
        ],
        "secret_files": [{"path": node["token"], "content": token, "mode": "0600", "group": MY_GROUP}],
        "remove": [{"path": node["gone"], "restart": True}],
        "record": [{"path": node["venv"], "kind": record_kind}],
    }


def judged(node, args):
    """files_as_planned from what the node read would return (node_state's digests and manifest)."""
    found = {node[key]: file_state(node[key]) for key in ("env", "unit", "token", "gone")}
    manifest = [{"path": e["path"], "kind": e["kind"]} for e in read_manifest(node["manifest"])]
    return files_as_planned(found, manifest, args["files"], args["secret_files"], args["remove"], args["record"])


def assert_agrees(node, args):
    """files_as_planned says yes only where owned_files (check mode) would change and create nothing."""
    check = owned_files(args, check=True)
    unchanged = not check.get("failed") and not check["changed_paths"] and not check["created"]
    verdict = judged(node, args)
    assert not verdict or unchanged, (verdict, check)
    return verdict


def test_a_node_written_by_the_plan_is_as_planned_and_owned_files_agrees(node):
    args = plan(node)
    assert not assert_agrees(node, args)  # nothing written yet
    owned_files(args, check=False)
    assert assert_agrees(node, args)


@pytest.mark.parametrize(
    "change",
    [
        {"env": "A='2'\n"},
        {"token": "rotated"},
        {"mode": "0600"},
        {"owner": "0" if os.getuid() else "65534"},
    ],
    ids=["content", "secret content", "mode", "owner"],
)
def test_any_planned_difference_is_not_as_planned(node, change):
    owned_files(plan(node), check=False)
    assert not assert_agrees(node, plan(node, **change))


def test_a_venv_an_earlier_release_listed_as_a_tree_is_not_as_planned(node):
    owned_files(plan(node, record_kind="tree"), check=False)
    assert judged(node, plan(node, record_kind="tree"))
    # owned_files relists it as a venv when it writes: the node is compared (and written) again.
    assert not assert_agrees(node, plan(node, record_kind="venv"))


def test_a_changed_file_on_the_node_is_not_as_planned(node):
    args = plan(node)
    owned_files(args, check=False)
    with open(node["env"], "a") as handle:
        handle.write("B='x'\n")
    assert not assert_agrees(node, args)
    os.chmod(node["env"], 0o600)
    assert not judged(node, args)


def test_a_file_to_remove_that_is_there_is_not_as_planned(node):
    args = plan(node)
    owned_files(args, check=False)
    with open(node["gone"], "w") as handle:
        handle.write("S='1'\n")
    assert not assert_agrees(node, args)


def test_a_path_the_manifest_does_not_list_is_not_as_planned(node):
    args = plan(node)
    owned_files(args, check=False)
    args["record"].append({"path": node["venv"] + "-2", "kind": "dir"})
    assert not judged(node, args)
    args = plan(node)
    args["files"].append({"path": node["env"] + ".new", "content": "", "mode": "0644"})
    assert not judged(node, args)


def test_no_manifest_or_no_read_is_never_as_planned(node):
    args = plan(node)
    owned_files(args, check=False)
    os.unlink(node["manifest"])
    assert not assert_agrees(node, args)
    assert not files_as_planned({}, [{"path": node["env"], "kind": "file"}], args["files"])


def test_owner_and_group_by_name_or_number(node):
    args = plan(node, owner=ME)
    owned_files(args, check=False)
    assert assert_agrees(node, args)
    assert assert_agrees(node, plan(node, owner=str(os.getuid())))


def test_the_filter_reads_the_probe_and_names_a_broken_input():
    filters = FilterModule().filters()
    assert filters["files_as_planned"]({"digests": {}, "manifest": []}, []) is False
    with pytest.raises(Exception, match="files_as_planned"):
        filters["files_as_planned"]({"digests": {}, "manifest": [{"path": "/x"}]}, [{"content": "x"}])
