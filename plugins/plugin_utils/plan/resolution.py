# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""Stage 2 of the plan, ``resolve(plan, probes, purpose)``, after each node was probed once (the
read-only module rlinf.cluster.node_state).

Applies the address rule to the node's interfaces (``resolve_address``), checks what only a host
can tell (systemd, apt, Python, paths we would write that exist and are not ours, the disk, host
firewalls, the token), then adds what each node gets (plan/outputs.py): the environment file, the
`ray start` arguments, the unit and the record each node keeps of these decisions (under
/etc/rlinf/state/), so status, teardown, remove-node and launch read what site.yml decided.
Raises PlanError with every problem. Controller-only.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.rlinf.cluster.plugins.module_utils import auth_token, disk, host_firewall
from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, Problem
from ansible_collections.rlinf.cluster.plugins.module_utils.ray_cluster_state import (
    ExpectedNodesError,
    match_nodes,
    normalize_expected,
)
from ansible_collections.rlinf.cluster.plugins.plugin_utils import metrics, schema
from ansible_collections.rlinf.cluster.plugins.plugin_utils.plan.common import (
    FILE_PATHS,
    MIN_PYTHON,
    PATH_VARS,
    PROJECT_DIRS,
    RECORD_PURPOSES,
    RENDER_PURPOSES,
)
from ansible_collections.rlinf.cluster.plugins.plugin_utils.plan.outputs import (
    _rendered,
    expected_nodes,
    gpu_nodes,
    wheelhouse_builds,
)


def _interfaces(probe: Mapping) -> dict[str, list[str]]:
    return {str(dev): [str(a) for a in addrs] for dev, addrs in (probe.get("interfaces") or {}).items()}


def _device_of(ip: str, interfaces: Mapping[str, list[str]]) -> str:
    for dev, addrs in interfaces.items():
        if ip in addrs:
            return dev
    return ""


def _listing(interfaces: Mapping[str, list[str]]) -> str:
    shown = [f"{dev} {','.join(addrs) or '(no IPv4)'}" for dev, addrs in sorted(interfaces.items()) if dev != "lo"]
    return "; ".join(shown) or "none"


def resolve_address(node: Mapping, probe: Mapping) -> tuple[str, str, str, str | None]:
    """(ip, source, comm device, problem) for one node: the one rule every playbook shares."""
    rule = node["address_rule"]
    interfaces = _interfaces(probe)
    source = rule["source"]
    if source == "ray_node_ip":
        ip = rule["value"]
        dev = _device_of(ip, interfaces)
        if not dev:
            return (
                ip,
                source,
                "",
                (
                    f"ray_node_ip={ip} is not an address of any interface of this host ({_listing(interfaces)}); "
                    "Ray and the collectives bind local addresses: set it to one of them, or leave it empty."
                ),
            )
        return ip, source, node["device"] or dev, None
    if source == "overlay":
        return rule["value"], source, node["device"] or rule["device"], None
    if source == "rlinf_comm_net_device":
        dev = rule["value"]
        if dev not in interfaces:
            return (
                "",
                source,
                dev,
                (
                    f"rlinf_comm_net_device={dev} does not exist here (interfaces: {_listing(interfaces)}); set it "
                    "to one of them, or leave it empty for the default route's NIC."
                ),
            )
        if not interfaces[dev]:
            return (
                "",
                source,
                dev,
                f"rlinf_comm_net_device={dev} has no IPv4 address; give it one or choose another NIC.",
            )
        return interfaces[dev][0], source, dev, None
    default = probe.get("default_route") or {}
    dev, ip = str(default.get("device") or ""), str(default.get("address") or "")
    if not ip:
        return (
            "",
            source,
            dev,
            (
                "this host has no default route with an IPv4 address, so Ray would bind to nothing other nodes reach; "
                f"set rlinf_comm_net_device (interfaces: {_listing(interfaces)}) or ray_node_ip."
            ),
        )
    return ip, source, dev, None


def _in_project_dir(path: str) -> bool:
    return any(path == d or path.startswith(d + "/") for d in PROJECT_DIRS)


