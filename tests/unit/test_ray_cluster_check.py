"""ray_cluster_check built as a real AnsibleModule, with a fake ``ray`` (the only mock)."""

from __future__ import annotations

import json
import os
import socket
import sys
import types

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from module_docs import assert_read_only_module_documented
from module_results import ExitJson, FailJson

from ansible_collections.rlinf.cluster.plugins.modules import ray_cluster_check as mod

PY = "3.11.2 (main, Mar 13 2023, 12:18:29) [GCC 12.2.0]"


@pytest.fixture
def gcs():
    """Something listening like a GCS port, so the module's port wait succeeds at once."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()


def raw_node(ip, node_id, alive=True, resources=None):
    res = {"CPU": 2.0, f"node:{ip}": 1.0}
    res.update(resources or {})
    return {
        "NodeID": node_id,
        "Alive": alive,
        "NodeManagerAddress": ip,
        "NodeManagerPort": 40000,
        "NodeManagerHostname": f"h-{ip}",
        "Resources": res,
    }


def probe(rank, ray="2.60.0"):
    return {
        "env": {"RLINF_NODE_RANK": str(rank), "RLINF_COMM_NET_DEVICES": None},
        "python": PY,
        "python_executable": "/opt/rlinf/venv/bin/python",
        "ray_version": ray,
    }


class FakeAffinity:
    def __init__(self, node_id, soft):
        self.node_id = node_id
        self.soft = soft


class FakeRay:
    """Just enough of ray's driver API: init, nodes, remote/options (an actor), wait, get, kill, shutdown."""

    __version__ = "2.60.0"

    def __init__(self, node_tables, probes, hang=(), crash=(), noisy=False):
        self.node_tables = list(node_tables)
        self.probes = probes
        self.hang = set(hang)
        self.crash = set(crash)
        self.noisy = noisy
        self.nodes_calls = 0
        self.init_kwargs = None
        self.submitted = []
        self.killed = []
        self.strategies = {}
        self.actor_classes = []
        self.wait_timeouts = []
        self.shutdown_called = False
        self.remote_options = None

    def init(self, **kwargs):
        self.init_kwargs = kwargs
        if self.noisy:
            os.write(1, b"Ray noise on fd 1\n")
            print("Ray noise on sys.stdout")

    def nodes(self):
        table = self.node_tables[min(self.nodes_calls, len(self.node_tables) - 1)]
        self.nodes_calls += 1
        return table

    def remote(self, **options):
        self.remote_options = options
        fake = self

        class Read:
            def __init__(self, node_id):
                self.node_id = node_id

            def remote(self, env_keys):
                fake.submitted.append((self.node_id, fake.strategies[self.node_id].soft, tuple(env_keys)))
                return f"ref-{self.node_id}"

        class Actor:
            def __init__(self, node_id):
                self.node_id = node_id
                self.read = Read(node_id)

        class Bound:
            def __init__(self, cls, strategy=None):
                self.cls = cls
                self.strategy = strategy

            def options(self, scheduling_strategy):
                return Bound(self.cls, scheduling_strategy)

            def remote(self):
                fake.actor_classes.append(self.cls)
                fake.strategies[self.strategy.node_id] = self.strategy
                return Actor(self.strategy.node_id)

        return lambda cls: Bound(cls)

    def wait(self, refs, num_returns, timeout):
        self.wait_timeouts.append(timeout)
        ready = [r for r in refs if r.removeprefix("ref-") not in self.hang]
        return ready, [r for r in refs if r not in ready]

    def get(self, ref, timeout=None):
        node_id = ref.removeprefix("ref-")
        if node_id in self.crash:
            raise RuntimeError("worker died")
        return self.probes[node_id]

    def kill(self, actor, no_restart=False):
        assert no_restart
        self.killed.append(actor.node_id)

    def shutdown(self):
        self.shutdown_called = True


HEALTHY = [raw_node("10.0.0.10", "n0"), raw_node("10.0.0.11", "n1"), raw_node("10.0.0.12", "n2")]
PROBES = {"n0": probe(0), "n1": probe(1), "n2": probe(2)}


