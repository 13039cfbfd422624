"""The plan's metrics decisions (plugins/plugin_utils/metrics.py): who scrapes, what, at which
address and port, what each node writes and stops, and what the firewall keeps for the scraper."""

from __future__ import annotations

import pytest
import yaml
from test_plan import second_ray_node

from ansible_collections.rlinf.cluster.plugins.module_utils.firewall import machine_rules
from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, sentences
from ansible_collections.rlinf.cluster.plugins.plugin_utils import metrics as M
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P

GROUPS = {"ray_head": ["h"], "ray_workers": ["w1", "w2"]}
# SSH addresses (ansible_host) and the Ray addresses the nodes resolve to (a data NIC).
SSH = {"h": "192.0.2.1", "w1": "192.0.2.2", "w2": "192.0.2.3"}
RAY = {"h": "10.1.0.1", "w1": "10.1.0.2", "w2": "10.1.0.3"}
SHARED = second_ray_node(SSH["w1"])


def hostvars(on=True, groups=GROUPS, **per_host):
    base = {name: {"ansible_host": SSH.get(name, "192.0.2.9"), "rlinf_metrics_enabled": on} for name in _names(groups)}
    for name, extra in per_host.items():
        base[name] = {**base[name], **extra}
    return base


def _names(groups):
    return groups["ray_head"] + groups["ray_workers"]


def probe(ip, paths=None):
    return {
        "systemd": True,
        "apt": True,
        "python": {"version": "3.11.2", "machine": "x86_64", "glibc": "2.36"},
        "interfaces": {"eth0": [ip]},
        "default_route": {"device": "eth0", "address": ip},
        "paths": paths or {},
    }


def resolved(hv=None, groups=GROUPS, probed=None, paths=None):
    static = P.static_plan(groups, hv if hv is not None else hostvars(groups=groups))
    names = probed if probed is not None else static["order"]
    address = dict(RAY, b=RAY["w1"])
    return P.resolve(static, {n: probe(address[n], (paths or {}).get(n)) for n in names})


def problems(hv, groups=GROUPS) -> list[str]:
    with pytest.raises(PlanError) as err:
        P.static_plan(groups, hv)
    return sentences(err.value.problems)


def config_of(node) -> dict:
    text = next(f["content"] for f in node["metrics_files"] if f["path"] == M.PROMETHEUS_CONFIG)
    return yaml.safe_load(text)


def test_off_by_default_nothing_is_pinned_written_or_opened():
    plan = resolved(hostvars(on=False))
    assert plan["cluster"]["metrics"]["enabled"] is False
    for name in plan["order"]:
        node = plan["nodes"][name]
        assert not any(a.startswith("--metrics-export-port") for a in node["ray_args"])
        assert node["metrics_files"] == [] and node["metrics_units"] == [] and node["metrics_leftovers"] == []
        assert not node["metrics"]["scraper"] and not node["metrics"]["node_exporter"]


def test_on_pins_the_metrics_port_alone_without_the_firewall():
    plan = resolved()
    for name in plan["order"]:
        pinned = [a for a in plan["nodes"][name]["ray_args"] if a.startswith("--") and "port" in a]
        head = ["--port=6379", "--dashboard-port=8265"] if name == "h" else []
        assert pinned == [*head, "--metrics-export-port=6384"]


def test_with_the_firewall_the_port_is_pinned_once_with_the_others():
    plan = resolved(firewall_on())
    args = plan["nodes"]["w1"]["ray_args"]
    assert [a for a in args if a.startswith("--metrics-export-port")] == ["--metrics-export-port=6384"]


def test_the_head_scrapes_by_default_and_rlinf_metrics_host_moves_it():
    plan = resolved()
    assert plan["cluster"]["metrics"]["host"] == "h"
    assert [n for n in plan["order"] if plan["nodes"][n]["metrics"]["scraper"]] == ["h"]
    assert [u["unit"] for u in plan["nodes"]["h"]["metrics_units"]] == ["prometheus", "prometheus-node-exporter"]
    assert [u["unit"] for u in plan["nodes"]["w1"]["metrics_units"]] == ["prometheus-node-exporter"]
    moved = resolved({n: dict(v, rlinf_metrics_host="w2") for n, v in hostvars().items()})
    assert [n for n in moved["order"] if moved["nodes"][n]["metrics"]["scraper"]] == ["w2"]
    assert {f["path"] for f in moved["nodes"]["w2"]["metrics_files"]} == {
        M.PROMETHEUS_CONFIG,
        M.PROMETHEUS_DROPIN,
        M.NODE_EXPORTER_DROPIN,
    }
    assert {f["path"] for f in moved["nodes"]["h"]["metrics_files"]} == {M.NODE_EXPORTER_DROPIN}


