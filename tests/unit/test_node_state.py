"""node_state's readers: the network from `ip`, ports from /proc, paths, and a venv's pinned set
read by the venv's own interpreter (real dist-info, a real interpreter)."""

from __future__ import annotations

import hashlib
import socket
import sys

import pytest

from ansible_collections.rlinf.cluster.plugins.module_utils.node_files import manifest_text
from ansible_collections.rlinf.cluster.plugins.modules import node_state as mod

IP_LINK = """1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT
2: eth0@if12: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT
3: eth1@if14: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT
4: et0: <POINTOPOINT,UP> mtu 1380 qdisc fq_codel state UNKNOWN mode DEFAULT
"""
IP_ADDR = """1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
2: eth0    inet 10.89.77.10/24 brd 10.89.77.255 scope global eth0\\       valid_lft forever preferred_lft forever
3: eth1    inet 10.89.99.10/24 brd 10.89.99.255 scope global eth1\\       valid_lft forever preferred_lft forever
3: eth1    inet 10.89.99.20/24 brd 10.89.99.255 scope global secondary eth1\\       valid_lft forever
"""
ROUTE = "default via 10.89.77.1 dev eth0 proto static\n"


class FakeModule:
    def __init__(self, outputs):
        self.outputs = outputs

    def run_command(self, argv):
        return 0, self.outputs[" ".join(argv[:3])], ""


def test_interfaces_addresses_and_the_default_route_come_from_ip():
    module = FakeModule({"ip -o link": IP_LINK, "ip -o -4": IP_ADDR, "ip -4 route": ROUTE})
    interfaces, default = mod.network(module)
    assert interfaces == {
        "lo": ["127.0.0.1"],
        "eth0": ["10.89.77.10"],
        "eth1": ["10.89.99.10", "10.89.99.20"],
        "et0": [],
    }
    assert default == {"device": "eth0", "address": "10.89.77.10"}


def test_no_default_route_leaves_it_empty():
    module = FakeModule({"ip -o link": IP_LINK, "ip -o -4": IP_ADDR, "ip -4 route": ""})
    assert mod.network(module)[1] == {"device": "", "address": ""}


def test_a_listening_port_is_seen_and_a_free_one_is_not():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        assert mod.listening(port)
    finally:
        server.close()
    assert not mod.listening(port)


def test_a_path_is_ours_when_recorded_or_marked(tmp_path):
    recorded = tmp_path / "recorded"
    recorded.write_text("x")
    marked = tmp_path / "marked"
    marked.write_text("# Managed by rlinf-ansible (rlinf.cluster.ray_node)\n")
    foreign = tmp_path / "foreign"
    foreign.write_text("root:x:0:0\n")
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert mod.path_info(str(recorded), {str(recorded)})["ours"]
    assert mod.path_info(str(marked), set())["ours"]
    assert not mod.path_info(str(foreign), set())["ours"]
    assert mod.path_info(str(venv), set())["is_venv"]
    assert mod.path_info(str(tmp_path / "none"), set()) == {
        "path": str(tmp_path / "none"),
        "exists": False,
        "kind": "none",
        "ours": False,
    }


def test_the_token_file_is_reported_by_presence_and_digest_never_by_value(tmp_path):
    token = tmp_path / "ray-auth-token"
    token.write_text("s3cret-token-value")
    found = mod.token_info(str(token))
    assert found == {"present": True, "sha256": hashlib.sha256(b"s3cret-token-value").hexdigest()}
    assert "s3cret" not in repr(found)
    assert mod.token_info(str(tmp_path / "none")) == {"present": False, "sha256": ""}
    # A directory where the file should be is no token.
    assert mod.token_info(str(tmp_path))["present"] is False


def test_a_record_and_a_manifest_are_read_back(tmp_path):
    record = tmp_path / "r.json"
    record.write_text('{"ip": "10.0.0.1"}')
    assert mod.read_record(str(record)) == {"ip": "10.0.0.1"}
    assert mod.read_record(str(tmp_path / "missing")) == {}
    (tmp_path / "broken").write_text("{not json")
    assert mod.read_record(str(tmp_path / "broken")) == {}
    manifest = tmp_path / "m.json"
    manifest.write_text(manifest_text([{"path": "/etc/rlinf", "kind": "dir"}, {"path": "relative", "kind": "file"}]))
    assert [e["path"] for e in mod.read_manifest(str(manifest))] == ["/etc/rlinf"]


def dist(site, name, version, requires=()):
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {req}" for req in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")


@pytest.fixture
def venv(tmp_path):
    """A venv-shaped directory whose bin/python sees the dist-info written here."""
    site = tmp_path / "site"
    site.mkdir()
    dist(site, "ray", "2.60.0", ['extra-dep>=2; extra == "full"', 'other-dep; extra == "default"'])
    dist(site, "extra-dep", "1.5")
    dist(site, "other-dep", "0.1")
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    python = tmp_path / "venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return tmp_path / "venv"


class RealModule:
    def run_command(self, argv):
        import subprocess

        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr


def test_the_pinned_set_present_is_satisfied(venv):
    info = mod.venv_info(RealModule(), str(venv), ["ray[default]==2.60.0", "other-dep==0.1"])
    assert info["satisfied"] and info["ray"] == "2.60.0" and info["unsatisfied"] == []