def _owned_trees(node: Mapping, probe: Mapping, wheelhouse: bool) -> dict:
    """The directories a tool fills for us (the venv, the wheelhouse copy): ``own_trees`` are
    listed in the manifest before the install (with their missing parents, /opt/rlinf) and after
    it (``own_wheelhouse`` before and after the push), so a failed install leaves them ours;
    ``adopt`` are an earlier install's to list now: a venv under our project directories, a
    wheelhouse only while it is empty (preflight refuses a full one that is not ours: it is
    somebody's data). On a machine several Ray nodes share, the one that
    installs the venv owns it here; the others list it once it is installed (_list_the_machines_venv_too)."""
    if not node.get("installs_venv", True):
        return {"own_trees": [], "adopt": [], "own_wheelhouse": []}
    recorded = {entry.get("path") for entry in probe.get("manifest") or []}
    own, adopt = [], []
    for key in ("venv", "wheelhouse") if wheelhouse else ("venv",):
        path = node["paths"][key]
        info = (probe.get("paths") or {}).get(key) or {}
        exists = bool(info.get("exists"))
        ours = path in recorded
        earlier = _in_project_dir(path) if key == "venv" else info.get("kind") == "dir" and bool(info.get("empty"))
        # The venv is ours as a whole (purge removes what was pip-installed into it too); the
        # wheelhouse copy goes file by file.
        kind = "venv" if key == "venv" else "tree"
        if not exists or ours or earlier:
            own.append({"path": path, "kind": kind})
            if exists and not ours and info.get("kind") == "dir":
                adopt.append({"path": path, "kind": kind})
    wheels = [tree for tree in own if wheelhouse and tree["path"] == node["paths"]["wheelhouse"]]
    return {"own_trees": own, "adopt": adopt, "own_wheelhouse": wheels}


def _list_the_machines_venv_too(resolved: dict, probes: Mapping[str, Mapping]) -> None:
    """A Ray node that runs from the venv another Ray node of its machine installs for both lists it too
    (``adopt``, recorded with its files after that install): each purge then keeps the venv while the other
    node lists it, and the last of them removes it. Only a venv that node lists or installs as ours, and
    only when it is in this run (it decides whether the venv is ours)."""
    owners = {
        (node["machine"], node["paths"]["venv"]): node for node in resolved.values() if node.get("installs_venv", True)
    }
    for name, node in resolved.items():
        venv = node["paths"]["venv"]
        owner = owners.get((node["machine"], venv))
        if node.get("installs_venv", True) or owner is None or "adopt" not in node:
            continue
        listed = {entry.get("path") for entry in probes[name].get("manifest") or []}
        if venv not in listed and any(tree["path"] == venv for tree in owner.get("own_trees", [])):
            node["adopt"] = [*node["adopt"], {"path": venv, "kind": "venv"}]


# Directories a role fills and lists in the manifest as ours (purge removes what they hold), the
# variable of each, and what the role does there; an existing one must be ours or empty.
FILLED_DIRS = {
    "wheelhouse": ("python_env_node_wheelhouse_dir", "python_env syncs the wheelhouse into it with --delete"),
    "code_wheel_dir": ("code_sync_node_wheel_dir", "code_sync syncs the code wheel into it with --delete"),
    "code_record_dir": ("code_sync_node_record_dir", "code_sync keeps its records of the checkouts in it"),
}


def _filled_dirs(node: Mapping, cluster: Mapping) -> list[str]:
    """The FILLED_DIRS keys this node's run uses (on a shared machine: the node that installs)."""
    keys = []
    if not cluster["index_url"] and node.get("installs_venv", True):
        keys.append("wheelhouse")
    if cluster["code_sync"] == "package":
        keys.append("code_wheel_dir")
    if cluster["code_sync"] == "rsync":
        keys.append("code_record_dir")
    return keys


def _peers_recorded(name: str, plan: Mapping, probes: Mapping[str, Mapping]) -> frozenset:
    """What the other Ray nodes of this node's machine recorded as ours (a wheelhouse they share)."""
    machine = plan["nodes"][name].get("machine")
    return frozenset(
        entry.get("path")
        for other, node in plan["nodes"].items()
        if other != name and machine and node.get("machine") == machine
        for entry in (probes.get(other) or {}).get("manifest") or []
    )


