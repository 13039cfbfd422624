"""Opt-in metrics on the lab: site.yml -e rlinf_metrics_enabled=true installs Debian's Prometheus
on the head and a node exporter on every machine; Prometheus, asked over its HTTP API from inside
the head, has every Ray node's target up at its Ray address and a Ray metric per node; a re-run
changes nothing; Ray's Grafana dashboards reach the controller; with the firewall on, only the
scraper reaches the exporters. Each test ends with site.yml from the lab inventory (metrics
off), which stops what metrics ran and removes its files, and checks that it did. An operator's own
Prometheus is refused before anything changes and left running by the metrics purge.
"""

from __future__ import annotations

import json
import shlex
import shutil
import time

import pytest
from lab_helpers import ROOT, run_playbook, ssh, write_inventory

# The first test starts on the lab inventory's healthy cluster (conftest.py); the second from any state.
pytestmark = pytest.mark.lab

METRICS_PORT, NODE_EXPORTER, PROMETHEUS = 6384, 9100, "http://127.0.0.1:9090"
DROPINS = (
    "/etc/systemd/system/prometheus.service.d/rlinf.conf",
    "/etc/systemd/system/prometheus-node-exporter.service.d/rlinf.conf",
)
CONFIG = "/etc/rlinf/metrics/prometheus.yml"
DASHBOARDS = ROOT / "artifacts" / "ray-grafana-dashboards"
# The lab image has no curl: Python's urllib, inside the scraper.
QUERY = "import json, sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())"


def prometheus(scraper: str, path: str) -> dict:
    proc = ssh(scraper, f"python3 -c '{QUERY}' '{PROMETHEUS}{path}'")
    return json.loads(proc.stdout)


def wait_for(what: str, probe, timeout: float = 120):
    """Poll ``probe`` (returns (ok, seen)) until ok, bounded."""
    deadline = time.monotonic() + timeout
    while True:
        ok, seen = probe()
        if ok:
            return seen
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not within {timeout}s; last seen: {seen}")
        time.sleep(3)


def targets_up(scraper: str, hosts: dict[str, str], also: frozenset = frozenset()):
    def probe():
        active = prometheus(scraper, "/api/v1/targets")["data"]["activeTargets"]
        health = {(t["labels"]["job"], t["labels"]["instance"]): t["health"] for t in active}
        want = {("ray", f"{ip}:{METRICS_PORT}") for ip in hosts.values()} | also
        want |= {("node", f"{ip}:{NODE_EXPORTER}") for ip in hosts.values()}
        return all(health.get(key) == "up" for key in want), health

    return probe


def series_per_node(scraper: str, hosts: dict[str, str]):
    def probe():
        result = prometheus(scraper, "/api/v1/query?query=ray_node_cpu_utilization")["data"]["result"]
        instances = sorted(r["metric"]["instance"] for r in result)
        return instances == sorted(f"{ip}:{METRICS_PORT}" for ip in hosts.values()), instances

    return probe


def assert_metrics_gone(hosts: dict[str, str]):
    """What metrics ran is stopped and disabled, its files removed, Ray's metrics port no longer pinned."""
    for name, address in hosts.items():
        units = ssh(address, "systemctl is-active prometheus prometheus-node-exporter", check=False).stdout.split()
        assert set(units) <= {"inactive", "unknown"}, f"{name}: {units}"
        left = ssh(address, f"ls {' '.join(DROPINS)} {CONFIG} 2>/dev/null", check=False).stdout.split()
        assert not left, f"{name} still has {left}"
        unit = ssh(address, "systemctl cat rlinf-ray").stdout
        assert "--metrics-export-port" not in unit, f"{name}: Ray's metrics port is still pinned"


def with_metrics(firewall: bool):
    def mutate(groups):
        for group in ("ray_head", "ray_workers"):
            groups[group].setdefault("vars", {}).update(rlinf_metrics_enabled=True, rlinf_firewall_enabled=firewall)

    return mutate


@pytest.fixture(scope="module")
def back_to_the_lab_inventory(hosts, tmp_path_factory):
    """After the module's tests (one Prometheus set-up for both, each test turning on what it
    checks): site.yml from the lab inventory (metrics off) stops and removes what metrics ran."""
    yield
    run = run_playbook("site.yml", tmp_path_factory.mktemp("metrics-off"))
    assert run.rc == 0, run.stdout[-3000:]
    assert_metrics_gone(hosts)


THEIR_UNIT = "/etc/systemd/system/prometheus.service"
THEIR_UNIT_TEXT = (
    "[Unit]\nDescription=the operator's own Prometheus\n[Service]\nExecStart=/bin/sleep infinity\n"
    "[Install]\nWantedBy=multi-user.target\n"
)
PURGE_METRICS = """
- name: Plan the purge
  hosts: all
  gather_facts: false
  tasks:
    - name: Plan
      ansible.builtin.import_role:
        name: rlinf.cluster.validate_inventory
        rolespec_validate: false
      vars:
        validate_inventory_purpose: purge
        validate_inventory_show: false

- name: What teardown.yml's purge runs for metrics
  hosts: ray_head:ray_workers
  gather_facts: false
  tasks:
    - name: Purge metrics
      ansible.builtin.include_role:
        name: rlinf.cluster.metrics
        tasks_from: purge.yml
        rolespec_validate: false
      vars:
        metrics_purge_units: "{{ rlinf_node.metrics.units }}"
"""