def test_a_scraper_that_is_not_a_ray_node_is_refused():
    hv = {n: dict(v, rlinf_metrics_host="grafana-box") for n, v in hostvars().items()}
    found = problems(hv)
    assert any("rlinf_metrics_host='grafana-box' is not a Ray node" in s for s in found), found
    # Off, the setting is not used, so not refused.
    assert P.static_plan(GROUPS, {n: dict(v, rlinf_metrics_enabled=False) for n, v in hv.items()})


def test_targets_are_every_node_at_its_ray_address_not_the_ssh_one():
    config = config_of(resolved()["nodes"]["h"])
    jobs = {job["job_name"]: job["static_configs"] for job in config["scrape_configs"]}
    assert [c["targets"] for c in jobs["ray"]] == [["10.1.0.1:6384"], ["10.1.0.2:6384"], ["10.1.0.3:6384"]]
    assert [c["labels"]["rlinf_node"] for c in jobs["ray"]] == ["h", "w1", "w2"]
    assert [c["labels"]["rlinf_rank"] for c in jobs["ray"]] == ["0", "1", "2"]
    assert [c["targets"] for c in jobs["ray_head"]] == [["10.1.0.1:44217"], ["10.1.0.1:44227"]]
    assert [c["targets"] for c in jobs["node"]] == [["10.1.0.1:9100"], ["10.1.0.2:9100"], ["10.1.0.3:9100"]]
    assert jobs["prometheus"] == [{"targets": ["127.0.0.1:9090"]}]
    assert config["global"]["scrape_interval"] == "15s"
    targets = [t for job in config["scrape_configs"] for c in job["static_configs"] for t in c["targets"]]
    assert not [t for t in targets if t.split(":")[0] in SSH.values()]


def test_the_settings_reach_the_config_and_the_dropins():
    hv = hostvars(
        h={
            "rlinf_metrics_scrape_interval": 5,
            "rlinf_metrics_prometheus_host": "0.0.0.0",
            "rlinf_metrics_prometheus_port": 9091,
        },
        w1={"rlinf_metrics_node_exporter_port": 9200},
    )
    for name in ("w1", "w2"):
        hv[name].update(
            {k: v for k, v in hv["h"].items() if k.startswith("rlinf_metrics_") and k != "rlinf_metrics_enabled"}
        )
    plan = resolved(hv)
    config = config_of(plan["nodes"]["h"])
    assert config["global"]["scrape_interval"] == "5s"
    assert config["scrape_configs"][-1]["static_configs"] == [{"targets": ["127.0.0.1:9091"]}]
    node_job = next(j for j in config["scrape_configs"] if j["job_name"] == "node")
    assert ["10.1.0.2:9200"] in [c["targets"] for c in node_job["static_configs"]]
    files = {f["path"]: f["content"] for f in plan["nodes"]["h"]["metrics_files"]}
    assert (
        "ExecStart=/usr/bin/prometheus --config.file=/etc/rlinf/metrics/prometheus.yml "
        "--web.listen-address=0.0.0.0:9091 --storage.tsdb.path=/var/lib/prometheus/metrics2/"
    ) in files[M.PROMETHEUS_DROPIN].splitlines()
    w1 = {f["path"]: f["content"] for f in plan["nodes"]["w1"]["metrics_files"]}
    assert (
        "ExecStart=/usr/bin/prometheus-node-exporter --web.listen-address=10.1.0.2:9200"
        in w1[M.NODE_EXPORTER_DROPIN].splitlines()
    )
    # The empty ExecStart= clears the package's own before ours.
    assert w1[M.NODE_EXPORTER_DROPIN].splitlines().count("ExecStart=") == 1


def test_one_node_exporter_per_machine_and_each_ray_node_scraped():
    groups = {"ray_head": ["h"], "ray_workers": ["w1", "w2", "b"]}
    hv = hostvars(groups=groups, w1={"rlinf_gpus_per_node": 0}, b={**SHARED, "ray_metrics_export_port": 7384})
    plan = resolved(hv, groups)
    assert plan["nodes"]["w1"]["metrics"]["node_exporter"] and not plan["nodes"]["b"]["metrics"]["node_exporter"]
    assert plan["nodes"]["b"]["metrics_files"] == []
    config = config_of(plan["nodes"]["h"])
    jobs = {job["job_name"]: job["static_configs"] for job in config["scrape_configs"]}
    assert ["10.1.0.2:7384"] in [c["targets"] for c in jobs["ray"]]
    assert len(jobs["node"]) == 3


