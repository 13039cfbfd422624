"""playbooks/validate.yml end to end: runs on the controller only, no host is contacted.

The inventories point at unroutable TEST-NET addresses; a run that tried to connect
would fail with "unreachable", which the assertions would catch.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / "playbooks" / "validate.yml"
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"

GOOD = """
all:
  children:
    ray_head:
      hosts:
        head: {ansible_host: 192.0.2.10, rlinf_gpus_per_node: 4, rlinf_node_group: cloud}
    ray_workers:
      hosts:
        edge-1: {ansible_host: 192.0.2.11, rlinf_gpus_per_node: 0}
    edge:
      hosts:
        edge-1:
      vars:
        rlinf_node_group: edge
"""

BAD_RANKS = """
all:
  children:
    ray_head:
      hosts:
        head: {ansible_host: 192.0.2.10, rlinf_node_rank: 1}
    ray_workers:
      hosts:
        w1: {ansible_host: 192.0.2.11, rlinf_node_rank: 1}
        w2: {ansible_host: 192.0.2.11}
"""

OVERLAY_CLASH = """
all:
  vars: {easytier_enabled: true, easytier_network_secret: test-only}
  children:
    easytier_bootstrap:
      hosts:
        boot: {ansible_host: 192.0.2.1}
    ray_head:
      hosts:
        head: {ansible_host: 192.0.2.10, easytier_ipv4: 10.144.0.7}
    ray_workers:
      hosts:
        w1: {ansible_host: 192.0.2.11, easytier_ipv4: 10.144.0.7}
"""

FIREWALL_CLASH = """
all:
  vars: {rlinf_firewall_enabled: true}
  children:
    ray_head:
      hosts:
        head: {ansible_host: 192.0.2.10, rlinf_gpus_per_node: 0, rlinf_firewall_client_sources: [not-an-address]}
    ray_workers:
      hosts:
        w1:
          ansible_host: 192.0.2.10
          rlinf_gpus_per_node: 0
          ray_port: 7379
          ray_temp_dir: /tmp/ray-w1
          rlinf_env_file: /etc/rlinf/w1.env
          ray_node_unit_name: rlinf-ray-w1
        w2: {ansible_host: 192.0.2.11, ray_node_manager_port: 10005}
"""

CONFIG = """
cluster:
  num_nodes: 2
  node_groups:
    - label: cloud
      node_ranks: 0
    - label: edge
      node_ranks: 1
  component_placement:
    actor: {node_group: cloud, placement: 0-3}
    env: {node_group: edge, placement: 0-0}
