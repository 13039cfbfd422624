import hashlib
import subprocess

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rlinf.cluster.plugins.filter.wheelhouse import FilterModule
from ansible_collections.rlinf.cluster.plugins.module_utils.wheelhouse import (
    lock_files,
    lock_state,
    lock_text,
    manylinux_platforms,
    pip_download_args,
    push_rsync_opts,
    wheelhouse_key,
    wheelhouse_platforms,
)


def test_platforms_cover_every_older_glibc_and_the_legacy_aliases():
    tags = manylinux_platforms("x86_64", "2.36")
    assert tags[0] == "manylinux_2_36_x86_64"
    assert "manylinux_2_17_x86_64" in tags
    assert tags[-3:] == ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
    assert "manylinux_2_37_x86_64" not in tags


def test_old_glibc_excludes_newer_legacy_aliases():
    tags = manylinux_platforms("aarch64", "2.12")
    assert "manylinux2014_aarch64" not in tags
    assert "manylinux2010_aarch64" in tags


@pytest.mark.parametrize("bad", ["", "glibc", "3.1"])
def test_bad_glibc_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="glibc version"):
        manylinux_platforms("x86_64", bad)


def test_download_args_name_python_and_abis():
    args = pip_download_args("3.11.2", "x86_64", "2.36")
    assert args[:5] == ["--only-binary=:all:", "--implementation", "cp", "--python-version", "311"]
    assert args[5:7] == ["--abi", "cp311"]
    assert args.count("--platform") == len(manylinux_platforms("x86_64", "2.36"))


def test_wheelhouses_group_by_python_and_arch_with_oldest_glibc():
    nodes = [
        {"python_version": "3.11.2", "machine": "x86_64", "glibc": "2.36"},
        {"python_version": "3.11.2", "machine": "x86_64", "glibc": "2.31"},
        {"python_version": "3.11.2", "machine": "aarch64", "glibc": "2.35"},
    ]
    result = wheelhouse_platforms(nodes)
    assert [(p["key"], p["glibc"]) for p in result] == [("cp311-aarch64", "2.35"), ("cp311-x86_64", "2.31")]
    assert wheelhouse_key(nodes[0]) == "cp311-x86_64"


def _report(tmp_path, wheels):
    """pip's --report for wheels written into tmp_path: {file name: content}."""
    install = []
    for name, content in wheels.items():
        (tmp_path / name).write_bytes(content)
        project, version = name.split("-")[:2]
        install.append(
            {
                "metadata": {"name": project, "version": version.replace("%2B", "+")},
                "download_info": {
                    "url": f"file://{tmp_path}/{name.replace('+', '%2B')}",
                    "archive_info": {"hashes": {"sha256": hashlib.sha256(content).hexdigest()}},
                },
            }
        )
    return {"install": install}


WHEELS = {
    "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl": b"torch",
    "ray-2.60.0-cp311-cp311-manylinux2014_x86_64.whl": b"ray",
}


def test_a_lock_pins_every_resolved_wheel_by_version_and_sha256_and_names_its_file(tmp_path):
    text = lock_text(_report(tmp_path, WHEELS))
    sha = {name: hashlib.sha256(content).hexdigest() for name, content in WHEELS.items()}
    ray, torch = sorted(WHEELS)
    assert text.splitlines()[1:] == [
        f"ray==2.60.0 --hash=sha256:{sha[ray]}  # {ray}",
        f"torch==2.13.0+cpu --hash=sha256:{sha[torch]}  # {torch}",
    ]
    assert lock_files(text) == sha


def test_a_report_entry_without_a_local_file_or_hash_is_refused(tmp_path):
    report = _report(tmp_path, {"ray-2.60.0-py3-none-any.whl": b"x"})
    report["install"][0]["download_info"]["archive_info"] = {}
    with pytest.raises(ValueError, match="no local file and sha256 for ray"):
        lock_text(report)


def test_a_set_is_complete_only_with_its_lock_and_every_wheel_it_lists(tmp_path):
    locks = {"deps": "requirements-s.lock", "no_deps": ""}
    assert lock_state(str(tmp_path), locks) == (False, [])
    (tmp_path / "requirements-s.lock").write_text(lock_text(_report(tmp_path, WHEELS)))
    assert lock_state(str(tmp_path), locks) == (True, [])
    (tmp_path / sorted(WHEELS)[0]).unlink()
    assert lock_state(str(tmp_path), locks) == (False, [])


def test_a_wheel_whose_content_changed_is_named_with_its_lock(tmp_path):
    locks = {"deps": "requirements-s.lock", "no_deps": ""}
    (tmp_path / "requirements-s.lock").write_text(lock_text(_report(tmp_path, WHEELS)))
    changed = tmp_path / sorted(WHEELS)[1]
    changed.write_bytes(b"not torch")
    assert lock_state(str(tmp_path), locks) == (
        False,
        [
            f"the controller's wheelhouse file {changed} does not match the sha256 its lock "
            f"{tmp_path / 'requirements-s.lock'} recorded when it was downloaded; remove that file and re-run "
            "(it is downloaded again)"
        ],
    )