def test_ray_nodes_sharing_a_machine_need_their_own_metrics_port_when_on():
    groups = {"ray_head": ["h"], "ray_workers": ["w1", "b"]}
    found = problems(hostvars(groups=groups, w1={"rlinf_gpus_per_node": 0}, b=SHARED), groups)
    assert any("both pin ray_metrics_export_port=6384" in s for s in found), found
    # Off (and no firewall), the port is not pinned: no clash.
    assert P.static_plan(groups, hostvars(on=False, groups=groups, w1={"rlinf_gpus_per_node": 0}, b=SHARED))


@pytest.mark.parametrize(
    ("extra", "phrase"),
    [
        (
            {"rlinf_metrics_node_exporter_port": 6380},
            "rlinf_metrics_node_exporter_port=6380 is also ray_node_manager_port",
        ),
        ({"rlinf_metrics_node_exporter_port": 12000}, "lies in the worker port range 10002-19999"),
        ({"rlinf_metrics_prometheus_port": 6379}, "rlinf_metrics_prometheus_port=6379 is also ray_port"),
        ({"rlinf_metrics_prometheus_port": 9100}, "are both 9100"),
    ],
)
def test_a_metrics_port_that_collides_is_refused_naming_the_host(extra, phrase):
    hv = {n: dict(v, **extra) for n, v in hostvars().items()}
    found = problems(hv)
    assert any(phrase in s and "host 'h'" in s for s in found), found


def test_nodes_left_out_of_the_run_are_named_before_prometheus_loses_them():
    plan = resolved(probed=["h", "w1"])
    assert plan["cluster"]["metrics"]["missing"] == ["w2"]
    assert resolved()["cluster"]["metrics"]["missing"] == []


def test_what_a_node_ran_before_is_stopped_when_metrics_go_off_or_move():
    seen = {key: {"path": path, "exists": True, "ours": True} for key, path in M.PATHS.items()}
    off = resolved(
        hostvars(on=False),
        paths={"h": seen, "w1": {"metrics_node_exporter_dropin": seen["metrics_node_exporter_dropin"]}},
    )
    assert [u["unit"] for u in off["nodes"]["h"]["metrics_leftovers"]] == ["prometheus", "prometheus-node-exporter"]
    assert [u["unit"] for u in off["nodes"]["w1"]["metrics_leftovers"]] == ["prometheus-node-exporter"]
    assert off["nodes"]["w2"]["metrics_leftovers"] == []
    moved = resolved({n: dict(v, rlinf_metrics_host="w1") for n, v in hostvars().items()}, paths={"h": seen})
    assert [u["unit"] for u in moved["nodes"]["h"]["metrics_leftovers"]] == ["prometheus"]
    assert resolved(paths={"h": seen})["nodes"]["h"]["metrics_leftovers"] == []


def test_purge_knows_every_unit_without_a_probe():
    static = P.static_plan(GROUPS, hostvars(on=False))
    units = static["nodes"]["w1"]["metrics"]["units"]
    assert [u["unit"] for u in units] == ["prometheus", "prometheus-node-exporter"]
    assert [r["path"] for u in units for r in u["remove"]] == list(M.PATHS.values())


def test_the_dashboards_come_from_the_heads_temp_dir_to_the_artifacts_dir():
    plan = P.static_plan(
        GROUPS,
        hostvars(
            h={
                "ray_temp_dir": "/data/ray",
                "rlinf_node_path_roots": ["/opt/rlinf", "/etc/rlinf", "/var/log/rlinf", "/data/ray"],
            }
        ),
        {"playbook_dir": "/ctl/playbooks"},
    )
    assert plan["nodes"]["h"]["metrics"]["dashboards_dir"] == "/data/ray/session_latest/metrics/grafana/dashboards"
    assert plan["nodes"]["w1"]["metrics"]["dashboards_dir"] == ""
    assert plan["cluster"]["controller"]["metrics_dashboards_dir"] == "/ctl/artifacts/ray-grafana-dashboards"


def firewall_on(**per_host):
    hv = hostvars(**per_host)
    for values in hv.values():
        values["rlinf_firewall_enabled"] = True
    return hv


