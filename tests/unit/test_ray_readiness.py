"""ray_readiness built as a real AnsibleModule: its documentation, and the failures it reports
before any Ray node is involved. The collectives themselves run on the lab
(tests/integration/test_readiness.py); their logic in test_readiness_logic.py."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args
from module_docs import assert_read_only_module_documented
from module_results import FailJson

from ansible_collections.rlinf.cluster.plugins.modules import ray_readiness as mod

NODES = [{"name": "head", "rank": 0, "ip": "127.0.0.1"}, {"name": "w1", "rank": 1, "ip": "127.0.0.2"}]


def fail_of(monkeypatch, module_args, import_ray=None):
    if import_ray is not None:
        monkeypatch.setattr(mod, "import_ray", import_ray)
    with patch_module_args(module_args), pytest.raises(FailJson) as exc:
        mod.main()
    return exc.value.args[0]


def test_documentation_matches_argument_spec():
    with patch_module_args({"address": "1.2.3.4:6379", "expected_nodes": []}):
        spec = mod.build_module().argument_spec
    doc = assert_read_only_module_documented(mod, spec)
    assert set(doc["options"]["expected_nodes"]["suboptions"]) == set(spec["expected_nodes"]["options"])
    assert doc["options"]["rlinf_attach"]["choices"] == spec["rlinf_attach"]["choices"]


def test_unusable_expected_nodes_are_named(module_exits, monkeypatch):
    result = fail_of(monkeypatch, {"address": "1.2.3.4:6379", "expected_nodes": [NODES[0], {**NODES[1], "rank": 0}]})
    assert "share rank 0" in result["msg"] and result["ok"] is False
    assert result["summary"].startswith("FAILED: the readiness check's input is unusable")


def test_an_address_that_is_not_ip_port_is_refused(module_exits, monkeypatch):
    result = fail_of(monkeypatch, {"address": "head", "expected_nodes": NODES})
    assert "address 'head' is not ip:port" in result["msg"]


def test_without_ray_it_says_which_interpreter_to_use(module_exits, monkeypatch):
    def no_ray():
        raise mod.RayImportError("ModuleNotFoundError: No module named 'ray'")

    result = fail_of(monkeypatch, {"address": "127.0.0.1:1", "expected_nodes": NODES}, no_ray)
    assert "cannot import ray" in result["msg"] and "ansible_python_interpreter" in result["msg"]
    assert "Traceback" not in result["msg"]


def test_a_head_that_does_not_listen_is_named(module_exits, monkeypatch):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = fail_of(monkeypatch, {"address": f"127.0.0.1:{port}", "expected_nodes": NODES}, lambda: (object(), object))
    assert f"nothing accepts connections at the Ray head address 127.0.0.1:{port}" in result["msg"]


def test_the_probe_reads_its_env_and_ipv4_interfaces(monkeypatch):
    monkeypatch.setenv("RLINF_COMM_NET_DEVICES", "lo")
    facts = mod.ReadinessProbe().facts(["RLINF_COMM_NET_DEVICES", "UNSET_FOR_SURE_XYZ"])
    assert facts["env"] == {"RLINF_COMM_NET_DEVICES": "lo", "UNSET_FOR_SURE_XYZ": None}
    assert "127.0.0.1" in facts["interfaces"]["lo"]
    assert facts["hostname"] == socket.gethostname()


def test_the_probe_tcp_check_confirms_every_byte():
    probe = mod.ReadinessProbe()
    port = probe.listen("127.0.0.1")
    peers = [
        {"name": "me", "address": "127.0.0.1", "port": port},
        {"name": "nobody", "address": "127.0.0.1", "port": 1},
    ]
    results = {r["to"]: r for r in probe.connect("127.0.0.1", peers, 2, 3 << 20)}
    assert results["me"]["ok"] and results["me"]["bytes"] == 3 << 20 and results["me"]["transfer_s"] > 0
    assert not results["nobody"]["ok"] and "ConnectionRefusedError" in results["nobody"]["error"]


def test_role_defaults_match_its_argument_spec_and_the_module():
    root = Path(__file__).resolve().parents[2]
    defaults = yaml.safe_load((root / "roles/readiness/defaults/main.yml").read_text())
    spec = yaml.safe_load((root / "roles/readiness/meta/argument_specs.yml").read_text())["argument_specs"]["main"]
    assert set(spec["options"]) == set(defaults)
    for name, option in spec["options"].items():
        assert option["default"] == defaults[name], name
    with patch_module_args({"address": "1.2.3.4:6379", "expected_nodes": []}):
        module_spec = mod.build_module().argument_spec
    for name in (
        "timeout",
        "connect_timeout",
        "sizes",
        "iterations",
        "nccl",
        "rlinf_attach",
        "rlinf_timeout",
        "num_nodes",
    ):
        assert defaults[f"readiness_{name}"] == module_spec[name]["default"], name
    assert spec["options"]["readiness_rlinf_attach"]["choices"] == module_spec["rlinf_attach"]["choices"]


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class _Module:
    def __init__(self, **params):
        self.params = {"address": "10.0.0.1:6379", "timeout": 60, "rlinf_timeout": 120, **params}


def test_rlinf_gets_its_whole_timeout_when_the_collectives_ended_in_time():
    clock = _Clock()
    check = mod.Readiness(_Module(), clock=clock)
    clock.now += 20
    assert check.rlinf_budget() == 120


def test_what_the_collectives_took_beyond_their_timeout_comes_off_rlinfs():
    """The whole check stays within timeout + rlinf_timeout: ending the collectives' actors after their
    deadline (seconds on a loaded machine) is taken from RLinf's share, with time left to end its session."""
    clock = _Clock()
    check = mod.Readiness(_Module(), clock=clock)
    clock.now += 60 + 3.5
    assert check.rlinf_budget() == pytest.approx(120 - 3.5 - mod.SESSION_REAP_S)
    clock.now += 500
    assert check.rlinf_budget() == 1.0