def test_the_no_deps_lock_counts_too(tmp_path):
    (tmp_path / "requirements-s.lock").write_text(lock_text(_report(tmp_path, WHEELS)))
    assert lock_state(str(tmp_path), {"deps": "requirements-s.lock", "no_deps": "requirements-s-no-deps.lock"}) == (
        False,
        [],
    )


def test_a_changed_wheel_another_set_lists_is_named_before_a_new_set_is_locked(tmp_path):
    """The sets share the wheelhouse, and pip download keeps a wheel that is there: the new set's lock
    would record a changed one, so every lock in the directory is checked, each wheel hashed once."""
    (tmp_path / "requirements-old.lock").write_text(lock_text(_report(tmp_path, WHEELS)))
    (tmp_path / "requirements-other.lock").write_text(lock_text(_report(tmp_path, WHEELS)))
    changed = tmp_path / sorted(WHEELS)[0]
    changed.write_bytes(b"not ray")
    complete, problems = lock_state(str(tmp_path), {"deps": "requirements-new.lock", "no_deps": ""})
    assert not complete
    assert problems == [
        f"the controller's wheelhouse file {changed} does not match the sha256 its lock "
        f"{tmp_path / 'requirements-old.lock'} recorded when it was downloaded; remove that file and re-run "
        "(it is downloaded again)"
    ]


def test_a_missing_no_deps_lock_still_names_a_changed_wheel_of_the_set(tmp_path):
    (tmp_path / "requirements-s.lock").write_text(lock_text(_report(tmp_path, WHEELS)))
    (tmp_path / sorted(WHEELS)[1]).write_bytes(b"not torch")
    complete, problems = lock_state(
        str(tmp_path), {"deps": "requirements-s.lock", "no_deps": "requirements-s-no-deps.lock"}
    )
    assert not complete and len(problems) == 1 and sorted(WHEELS)[1] in problems[0], problems


def _two_sets(controller):
    """A platform directory holding two pins' sets that share a wheel, and pip's leftover dir."""
    shared = {"aiohttp_cors-0.8.1-py3-none-any.whl": b"cors"}
    new = {"ray-2.60.0-cp311-cp311-manylinux2014_x86_64.whl": b"ray 2.60", **shared}
    old = {"ray-2.59.0-cp311-cp311-manylinux2014_x86_64.whl": b"ray 2.59", **shared}
    (controller / "requirements-new.lock").write_text(lock_text(_report(controller, new)))
    (controller / "requirements-old.lock").write_text(lock_text(_report(controller, old)))
    (controller / ".resolve").mkdir()
    return new, old


def test_a_push_sends_the_sets_locks_and_wheels_and_the_node_drops_the_rest(tmp_path):
    controller, node = tmp_path / "controller", tmp_path / "node"
    controller.mkdir()
    new, old = _two_sets(controller)
    # The node's copy from the earlier pin (the push this replaces sent everything).
    node.mkdir()
    for name in ("requirements-old.lock", *old):
        (node / name).write_bytes((controller / name).read_bytes())
    opts = push_rsync_opts({"requirements-new.lock": (controller / "requirements-new.lock").read_text()})
    assert opts[-2:] == ["--exclude=*", "--delete-excluded"]
    subprocess.run(["rsync", "-a", "--delete", *opts, f"{controller}/", f"{node}/"], check=True)
    assert sorted(p.name for p in node.iterdir()) == sorted(["requirements-new.lock", *new])
    assert (node / "ray-2.60.0-cp311-cp311-manylinux2014_x86_64.whl").read_bytes() == b"ray 2.60"


@pytest.mark.parametrize("name", ["ray-*.whl", "a/b.whl", "x[1].whl"])
def test_a_name_rsync_would_read_as_a_pattern_is_refused(name):
    with pytest.raises(ValueError, match="rsync would read as patterns"):
        push_rsync_opts({"requirements-s.lock": f"ray==1 --hash=sha256:ab  # {name}\n"})


def test_a_set_without_a_lock_is_refused():
    with pytest.raises(ValueError, match="no lock to push"):
        push_rsync_opts({})


def test_the_filter_reads_the_nodes_locks_on_the_controller_and_names_a_missing_one(tmp_path):
    _two_sets(tmp_path)
    filters = FilterModule().filters()
    locks = {"deps": "/opt/rlinf/wheelhouse/requirements-new.lock", "no_deps": ""}
    opts = filters["wheelhouse_push_opts"](str(tmp_path), locks)
    assert "--include=/requirements-new.lock" in opts and "--include=/requirements-old.lock" not in opts
    assert "--include=/ray-2.60.0-cp311-cp311-manylinux2014_x86_64.whl" in opts
    with pytest.raises(AnsibleFilterError, match=f"lock {tmp_path}/requirements-gone.lock cannot be read"):
        filters["wheelhouse_push_opts"](str(tmp_path), {"deps": "/x/requirements-gone.lock"})
