"""Every bad value of the corpus is refused by validate.yml, site.yml and teardown (purge),
naming the host and the variable, before any host is contacted.

The inventories point every host at a TCP listener on loopback that counts connections: a
run that tried SSH would be seen there. One inventory holds all the cases, one host each, so
one run proves both that every value is refused and that the refusal is one report.
"""

from __future__ import annotations

import os
import re
import selectors
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CORPUS = yaml.safe_load((Path(__file__).parent / "corpus" / "bad_values.yml").read_text())
GOOD = yaml.safe_load((Path(__file__).parent / "corpus" / "good_values.yml").read_text())
PLAYBOOKS = {
    "validate": ["validate.yml"],
    "site": ["site.yml"],
    "purge": ["teardown.yml", "-e", "teardown_purge=true", "-e", "teardown_confirm=yes"],
}
RUN_VARS = {"rlinf_launch_name", "rlinf_launch_env"}


class Listeners:
    """TCP servers on loopback addresses (one per host, so each host is its own machine) that
    only count the connections they accept."""

    def __init__(self):
        self.selector = selectors.DefaultSelector()
        self.ports: dict[str, int] = {}
        self.accepted = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def address(self, index: int) -> tuple[str, int]:
        host = f"127.0.{index // 250}.{index % 250 + 2}"
        if host not in self.ports:
            sock = socket.socket()
            sock.bind((host, 0))
            sock.listen(16)
            sock.setblocking(False)
            self.selector.register(sock, selectors.EVENT_READ)
            self.ports[host] = sock.getsockname()[1]
        return host, self.ports[host]

    def _serve(self):
        while not self.stop.is_set():
            for key, _ in self.selector.select(timeout=0.2):
                try:
                    conn, _ = key.fileobj.accept()
                except OSError:
                    continue
                self.accepted += 1
                conn.close()

    def close(self):
        self.stop.set()
        self.thread.join()
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()


@pytest.fixture(scope="module")
def listener():
    server = Listeners()
    yield server
    server.close()


def host_of(index: int, case: dict) -> str:
    return "head" if case["var"] in RUN_VARS else f"w{index}"


def write_inventory(path: Path, cases: list[dict], listeners: Listeners, overlay: bool) -> Path:
    def where(index):
        host, port = listeners.address(index)
        return {"ansible_host": host, "ansible_port": port}

    head_vars = where(0)
    workers = {}
    for index, case in enumerate(cases, start=1):
        host = host_of(index - 1, case)
        if host == "head":
            head_vars[case["var"]] = case["value"]
        else:
            workers[host] = {**where(index), case["var"]: case["value"]}
    workers["w-good"] = where(len(cases) + 1)
    top = {
        "ansible_user": "root",
        "ansible_ssh_common_args": "-o ConnectTimeout=2 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
    }
    children = {"ray_head": {"hosts": {"head": head_vars}}, "ray_workers": {"hosts": workers}}
    if overlay:
        top.update(easytier_enabled=True, easytier_network_secret="a-long-enough-test-secret")
        children["easytier_bootstrap"] = {"hosts": {"bootstrap": where(len(cases) + 2)}}
    inventory = {"all": {"vars": top, "children": {"rlinf_cluster": {"children": children}}}}
    path.mkdir(parents=True, exist_ok=True)
    (path / "hosts.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path


def run(playbook: list[str], inventory: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    return subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), *playbook],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


def split(cases, overlay):
    return [c for c in cases if (c["scope"] == "easytier") == overlay]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, listener):
    results = {}
    for overlay in (False, True):
        cases = split(CORPUS, overlay)
        inventory = write_inventory(tmp_path_factory.mktemp("inv"), cases, listener, overlay)
        for name, playbook in PLAYBOOKS.items():
            results[(overlay, name)] = (cases, run(playbook, inventory))
    return results


def test_the_corpus_covers_every_class():
    assert len(CORPUS) >= 60
    variables = {case["var"] for case in CORPUS}
    for needed in (
        "rlinf_venv_dir",
        "ray_node_unit_name",
        "firewall_table",
        "ray_port",
        "ray_node_ip",
        "python_env_extra_packages",
        "rlinf_env_vars",
        "ray_auth_token",
        "easytier_network_secret",
    ):
        assert needed in variables


@pytest.mark.parametrize("overlay", [False, True], ids=["plain", "overlay"])
@pytest.mark.parametrize("playbook", list(PLAYBOOKS))
def test_every_bad_value_is_refused_naming_host_and_variable(runs, overlay, playbook):
    cases, result = runs[(overlay, playbook)]
    out = result.stdout + result.stderr
    assert result.returncode != 0, out[-3000:]
    assert "Traceback" not in out
    assert "problem(s), before any host was contacted" in out, out[-3000:]
    missing = []
    for index, case in enumerate(cases):
        host = host_of(index, case)
        line = re.compile(rf"host '{re.escape(host)}'[^\n]*\b{re.escape(case['var'])}\b")
        if not line.search(out):
            missing.append(f"{host}: {case['var']}={case['value']!r}")
        if case.get("secret"):
            assert str(case["value"]) not in out, f"the secret of {case['var']} is shown"
    assert not missing, "not refused (or not named): " + "; ".join(missing)
    assert "w-good" not in out.split("problem(s)")[1], "a host with good values was reported"


def test_nothing_was_contacted(runs, listener):
    assert runs, "no playbook ran"
    assert listener.accepted == 0, f"{listener.accepted} connection(s) reached the hosts' SSH port"


def test_a_good_inventory_still_passes(tmp_path, listener):
    inventory = write_inventory(tmp_path / "good", [], listener, overlay=False)
    result = run([*PLAYBOOKS["validate"], "-e", f"cluster_plan_path={tmp_path}/plan.json"], inventory)
    assert result.returncode == 0, result.stdout[-3000:]
    assert listener.accepted == 0


def test_harmless_odd_values_are_still_accepted(tmp_path, listener):
    assert {case["var"] for case in GOOD} >= {"rlinf_code_dest", "ray_temp_dir", "ray_node_writable_paths"}
    inventory = write_inventory(tmp_path / "odd", GOOD, listener, overlay=False)
    result = run([*PLAYBOOKS["validate"], "-e", f"cluster_plan_path={tmp_path}/plan.json"], inventory)
    assert result.returncode == 0, result.stdout[-3000:]
    assert listener.accepted == 0