def _adoption_problems(
    name: str, node: Mapping, probe: Mapping, cluster: Mapping, problems: list[Problem], peers_recorded=frozenset()
) -> None:
    """Never adopt what exists: a directory we would fill is ours (in the manifest, or in the manifest
    of another of our Ray nodes on the same machine, which shares it), missing or empty."""
    recorded = {entry.get("path") for entry in probe.get("manifest") or []} | set(peers_recorded)
    for key in _filled_dirs(node, cluster):
        info = (probe.get("paths") or {}).get(key) or {}
        path = info.get("path") or node["paths"][key]
        if not info.get("exists") or info.get("ours") or path in recorded:
            continue
        if info.get("kind") == "dir" and info.get("empty"):
            continue
        var, use = FILLED_DIRS[key]
        what = "a directory with files in it" if info.get("kind") == "dir" else "not a directory (a file?)"
        problems.append(
            Problem(
                name,
                f"{var}: {path} exists, is {what}, and rlinf-ansible did not create it (not in its manifest); "
                f"{use}, and purge would remove what it holds: set {var} to a path of its own (default "
                f"{schema.BY_NAME[var].default}), or move those files away.",
            )
        )


def _ip_problem(ip: str) -> str | None:
    if ip.startswith("127.") or ip.startswith("0."):
        return (
            f"Ray would bind to {ip}, which other nodes cannot reach; set rlinf_comm_net_device to the NIC other "
            "nodes reach this host on, or ray_node_ip to its address."
        )
    return None


def _python_problems(name: str, node: Mapping, probe: Mapping, ray_version: str, problems: list[Problem]) -> None:
    python = probe.get("python") or {}
    if python.get("error"):
        problems.append(
            Problem(
                name,
                f"cannot run rlinf_python={node['python']} ({python['error']}); install Python >= 3.10 there or point "
                "rlinf_python at it.",
            )
        )
        return
    version = str(python.get("version") or "")
    parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    if len(parts) == 2 and parts < MIN_PYTHON:
        problems.append(
            Problem(
                name,
                f"rlinf_python={node['python']} is Python {version}; RLinf needs Python >= 3.10 (and Ray "
                f"{ray_version} has no wheel for {version}; an older Ray pin is no way out, since RLinf itself needs "
                ">= 3.10). Install a Python >= 3.10 on this host and point rlinf_python at it, e.g. "
                "rlinf_python: /usr/local/bin/python3.11; nothing was installed.",
            )
        )


def _sandbox_problems(name: str, found: Mapping, problems: list[Problem]) -> None:
    """A host whose systemd cannot give the Ray unit a mount namespace would run Ray unsandboxed
    without a word (systemd skips ProtectSystem=, ProtectHome=, ReadWritePaths= there)."""
    fix = (
        "in a container, give it CAP_SYS_ADMIN (podman/docker run --cap-add SYS_ADMIN); or set "
        "ray_node_sandbox: false for this host (Ray then runs with the whole machine open)"
    )
    if found.get("mount_namespace") is False:
        problems.append(
            Problem(
                name,
                "systemd here cannot set up a mount namespace for a unit (it would skip the Ray unit's "
                f"ProtectSystem=, ProtectHome= and ReadWritePaths= silently): {fix}; nothing was installed.",
            )
        )
    elif found.get("error"):
        problems.append(
            Problem(
                name,
                f"could not test whether systemd can sandbox the Ray unit ({found['error']}): {fix}; "
                "nothing was installed.",
            )
        )


def _interpreter_problems(name: str, node: Mapping, probe: Mapping, problems: list[Problem]) -> None:
    """The RLinf config's python_interpreter_path for this node must exist here: RLinf asserts it
    (rlinf/scheduler/cluster/node.py). This node's own venv Python is installed by this run."""
    paths = node["paths"]
    for key, where in (node.get("env_config_pythons") or {}).items():
        path = paths[key]
        if path == paths["python"] or path.startswith(paths["venv"] + "/"):
            continue
        info = (probe.get("paths") or {}).get(key) or {}
        if info.get("kind") == "file":
            continue
        what = {"dir": "is a directory", "other": "is not a file (a broken link?)"}.get(
            info.get("kind"), "does not exist"
        )
        problems.append(
            Problem(
                name,
                f"{where}: python_interpreter_path {path} {what} on this node (rank {node['rank']}); RLinf asserts it "
                "exists on every node the env_config names (rlinf/scheduler/cluster/node.py) and runs that node's "
                f"workers with it: install that Python here, or point python_interpreter_path at one that exists "
                f"(this node's venv Python is {paths['python']}).",
            )
        )


