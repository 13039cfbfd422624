import pytest

from ansible_collections.rlinf.cluster.plugins.module_utils.wheelhouse import (
    manylinux_platforms,
    pip_download_args,
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
