"""owned_files run as a real AnsibleModule on a temporary tree: what it writes, records and purges."""

from __future__ import annotations

import json
import os
import pwd

import pytest
from ansible.module_utils.testing import patch_module_args
from module_results import ExitJson, FailJson

from ansible_collections.rlinf.cluster.plugins.module_utils.node_files import read_manifest, side_file
from ansible_collections.rlinf.cluster.plugins.modules import owned_files as mod

pytestmark = pytest.mark.usefixtures("module_exits")


def run(args, check=False, diff=False):
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    with patch_module_args(args), pytest.raises((ExitJson, FailJson)) as outcome:
        mod.main()
    return outcome.value.args[0]


@pytest.fixture
def tree(tmp_path):
    return {
        "manifest": str(tmp_path / "etc" / "state" / "node.manifest.json"),
        "env": str(tmp_path / "etc" / "rlinf.env"),
        "unit": str(tmp_path / "units" / "rlinf-ray.service"),
        "token": str(tmp_path / "etc" / "token"),
        "root": tmp_path,
    }


def present(tree, env="A='1'\n", token="s3cretT0kenValue"):
    return run(
        {
            "manifest": tree["manifest"],
            "files": [
                {"path": tree["env"], "content": env, "restart": True},
                {"path": tree["unit"], "content": "[Unit]\n", "reload": True, "restart": True},
            ],
            "secret_files": [{"path": tree["token"], "content": token, "mode": "0600"}],
        }
    )


def test_files_are_written_with_their_parents_recorded_and_a_rerun_changes_nothing(tree):
    first = present(tree)
    assert first["changed"] and first["restart"] and first["reload"]
    assert oct(os.stat(tree["token"]).st_mode & 0o777) == "0o600"
    recorded = [e["path"] for e in read_manifest(tree["manifest"])]
    assert str(tree["root"] / "etc") in recorded and tree["env"] in recorded and tree["token"] in recorded
    second = present(tree)
    assert not second["changed"] and second["changed_paths"] == [] and not second["restart"]


def test_a_changed_file_says_whether_ray_must_restart(tree):
    present(tree)
    result = present(tree, env="A='2'\n")
    assert result["changed_paths"] == [tree["env"]] and result["restart"] and not result["reload"]


def test_check_mode_writes_nothing_and_diff_never_shows_a_secret(tree):
    result = run(
        {
            "manifest": tree["manifest"],
            "files": [{"path": tree["env"], "content": "A='1'\n"}],
            "secret_files": [{"path": tree["token"], "content": "s3cretT0kenValue"}],
        },
        check=True,
        diff=True,
    )
    assert result["changed"] and not os.path.exists(tree["env"]) and not os.path.exists(tree["manifest"])
    assert "s3cretT0kenValue" not in json.dumps(result)
    assert [d["after_header"] for d in result["diff"]] == [tree["env"]]


def test_an_existing_file_we_did_not_write_is_never_overwritten(tree):
    foreign = tree["root"] / "passwd"
    foreign.write_text("root:x:0:0\n")
    result = run({"manifest": tree["manifest"], "files": [{"path": str(foreign), "content": "pwned\n"}]})
    assert "did not write it" in result["msg"]
    assert foreign.read_text() == "root:x:0:0\n"


def test_a_file_with_our_header_from_an_earlier_install_is_taken_over(tree):
    earlier = tree["root"] / "old.service"
    earlier.write_text("# Managed by rlinf-ansible (rlinf.cluster.ray_node)\n[Unit]\n")
    result = run({"manifest": tree["manifest"], "files": [{"path": str(earlier), "content": "[Unit]\nNew\n"}]})
    assert result["changed"] and str(earlier) in [e["path"] for e in read_manifest(tree["manifest"])]


