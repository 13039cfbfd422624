# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""What the roles read of a resolved plan: the wheelhouses the controller downloads and each node's
pip arguments, each node's environment, `ray start` arguments, record and rendered files, the nodes
the check expects, and the summary validate.yml writes. Controller-only."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

from ansible_collections.rlinf.cluster.plugins.module_utils import firewall, render, sandbox, wheelhouse
from ansible_collections.rlinf.cluster.plugins.plugin_utils import metrics
from ansible_collections.rlinf.cluster.plugins.plugin_utils.plan.common import PLAN_VERSION


def _one_push_per_wheelhouse(plan: dict, installing: Sequence[str]) -> None:
    """Ray nodes of one machine that install venvs of their own share its wheelhouse copy: the first
    of them by rank pushes it (two rsync --delete into one directory at once delete each other's
    temporary files); the others install from it after that task, as Ansible runs tasks host by host
    in step. Sets each node's ``pushes_wheelhouse``."""
    pusher: dict[tuple, str] = {}
    for name in sorted(installing, key=lambda n: plan["nodes"][n]["rank"]):
        node = plan["nodes"][name]
        pusher.setdefault((node["machine"], node["paths"]["wheelhouse"]), name)
    for name, node in plan["nodes"].items():
        node["pushes_wheelhouse"] = pusher.get((node["machine"], node["paths"]["wheelhouse"])) == name


def wheelhouse_builds(plan: dict, probes: Mapping[str, Mapping]) -> list[dict]:
    """What the controller downloads before any node changes: one wheelhouse per Python and
    architecture among the nodes whose venv lacks the pinned set (a new Ray pin: every node).

    Sets each probed node's ``venv_install`` (pip runs there), ``wheelhouse_key`` and the node paths
    of its set's locks; returns the downloads (``key``, ``dir``, ``args``, ``stamp``, ``locks``,
    ``hosts``), none with an index the nodes reach. A wheelhouse is kept per platform and grows with
    each pin: pip downloads only what is new, and a set is complete when its lock (named by the stamp
    of requirements and platform) lists files that are all there with the sha256 it recorded."""
    cluster = plan["cluster"]
    builds: dict[str, dict] = {}
    wanted = []
    for name, probe in probes.items():
        node = plan["nodes"][name]
        python = probe.get("python") or {}
        node["venv_install"] = not (probe.get("venv") or {}).get("satisfied", False) and node.get("installs_venv", True)
        node["wheelhouse_locks"] = {"deps": "", "no_deps": ""}
        if not python.get("version") or not python.get("machine") or not python.get("glibc"):
            node["wheelhouse_key"] = ""
            continue
        node["wheelhouse_key"] = wheelhouse.wheelhouse_key(python)
        if node["venv_install"] and not cluster["index_url"]:
            wanted.append((name, python))
    _one_push_per_wheelhouse(plan, [name for name, _python in wanted])
    for platform in wheelhouse.wheelhouse_platforms([python for _name, python in wanted]):
        args = wheelhouse.pip_download_args(platform["python_version"], platform["machine"], platform["glibc"])
        no_deps = ["--no-deps", *cluster["no_deps_requirements"]] if cluster.get("no_deps_requirements") else []
        stamp = hashlib.sha1(" ".join(cluster["requirements"] + no_deps + args).encode()).hexdigest()
        locks = wheelhouse.lock_names(stamp, bool(no_deps))
        builds[platform["key"]] = {
            "key": platform["key"],
            "dir": f"{cluster['controller']['wheelhouse_dir']}/{platform['key']}",
            "args": args,
            "stamp": stamp,
            "locks": locks,
            "python": platform["python_version"],
            "machine": platform["machine"],
            "hosts": [name for name, python in wanted if wheelhouse.wheelhouse_key(python) == platform["key"]],
        }
    for name, python in wanted:
        node = plan["nodes"][name]
        locks = builds[wheelhouse.wheelhouse_key(python)]["locks"]
        node["wheelhouse_locks"] = {
            kind: f"{node['paths']['wheelhouse']}/{lock}" if lock else "" for kind, lock in locks.items()
        }
    for name in probes:
        node = plan["nodes"][name]
        node["pip_install"] = _pip_install_args(node, cluster) if node["venv_install"] else {"deps": [], "no_deps": []}
    return [builds[key] for key in sorted(builds)]