def _host_problems(
    name: str,
    node: Mapping,
    probe: Mapping,
    plan: Mapping,
    purpose: str,
    problems: list[Problem],
    peers_recorded: frozenset = frozenset(),
) -> None:
    if probe.get("failed") or probe.get("unreachable"):
        problems.append(Problem(name, f"could not be probed: {probe.get('msg') or 'unknown error'}."))
        return
    if not probe.get("systemd"):
        problems.append(
            Problem(name, "systemd does not manage services here; rlinf.cluster runs Ray as a systemd unit.")
        )
    if not probe.get("apt") and purpose == "site":
        os_name = probe.get("os", {}).get("pretty_name") or probe.get("os", {}).get("id") or "this system"
        problems.append(
            Problem(
                name,
                f"{os_name} has no apt: the roles support the Debian family (Debian 12-13; Ubuntu 22.04/24.04, "
                "untested) only; nothing was installed.",
            )
        )
    _python_problems(name, node, probe, plan["cluster"]["ray_version"], problems)
    if purpose == "site":
        _adoption_problems(name, node, probe, plan["cluster"], problems, peers_recorded)
        problems.extend(Problem(name, text) for text in metrics.foreign_unit_problems(node, probe))
    if node["service"]["sandbox"] and purpose == "site":
        _sandbox_problems(name, probe.get("sandbox") or {}, problems)
    if purpose == "site":
        _interpreter_problems(name, node, probe, problems)
    for key, info in (probe.get("paths") or {}).items():
        if not info.get("exists") or info.get("ours"):
            continue
        path = info.get("path")
        if key == "venv":
            if not info.get("is_venv"):
                problems.append(
                    Problem(
                        name,
                        f"rlinf_venv_dir={path} exists and is not a Python venv; rlinf-ansible would install into it: "
                        "choose a path of its own (default /opt/rlinf/venv).",
                    )
                )
            continue
        if key not in FILE_PATHS:
            continue
        if any(path == d or path.startswith(d + "/") for d in PROJECT_DIRS):
            continue  # an earlier install's file, adopted
        var = PATH_VARS.get(key, key)
        what = "a unit" if key.endswith("unit_file") else "a file"
        problems.append(
            Problem(
                name,
                f"{var}: {path} exists and is {what} rlinf-ansible did not write (not in its manifest); it would be "
                "overwritten and later purged: choose another name or path.",
            )
        )
    for unit_path in probe.get("os_units") or []:
        problems.append(
            Problem(
                name,
                f"ray_node_unit_name={node['unit']!r}: the operating system or a package already has {unit_path}; "
                "a unit of ours under that name would replace it: choose another name (default rlinf-ray).",
            )
        )


def our_table(firewall_on: bool, machine_owner: bool, rules_found: bool) -> str:
    """What the firewall role does with the machine's table of ours: the machine's owner applies it
    (the Ray nodes of one machine share its firewall); with the firewall off, a node where an earlier
    run left the rules removes them; otherwise it leaves the machine alone."""
    if firewall_on:
        return "apply" if machine_owner else "leave"
    return "remove" if rules_found else "leave"