def args(address, **overrides):
    base = {
        "address": address,
        "node_ip": "127.0.0.1",
        "expected_nodes": [
            {"name": "head", "rank": 0, "ip": "10.0.0.10"},
            {"name": "w1", "rank": 1, "ip": "10.0.0.11", "resources": {"CPU": 1}},
            {"name": "w2", "rank": 2, "ip": "10.0.0.12"},
        ],
        "timeout": 2,
        "poll_interval": 0.05,
    }
    base.update(overrides)
    return base


def run_module(monkeypatch, fake, module_args, check_mode=False):
    monkeypatch.setattr(mod, "import_ray", lambda: (fake, FakeAffinity))
    if check_mode:
        module_args = {**module_args, "_ansible_check_mode": True}
    with patch_module_args(module_args):
        mod.main()


def test_healthy_cluster_exits_ok(monkeypatch, module_exits, gcs):
    fake = FakeRay([HEALTHY], PROBES)
    with pytest.raises(ExitJson) as exc:
        run_module(monkeypatch, fake, args(gcs))
    result = exc.value.args[0]
    assert result["changed"] is False
    assert result["problems"] == []
    assert result["summary"].startswith("OK: 3/3 nodes ALIVE")
    assert [n["env"]["RLINF_NODE_RANK"] for n in result["nodes"]] == ["0", "1", "2"]
    assert result["driver"]["ray_version"] == "2.60.0"
    assert fake.init_kwargs["address"] == gcs
    assert fake.init_kwargs["_node_ip_address"] == "127.0.0.1"
    assert fake.init_kwargs["log_to_driver"] is False
    assert sorted(s[0] for s in fake.submitted) == ["n0", "n1", "n2"]
    assert all(soft is False for _, soft, _ in fake.submitted)
    assert fake.remote_options == {"num_cpus": 0, "max_restarts": 0}
    # One actor per node, what RLinf's Workers are (a task's lease makes Ray 2.60 start a second worker).
    assert fake.actor_classes == [mod.NodeProbe] * 3
    assert sorted(fake.killed) == ["n0", "n1", "n2"]
    assert fake.shutdown_called


def test_driver_interpreter_differing_from_workers_is_a_warning_not_a_failure(monkeypatch, module_exits, gcs):
    warned = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, msg: warned.append(msg))
    fake = FakeRay([HEALTHY], PROBES)
    with pytest.raises(ExitJson):
        run_module(monkeypatch, fake, args(gcs))
    assert any("/opt/rlinf/venv/bin/python" in w and sys.executable in w for w in warned), warned


def test_expected_totals_reach_the_comparison(monkeypatch, module_exits, gcs):
    fake = FakeRay([HEALTHY], PROBES)
    with pytest.raises(FailJson) as exc:
        run_module(monkeypatch, fake, args(gcs, expected_totals={"GPU": 8}))
    assert "0 GPU in total" in exc.value.args[0]["msg"]
    with pytest.raises(FailJson) as exc:
        run_module(monkeypatch, fake, args(gcs, expected_totals={"GPU": "x"}))
    assert "ray_check_expected_totals" in exc.value.args[0]["msg"]


def test_a_node_on_another_nic_than_the_inventory_fails_naming_it(monkeypatch, module_exits, gcs):
    # rlinf.cluster.ray_check expects RLINF_COMM_NET_DEVICES where the inventory sets a NIC.
    nodes = [dict(n, env={"RLINF_COMM_NET_DEVICES": "eth1"}) for n in args(gcs)["expected_nodes"]]
    probes = {k: dict(p, env=dict(p["env"], RLINF_COMM_NET_DEVICES="eth1")) for k, p in PROBES.items()}
    probes["n2"]["env"]["RLINF_COMM_NET_DEVICES"] = "eth0"
    with pytest.raises(FailJson) as exc:
        run_module(monkeypatch, FakeRay([HEALTHY], probes), args(gcs, expected_nodes=nodes))
    assert exc.value.args[0]["problems"] == [
        "host 'w2' (rank 2, 10.0.0.12): the Ray workers on this node read RLINF_COMM_NET_DEVICES='eth0' but the "
        "inventory expects 'eth1'; fix the env file on 'w2' and restart its Ray (re-run site.yml)."
    ]
    probes["n2"]["env"]["RLINF_COMM_NET_DEVICES"] = "eth1"
    with pytest.raises(ExitJson):
        run_module(monkeypatch, FakeRay([HEALTHY], probes), args(gcs, expected_nodes=nodes))