def _pip_install_args(node: Mapping, cluster: Mapping) -> dict[str, list[str]]:
    """What follows ``pip install`` on a node for the pinned set and for the packages without their
    dependencies: from the index, or from the pushed wheelhouse, by the lock's hashes when asked."""
    if cluster["index_url"]:
        source = ["--index-url", cluster["index_url"]]
    else:
        source = ["--no-index", "--find-links", node["paths"]["wheelhouse"]]
    args = {}
    for kind, requirements, extra in (
        ("deps", cluster["requirements"], []),
        ("no_deps", cluster["no_deps_requirements"], ["--no-deps"]),
    ):
        lock = node.get("wheelhouse_locks", {}).get(kind)
        if not requirements:
            args[kind] = []
        elif cluster["require_hashes"] and lock:
            args[kind] = [*extra, *source, *cluster["pip_extra_args"], "--require-hashes", "-r", lock]
        else:
            args[kind] = [*extra, *source, *cluster["pip_extra_args"], *requirements]
    return args


def node_env(node: Mapping, plan: Mapping) -> dict:
    """The environment Ray starts with on this node, in the env file's order."""
    cluster = plan["cluster"]
    env = {"RLINF_NODE_RANK": node["rank"]}
    if node.get("comm_device"):
        env["RLINF_COMM_NET_DEVICES"] = node["comm_device"]
    env["RLINF_RAY_HEAD_ADDRESS"] = cluster["head_address"]
    if node.get("cuda_visible_devices") is not None:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(node["cuda_visible_devices"])
    if cluster["auth"]:
        env["RAY_AUTH_MODE"] = "token"
        env["RAY_AUTH_TOKEN_PATH"] = node["paths"]["token_file"]
    else:
        env["RAY_AUTH_MODE"] = "disabled"
    env.update(node["env_vars"])
    return env


def ray_args(node: Mapping, plan: Mapping) -> list[str]:
    """`ray start` arguments (without `start --block`), built from the same port table the firewall uses."""
    cluster = plan["cluster"]
    ports = node["ports"]
    if node["role"] == "head":
        dash = node["dashboard"]
        args = [
            "--head",
            f"--port={ports['ray_port']}",
            f"--include-dashboard={'true' if dash['include'] else 'false'}",
        ]
        if dash["include"]:
            args += [f"--dashboard-host={dash['host']}", f"--dashboard-port={dash['port']}"]
    else:
        args = [f"--address={cluster['head_address']}"]
    args += [f"--node-ip-address={node['ip']}", "--disable-usage-stats"]
    resources = dict(node["start_resources"])
    if "CPU" in resources:
        args.append(f"--num-cpus={render.number_text(resources.pop('CPU'))}")
    if "GPU" in resources:
        args.append(f"--num-gpus={render.number_text(resources.pop('GPU'))}")
    if resources:
        args.append("--resources=" + json.dumps(resources, separators=(",", ":"), sort_keys=True))
    if node["object_store_memory"]:
        args.append(f"--object-store-memory={node['object_store_memory']}")
    if node["paths"]["temp_dir"] != "/tmp/ray":
        args.append(f"--temp-dir={node['paths']['temp_dir']}")
    if cluster["pin_ports"]:
        args += firewall.pinned_port_args(node)
    elif cluster["metrics"]["enabled"]:
        # Prometheus scrapes a port it knows: the one pinned with the firewall, or this one alone.
        args.append(f"{firewall.PORT_FLAGS[metrics.METRICS_PORT_VAR]}={node['ports'][metrics.METRICS_PORT_VAR]}")
    return args + list(node["extra_args"])