def test_the_firewall_opens_the_metrics_ports_to_the_scraper_only():
    plan = resolved(firewall_on())
    head, worker = machine_rules(plan, "h"), machine_rules(plan, "w1")
    assert worker["metrics_ports"] == ["6384", "9100"]
    assert head["metrics_ports"] == ["6384", "9100", "44217", "44227"]
    assert head["metrics_sources"] == worker["metrics_sources"] == ["10.1.0.1"]
    for rules in (head, worker):
        assert not set(rules["metrics_ports"]) & set(rules["cluster_ports"])
        assert "6380" in rules["cluster_ports"]
    moved = resolved(firewall_on(**{n: {"rlinf_metrics_host": "w2"} for n in ("h", "w1", "w2")}))
    assert machine_rules(moved, "h")["metrics_sources"] == ["10.1.0.3"]


def test_without_metrics_the_firewall_keeps_the_metrics_port_for_the_cluster():
    hv = firewall_on()
    for values in hv.values():
        values["rlinf_metrics_enabled"] = False
    rules = machine_rules(resolved(hv), "w1")
    assert rules["metrics_ports"] == [] and rules["metrics_sources"] == []
    assert "6384" in rules["cluster_ports"]


def test_removing_the_scraper_is_refused_and_a_machine_keeps_its_node_exporter():
    hv = {n: dict(v, rlinf_metrics_host="w2") for n, v in hostvars().items()}
    found = problems_remove(hv, "w2")
    assert any("node='w2' runs Prometheus (rlinf_metrics_host)" in s for s in found), found
    groups = {"ray_head": ["h"], "ray_workers": ["w1", "b"]}
    hv = hostvars(
        groups=groups, w1={"rlinf_gpus_per_node": 0}, b={**SHARED, "ray_metrics_export_port": 7384}, h={"node": "w1"}
    )
    plan = P.static_plan(groups, hv, {"purpose": "remove-node"})
    assert plan["nodes"]["b"]["metrics"]["node_exporter"]


def problems_remove(hv, node):
    hv["h"]["node"] = node
    with pytest.raises(PlanError) as err:
        P.static_plan(GROUPS, hv, {"purpose": "remove-node"})
    return sentences(err.value.problems)


def site_problems(services_of, paths_of=None):
    """The resolve problems of a site run whose probes saw these services (and paths) per host."""
    static = P.static_plan(GROUPS, hostvars())
    found = {}
    for name in static["order"]:
        found[name] = dict(probe(RAY[name], (paths_of or {}).get(name)), services=services_of.get(name, {}))
    with pytest.raises(PlanError) as err:
        P.resolve(static, found, "site")
    return sentences(err.value.problems)


def test_the_probe_asks_only_for_the_units_a_node_would_run():
    plan = P.static_plan(GROUPS, hostvars())
    assert plan["nodes"]["h"]["metrics"]["services"] == ["prometheus", "prometheus-node-exporter"]
    assert plan["nodes"]["w1"]["metrics"]["services"] == ["prometheus-node-exporter"]
    assert P.static_plan(GROUPS, hostvars(on=False))["nodes"]["h"]["metrics"]["services"] == []


@pytest.mark.parametrize(
    "state", [{"active": "active", "enabled": False}, {"active": "inactive", "enabled": True}], ids=["runs", "at-boot"]
)
def test_an_operators_own_prometheus_is_never_taken_over(state):
    found = site_problems({"h": {"prometheus": state}})
    assert any(
        s.startswith("host 'h': prometheus.service already runs here (or starts at boot) and rlinf-ansible did not")
        and "systemctl disable --now prometheus" in s
        and "rlinf_metrics_host" in s
        for s in found
    ), found
    assert not any("prometheus-node-exporter" in s for s in found), found


def test_an_operators_node_exporter_is_named_on_its_machine():
    found = site_problems({"w2": {"prometheus-node-exporter": {"active": "active", "enabled": True}}})
    assert any(s.startswith("host 'w2': prometheus-node-exporter.service already runs here") for s in found), found


def test_a_unit_we_configured_or_one_that_is_stopped_is_ours_to_run():
    dropin = {"metrics_prometheus_dropin": {"path": M.PROMETHEUS_DROPIN, "exists": True, "kind": "file", "ours": True}}
    running = {"active": "active", "enabled": True}
    static = P.static_plan(GROUPS, hostvars())
    found = {name: dict(probe(RAY[name]), services={}) for name in static["order"]}
    found["h"] = dict(probe(RAY["h"], dropin), services={"prometheus": running})
    stopped = {"active": "inactive", "enabled": False}
    found["w1"] = dict(probe(RAY["w1"]), services={"prometheus-node-exporter": stopped})
    P.resolve(static, found, "site")  # no problem