"""

VALIDATION_ONLY = ("--limit", "edge-1", "--tags", "none-but-always")

BAD_CONFIG = CONFIG.replace("placement: 0-3", "placement: 0-4").replace("node_ranks: 1", "node_ranks: [1]")


class _Run:
    """A playbook run started at once; ``result()`` waits for it. The fixture below starts
    every scenario in parallel so the module takes one playbook's time (a few seconds)."""

    def __init__(self, workdir: Path, inventory: str | Path, *extra: str, playbook: Path = PLAYBOOK):
        workdir.mkdir(parents=True, exist_ok=True)
        if isinstance(inventory, Path):
            inv = inventory
        else:
            inv = workdir / "hosts.yml"
            inv.write_text(inventory)
        env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
        env.pop("ANSIBLE_INVENTORY", None)
        self._proc = subprocess.Popen(
            [str(ANSIBLE_PLAYBOOK), str(playbook), "-i", str(inv), *extra],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def result(self) -> subprocess.CompletedProcess:
        out, err = self._proc.communicate(timeout=120)
        return subprocess.CompletedProcess(self._proc.args, self._proc.returncode, out, err)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("validate")
    config = base / "rlinf.yaml"
    config.write_text(CONFIG)
    bad_config = base / "bad.yaml"
    bad_config.write_text(BAD_CONFIG)
    started = {
        "good": _Run(base / "good", GOOD, "-e", f"rlinf_config={config}"),
        "bad_ranks": _Run(base / "bad_ranks", BAD_RANKS),
        "overlay_clash": _Run(base / "overlay_clash", OVERLAY_CLASH),
        "firewall_clash": _Run(base / "firewall_clash", FIREWALL_CLASH),
        "bad_config": _Run(
            base / "bad_config", GOOD, "-e", f"rlinf_config={bad_config}", "-e", "rlinf_ray_version=2.46.0"
        ),
        "site_limit": _Run(base / "site_limit", BAD_RANKS, "--limit", "w2", playbook=ROOT / "site.yml"),
        # Only the validation play (tagged always) runs; the play holds edge-1 alone.
        "site_limit_ranks": _Run(base / "site_limit_ranks", GOOD, *VALIDATION_ONLY, playbook=ROOT / "site.yml"),
        "sample": _Run(
            base / "sample",
            ROOT / "inventories" / "sample",
            "-e",
            f"rlinf_config={ROOT / 'tests/unit/corpus/good/sample_cloud_edge.yaml'}",
        ),
    }
    return {name: run.result() for name, run in started.items()}


def test_good_inventory_and_config(runs):
    result = runs["good"]
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "0     head    192.0.2.10  head    cloud  4" in out
    assert "1     edge-1  192.0.2.11  worker  edge   0" in out
    assert "node_ranks: '1'" in out
    assert "unreachable=0" in out and "failed=0" in out


def test_bad_ranks_and_shared_machine_all_listed(runs):
    result = runs["bad_ranks"]
    out = result.stdout
    assert result.returncode == 2, out + result.stderr
    assert "host 'head': the head must have rlinf_node_rank=0" in out
    assert "hosts head, w1: they share rlinf_node_rank=1" in out
    assert "hosts w1, w2: they run Ray nodes on the same machine (192.0.2.11)" in out


def test_bad_config_and_ray_version(runs):
    result = runs["bad_config"]
    out = result.stdout
    assert result.returncode == 2, out + result.stderr
    assert "Validation found 3 problem(s)" in out
    assert "hosts head, edge-1: rlinf_ray_version='2.46.0' is older than 2.47.0" in out
    assert "a YAML list ([1]) is not accepted by RLinf" in out
    assert "GPU resource rank 4 in '0-4' is outside 0..3" in out


def test_site_validates_the_whole_inventory_under_limit_without_connecting(runs):
    result = runs["site_limit"]
    out = result.stdout
    assert result.returncode == 2, out + result.stderr
    assert "unreachable=0" in out  # no connection was attempted
    assert "hosts head, w1: they share rlinf_node_rank=1" in out


def test_limit_leaves_ranks_as_the_whole_inventory_gives_them(runs):
    # --limit edge-1: the play has one host, the rank table is still the whole inventory's.
    # The plan is printed before the first contact; the node read that follows cannot
    # reach the TEST-NET address, which is the only failure.
    result = runs["site_limit_ranks"]
    out = result.stdout
    table, _, contact = out.partition("PLAY [Read every node once")
    assert "0     head    192.0.2.10  head    cloud  4" in table, out
    assert "1     edge-1  192.0.2.11  worker  edge   0" in table, out
    assert "UNREACHABLE" not in table and "UNREACHABLE" in contact, out
    assert result.returncode == 4, out + result.stderr


def test_sample_inventory_validates_and_prints_its_cluster_block(runs):
    result = runs["sample"]
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "[WARNING]" not in out + result.stderr
    assert "2     cloud-gpu2  203.0.113.12   worker  cloud  8" in out
    assert re.search(r"- label: edge\n\s+node_ranks: 3-4\n", out), out


def test_overlay_addresses_are_checked_before_any_node_is_touched(runs):
    result = runs["overlay_clash"]
    assert result.returncode == 2, result.stdout + result.stderr
    assert "hosts head, w1: they share the overlay address 10.144.0.7" in result.stdout


def test_firewall_ports_and_sources_are_checked_before_any_node_is_touched(runs):
    result = runs["firewall_clash"]
    assert result.returncode == 2, result.stdout + result.stderr
    out = " ".join(result.stdout.split())
    assert "hosts head, w1: both pin port 6380 (ray_node_manager_port) on machine 192.0.2.10" in out
    assert "host 'w2': ray_node_manager_port=10005 lies in the worker port range 10002-19999" in out
    assert "host 'head': rlinf_firewall_client_sources=['not-an-address'] item 1 ('not-an-address') is not" in out