def test_purge_removes_what_was_recorded_and_keeps_what_was_not(tree):
    venv = tree["root"] / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("py")
    (venv / "lib" / "pkg").mkdir(parents=True)
    (venv / "lib" / "pkg" / "mod.py").write_text("x")
    (venv / "lib" / "pkg" / "__pycache__").mkdir()
    (venv / "lib" / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_text("c")
    present(tree)
    run({"manifest": tree["manifest"], "record": [{"path": str(venv), "kind": "tree"}]})
    assert os.path.exists(side_file(tree["manifest"], str(venv)))
    # The operator's files, next to and inside ours, after the snapshot.
    (venv / "lib" / "pkg" / "notes.txt").write_text("mine")
    (tree["root"] / "etc" / "user.conf").write_text("mine")
    (tree["root"] / "units" / "other.service").write_text("mine")
    result = run({"manifest": tree["manifest"], "state": "absent"})
    assert result["changed"]
    for gone in (
        tree["env"],
        tree["unit"],
        tree["token"],
        tree["manifest"],
        str(venv / "bin"),
        str(venv / "lib" / "pkg" / "mod.py"),
    ):
        assert not os.path.lexists(gone), gone
    assert not os.path.exists(str(venv / "lib" / "pkg" / "__pycache__"))
    for kept in (
        venv / "lib" / "pkg" / "notes.txt",
        tree["root"] / "etc" / "user.conf",
        tree["root"] / "units" / "other.service",
    ):
        assert kept.read_text() == "mine"
    assert str(venv) in result["kept"] and str(tree["root"] / "etc") in result["kept"]


def second_node(tree, token="s3cretT0kenValue"):
    """Another Ray node of the machine: its own manifest and env file, the machine's token file."""
    manifest = os.path.join(os.path.dirname(tree["manifest"]), "node-b.manifest.json")
    env_b = str(tree["root"] / "etc" / "rlinf-b.env")
    run(
        {
            "manifest": manifest,
            "files": [{"path": env_b, "content": "B='1'\n"}],
            "secret_files": [{"path": tree["token"], "content": token, "mode": "0600"}],
        }
    )
    return manifest, env_b


def test_purging_one_ray_node_of_a_machine_keeps_what_the_other_lists_until_the_last_goes(tree, monkeypatch):
    monkeypatch.setattr(mod, "PROJECT_DIRS", (str(tree["root"] / "etc"),))  # the token is in /etc/rlinf
    present(tree)
    manifest_b, env_b = second_node(tree)
    # The first node wrote the token: the second records it too (the same content, its own run).
    assert tree["token"] in [e["path"] for e in read_manifest(manifest_b)]
    result = run({"manifest": manifest_b, "state": "absent", "peer_manifests": [tree["manifest"], manifest_b]})
    assert not os.path.exists(env_b) and not os.path.exists(manifest_b)
    assert os.path.exists(tree["token"]) and tree["token"] in result["shared"]
    assert tree["token"] not in result["changed_paths"]
    # The last one of the machine: nothing of the other lists the token any more.
    last = run({"manifest": tree["manifest"], "state": "absent", "peer_manifests": [manifest_b]})
    assert last["shared"] == [] and not os.path.exists(tree["token"]) and not os.path.exists(tree["env"])


def test_without_peer_manifests_purge_removes_a_file_another_node_lists(tree, monkeypatch):
    monkeypatch.setattr(mod, "PROJECT_DIRS", (str(tree["root"] / "etc"),))
    present(tree)
    manifest_b, _ = second_node(tree)
    result = run({"manifest": manifest_b, "state": "absent"})
    assert result["shared"] == [] and not os.path.exists(tree["token"])


def test_purge_in_check_mode_removes_nothing(tree):
    present(tree)
    result = run({"manifest": tree["manifest"], "state": "absent"}, check=True)
    assert result["changed"] and os.path.exists(tree["env"]) and os.path.exists(tree["manifest"])


def test_remove_drops_our_file_and_asks_for_a_restart(tree):
    present(tree)
    result = run({"manifest": tree["manifest"], "remove": [{"path": tree["token"], "restart": True}]})
    assert result["changed_paths"] == [tree["token"]] and result["restart"]
    assert not os.path.exists(tree["token"])
    assert tree["token"] not in [e["path"] for e in read_manifest(tree["manifest"])]


def test_remove_never_touches_a_file_that_is_not_ours(tree):
    foreign = tree["root"] / "keep.txt"
    foreign.write_text("mine")
    result = run({"manifest": tree["manifest"], "remove": [{"path": str(foreign)}]})
    assert not result["changed"] and foreign.exists()


def test_a_tree_recorded_first_on_a_fresh_host_leaves_nothing_after_purge(tree):
    # The venv's tree is the first thing recorded on a fresh host: the manifest's own
    # directories are created then and must be in the manifest, or purge leaves them behind.
    venv = tree["root"] / "opt" / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!\n")
    run({"manifest": tree["manifest"], "record": [{"path": str(venv), "kind": "tree"}]})
    recorded = [e["path"] for e in read_manifest(tree["manifest"])]
    assert str(tree["root"] / "etc") in recorded and str(tree["root"] / "etc" / "state") in recorded
    purged = run({"manifest": tree["manifest"], "state": "absent"})
    assert purged["kept"] == []
    assert not (tree["root"] / "etc").exists() and not venv.exists()


@pytest.mark.parametrize("user_file", [None, "venv/lib/pkg/notes.txt", "etc/user.conf"])
def test_purge_in_check_mode_reports_what_the_purge_removes_and_keeps(tree, user_file):
    venv = tree["root"] / "venv"
    (venv / "lib" / "pkg" / "__pycache__").mkdir(parents=True)
    (venv / "lib" / "pkg" / "mod.py").write_text("x")
    (venv / "lib" / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_text("c")
    present(tree)
    run({"manifest": tree["manifest"], "record": [{"path": str(venv), "kind": "tree"}]})
    if user_file:
        (tree["root"] / user_file).write_text("mine")
    listing = sorted(str(p) for p in tree["root"].rglob("*"))
    dry = run({"manifest": tree["manifest"], "state": "absent"}, check=True)
    assert sorted(str(p) for p in tree["root"].rglob("*")) == listing
    real = run({"manifest": tree["manifest"], "state": "absent"})
    assert sorted(dry["changed_paths"]) == sorted(real["changed_paths"])
    assert sorted(dry["kept"]) == sorted(real["kept"])
    assert bool(real["kept"]) == bool(user_file)


def make_venv(root):
    venv = root / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("py")
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "python3.11" / "site-packages" / "ray").mkdir(parents=True)
    (venv / "lib" / "python3.11" / "site-packages" / "ray" / "__init__.py").write_text("x")
    return venv


@pytest.mark.parametrize("check", [True, False])
def test_a_venv_we_created_goes_whole_with_what_pip_added_and_says_what(tree, check):
    """Issue 25: packages pip-installed into our venv (RLinf's install steps do) are not user data,
    and a purge that kept them left a venv the next site.yml refused."""
    venv = make_venv(tree["root"])
    present(tree)
    run({"manifest": tree["manifest"], "record": [{"path": str(venv), "kind": "venv"}]})
    added = venv / "lib" / "python3.11" / "site-packages" / "torch"
    added.mkdir()
    (added / "__init__.py").write_text("t")
    (venv / "share").mkdir()
    (venv / "share" / "x").write_text("s")
    result = run({"manifest": tree["manifest"], "state": "absent"}, check=check)
    assert str(venv) in result["changed_paths"] and str(venv) not in result["kept"]
    assert result["venv_extra"] == {str(venv): ["share", "torch"]}
    assert venv.exists() is check


def test_a_venv_recorded_as_a_file_list_by_an_earlier_release_becomes_ours_whole(tree):
    venv = make_venv(tree["root"])
    present(tree)
    run({"manifest": tree["manifest"], "record": [{"path": str(venv), "kind": "tree"}]})
    run({"manifest": tree["manifest"], "record": [{"path": str(venv), "kind": "venv"}]})
    assert [e["kind"] for e in read_manifest(tree["manifest"]) if e["path"] == str(venv)] == ["venv"]


def test_a_recorded_venv_that_is_no_longer_a_venv_is_kept(tree):
    venv = make_venv(tree["root"])
    present(tree)
    run({"manifest": tree["manifest"], "record": [{"path": str(venv), "kind": "venv"}]})
    (venv / "pyvenv.cfg").unlink()
    (venv / "data.bin").write_text("mine")
    result = run({"manifest": tree["manifest"], "state": "absent"})
    assert str(venv) in result["kept"] and (venv / "data.bin").read_text() == "mine"


def test_new_only_records_what_does_not_exist_yet_and_never_what_was_there_before(tree):
    root = tree["root"]
    before = root / "opt" / "theirs"
    before.mkdir(parents=True)
    (before / "data.bin").write_text("the operator's")
    theirs_unit = root / "units" / "easytier.service"
    theirs_unit.parent.mkdir(parents=True)
    theirs_unit.write_text("[Unit]\nDescription=the operator's own EasyTier\n")
    earlier = root / "units" / "easytier-earlier.service"
    earlier.write_text("# Managed by Ansible (rlinf.cluster.easytier); local edits are overwritten.\n[Unit]\n")
    new = root / "opt" / "ours"
    items = [(before, "dir"), (theirs_unit, "file"), (earlier, "file"), (new, "dir")]
    run({"manifest": tree["manifest"], "record": [{"path": str(p), "kind": k, "new_only": True} for p, k in items]})
    recorded = [e["path"] for e in read_manifest(tree["manifest"])]
    assert str(new) in recorded and str(earlier) in recorded
    assert str(before) not in recorded and str(theirs_unit) not in recorded
    # Once listed, a path stays ours when it exists (the next run records it again, unchanged).
    new.mkdir(parents=True)
    again = run({"manifest": tree["manifest"], "record": [{"path": str(new), "kind": "dir", "new_only": True}]})
    assert again["created"] == [] and str(new) in [e["path"] for e in read_manifest(tree["manifest"])]
    run({"manifest": tree["manifest"], "state": "absent"})
    assert not new.exists() and not earlier.exists()
    assert (before / "data.bin").read_text() == "the operator's" and theirs_unit.exists()


def test_new_only_lists_the_missing_parents_first_so_purge_removes_them_after_the_path(tree):
    deep = tree["root"] / "opt" / "rlinf" / "easytier"
    run({"manifest": tree["manifest"], "record": [{"path": str(deep), "kind": "dir", "new_only": True}]})
    recorded = [e["path"] for e in read_manifest(tree["manifest"])]
    assert recorded.index(str(deep.parent)) < recorded.index(str(deep))
    deep.mkdir()
    run({"manifest": tree["manifest"], "state": "absent"})
    assert not (tree["root"] / "opt").exists()


def test_a_venv_listed_before_it_is_created_lists_its_missing_parents_and_purge_removes_them_once_empty(tree):
    """python_env lists the venv before `python -m venv` runs: the directory above it (/opt/rlinf) is then
    ours too, and goes with the venv."""
    venv = tree["root"] / "opt" / "rlinf" / "venv"
    first = run({"manifest": tree["manifest"], "record": [{"path": str(venv), "kind": "venv"}]})
    assert venv.parent.is_dir() and not venv.exists()
    assert first["created"][-3:] == [str(venv.parent.parent), str(venv.parent), str(venv)]
    recorded = [e["path"] for e in read_manifest(tree["manifest"])]
    assert recorded.index(str(venv.parent)) < recorded.index(str(venv))
    make_venv(venv.parent)
    run({"manifest": tree["manifest"], "record": [{"path": str(venv), "kind": "venv"}]})
    run({"manifest": tree["manifest"], "state": "absent"})
    assert not (tree["root"] / "opt").exists()


def test_a_tree_listed_before_it_is_created_is_removed_by_purge_with_its_parents(tree):
    """The wheelhouse is listed before its directory is made and again after the push: purge still
    finds its file list (the manifest's directories are listed before it) and removes it all."""
    wheelhouse = tree["root"] / "opt" / "rlinf" / "wheelhouse"
    run({"manifest": tree["manifest"], "record": [{"path": str(wheelhouse), "kind": "tree"}]})
    recorded = [e["path"] for e in read_manifest(tree["manifest"])]
    assert recorded.index(os.path.dirname(tree["manifest"])) < recorded.index(str(wheelhouse))
    wheelhouse.mkdir()
    (wheelhouse / "ray-2.59.0.whl").write_text("wheel")
    run({"manifest": tree["manifest"], "record": [{"path": str(wheelhouse), "kind": "tree"}]})
    result = run({"manifest": tree["manifest"], "state": "absent"})
    assert result["kept"] == [] and not (tree["root"] / "opt").exists()
    assert not (tree["root"] / "etc").exists()


def test_a_listed_parent_that_holds_user_data_stays_with_it(tree):
    venv = tree["root"] / "opt" / "rlinf" / "venv"
    run({"manifest": tree["manifest"], "record": [{"path": str(venv), "kind": "venv"}]})
    make_venv(venv.parent)
    (venv.parent / "checkpoints").mkdir()
    (venv.parent / "checkpoints" / "ckpt.txt").write_text("step-100")
    result = run({"manifest": tree["manifest"], "state": "absent"})
    assert not venv.exists() and (venv.parent / "checkpoints" / "ckpt.txt").read_text() == "step-100"
    assert str(venv.parent) in result["kept"]


@pytest.mark.parametrize("listed", [True, False], ids=["secret_values", "content-only"])
def test_the_logged_invocation_masks_each_secret_value_listed(tree, monkeypatch, listed):
    """AnsibleModule logs its arguments to the node's journal; it masks a secret_files content only as
    a whole, which its logged form shows quoted (an env file's line, its newline escaped), so each
    value must be listed in secret_values too."""
    from ansible.module_utils import basic

    logged = []
    monkeypatch.setattr(basic.AnsibleModule, "log", lambda self, msg, log_args=None: logged.append(msg))
    secret = "hf_NotARealTokenQ7xZ2"
    secret_env = str(tree["root"] / "etc" / "rlinf.secret.env")
    args = {
        "manifest": tree["manifest"],
        "secret_files": [{"path": secret_env, "content": f"HF_TOKEN='{secret}'\n", "mode": "0600"}],
    }
    if listed:
        args["secret_values"] = [secret]
    result = run(args)
    assert result["changed"] and logged
    assert (secret in " ".join(logged)) is not listed, logged
    assert secret not in json.dumps(result)


def test_a_secret_files_content_is_masked_whole_in_the_logged_invocation(tree, monkeypatch):
    from ansible.module_utils import basic

    logged = []
    monkeypatch.setattr(basic.AnsibleModule, "log", lambda self, msg, log_args=None: logged.append(msg))
    assert present(tree, token="s3cretT0kenValue")["changed"]
    assert logged and "s3cretT0kenValue" not in " ".join(logged)
    assert tree["env"] in " ".join(logged)  # the paths stay readable


@pytest.mark.parametrize("missing", ["path", "content"])
def test_a_file_without_its_path_or_content_is_refused_naming_it(tree, missing):
    spec = {k: v for k, v in {"path": tree["env"], "content": "A='1'\n"}.items() if k != missing}
    for key in ("files", "secret_files"):
        result = run({"manifest": tree["manifest"], key: [spec]})
        assert result == {"msg": f"missing required arguments: {missing} found in {key}"}


def test_a_file_restarts_and_reloads_nothing_unless_it_says_so(tree):
    result = run({"manifest": tree["manifest"], "files": [{"path": tree["env"], "content": "A='1'\n"}]})
    assert result["changed"] and (result["restart"], result["reload"]) == (False, False)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_an_owner_and_group_are_a_number_or_a_name(tree):
    spec = {"path": tree["env"], "content": "A='1'\n", "owner": "12345", "group": "root"}
    assert run({"manifest": tree["manifest"], "files": [spec]})["changed"]
    st = os.stat(tree["env"])
    assert (st.st_uid, st.st_gid) == (12345, 0)
    spec = dict(spec, owner="nobody", group="23456")
    assert run({"manifest": tree["manifest"], "files": [spec]})["changed_paths"] == [tree["env"]]
    st = os.stat(tree["env"])
    assert (st.st_uid, st.st_gid) == (pwd.getpwnam("nobody").pw_uid, 23456)


def test_two_files_in_one_new_directory_record_it_once_in_check_mode(tree):
    files = [{"path": tree["env"], "content": "A\n"}, {"path": str(tree["root"] / "etc" / "b"), "content": "B\n"}]
    result = run({"manifest": tree["manifest"], "files": files}, check=True)
    assert result["created"].count(str(tree["root"] / "etc")) == 1


def test_new_directories_get_dir_mode(tree):
    old = os.umask(0o022)
    try:
        run({"manifest": tree["manifest"], "files": [{"path": tree["unit"], "content": "x\n"}], "dir_mode": "0750"})
    finally:
        os.umask(old)
    assert oct(os.stat(tree["root"] / "units").st_mode & 0o7777) == "0o750"


def test_a_file_under_our_project_directories_is_an_earlier_install_taken_over(tree, monkeypatch):
    monkeypatch.setattr(mod, "PROJECT_DIRS", (str(tree["root"] / "etc"),))
    os.makedirs(os.path.dirname(tree["env"]))
    with open(tree["env"], "w") as handle:
        handle.write("A='0'\n")  # no header: an install before headers
    result = run({"manifest": tree["manifest"], "files": [{"path": tree["env"], "content": "A='1'\n"}]})
    assert result["changed_paths"] == [tree["env"]]
    assert tree["env"] in [e["path"] for e in read_manifest(tree["manifest"])]


def test_an_unrecorded_file_with_our_header_and_the_same_content_is_recorded_unchanged(tree):
    earlier = tree["root"] / "old.service"
    text = "# Managed by rlinf-ansible (rlinf.cluster.ray_node)\n[Unit]\n"
    earlier.write_text(text)
    earlier.chmod(0o644)
    result = run({"manifest": tree["manifest"], "files": [{"path": str(earlier), "content": text}]})
    assert result["changed_paths"] == [] and str(earlier) in result["created"]
    assert str(earlier) in [e["path"] for e in read_manifest(tree["manifest"])]


def test_a_recorded_file_that_became_a_dangling_link_is_written_again_with_an_empty_before(tree):
    present(tree)
    os.unlink(tree["env"])
    os.symlink(str(tree["root"] / "nowhere"), tree["env"])
    result = run({"manifest": tree["manifest"], "files": [{"path": tree["env"], "content": "A='1'\n"}]}, diff=True)
    assert result["diff"][0]["before"] == "" and result["changed_paths"] == [tree["env"]]
    assert not os.path.islink(tree["env"])


@pytest.mark.parametrize(
    "spec", [{"path": "rel/dir", "kind": "tree"}, {"path": "/x", "kind": "socket"}, {"kind": "file"}]
)
def test_a_record_without_an_absolute_path_or_a_known_kind_is_refused(tree, spec):
    result = run({"manifest": tree["manifest"], "record": [spec]})
    assert result["msg"] == f"record: {spec!r} needs an absolute path and a kind of file, dir, tree, venv."


def test_a_recorded_tree_keeps_its_file_list_readable_and_a_recorded_file_none(tree):
    venv = tree["root"] / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    plain = tree["root"] / "plain"
    plain.write_text("")
    run({"manifest": tree["manifest"], "record": [{"path": str(plain), "kind": "file"}]})
    assert not os.path.exists(tree["manifest"] + ".d")
    run({"manifest": tree["manifest"], "record": [{"path": str(venv), "kind": "tree"}]})
    listing = side_file(tree["manifest"], str(venv))
    with open(listing) as handle:
        assert handle.read() == "bin/python\n"
    assert oct(os.stat(listing).st_mode & 0o777) == "0o644"


def test_remove_leaves_a_directory_and_a_missing_path_alone(tree):
    present(tree)
    etc = str(tree["root"] / "etc")
    result = run({"manifest": tree["manifest"], "remove": [{"path": etc}, {"path": etc + "/gone"}, {"path": 5}]})
    assert (result["changed"], result["changed_paths"]) == (False, [])
    assert os.path.isdir(etc) and etc in [e["path"] for e in read_manifest(tree["manifest"])]


def test_remove_says_it_changed_and_asks_for_a_reload_when_told(tree):
    present(tree)
    result = run({"manifest": tree["manifest"], "remove": [{"path": tree["unit"], "reload": True}]})
    assert (result["changed"], result["restart"], result["reload"]) == (True, False, True)


def test_the_manifest_is_written_readable_even_by_a_run_that_creates_nothing(tree):
    result = run({"manifest": tree["manifest"]})
    assert result["changed"] is False
    # only the manifest's own directories, so that purge removes them after it
    assert [e["path"] for e in read_manifest(tree["manifest"])] == [
        str(tree["root"] / "etc"),
        str(tree["root"] / "etc" / "state"),
    ]
    assert oct(os.stat(tree["manifest"]).st_mode & 0o777) == "0o644"


def test_purge_passes_over_recorded_paths_that_are_gone_already(tree):
    present(tree)
    os.unlink(tree["unit"])
    os.rmdir(tree["root"] / "units")
    result = run({"manifest": tree["manifest"], "state": "absent"})
    assert tree["unit"] not in result["changed_paths"] and str(tree["root"] / "units") not in result["changed_paths"]
    assert tree["env"] in result["changed_paths"] and not os.path.exists(tree["env"])


def test_a_recorded_venv_replaced_by_a_link_is_left_with_what_it_points_to(tree):
    venv = make_venv(tree["root"])
    present(tree)
    run({"manifest": tree["manifest"], "record": [{"path": str(venv), "kind": "venv"}]})
    elsewhere = tree["root"] / "elsewhere"
    venv.rename(elsewhere)
    os.symlink(str(elsewhere), str(venv))
    result = run({"manifest": tree["manifest"], "state": "absent"})
    assert str(venv) not in result["changed_paths"] and (elsewhere / "pyvenv.cfg").exists()


@pytest.mark.parametrize("check", [False, True])
def test_purge_drops_the_manifest_where_its_directory_stays(tree, check):
    present(tree)
    state_dir = os.path.dirname(tree["manifest"])
    with open(os.path.join(state_dir, "operator.txt"), "w") as handle:
        handle.write("mine")
    result = run({"manifest": tree["manifest"], "state": "absent"}, check=check)
    assert result["changed_paths"][-1] == tree["manifest"] and state_dir in result["kept"]
    assert os.path.exists(tree["manifest"]) is check


def test_a_tree_whose_file_list_is_lost_is_kept_whole(tree):
    data = tree["root"] / "wheels"
    data.mkdir()
    (data / "a.whl").write_text("w")
    present(tree)
    run({"manifest": tree["manifest"], "record": [{"path": str(data), "kind": "tree"}]})
    os.unlink(side_file(tree["manifest"], str(data)))
    result = run({"manifest": tree["manifest"], "state": "absent"})
    assert str(data) in result["kept"] and (data / "a.whl").read_text() == "w"


def test_the_manifest_is_required():
    assert run({"files": []}) == {"msg": "missing required arguments: manifest"}


@pytest.mark.parametrize(
    ("files", "names"),
    [
        (
            ["lib/python3.11/site-packages/torch/__init__.py", "lib/python3.11/site-packages/six.py"],
            ["six.py", "torch"],
        ),
        (["lib/python3.11/site-packages", "share/x", "bin/tool"], ["bin", "lib", "share"]),
        (["lib/python3.11/other/x.py"], ["lib"]),
    ],
)
def test_what_a_venv_gained_is_named_by_package_else_by_top_directory(files, names):
    assert mod.installed_since(files) == names


def test_a_parent_made_by_another_node_after_our_look_is_not_listed_and_the_record_goes_on(tree, monkeypatch):
    """Two Ray nodes of one machine record their venvs at the same moment: the one whose mkdir loses the
    race neither fails nor lists the directory the other made."""
    venv = tree["root"] / "opt" / "rlinf" / "venv"
    real_mkdir = os.mkdir

    def mkdir_losing_the_race(path, mode=0o777):
        real_mkdir(path, mode)
        if path == str(venv.parent):  # the other node's mkdir came first
            raise FileExistsError(17, "File exists", path)

    monkeypatch.setattr(mod.os, "mkdir", mkdir_losing_the_race)
    result = run({"manifest": tree["manifest"], "record": [{"path": str(venv), "kind": "venv"}]})
    recorded = [e["path"] for e in read_manifest(tree["manifest"])]
    assert str(venv) in recorded and str(venv.parent.parent) in recorded
    assert str(venv.parent) not in recorded and str(venv.parent) not in result["created"]