def test_check_mode_runs_the_same_read_only_check(monkeypatch, module_exits, gcs):
    fake = FakeRay([HEALTHY], PROBES)
    with pytest.raises(ExitJson) as exc:
        run_module(monkeypatch, fake, args(gcs), check_mode=True)
    assert exc.value.args[0]["changed"] is False
    assert len(fake.submitted) == 3


def test_polls_until_the_expected_nodes_are_alive(monkeypatch, module_exits, gcs):
    fake = FakeRay([HEALTHY[:1], HEALTHY[:2], HEALTHY], PROBES)
    with pytest.raises(ExitJson):
        run_module(monkeypatch, fake, args(gcs))
    assert fake.nodes_calls == 3


def test_a_transient_extra_node_is_waited_out(monkeypatch, module_exits, gcs):
    stale = raw_node("10.0.0.11", "old1")
    stale["NodeManagerPort"] = 39999  # the restarted raylet's old entry, not DEAD yet
    fake = FakeRay([[*HEALTHY, stale], [*HEALTHY, stale], HEALTHY], PROBES)
    with pytest.raises(ExitJson) as exc:
        run_module(monkeypatch, fake, args(gcs))
    assert fake.nodes_calls == 3
    assert exc.value.args[0]["extra"] == []


def test_a_lasting_extra_node_fails_after_the_grace(monkeypatch, module_exits, gcs):
    monkeypatch.setattr(mod, "EXTRA_GRACE", 0.1)
    stray = raw_node("10.0.0.99", "n9")
    fake = FakeRay([[*HEALTHY, stray]], dict(PROBES, n9=probe(3)))
    with pytest.raises(FailJson) as exc:
        run_module(monkeypatch, fake, args(gcs, timeout=30))
    assert [e["ip"] for e in exc.value.args[0]["extra"]] == ["10.0.0.99"]
    assert 2 <= fake.nodes_calls <= 10


def test_missing_node_fails_after_timeout_with_every_problem(monkeypatch, module_exits, gcs):
    probes = dict(PROBES, n1=probe(5))
    fake = FakeRay([HEALTHY[:2]], probes)
    with pytest.raises(FailJson) as exc:
        run_module(monkeypatch, fake, args(gcs, timeout=0))
    result = exc.value.args[0]
    assert result["missing"] == ["w2"]
    assert "host 'w2' (rank 2, 10.0.0.12)" in result["msg"]
    assert "RLINF_NODE_RANK=5" in result["msg"]
    assert result["msg"].startswith("FAILED: 2/3 expected nodes ALIVE")
    assert len(result["problems"]) == 2
    assert fake.shutdown_called


def test_hanging_and_crashing_probes_are_bounded_and_named(monkeypatch, module_exits, gcs):
    fake = FakeRay([HEALTHY], PROBES, hang={"n1"}, crash={"n2"})
    with pytest.raises(FailJson) as exc:
        run_module(monkeypatch, fake, args(gcs))
    result = exc.value.args[0]
    # Every probe actor is killed, the one that hung too.
    assert sorted(fake.killed) == ["n0", "n1", "n2"]
    assert any("host 'w1'" in p and "did not finish within 2 s" in p for p in result["problems"])
    assert any("host 'w2'" in p and "worker died" in p for p in result["problems"])


def test_probe_tasks_get_probe_timeout_when_the_node_wait_is_short(monkeypatch, module_exits, gcs):
    fake = FakeRay([HEALTHY], PROBES, hang={"n1"})
    with pytest.raises(FailJson) as exc:
        run_module(monkeypatch, fake, args(gcs, timeout=1, probe_timeout=20))
    assert fake.wait_timeouts == [20]
    assert any("host 'w1'" in p and "did not finish within 20 s" in p for p in exc.value.args[0]["problems"])


