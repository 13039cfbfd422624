"""The head's GCS read in its node read (node_state's gcs): the real probe script, run by a real interpreter
whose ``ray._raylet.GcsClient`` is a stand-in written here (the only fake), and the plan's verdict on it."""

from __future__ import annotations

import sys

import pytest

from ansible_collections.rlinf.cluster.plugins.module_utils.gcs_probe import GcsRead, head_address
from ansible_collections.rlinf.cluster.plugins.modules import node_state as mod

# A GcsClient answering from GCS_NODES (ip, node id hex, state, raylet socket), or raising GCS_ERROR;
# it records the address, the timeout and the RAY_AUTH_* it saw at import.
FAKE_RAYLET = """
import json, os
from types import SimpleNamespace
SEEN = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "OTHER")}

class GcsClient:
    def __init__(self, address):
        self.address = address

    def get_all_node_info(self, timeout=None):
        with open(os.environ["GCS_SEEN"], "w") as out:
            json.dump({"address": self.address, "timeout": timeout, "env": SEEN}, out)
        if os.environ.get("GCS_ERROR"):
            raise RuntimeError(os.environ["GCS_ERROR"])
        nodes = json.loads(os.environ.get("GCS_NODES", "[]"))
        return {i: SimpleNamespace(node_id=bytes.fromhex(n[1]), node_manager_address=n[0], node_manager_port=40000,
                                   state=n[2], raylet_socket_name=n[3]) for i, n in enumerate(nodes)}
"""
RECORD = {"ip": "10.0.0.1", "ports": {"ray_port": 6379}}


@pytest.fixture
def venv(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "ray").mkdir(parents=True)
    (site / "ray" / "__init__.py").write_text("")
    (site / "ray" / "_raylet.py").write_text(FAKE_RAYLET)
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    python = tmp_path / "venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    monkeypatch.setenv("GCS_SEEN", str(tmp_path / "seen.json"))
    return tmp_path / "venv"


def params(venv, **extra):
    return {"gcs": True, "venv": str(venv), "env_file": None, **extra}


def test_the_gcs_the_record_names_is_read_with_the_env_files_ray_settings(venv, tmp_path, monkeypatch):
    import json

    env_file = tmp_path / "rlinf.env"
    env_file.write_text("RAY_AUTH_MODE='token'\nRAY_AUTH_TOKEN_PATH='/etc/rlinf/ray-auth-token'\nOTHER='x'\n")
    monkeypatch.delenv("OTHER", raising=False)
    monkeypatch.setenv(
        "GCS_NODES", json.dumps([["10.0.0.1", "aa", 0, "/tmp/ray/s"], ["10.0.0.3", "cc", 1, "/tmp/ray/s"]])
    )
    read = mod.start_gcs_read(params(venv, env_file=str(env_file)), {"active": "active"}, RECORD)
    found = read.result()
    assert found["address"] == "10.0.0.1:6379"
    assert [(n["NodeManagerAddress"], n["NodeID"], n["Alive"]) for n in found["nodes"]] == [
        ("10.0.0.1", "aa", True),
        ("10.0.0.3", "cc", False),
    ]
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["address"] == "10.0.0.1:6379" and seen["timeout"] == 10
    assert seen["env"] == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": "/etc/rlinf/ray-auth-token", "OTHER": None}


def test_a_gcs_that_refuses_is_an_error_naming_why(venv, monkeypatch):
    monkeypatch.setenv("GCS_ERROR", "Authentication token is missing or incorrect")
    found = mod.start_gcs_read(params(venv), {"active": "active"}, RECORD).result()
    assert found == {
        "address": "10.0.0.1:6379",
        "error": "RuntimeError: Authentication token is missing or incorrect",
    }


def test_no_read_without_a_running_unit_a_record_a_venv_or_the_option(venv, tmp_path):
    assert mod.start_gcs_read(params(venv), {"active": "inactive"}, RECORD) is None
    assert mod.start_gcs_read(params(venv), {"active": "active"}, {}) is None
    assert mod.start_gcs_read(params(tmp_path / "none"), {"active": "active"}, RECORD) is None
    assert mod.start_gcs_read(params(venv, gcs=False), {"active": "active"}, RECORD) is None


def test_an_interpreter_that_cannot_start_or_prints_nothing_is_an_error(tmp_path):
    assert GcsRead(str(tmp_path / "missing"), "10.0.0.1:6379", {}).result()["error"].startswith("FileNotFoundError")
    silent = tmp_path / "silent"
    silent.write_text("#!/bin/sh\necho 'Segmentation fault' >&2\nexit 139\n")
    silent.chmod(0o755)
    assert GcsRead(str(silent), "10.0.0.1:6379", {}).result()["error"] == "Segmentation fault"


def test_the_address_is_the_records_ip_and_ray_port():
    assert head_address(RECORD) == "10.0.0.1:6379"
    assert head_address({"ip": "10.0.0.1"}) is None
    assert head_address({"ip": "10.0.0.1", "ports": {"ray_port": True}}) is None
    assert head_address(None) is None