# First in the module: before the next tests install Debian's Prometheus and configure it.
def test_an_operators_own_prometheus_is_refused_before_any_change_and_purge_leaves_it(cluster, tmp_path):
    head_name, head = next(iter(cluster.items()))
    ssh(head, f"printf %s {shlex.quote(THEIR_UNIT_TEXT)} > {THEIR_UNIT} && systemctl daemon-reload")
    ssh(head, "systemctl enable --now prometheus")
    try:
        run = run_playbook("site.yml", tmp_path, inventory=write_inventory(tmp_path, with_metrics(False)))
        assert run.rc != 0, "site.yml took over the operator's Prometheus"
        said = " ".join(run.stdout.split())
        assert f"host '{head_name}': prometheus.service already runs here (or starts at boot)" in said, said[-3000:]
        assert "systemctl disable --now prometheus" in said
        # Refused in the preflight: no metrics file, no package, their unit as it was and still running.
        left = ssh(head, f"ls {' '.join(DROPINS)} {CONFIG} /usr/bin/prometheus 2>/dev/null", check=False).stdout
        assert left == "", f"the refused run wrote {left.split()}"
        assert ssh(head, f"cat {THEIR_UNIT}").stdout == THEIR_UNIT_TEXT
        purge_playbook = tmp_path / "purge-metrics.yml"
        purge_playbook.write_text(PURGE_METRICS)
        purge = run_playbook(str(purge_playbook), tmp_path)
        assert purge.rc == 0, purge.stdout[-3000:]
        state = ssh(head, "systemctl is-active prometheus; systemctl is-enabled prometheus", check=False).stdout.split()
        assert state == ["active", "enabled"], f"purge touched the operator's Prometheus: {state}"
    finally:
        ssh(head, f"systemctl disable --now prometheus; rm -f {THEIR_UNIT}; systemctl daemon-reload", check=False)


def test_prometheus_scrapes_every_ray_node_and_a_rerun_changes_nothing(cluster, tmp_path, back_to_the_lab_inventory):
    hosts = cluster
    head = next(iter(hosts.values()))
    shutil.rmtree(DASHBOARDS, ignore_errors=True)
    run = run_playbook("site.yml", tmp_path, extravars={"rlinf_metrics_enabled": True})
    assert run.rc == 0, run.stdout[-3000:]

    # With the head's own metrics ports (autoscaler, dashboard), at its Ray address: a target
    # Prometheus has not scraped yet is "unknown", so it is waited for like the others.
    head_target = ("ray_head", f"{head}:44217")
    health = wait_for("every target up, the head's own too", targets_up(head, hosts, frozenset({head_target})))
    assert health[head_target] == "up", health
    instances = wait_for("a ray_node_cpu_utilization series per node", series_per_node(head, hosts))
    assert len(instances) == len(hosts)

    # Prometheus on loopback only; each node exporter on its node's Ray address only.
    listening = ssh(head, "ss -Hltn").stdout
    assert "127.0.0.1:9090 " in listening and "0.0.0.0:9090 " not in listening and "*:9090 " not in listening
    for address in hosts.values():
        sockets = ssh(address, "ss -Hltn").stdout
        assert f"{address}:{NODE_EXPORTER} " in sockets and f"*:{NODE_EXPORTER} " not in sockets, sockets

    # Ray's Grafana dashboards, copied from the head.
    copied = sorted(DASHBOARDS.glob("*.json"))
    assert any(p.name == "default_grafana_dashboard.json" for p in copied), copied
    assert all("panels" in json.loads(p.read_text()) for p in copied)

    again = run_playbook("site.yml", tmp_path, extravars={"rlinf_metrics_enabled": True})
    assert again.rc == 0, again.stdout[-3000:]
    assert sum(again.changed().values()) == 0, again.changed()
    started = ssh(head, "systemctl show -p ActiveEnterTimestampMonotonic --value prometheus").stdout
    check = run_playbook("site.yml", tmp_path, extravars={"rlinf_metrics_enabled": True}, cmdline="--check")
    assert check.rc == 0 and sum(check.changed().values()) == 0, check.changed()
    assert ssh(head, "systemctl show -p ActiveEnterTimestampMonotonic --value prometheus").stdout == started


# Not the `cluster` fixture: it would take the first test's Prometheus for a leftover and remove
# it; this test's own site.yml brings the cluster to what it checks, from any state.
def test_with_the_firewall_only_the_scraper_reaches_the_exporters(hosts, tmp_path, back_to_the_lab_inventory):
    names, addresses = list(hosts), list(hosts.values())
    head, worker = addresses[0], addresses[1]
    inventory = write_inventory(tmp_path, with_metrics(firewall=True))
    run = run_playbook("site.yml", tmp_path, inventory=inventory)
    assert run.rc == 0, run.stdout[-3000:]
    wait_for("every target up through the firewall", targets_up(head, hosts))

    def connects(node: str, address: str, port: int) -> bool:
        probe = f"import socket; socket.create_connection(('{address}', {port}), timeout=3)"
        return ssh(node, f'python3 -c "{probe}"', check=False).returncode == 0

    # The scraper (the head) reaches a worker's exporters; a worker reaches neither the head's nor
    # another's, but still Ray's other ports.
    assert connects(head, worker, NODE_EXPORTER) and connects(head, worker, METRICS_PORT)
    assert not connects(worker, head, NODE_EXPORTER), f"{names[1]} reaches the head's node exporter"
    assert not connects(worker, head, METRICS_PORT), f"{names[1]} reaches the head's Ray metrics port"
    assert connects(worker, head, 6379)