def _host_firewall_problems(
    resolved: dict[str, dict], probes: Mapping[str, Mapping], firewall_on: bool, problems: list[Problem]
) -> None:
    """ufw or firewalld on a node that would drop the other nodes' Ray traffic; with
    rlinf_firewall_manage_host, the ufw rules this run adds instead; and what becomes of our table
    (the firewall role executes both)."""
    ips = {name: entry["ip"] for name, entry in resolved.items() if entry.get("ip")}
    for name, entry in resolved.items():
        probe = probes[name]
        found = probe.get("host_firewall") or {}
        peers = list(dict.fromkeys(ip for ip in ips.values() if ip != ips.get(name)))
        manage = entry["firewall"]["manage_host"]
        problems.extend(Problem(name, text) for text in host_firewall.problems(found, peers, manage))
        rules_found = bool(((probe.get("paths") or {}).get("firewall_rules") or {}).get("exists"))
        entry["host_firewall"] = {
            "ufw_add": host_firewall.closed_peers(found, peers) if manage else [],
            "our_table": our_table(firewall_on, bool(entry["machine_owner"]), rules_found),
        }


def resolve(plan: Mapping, probes: Mapping[str, Mapping], purpose: str = "site") -> dict:
    """Apply the address rule to every probed node and render what each writes; raises PlanError.

    ``probes`` maps inventory name -> the node_state result of that host. Nodes without a
    probe (left out by --limit) keep their static plan and get no rendered files.
    """
    problems: list[Problem] = []
    disk_warnings: list[str] = []
    cluster = plan["cluster"]
    order = plan["order"]
    head = order[0]
    resolved: dict[str, dict] = {}
    if purpose in RENDER_PURPOSES and head not in probes:
        problems.append(
            Problem(
                None,
                f"the head '{head}' is not in this run (--limit?); workers need its address: add it to --limit, "
                f"e.g. --limit '{head},HOST'.",
            )
        )
    for name in order:
        node = plan["nodes"][name]
        probe = probes.get(name)
        if probe is None:
            continue
        entry = dict(node)
        # The restart guard asks the Ray that runs now, under the venv it started from (a run that
        # moves rlinf_venv_dir installs the new one only after the guard).
        recorded_venv = (probe.get("record") or {}).get("venv")
        entry["running_python"] = f"{recorded_venv}/bin/python" if recorded_venv else node["paths"]["python"]
        if purpose in RECORD_PURPOSES:
            record = probe.get("record") or {}
            entry["ip"] = record.get("ip", "")
            entry["ip_source"] = "record" if record else "none"
            # What the inventory names now wins, so status shows a NIC changed but not yet applied.
            entry["comm_device"] = node["device"] or record.get("comm_device", "")
            entry["deployed"] = bool(record)
            resolved[name] = entry
            continue
        _host_problems(name, node, probe, plan, purpose, problems, _peers_recorded(name, plan, probes))
        if purpose == "site" and not probe.get("failed") and not probe.get("unreachable"):
            # A new venv (Ray, its dependencies, RLinf's pins): pip needs room for the wheels and the tree.
            installs = node.get("installs_venv", True) and not (probe.get("venv") or {}).get("exists", False)
            found, warned = disk.judge(None, probe.get("disk") or {}, cluster["disk"], venv_installs=installs)
            problems.extend(Problem(name, text) for text in found)
            disk_warnings.extend(f"{name}: {text}" for text in warned)
        ip, source, dev, problem = resolve_address(node, probe)
        problem = problem or (_ip_problem(ip) if ip else None)
        if problem:
            problems.append(Problem(name, problem))
        entry.update({"ip": ip, "ip_source": source, "comm_device": dev, "deployed": bool(probe.get("record"))})
        entry.update(_owned_trees(node, probe, wheelhouse=not cluster["index_url"]))
        if node["role"] == "head" and probe.get("port_busy"):
            problems.append(
                Problem(
                    name,
                    f"port {node['ports']['ray_port']} is already in use but {node['unit']} is not running (a Ray "
                    "started by hand?): stop it there (`ray stop`) or choose another ray_port.",
                )
            )
        resolved[name] = entry

    _list_the_machines_venv_too(resolved, probes)
    if purpose == "site":
        _host_firewall_problems(resolved, probes, bool(cluster["firewall"]), problems)

    token = None
    if purpose in RENDER_PURPOSES and cluster["auth"]:
        controller = cluster["controller"]
        token, token_problems = auth_token.choose(
            vault=bool(controller.get("vault_token")),
            on_controller=bool(controller.get("token_present")),
            rotate=bool(plan["run"].get("ray_auth_rotate")),
            digests=auth_token.node_digests(order, probes),
            head=head,
        )
        problems.extend(token_problems)
    if purpose in RENDER_PURPOSES:
        versions = {
            n: (probes[n].get("python") or {}).get("version")
            for n in resolved
            if (probes[n].get("python") or {}).get("version")
        }
        if len(set(versions.values())) > 1:
            listing = ", ".join(f"{n}={v}" for n, v in versions.items())
            problems.append(
                Problem(
                    None,
                    f"Python differs between nodes: {listing}. Ray needs the same Python, patch level included, on "
                    "every node: install it, or point rlinf_python at a matching interpreter on the odd hosts.",
                )
            )
    if problems:
        raise PlanError(problems, stage="preflight")

    out = {k: v for k, v in plan.items() if k != "nodes"}
    out["nodes"] = dict(plan["nodes"])
    if head in resolved:
        head_ip = resolved[head]["ip"]
        head_port = _recorded_head_port(probes[head]) if purpose in RECORD_PURPOSES else None
        head_port = head_port or plan["nodes"][head]["ports"]["ray_port"]
        out["cluster"] = dict(cluster, head_ip=head_ip, head_port=head_port, head_address=f"{head_ip}:{head_port}")
    if token is not None:
        # The file the run reads the nodes' token from (on read_from, delegated to once).
        read_path = plan["nodes"][token["read_from"]]["paths"]["token_file"] if token["read_from"] else ""
        out["cluster"] = dict(out["cluster"], token=dict(token, read_path=read_path))
    for name, entry in resolved.items():
        if purpose in RENDER_PURPOSES and head in resolved:
            entry.update(_rendered(entry, out, probes[name]))
        out["nodes"][name] = entry
    if purpose in RENDER_PURPOSES:
        out["wheelhouses"] = wheelhouse_builds(out, {n: probes[n] for n in resolved})
    if purpose in RENDER_PURPOSES and head in resolved:
        # Prometheus's targets are every node's address: known only now, for all of them at once.
        out["cluster"]["metrics"] = dict(cluster["metrics"], missing=metrics.missing_addresses(out))
        for name in resolved:
            out["nodes"][name].update(metrics.node_resolved(out["nodes"][name], out, probes[name]))
    out["expected_nodes"] = expected_nodes(out)
    if purpose in RENDER_PURPOSES and head in resolved:
        _gcs_membership(out, resolved, probes[head].get("gcs") or {})
    out["gpu_nodes"] = gpu_nodes(out)
    out["disk_warnings"] = disk_warnings
    out["purpose"] = purpose
    return out


