"""ray_gcs_nodes built as a real AnsibleModule, with a fake GCS client (the only mock)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
from ansible.module_utils.testing import patch_module_args
from module_docs import assert_read_only_module_documented
from module_results import ExitJson, FailJson

from ansible_collections.rlinf.cluster.plugins.modules import ray_gcs_nodes as mod

WORKERS = [
    {"name": "worker1", "rank": 1, "ip": "10.0.0.11"},
    {"name": "worker2", "rank": 2, "ip": "10.0.0.12"},
]


def info(ip, node_id, state=mod.GCS_ALIVE, socket=None):
    return SimpleNamespace(
        node_id=bytes.fromhex(node_id),
        node_manager_address=ip,
        node_manager_port=40000,
        state=state,
        raylet_socket_name=socket or "/tmp/ray/session_x/sockets/raylet",
    )


class FakeClient:
    def __init__(self, infos=(), error=None):
        self.infos = list(infos)
        self.error = error
        self.timeouts = []

    def get_all_node_info(self, timeout=None):
        self.timeouts.append(timeout)
        if self.error:
            raise self.error
        return {i: node for i, node in enumerate(self.infos)}


def run(monkeypatch, client, check_mode=False, **params):
    addresses = []

    def fake_client(address):
        addresses.append(address)
        return client

    monkeypatch.setattr(mod, "gcs_client", fake_client)
    args = {"address": "10.0.0.10:6379", "expected_nodes": WORKERS, **params}
    if check_mode:
        args["_ansible_check_mode"] = True
    with patch_module_args(args), pytest.raises((ExitJson, FailJson)) as exc:
        mod.main()
    kind = "exit" if isinstance(exc.value, ExitJson) else "fail"
    return kind, exc.value.args[0], addresses


def test_every_worker_alive_means_none_missing(monkeypatch, module_exits):
    client = FakeClient([info("10.0.0.10", "aa"), info("10.0.0.11", "bb"), info("10.0.0.12", "cc")])
    kind, result, addresses = run(monkeypatch, client)
    assert kind == "exit" and result["changed"] is False
    assert result["present"] == ["worker1", "worker2"] and result["missing"] == []
    assert [n["ip"] for n in result["alive"]] == ["10.0.0.10", "10.0.0.11", "10.0.0.12"]
    assert addresses == ["10.0.0.10:6379"] and client.timeouts == [10]


def test_a_worker_only_dead_or_absent_in_the_new_gcs_is_missing(monkeypatch, module_exits):
    # A restarted head's GCS knows nothing of the workers attached to the old one.
    client = FakeClient([info("10.0.0.10", "aa"), info("10.0.0.12", "cc", state=1)])
    kind, result, _ = run(monkeypatch, client, timeout=3)
    assert kind == "exit"
    assert result["missing"] == ["worker1", "worker2"] and result["present"] == []
    assert client.timeouts == [3]


def test_two_nodes_on_one_ip_are_told_apart_by_temp_dir(monkeypatch, module_exits):
    expected = [
        {"name": "a", "rank": 1, "ip": "10.0.0.11", "temp_dir": "/tmp/ray-a"},
        {"name": "b", "rank": 2, "ip": "10.0.0.11", "temp_dir": "/tmp/ray-b"},
    ]
    client = FakeClient([info("10.0.0.11", "bb", socket="/tmp/ray-b/session_x/sockets/raylet")])
    kind, result, _ = run(monkeypatch, client, expected_nodes=expected)
    assert kind == "exit" and result["present"] == ["b"] and result["missing"] == ["a"]


def test_check_mode_reads_the_same(monkeypatch, module_exits):
    client = FakeClient([info("10.0.0.11", "bb")])
    kind, result, _ = run(monkeypatch, client, check_mode=True)
    assert kind == "exit" and result["missing"] == ["worker2"]


def test_env_file_ray_settings_are_set_before_the_client(monkeypatch, module_exits, tmp_path):
    env_file = tmp_path / "rlinf.env"
    env_file.write_text("RAY_AUTH_MODE='token'\nRAY_AUTH_TOKEN_PATH='/etc/rlinf/ray-auth-token'\nOTHER='x'\n")
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    seen = {}

    class Recording(FakeClient):
        def get_all_node_info(self, timeout=None):
            seen.update({k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "OTHER")})
            return {}

    run(monkeypatch, Recording(), env_file=str(env_file))
    assert seen == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": "/etc/rlinf/ray-auth-token", "OTHER": None}


def test_an_unreadable_gcs_fails_naming_the_address_and_the_fix(monkeypatch, module_exits):
    client = FakeClient(error=RuntimeError("Authentication token is missing or incorrect"))
    kind, result, _ = run(monkeypatch, client)
    assert kind == "fail"
    assert "10.0.0.10:6379" in result["msg"] and "Authentication token" in result["msg"]
    assert "RAY_AUTH_" in result["msg"] and "journalctl -u rlinf-ray" in result["msg"]


def test_unusable_expected_nodes_fail_before_any_rpc(monkeypatch, module_exits):
    client = FakeClient()
    bad = [{"name": "w", "rank": 1, "ip": "10.0.0.11"}, {"name": "w", "rank": 2, "ip": "10.0.0.12"}]
    kind, result, addresses = run(monkeypatch, client, expected_nodes=bad)
    assert kind == "fail" and "share name" in result["msg"] and addresses == []


def test_documentation_matches_the_argument_spec():
    assert_read_only_module_documented(mod, mod.ARGUMENT_SPEC)