def test_a_wrong_version_a_missing_package_and_an_extras_dependency_are_named(venv):
    info = mod.venv_info(RealModule(), str(venv), ["ray[full]==2.60.0", "ray==2.59.0", "absent==1"])
    assert not info["satisfied"]
    assert info["unsatisfied"] == [
        "ray[full]==2.60.0: extra-dep 1.5 does not match >=2",
        "ray==2.59.0: installed 2.60.0",
        "absent==1: not installed",
    ]


def test_no_venv_satisfies_nothing(tmp_path):
    info = mod.venv_info(RealModule(), str(tmp_path / "none"), ["ray==2.60.0"])
    assert info == {"exists": False, "satisfied": False, "unsatisfied": ["ray==2.60.0: no venv"]}


def ray_package(site, pynvml_source):
    """A Ray package whose import would fail, with a stand-in for its bundled pynvml."""
    package = site / "ray"
    (package / "_private" / "thirdparty" / "pynvml").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('ray must not be imported')\n")
    if pynvml_source is not None:
        (package / "_private" / "thirdparty" / "pynvml" / "pynvml.py").write_text(pynvml_source)
    return package


NO_DRIVER = (
    "import sys\nthis_module = sys.modules[__name__]\n"
    "def nvmlInit():\n    raise OSError('NVML Shared Library Not Found')\n"
)


class NoSmiModule(RealModule):
    def get_bin_path(self, name):
        return None


def test_the_venv_read_says_where_its_ray_is_without_importing_it(venv):
    package = ray_package(venv.parent / "site", NO_DRIVER)
    info = mod.venv_info(RealModule(), str(venv), ["ray==2.60.0"])
    assert info["ray_init"] == str(package / "__init__.py")


def test_gpus_are_read_through_the_venvs_ray_pynvml(venv):
    ray_package(venv.parent / "site", NO_DRIVER)
    info = mod.venv_info(RealModule(), str(venv), ["ray==2.60.0"])
    gpus = mod.gpu_info(NoSmiModule(), info)
    assert gpus["count"] == 0 and gpus["nvml_count"] == 0 and gpus["nvml_error"] == "NVML Shared Library Not Found"


def test_a_venv_without_rays_pynvml_reports_what_gpu_facts_would(venv):
    ray_package(venv.parent / "site", None)
    info = mod.venv_info(RealModule(), str(venv), ["ray==2.60.0"])
    gpus = mod.gpu_info(NoSmiModule(), info)
    assert gpus["nvml_count"] is None and "pynvml" in gpus["nvml_error"] and "not found" in gpus["nvml_error"]


def test_no_gpu_reading_without_a_venv_or_when_its_pynvml_does_not_load_here(venv, tmp_path):
    assert mod.gpu_info(NoSmiModule(), {"exists": False}) is None
    ray_package(venv.parent / "site", "raise SyntaxError('a newer Python')\n")
    info = mod.venv_info(RealModule(), str(venv), ["ray==2.60.0"])
    # gpu_facts then reads them later with the venv's own Python.
    assert mod.gpu_info(NoSmiModule(), info) is None


class NamespaceModule:
    """systemd-run's answer: the transient unit's mount namespace (or a failure)."""

    def __init__(self, rc, out, err=""):
        self.answer = (rc, out, err)
        self.argv = None

    def run_command(self, argv):
        self.argv = argv
        return self.answer


def test_a_unit_in_a_mount_namespace_of_its_own_means_systemd_can_sandbox(monkeypatch):
    monkeypatch.setattr(mod.os, "readlink", lambda path: "mnt:[4026531841]")
    module = NamespaceModule(0, "mnt:[4026532999]\n")
    assert mod.sandbox_info(module) == {"mount_namespace": True}
    assert "--property=PrivateMounts=yes" in module.argv and module.argv[-1] == "/proc/self/ns/mnt"


def test_a_unit_left_in_init_s_namespace_means_systemd_skipped_the_sandbox(monkeypatch):
    monkeypatch.setattr(mod.os, "readlink", lambda path: "mnt:[4026531841]")
    assert mod.sandbox_info(NamespaceModule(0, "mnt:[4026531841]\n")) == {"mount_namespace": False}


def test_a_failed_systemd_run_is_an_error_not_a_verdict(monkeypatch):
    monkeypatch.setattr(mod.os, "readlink", lambda path: "mnt:[4026531841]")
    found = mod.sandbox_info(NamespaceModule(1, "", "Failed to connect to bus: No such file or directory"))
    assert found == {"error": "Failed to connect to bus: No such file or directory"}


def test_a_files_digest_mode_and_owner_are_read_never_its_content(tmp_path):
    from ansible_collections.rlinf.cluster.plugins.module_utils.node_files import file_state

    secret = tmp_path / "token"
    secret.write_text("s3cret")
    secret.chmod(0o640)
    found = file_state(str(secret))
    assert found["sha256"] == hashlib.sha256(b"s3cret").hexdigest() and "s3cret" not in repr(found)
    assert (found["mode"], found["uid"], found["exists"], found["regular"]) == (
        "0640",
        secret.stat().st_uid,
        True,
        True,
    )
    assert file_state(str(tmp_path / "none")) == {"exists": False}
    assert file_state(str(tmp_path)) == {"exists": True, "regular": False}