def _gcs_membership(out: dict, resolved: Mapping, gcs: Mapping) -> None:
    """What the head's GCS said at the node read: each worker it has no ALIVE node for gets
    ``missing_from_gcs`` (roles/ray_node restarts it: a head restarted behind our back holds none of
    them); a GCS that could not be read gives the head ``gcs_error`` (the run stops there unless the
    head restarts anyway). No read (the head's Ray was not running): nothing is missing."""
    head = out["order"][0]
    missing: set[str] = set()
    error = ""
    if gcs.get("error"):
        error = (
            f"cannot read the node table of the Ray GCS at {gcs.get('address')} ({gcs['error']}); Ray must run on "
            "the head (see `journalctl -u rlinf-ray` there) with the cluster's RAY_AUTH_* settings."
        )
    elif "nodes" in gcs:
        try:
            workers = normalize_expected([e for e in out["expected_nodes"] if e["name"] != head])
        except ExpectedNodesError:
            workers = []  # the check after the start reports what is wrong with them
        missing = {e["name"] for e in match_nodes(workers, gcs["nodes"])["missing"]}
    for name in resolved:
        out["nodes"][name]["missing_from_gcs"] = name in missing
    out["nodes"][head]["gcs_error"] = error


def _recorded_head_port(probe: Mapping) -> int | None:
    """The GCS port the head's Ray was started with (its record), which status and teardown ask even
    when today's inventory names another one not yet applied."""
    port = ((probe.get("record") or {}).get("ports") or {}).get("ray_port")
    return port if isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536 else None