def test_probe_false_skips_tasks(monkeypatch, module_exits, gcs):
    fake = FakeRay([HEALTHY], PROBES)
    with pytest.raises(ExitJson) as exc:
        run_module(monkeypatch, fake, args(gcs, probe=False))
    assert fake.submitted == []
    assert exc.value.args[0]["problems"] == []


def test_env_file_ray_variables_reach_the_driver(monkeypatch, module_exits, gcs, tmp_path):
    env_file = tmp_path / "rlinf.env"
    env_file.write_text('# comment\nRLINF_NODE_RANK=0\nRAY_AUTH_MODE="token"\nexport RAY_X=1\n')
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    monkeypatch.delenv("RAY_X", raising=False)
    monkeypatch.delenv("RLINF_NODE_RANK", raising=False)
    fake = FakeRay([HEALTHY], PROBES)
    with pytest.raises(ExitJson):
        run_module(monkeypatch, fake, args(gcs, env_file=str(env_file)))
    assert os.environ["RAY_AUTH_MODE"] == "token"
    assert os.environ["RAY_X"] == "1"
    assert "RLINF_NODE_RANK" not in os.environ


def test_env_file_is_loaded_before_ray_is_imported(monkeypatch, module_exits, gcs, tmp_path):
    # Ray reads RAY_AUTH_* when it is imported; loading them after the import left the
    # driver without the token (seen on the lab: "Failed to connect to Ray cluster").
    env_file = tmp_path / "rlinf.env"
    env_file.write_text("RAY_AUTH_MODE='token'\nRAY_AUTH_TOKEN_PATH='/etc/rlinf/ray-auth-token'\n")
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    seen_at_import = {}
    fake = FakeRay([HEALTHY], PROBES)

    def import_ray():
        seen_at_import.update({k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")})
        return fake, FakeAffinity

    with patch_module_args(args(gcs, env_file=str(env_file))), pytest.raises(ExitJson):
        monkeypatch.setattr(mod, "import_ray", import_ray)
        mod.main()
    assert seen_at_import == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": "/etc/rlinf/ray-auth-token"}


def test_ray_not_importable_names_the_interpreter(monkeypatch, module_exits, gcs):
    def broken():
        raise mod.RayImportError("ModuleNotFoundError: No module named 'ray'")

    monkeypatch.setattr(mod, "import_ray", broken)
    with pytest.raises(FailJson) as exc, patch_module_args(args(gcs)):
        mod.main()
    msg = exc.value.args[0]["msg"]
    assert sys.executable in msg and "node venv" in msg and "/opt/rlinf/venv/bin/python" in msg


def test_real_import_ray_failure_is_wrapped(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` raise ImportError
    with pytest.raises(mod.RayImportError):
        mod.import_ray()


def test_head_not_listening_fails_fast_with_fix(monkeypatch, module_exits):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there any more
    fake = FakeRay([HEALTHY], PROBES)
    with pytest.raises(FailJson) as exc:
        run_module(monkeypatch, fake, args(f"127.0.0.1:{port}", timeout=0))
    assert "nothing accepts connections" in exc.value.args[0]["msg"]
    assert [n["state"] for n in exc.value.args[0]["nodes"]] == ["UNKNOWN"] * 3
    assert fake.init_kwargs is None


def test_init_error_is_a_sentence(monkeypatch, module_exits, gcs):
    fake = FakeRay([HEALTHY], PROBES)

    def init(**kwargs):
        raise ConnectionError("authentication failed")

    fake.init = init
    with pytest.raises(FailJson) as exc:
        run_module(monkeypatch, fake, args(gcs))
    msg = exc.value.args[0]["msg"]
    assert "cannot connect to the Ray cluster" in msg and "authentication failed" in msg


def test_a_head_that_refuses_drivers_at_first_is_tried_again_until_it_accepts(monkeypatch, module_exits, gcs):
    """Ray just restarted on the head: its port answers before its own node registered."""
    fake = FakeRay([HEALTHY], PROBES)
    attempts = []
    real_init = fake.init

    def init(**kwargs):
        attempts.append(kwargs)
        if len(attempts) < 3:
            raise ConnectionError(f"Failed to connect to Ray cluster at {gcs}")
        real_init(**kwargs)

    fake.init = init
    with pytest.raises(ExitJson) as exc:
        run_module(monkeypatch, fake, args(gcs, timeout=30))
    assert len(attempts) == 3
    assert exc.value.args[0]["summary"].startswith("OK: 3/3 nodes ALIVE")


def test_a_head_that_never_accepts_a_driver_fails_after_the_timeout(monkeypatch, module_exits, gcs):
    fake = FakeRay([HEALTHY], PROBES)
    attempts = []

    def init(**kwargs):
        attempts.append(kwargs)
        raise ConnectionError("authentication failed")

    fake.init = init
    with pytest.raises(FailJson) as exc:
        run_module(monkeypatch, fake, args(gcs, timeout=1, poll_interval=0.05))
    msg = exc.value.args[0]["msg"]
    assert "cannot connect to the Ray cluster" in msg and "within 1 s" in msg and "authentication failed" in msg
    assert len(attempts) >= 2 and fake.nodes_calls == 0


@pytest.mark.parametrize("address", ["10.0.0.1", "head:port", ":6379"])
def test_bad_address(monkeypatch, module_exits, address):
    with pytest.raises(FailJson) as exc:
        run_module(monkeypatch, FakeRay([HEALTHY], PROBES), args(address))
    assert "is not ip:port" in exc.value.args[0]["msg"]


def test_bad_expected_nodes(monkeypatch, module_exits, gcs):
    bad = args(
        gcs,
        expected_nodes=[{"name": "a", "rank": 0, "ip": "1.1.1.1"}, {"name": "b", "rank": 0, "ip": "1.1.1.2"}],
    )
    with pytest.raises(FailJson) as exc:
        run_module(monkeypatch, FakeRay([HEALTHY], PROBES), bad)
    assert "share rank" in exc.value.args[0]["msg"]


def test_unexpected_exception_is_a_sentence_not_a_traceback(monkeypatch, module_exits, gcs):
    fake = FakeRay([HEALTHY], PROBES)
    fake.nodes = lambda: 1 / 0
    with pytest.raises(FailJson) as exc:
        run_module(monkeypatch, fake, args(gcs))
    result = exc.value.args[0]
    assert result["msg"].startswith("ray_cluster_check failed unexpectedly (ZeroDivisionError")
    assert "Traceback" in result["exception"]


def test_stdout_is_pure_json_even_when_ray_prints(monkeypatch, gcs, capfd):
    fake = FakeRay([HEALTHY], PROBES, noisy=True)
    with pytest.raises(SystemExit):
        run_module(monkeypatch, fake, args(gcs))
    out, err = capfd.readouterr()
    result = json.loads(out)
    assert result["summary"].startswith("OK")
    assert "Ray noise on fd 1" in err and "Ray noise on sys.stdout" in err


def test_probe_task_reads_env_and_versions(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", types.SimpleNamespace(__version__="9.9.9"))
    monkeypatch.setenv("RLINF_NODE_RANK", "4")
    result = mod.probe_task(["RLINF_NODE_RANK", "UNSET_FOR_SURE_XYZ"])
    assert result["env"] == {"RLINF_NODE_RANK": "4", "UNSET_FOR_SURE_XYZ": None}
    assert result["ray_version"] == "9.9.9"
    assert result["python"] == sys.version and result["python_executable"] == sys.executable
    assert mod.NodeProbe().read(["RLINF_NODE_RANK"])["env"] == {"RLINF_NODE_RANK": "4"}


def test_documentation_matches_argument_spec():
    with patch_module_args({"address": "1.2.3.4:6379", "expected_nodes": []}):
        spec = mod.build_module().argument_spec
    doc = assert_read_only_module_documented(mod, spec)
    assert set(doc["options"]["expected_nodes"]["suboptions"]) == set(spec["expected_nodes"]["options"])