def record_of(node: Mapping, plan: Mapping) -> dict:
    """What the node keeps of the plan's decisions (under /etc/rlinf/state/)."""
    cluster = plan["cluster"]
    return {
        "version": PLAN_VERSION,
        "name": node["name"],
        "rank": node["rank"],
        "role": node["role"],
        "ip": node["ip"],
        "ip_source": node["ip_source"],
        "comm_device": node["comm_device"],
        "head": cluster["head_address"],
        "unit": node["unit"],
        "ports": node["ports"],
        "temp_dir": node["paths"]["temp_dir"],
        "env_file": node["paths"]["env_file"],
        "venv": node["paths"]["venv"],
    }


def _rendered(node: dict, plan: Mapping, probe: Mapping) -> dict:
    env = node_env(node, plan)
    args = ray_args(node, plan)
    prefix = sandbox.python_prefix(str((probe.get("python") or {}).get("executable") or ""))
    unit = render.ray_unit(node, args, plan["cluster"], sandbox.mounts(node["service"], node["paths"], prefix))
    files = [
        {"path": node["paths"]["env_file"], "content": render.env_file(env), "mode": "0644", "restart": True},
        {"path": node["paths"]["unit_file"], "content": unit, "mode": "0644", "restart": True, "reload": True},
        {"path": node["paths"]["profile"], "content": render.profile(node), "mode": "0644"},
        {"path": node["paths"]["record"], "content": render.json_text(record_of(node, plan)), "mode": "0644"},
    ]
    digest = hashlib.sha256("".join(f["content"] for f in files).encode()).hexdigest()[:16]
    return {"env": env, "ray_args": args, "files": files, "files_digest": digest}


def expected_nodes(plan: Mapping) -> list[dict]:
    """The nodes the check and the GCS query expect, in rank order."""
    out = []
    for name in plan["order"]:
        node = plan["nodes"][name]
        entry = {"name": name, "rank": node["rank"], "ip": node.get("ip", ""), "resources": node["resources"]}
        if node["paths"]["temp_dir"] != "/tmp/ray":
            entry["temp_dir"] = node["paths"]["temp_dir"]
        entry["python"] = node["paths"]["python"]
        env = {}
        if node.get("comm_device"):
            env["RLINF_COMM_NET_DEVICES"] = node["comm_device"]
            entry["comm_device"] = node["comm_device"]
        env["RAY_AUTH_MODE"] = "token" if plan["cluster"]["auth"] else "disabled"
        entry["env"] = env
        entry["write_dirs"] = list(node["service"]["job_dirs"])
        out.append(entry)
    return out


def gpu_nodes(plan: Mapping) -> list[dict]:
    """What the check's GPU rules (gpu_check.py) compare each node's NVML facts with, in rank order."""
    out = []
    for name in plan["order"]:
        node = plan["nodes"][name]
        out.append(
            {
                "name": name,
                "machine": node["machine"],
                "node_groups": list(node["node_groups"]),
                "cuda_visible_devices": node["cuda_visible_devices"],
                "gpu_isolated": node["gpu_isolated"],
                "ray_num_gpus": node["start_resources"].get("GPU"),
                "rlinf_gpus": node["rlinf_gpus"],
                "machine_gpu_node": node["machine_gpu_node"],
                "accelerator_type": node["accelerator_type"],
            }
        )
    return out


def summary(plan: Mapping) -> dict:
    """The plan as validate.yml writes it: no secret, no file content."""
    nodes = []
    for name in plan["order"]:
        node = plan["nodes"][name]
        nodes.append(
            {
                "name": name,
                "rank": node["rank"],
                "role": node["role"],
                "machine": node["machine"],
                "node_groups": node["node_groups"],
                "gpus": node["gpus"],
                "unit": node["unit"],
                "ports": node["ports"],
                "paths": node["paths"],
                "address_rule": node["address_rule"],
                "env_keys": sorted({"RLINF_NODE_RANK", "RLINF_RAY_HEAD_ADDRESS", "RAY_AUTH_MODE", *node["env_vars"]}),
            }
        )
    return {"version": plan["version"], "cluster": plan["cluster"], "nodes": nodes}
