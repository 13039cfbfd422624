# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""Stage 1 of the plan, ``static_plan(groups, hostvars, context)``, before any host is contacted.

Reads every user-facing variable of every host once (plugins/plugin_utils/schema.py), checks it,
computes ranks and node groups (topology.py), the overlay addresses (overlay.py), each node's
paths, unit, ports and the rule that will pick its Ray address, and checks the RLinf config.
Raises PlanError with every problem. Controller-only.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from ansible_collections.rlinf.cluster.plugins.module_utils import firewall, render, sandbox
from ansible_collections.rlinf.cluster.plugins.module_utils.managed_env_vars import managed_env_problems
from ansible_collections.rlinf.cluster.plugins.module_utils.overlay import OverlayError, overlay_members
from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, Problem
from ansible_collections.rlinf.cluster.plugins.module_utils.topology import (
    TopologyError,
    cluster_nodes,
    same_value_problems,
    shared_machines,
    topology_warnings,
)
from ansible_collections.rlinf.cluster.plugins.plugin_utils import metrics, rules, schema, unknown_vars
from ansible_collections.rlinf.cluster.plugins.plugin_utils.plan.common import (
    BOOTSTRAP_GROUP,
    LAUNCH_STATE_DIR,
    MIN_RAY_AUTH,
    PATH_VARS,
    PLAN_VERSION,
    STATE_DIR,
    STATE_SUBDIR,
    UNIT_DIR,
    _plain,
)
from ansible_collections.rlinf.cluster.plugins.plugin_utils.plan.purposes import (
    _purpose_checks,
    launch_names,
    removal_plan,
    removal_summary,
)
from ansible_collections.rlinf.cluster.plugins.plugin_utils.rlinf_config import (
    RLinfConfigError,
    check_cluster,
    env_config_interpreters,
    resolve_cluster,
)
from ansible_collections.rlinf.cluster.plugins.plugin_utils.rules import Bad, describe


class _Reader:
    """Every schema variable of one host, read once, checked, defaulted."""

    def __init__(self, name: str, hostvars: Mapping, problems: list[Problem]):
        self.name = name
        self.problems = problems
        try:
            self.raw = hostvars[name]
        except (KeyError, TypeError):
            self.raw = {}
        if self.raw is None:
            self.raw = {}
        self.values: dict = {}

    def get(self, var: schema.Var, default=None):
        if var.name in self.values:
            return self.values[var.name]
        fallback = var.default if default is None else default
        try:
            present = var.name in self.raw
            value = self.raw[var.name] if present else fallback
        except Exception as err:  # an undefined Jinja variable in the inventory
            self.problems.append(Problem(self.name, f"{var.name} cannot be evaluated ({err}); fix its value."))
            self.values[var.name] = var.default
            return var.default
        value = _plain(value)
        try:
            checked = var.rule(value) if value is not None or var.default is not None else var.rule(None)
        except Bad as err:
            shown = "(value hidden)" if var.name in schema.SECRETS else f"={describe(value)}"
            sep = " " if shown.startswith("(") else ""
            self.problems.append(Problem(self.name, f"{var.name}{sep}{shown} {err.what}; {err.fix}."))
            checked = var.default
        self.values[var.name] = checked
        return checked

    def __getitem__(self, name: str):
        return self.get(schema.BY_NAME[name])


def _checkout_artifacts(context: Mapping) -> str:
    """artifacts/ next to the playbooks (a checkout's reports, and where earlier releases kept the token)."""
    base = str(context.get("playbook_dir") or ".")
    return base.rsplit("/", 1)[0] + "/artifacts" if base.endswith("/playbooks") else base + "/artifacts"


def _controller_defaults(context: Mapping, inventory_dir: str = "") -> dict:
    """Where the controller keeps things, unless set: state (the generated token, the wheelhouses,
    code-sync wheels) next to the inventory, so a checkout and an installed collection run against
    one inventory share one token. Reports go to artifacts/ next to the playbooks in a checkout;
    an installed collection's directory is not the operator's (and may be read-only), so there
    they go to the inventory's state directory (.rlinf/artifacts), or to artifacts/ in the working
    directory. An inventory without a directory (``-i a,b,``) keeps its state in artifacts/."""
    inventory_dir = str(context.get("inventory_dir") or inventory_dir or "").rstrip("/")
    if context.get("installed_collection"):
        # Not artifacts/ beside hosts.yml: Ansible reads every file of an inventory directory but
        # hidden ones as inventory (a report's keys became groups, with a warning for each).
        base = f"{inventory_dir}/{STATE_SUBDIR}" if inventory_dir else str(context.get("cwd") or ".").rstrip("/")
        artifacts = f"{base}/artifacts"
    else:
        artifacts = _checkout_artifacts(context)
    state = f"{inventory_dir}/{STATE_SUBDIR}" if inventory_dir else artifacts
    return {"rlinf_artifacts_dir": artifacts, "rlinf_state_dir": state}


def _host_value(reader: _Reader, key: str) -> str:
    """A magic variable of a host (``inventory_dir``, ``inventory_file``), or ""."""
    try:
        value = reader.raw.get(key) if hasattr(reader.raw, "get") else None
    except Exception:  # an unusual hostvars object
        value = None
    return str(value) if value else ""


def _inventory_dir(reader: _Reader) -> str:
    """Ansible's ``inventory_dir`` of a host (the directory of the inventory source that defines it)."""
    return _host_value(reader, "inventory_dir")


def controller_paths(reader: _Reader, context: Mapping) -> dict:
    """The controller's files and directories for this inventory."""
    defaults = _controller_defaults(context, _inventory_dir(reader))
    artifacts = reader["rlinf_artifacts_dir"] or defaults["rlinf_artifacts_dir"]
    state = reader["rlinf_state_dir"] or defaults["rlinf_state_dir"]
    token_file = reader["ray_auth_controller_token_file"] or state + "/secrets/ray-auth-token"
    # Before the state moved next to the inventory, the token was generated under artifacts/.
    legacy = (reader["rlinf_artifacts_dir"] or _checkout_artifacts(context)) + "/secrets/ray-auth-token"
    return {
        "artifacts_dir": artifacts,
        "state_dir": state,
        "wheelhouse_dir": reader["python_env_wheelhouse_dir"] or state + "/wheelhouse",
        "token_file": token_file,
        "legacy_token_file": "" if reader["ray_auth_controller_token_file"] or legacy == token_file else legacy,
        "code_wheel_dir": reader["code_sync_wheel_dir"] or state + "/code-sync",
        "report_path": reader["cluster_report_path"] or artifacts + "/cluster-report.json",
        "plan_path": reader["cluster_plan_path"] or artifacts + "/cluster-plan.json",
        "metrics_dashboards_dir": artifacts + "/" + metrics.DASHBOARDS_ARTIFACTS_SUBDIR,
    }


def _ports(reader: _Reader, role: str) -> dict:
    ports = {var: reader[var] for var in firewall.NODE_PORTS}
    if role == "head":
        ports["ray_port"] = reader["ray_port"]
        ports["ray_node_dashboard_port"] = reader["ray_node_dashboard_port"]
        ports[firewall.CLIENT_PORT_VAR] = reader[firewall.CLIENT_PORT_VAR]
    ports["ray_min_worker_port"] = reader["ray_min_worker_port"]
    ports["ray_max_worker_port"] = reader["ray_max_worker_port"]
    return ports


def _start_resources(reader: _Reader) -> dict:
    """What `ray start` advertises: only what the operator set (Ray detects the rest)."""
    resources = dict(reader["ray_resources"])
    if reader["ray_num_cpus"] is not None:
        resources["CPU"] = reader["ray_num_cpus"]
    if reader["ray_num_gpus"] is not None:
        resources["GPU"] = reader["ray_num_gpus"]
    return resources


def _expected_resources(start: Mapping, node: Mapping) -> dict:
    """What the check expects at least: the advertised resources, and the accelerators the
    inventory counts, under the name Ray gives them (GPU, NPU for Ascend; none for some)."""
    resources = dict(start)
    name = node.get("ray_accelerator_resource", "GPU")
    if "GPU" not in resources and name and name not in resources and node.get("gpus"):
        resources[name] = node["gpus"]
    return resources


# The files ray_node writes, adopts or removes in one owned_files call: the node read returns their
# digests, and a run whose files already match the plan does not compare them again on the node.
COMPARED_FILES = ("env_file", "unit_file", "profile", "record", "token_file", "secret_env_file")


def _node_paths(reader: _Reader) -> dict:
    unit = reader["ray_node_unit_name"]
    return {
        "venv": reader["rlinf_venv_dir"],
        "python": reader["rlinf_venv_dir"] + "/bin/python",
        "env_file": reader["rlinf_env_file"],
        "secret_env_file": secret_env_file(reader["rlinf_env_file"]),
        "token_file": reader["ray_auth_token_file"],
        "profile": reader["rlinf_env_profile_script"],
        "unit_file": f"{UNIT_DIR}/{unit}.service",
        "record": f"{STATE_DIR}/{unit}.json",
        "manifest": f"{STATE_DIR}/{unit}.manifest.json",
        # Written when the role created ray_node_user (listed in the manifest): purge then removes the user.
        "user_record": f"{STATE_DIR}/{unit}.user",
        "wheelhouse": reader["python_env_node_wheelhouse_dir"],
        "temp_dir": reader["ray_temp_dir"] or "/tmp/ray",
        "firewall_rules": reader["firewall_rules_file"],
        "firewall_unit_file": f"{UNIT_DIR}/{reader['firewall_unit_name']}.service",
        "code_wheel_dir": reader["code_sync_node_wheel_dir"],
        "code_record_dir": reader["code_sync_node_record_dir"],
        "launch_log_dir": reader["rlinf_launch_log_dir"],
        "launch_state_dir": LAUNCH_STATE_DIR,
        **metrics.PATHS,
    }


def secret_env_file(env_file: str) -> str:
    """rlinf_secret_env_vars' file, next to the env file (/etc/rlinf/rlinf.env: /etc/rlinf/rlinf.secret.env)."""
    root, ext = posixpath.splitext(env_file)
    return f"{root}.secret{ext}"


_TOPOLOGY_SAYS = re.compile(r"^host '([^']+)': ([a-z_]+)=")


def _without_repeats(problems: Sequence[Problem]) -> list[Problem]:
    """The topology's sentence on a host's variable (``ray_port='abc' is not a TCP port``) when the
    schema already judged that variable on that host: one sentence per mistake, the schema's."""
    judged = {(p.host, p.text.split("=", 1)[0].split(" ", 1)[0]) for p in problems if p.host}
    kept = []
    for problem in problems:
        said = _TOPOLOGY_SAYS.match(problem.text) if problem.host is None else None
        if said and (said.group(1), said.group(2)) in judged:
            continue
        kept.append(problem)
    return kept


def _cluster_scope(order: Sequence[str], readers: Mapping[str, _Reader], variables, problems) -> None:
    for var in variables:
        if var.scope != "cluster":
            continue
        seen: dict[str, list[str]] = {}
        for name in order:
            value = readers[name].get(var)
            seen.setdefault(json.dumps(value, sort_keys=True, default=str), []).append(name)
        if len(seen) > 1:
            if var.name in schema.SECRETS:
                detail = "differs between hosts (values hidden)"
            else:
                detail = "differs between hosts: " + "; ".join(
                    f"{', '.join(hosts[:3])}{' ...' if len(hosts) > 3 else ''} = {key}" for key, hosts in seen.items()
                )
            problems.append(
                Problem(
                    None, f"{var.name} {detail}; it must be one value for the whole cluster (set it in group_vars/all)."
                )
            )


def _shared_machine_paths(nodes: Sequence[dict], problems: list[Problem]) -> None:
    """Ray nodes on one machine: each needs its own shell snippet (the topology judged the rest)."""
    for machine, members in shared_machines(nodes).items():
        texts = same_value_problems(machine, members, lambda node: node["paths"]["profile"], PATH_VARS["profile"])
        problems.extend(Problem(None, text) for text in texts)


def _reserved_units(reader: _Reader, problems: list[Problem]) -> None:
    unit = reader["ray_node_unit_name"]
    ours = {
        unit: "ray_node_unit_name",
        reader["firewall_unit_name"]: "firewall_unit_name",
        "easytier": "(EasyTier)",
    }
    if len(ours) < 3:
        problems.append(
            Problem(
                reader.name,
                f"ray_node_unit_name={unit!r} and firewall_unit_name={reader['firewall_unit_name']!r} must "
                "differ from each other and from 'easytier' (the overlay's unit); give each its own name.",
            )
        )


def _secret_env_problems(reader: _Reader, problems: list[Problem]) -> None:
    """rlinf_secret_env_vars: never a managed name, never one rlinf_env_vars sets too (which would win
    is systemd's file order, not the operator's intent). Names are told, values never."""
    secret = reader["rlinf_secret_env_vars"]
    for text in managed_env_problems(secret, reader.name, "rlinf_secret_env_vars"):
        problems.append(Problem(None, text))
    both = sorted(set(secret) & set(reader["rlinf_env_vars"]))
    if both:
        problems.append(
            Problem(
                reader.name,
                f"rlinf_secret_env_vars and rlinf_env_vars both set {', '.join(both)}: keep each name in one of "
                "them (a secret only in rlinf_secret_env_vars, which no output shows).",
            )
        )


def _cpu_problems(node: dict, problems: list[Problem]) -> None:
    """RLinf places every actor with 1 CPU (Ray's default) and pins its managers to rank 0."""
    cpus = node["start_resources"].get("CPU")
    if node["role"] == "head" and cpus is not None and cpus < 1:
        problems.append(
            Problem(
                node["name"],
                f"ray_num_cpus={render.number_text(cpus)} on the head: RLinf pins its managers to rank 0 (the "
                "head) and every RLinf actor asks Ray for 1 CPU, so RLinf would wait forever to place them (Ray's "
                "docs suggest 0 CPUs on a head for other workloads); leave ray_num_cpus unset or set it to 1 or more.",
            )
        )


# The paths of ours that hold or are one file or directory each, in the order messages name them.
# Only EasyTier's base directory may hold others of them (its venv and config directory).
_OVERLAP_PATHS = (
    "rlinf_venv_dir",
    "rlinf_env_file",
    "ray_auth_token_file",
    "rlinf_env_profile_script",
    "python_env_node_wheelhouse_dir",
    "firewall_rules_file",
    "code_sync_node_wheel_dir",
    "code_sync_node_record_dir",
    "rlinf_launch_log_dir",
    "easytier_base_dir",
    "easytier_venv_dir",
    "easytier_config_dir",
)
_NESTED = {("easytier_base_dir", "easytier_venv_dir"), ("easytier_base_dir", "easytier_config_dir")}


def _path_overlaps(reader: _Reader, names: Sequence[str], problems: list[Problem]) -> None:
    """A path of ours must not be, hold or sit inside another (issue 25: a code-sync directory synced
    with --delete, a log or EasyTier directory purge removes, must not be the venv or /opt/rlinf)."""
    named = [(name, reader[name]) for name in _OVERLAP_PATHS if name in names and reader[name]]
    for i, (second, b) in enumerate(named):
        for first, a in named[:i]:
            inside = a.startswith(b + "/") or b.startswith(a + "/")
            if (a == b or inside) and not (inside and (first, second) in _NESTED and b.startswith(a + "/")):
                # One sentence per path: the first of ours it collides with.
                problems.append(
                    Problem(reader.name, f"{first}={a!r} and {second}={b!r} overlap; give each its own path.")
                )
                break


def _path_problem(reader: _Reader, name: str, value, check, problems: list[Problem]) -> bool:
    try:
        check()
    except Bad as err:
        problems.append(Problem(reader.name, f"{name}={describe(value)} {err.what}; {err.fix}."))
        return False
    return True


def _placed_paths(reader: _Reader, problems: list[Problem], member: bool, code_dest: str | None) -> None:
    """Where this host's paths sit (docs/security.md, "Paths the roles may write"): what the roles
    write, sync into, record or delete under rlinf_node_path_roots (EasyTier's when ``member``);
    on a Ray node, what Ray may write under the one sandbox rule (``code_dest``: the checkout,
    rlinf_code_dest or rlinf_src's path). ``code_dest`` None: an EasyTier member that runs no Ray."""
    roots = reader["rlinf_node_path_roots"]
    owned = list(schema.OWNED_MEMBER_PATHS) if member else []
    refused = set()
    if code_dest is not None:
        owned = list(schema.OWNED_PATHS) + owned
        profile = reader[schema.PROFILE_PATH]
        if not _path_problem(
            reader, schema.PROFILE_PATH, profile, lambda: rules.profile_script(profile, roots), problems
        ):
            refused.add(schema.PROFILE_PATH)
    for name in owned:
        path = reader[name]
        if path and not _path_problem(reader, name, path, lambda path=path: rules.owned_path(path, roots), problems):
            refused.add(name)
    placed = [*owned, schema.PROFILE_PATH] if code_dest is not None else owned
    _path_overlaps(reader, [name for name in placed if name not in refused], problems)
    if code_dest is None:
        return
    read_only = [reader[name] for name in schema.RAY_READ_ONLY if name not in schema.OWNED_MEMBER_PATHS or member]
    for name in schema.RAY_WRITABLE:
        value = reader[name]
        if name in refused:
            continue  # one problem per setting
        if name == "rlinf_code_dest" and not value and code_dest.startswith("/"):
            name, value = "rlinf_code_dest (empty: rlinf_src's path)", code_dest
            try:
                rules.node_path(value)
            except Bad as err:
                problems.append(Problem(reader.name, f"{name}={describe(value)} {err.what}; set rlinf_code_dest."))
                continue
        items = value if isinstance(value, list) else [value] if value else []
        for index, path in enumerate(items, start=1):
            where = f"item {index} ({describe(path)}) " if isinstance(value, list) else ""

            def check(path=path, where=where):
                try:
                    rules.ray_writable(path, read_only)
                except Bad as err:
                    raise Bad(where + err.what, err.fix) from None

            _path_problem(reader, name, value, check, problems)


def _names(reader: _Reader) -> list:
    try:
        return list(reader.raw)
    except Exception:  # an unusual hostvars object: nothing to scan
        return []


def _unknown_vars(groups: Mapping, order: Sequence[str], readers, hostvars, context: Mapping, problems) -> None:
    """Typo'd variables (our prefix, in no table) of every host we read, and of the extra vars."""
    scanned = dict(readers)
    for name in groups.get(BOOTSTRAP_GROUP) or []:
        if name not in scanned:
            scanned[name] = _Reader(name, hostvars, problems)
    problems.extend(
        unknown_vars.problems(
            {name: _names(reader) for name, reader in scanned.items()},
            {name: reader["rlinf_user_vars"] for name, reader in scanned.items()},
            context.get("extra_vars") or (),
            readers[order[0]]["rlinf_user_vars"],
        )
    )


class _OncePerHost(Mapping):
    """``hostvars`` with each host's variables gathered once: Ansible's HostVars computes a
    host's whole variable set on every ``hostvars[name]``."""

    def __init__(self, hostvars: Mapping):
        self._hostvars = hostvars
        self._seen: dict = {}

    def __getitem__(self, name):
        if name not in self._seen:
            self._seen[name] = self._hostvars[name]
        return self._seen[name]

    def __iter__(self):
        return iter(self._hostvars)

    def __len__(self):
        return len(self._hostvars)


def static_plan(groups: Mapping, hostvars: Mapping, context: Mapping | None = None) -> dict:
    """The plan of the whole inventory, before any host is contacted; raises PlanError."""
    context = dict(context or {})
    purpose = context.get("purpose", "site")
    problems: list[Problem] = []
    groups = groups or {}
    hostvars = _OncePerHost(hostvars if hostvars is not None else {})
    try:
        topo = cluster_nodes(groups, hostvars)
    except TopologyError as err:
        problems.extend(Problem(None, text) for text in err.problems)
        topo = []
    # With a broken topology the variables are still checked, in inventory order, so the
    # report holds every problem at once.
    order = [n["name"] for n in topo] or list(
        dict.fromkeys(list(groups.get("ray_head") or []) + list(groups.get("ray_workers") or []))
    )
    if not order:
        raise PlanError(problems or [Problem(None, "the inventory has no Ray nodes (ray_head, ray_workers).")])

    readers = {name: _Reader(name, hostvars, problems) for name in order}
    head_reader = readers[order[0]]
    for var in schema.VARS:
        for name in order:
            if var.scope != "run" or name == order[0]:
                readers[name].get(var)
    _cluster_scope(order, readers, schema.VARS, problems)
    problems[:] = _without_repeats(problems)
    _unknown_vars(groups, order, readers, hostvars, context, problems)

    overlay_on = head_reader["easytier_enabled"]
    members: dict[str, dict] = {}
    if overlay_on:
        bootstraps = list(dict.fromkeys(groups.get(BOOTSTRAP_GROUP) or []))
        for name in bootstraps:
            readers.setdefault(name, _Reader(name, hostvars, problems))
        member_names = list(dict.fromkeys(bootstraps + order))
        for var in schema.EASYTIER_VARS:
            for name in member_names:
                readers[name].get(var)
        for var in schema.EASYTIER_VARS:
            if var.name in (
                "easytier_network_name",
                "easytier_network_secret",
                "easytier_subnet",
                "easytier_allow_public_subnet",
                "easytier_dev_name",
            ):
                _cluster_scope(member_names, readers, [var._replace(scope="cluster")], problems)
        try:
            found = overlay_members(
                groups,
                hostvars,
                head_reader["easytier_subnet"],
                head_reader["easytier_dev_name"],
                head_reader["easytier_allow_public_subnet"],
            )
        except OverlayError as err:
            problems.extend(Problem(None, text) for text in err.problems)
        else:
            members = {m["name"]: m for m in found}
        for name in member_names:
            reader = readers[name]
            if name not in order:
                _placed_paths(reader, problems, member=True, code_dest=None)
            if reader["easytier_peer_protocol"] not in reader["easytier_listen_protocols"]:
                problems.append(
                    Problem(
                        name,
                        f"easytier_peer_protocol={reader['easytier_peer_protocol']!r} is not one of "
                        f"easytier_listen_protocols {reader['easytier_listen_protocols']}; add it there or change it.",
                    )
                )
            if reader["easytier_install_source"] == "archive" and not (
                reader["easytier_archive_path"] and reader["easytier_archive_sha256"]
            ):
                problems.append(
                    Problem(
                        name,
                        "easytier_install_source=archive needs easytier_archive_path and easytier_archive_sha256 "
                        "(64 hex digits); set both.",
                    )
                )
            if not reader["easytier_network_secret"]:
                problems.append(
                    Problem(
                        name,
                        "easytier_network_secret is empty; set a long random secret once for all members, encrypted "
                        "with `ansible-vault encrypt_string --name easytier_network_secret` (docs/cloud-edge.md).",
                    )
                )

    # Judged with a broken topology too: the report holds every problem at once.
    for name in order:
        code_dest = readers[name]["rlinf_code_dest"] or head_reader["rlinf_src"]
        _placed_paths(readers[name], problems, member=overlay_on, code_dest=code_dest)
        _reserved_units(readers[name], problems)
        _secret_env_problems(readers[name], problems)
    if not topo:
        raise PlanError(problems)
    nodes: dict[str, dict] = {}
    machine_owner: dict[str, str] = {}
    # Ray nodes of one machine share its venv (when they name the same one): the first by rank
    # installs it, so two pip runs never write one venv at once.
    venv_owner: dict[tuple, str] = {}
    for topo_node in topo:
        name = topo_node["name"]
        reader = readers[name]
        role = topo_node["role"]
        machine_owner.setdefault(topo_node["machine"], name)
        venv_owner.setdefault((topo_node["machine"], reader["rlinf_venv_dir"]), name)
        node = {
            "name": name,
            "rank": topo_node["rank"],
            "role": role,
            "address": topo_node["address"],
            "machine": topo_node["machine"],
            "machine_owner": machine_owner[topo_node["machine"]] == name,
            "installs_venv": venv_owner[(topo_node["machine"], reader["rlinf_venv_dir"])] == name,
            "node_groups": topo_node["node_groups"],
            "node_group": topo_node["node_group"],
            "gpus": topo_node["gpus"],
            "cuda_visible_devices": topo_node["cuda_visible_devices"],
            "rlinf_gpus": topo_node["rlinf_gpus"],
            "gpu_isolated": topo_node["gpu_isolated"],
            "machine_gpu_node": topo_node["machine_gpu_node"],
            "accelerator_type": topo_node["accelerator_type"],
            "unit": reader["ray_node_unit_name"],
            "python": reader["rlinf_python"],
            "paths": _node_paths(reader),
            "compared_files": [_node_paths(reader)[key] for key in COMPARED_FILES],
            "ports": _ports(reader, role),
            "start_resources": _start_resources(reader),
            "resources": _expected_resources(_start_resources(reader), topo_node),
            "object_store_memory": reader["ray_node_object_store_memory"],
            "dashboard": {
                "include": reader["ray_node_include_dashboard"],
                "host": reader["ray_node_dashboard_host"],
                "port": reader["ray_node_dashboard_port"],
            },
            "extra_args": reader["ray_node_extra_args"],
            "env_vars": reader["rlinf_env_vars"],
            # Names only: the values stay in the inventory (Vault) and go straight to a 0600 file.
            "secret_env_names": sorted(reader["rlinf_secret_env_vars"]),
            "device": reader["rlinf_comm_net_device"],
            "address_rule": _address_rule(reader, members.get(name), overlay_on),
            "code_dest": reader["rlinf_code_dest"] or head_reader["rlinf_src"],
            "firewall": {
                "table": reader["firewall_table"],
                "unit": reader["firewall_unit_name"],
                "nft": reader["firewall_nft_bin"],
                "allowed_sources": reader["rlinf_firewall_allowed_sources"],
                "client_sources": reader["rlinf_firewall_client_sources"],
                "manage_host": head_reader["rlinf_firewall_manage_host"],
            },
        }
        if head_reader["rlinf_code_sync"] == "rsync" and node["code_dest"]:
            node["paths"]["code_dest"] = node["code_dest"]
        node["service"] = sandbox.service_of(node["unit"], node["paths"], node["code_dest"], reader)
        # Who runs Ray on this node (ray_node_user, or root): the owner of what Ray writes.
        node["run_as"] = node["service"]["run_as"]
        _cpu_problems(node, problems)
        nodes[name] = node

    _shared_machine_paths(list(nodes.values()), problems)
    for node in nodes.values():
        # Purge keeps what another Ray node of the machine lists too (its token file).
        node["peer_manifests"] = [
            other["paths"]["manifest"]
            for other in nodes.values()
            if other is not node and other["machine"] == node["machine"]
        ]
    metrics_settings, metrics_problems = metrics.settings(
        order, head_reader["rlinf_metrics_host"], head_reader, head_reader["rlinf_metrics_enabled"]
    )
    problems.extend(Problem(None, text) for text in metrics_problems)
    for name, node in nodes.items():
        node["metrics"] = metrics.node_settings(node, metrics_settings, readers[name][metrics.NODE_EXPORTER_PORT_VAR])
    problems.extend(Problem(None, text) for text in metrics.port_problems(list(nodes.values()), metrics_settings))
    firewall_on = head_reader["rlinf_firewall_enabled"]
    if firewall_on:
        problems.extend(Problem(None, text) for text in firewall.port_problems(list(nodes.values())))

    cluster = {
        "head": order[0],
        "num_nodes": len(order),
        "ray_version": head_reader["rlinf_ray_version"],
        "requirements": _requirements(head_reader),
        # Installed without their declared dependencies (pip --no-deps); the venv must hold both sets.
        "no_deps_requirements": head_reader["python_env_no_deps_packages"],
        "pip_extra_args": head_reader["python_env_pip_extra_args"],
        "index_url": head_reader["python_env_index_url"],
        "require_hashes": head_reader["python_env_require_hashes"],
        "auth": head_reader["ray_auth_enabled"],
        "overlay": overlay_on,
        "overlay_dev": head_reader["easytier_dev_name"] if overlay_on else "",
        "firewall": firewall_on,
        "pin_ports": firewall_on,
        "metrics": metrics_settings,
        "code_sync": head_reader["rlinf_code_sync"],
        "src": head_reader["rlinf_src"],
        "join_batch": head_reader["ray_join_batch"],
        "head_wait_timeout": head_reader["ray_node_head_wait_timeout"],
        "check": {
            "timeout": head_reader["ray_check_timeout"],
            "poll_interval": head_reader["ray_check_poll_interval"],
            "expected_totals": head_reader["ray_check_expected_totals"],
        },
        "disk": {
            "warn_percent": head_reader["rlinf_disk_warn_percent"],
            "fail_percent": head_reader["rlinf_disk_fail_percent"],
            "venv_min_free_mib": head_reader["rlinf_disk_venv_min_free_mib"],
        },
        "members": [m["name"] for m in members.values()] if overlay_on else [],
    }
    cluster["controller"] = controller_paths(head_reader, context)
    # Whether the Vault variable is set (its value stays out of the plan).
    cluster["controller"]["vault_token"] = bool(head_reader["ray_auth_token"])
    if cluster["auth"] and rules.Version(cluster["ray_version"]) < rules.Version(MIN_RAY_AUTH):
        problems.append(
            Problem(
                None,
                f"rlinf_ray_version={cluster['ray_version']!r} has no token authentication (Ray has it from "
                f"{MIN_RAY_AUTH}) and ray_auth_enabled is true; pin {MIN_RAY_AUTH} or later, or turn "
                "ray_auth_enabled off (only behind a firewall: anyone who reaches Ray's ports runs code on every "
                "node).",
            )
        )
    if cluster["require_hashes"] and cluster["index_url"]:
        problems.append(
            Problem(
                None,
                "python_env_require_hashes is true and python_env_index_url is set: the lock holds the hashes of the "
                "wheelhouse the controller pushes, and with an index the nodes install from there; set one of them.",
            )
        )
    limits = cluster["disk"]
    if limits["fail_percent"] >= limits["warn_percent"] and limits["fail_percent"]:
        problems.append(
            Problem(
                None,
                f"rlinf_disk_fail_percent={limits['fail_percent']} is not below rlinf_disk_warn_percent="
                f"{limits['warn_percent']}: status would fail before it warns; set the fail level lower "
                "(defaults 5 and 20; 0 turns the check off).",
            )
        )
    if cluster["code_sync"] != "none" and not cluster["src"]:
        problems.append(
            Problem(
                None,
                f"rlinf_code_sync={cluster['code_sync']} needs rlinf_src, the absolute path of your RLinf checkout "
                "on the controller (for ray: on the head); set it.",
            )
        )
    elif cluster["src"] and not cluster["src"].startswith("/"):
        problems.append(Problem(None, f"rlinf_src={cluster['src']!r} is not an absolute path; write the full path."))

    run = {var.name: head_reader.get(var) for var in schema.VARS if var.scope == "run"}
    _purpose_checks(purpose, run, order, nodes, problems)
    removal = None
    if purpose == "remove-node" and not problems:
        # From here on the plan is the cluster without the removed node.
        name = run["node"].strip()
        removal = removal_plan(name, order, nodes, topo)
        order, nodes, topo = removal.pop("order"), removal.pop("nodes"), removal.pop("topo")
        removal["inventory_file"] = _host_value(readers[name], "inventory_file")
        removal["summary"] = removal_summary(removal, len(order))
        cluster["num_nodes"] = len(order)
        if metrics_settings["enabled"] and metrics_settings["host"] == name:
            problems.append(
                Problem(
                    None,
                    f"node={name!r} runs Prometheus (rlinf_metrics_host); name another Ray node in rlinf_metrics_host "
                    "and run site.yml first, or turn rlinf_metrics_enabled off.",
                )
            )
        # A machine whose first Ray node goes has a new one, which runs its node exporter.
        for node in nodes.values():
            node["metrics"] = metrics.node_settings(node, metrics_settings, node["metrics"]["node_exporter_port"])

    config_report = _config_check(run, topo, problems)
    _interpreter_paths(nodes, config_report.get("interpreters") or {})
    if problems:
        raise PlanError(problems)
    plan = {
        "version": PLAN_VERSION,
        "purpose": purpose,
        "order": order,
        "cluster": cluster,
        "run": {k: v for k, v in run.items() if k not in schema.SECRETS},
        "nodes": nodes,
        "warnings": topology_warnings(groups, hostvars)
        + config_report.get("warnings", [])
        + _job_dir_warnings(order, nodes, cluster["code_sync"]),
        "config_cluster": config_report.get("cluster"),
    }
    if removal is not None:
        plan["removal"] = removal
    if purpose == "launch":
        plan["launch"] = launch_names(run, nodes[order[0]], (context or {}).get("now") or datetime.now(UTC))
    return plan


def _job_dir_warnings(order: Sequence[str], nodes: Mapping[str, Mapping], code_sync: str) -> list[str]:
    """RLinf's scripts log and checkpoint under <checkout>/logs on every node. Only rsync puts a
    checkout (with a logs dir for whoever runs Ray) on every node; elsewhere a job creates it, which
    a ray_node_user cannot do outside the paths it owns."""
    if code_sync == "rsync":
        return []
    out = []
    for name in order:
        node = nodes[name]
        logs = node["service"]["job_dirs"][:1] if node["code_dest"] else []
        if node["service"]["user"] and logs and logs[0] not in node["service"]["create_dirs"]:
            out.append(
                f"host '{name}': RLinf's jobs write {logs[0]} (the checkout's logs), which exists only where the "
                f"checkout does (rlinf_code_sync: {code_sync}), and ray_node_user {node['service']['user']!r} "
                f"cannot create it: add {logs[0]} to ray_node_writable_paths, or use rlinf_code_sync: rsync."
            )
    return out


def _requirements(reader: _Reader) -> list[str]:
    extras = reader["python_env_ray_extras"]
    ray = "ray" + (f"[{','.join(extras)}]" if extras else "") + f"=={reader['rlinf_ray_version']}"
    return [ray, *reader["python_env_extra_packages"]]


def _address_rule(reader: _Reader, member: Mapping | None, overlay_on: bool) -> dict:
    if reader["ray_node_ip"]:
        return {"source": "ray_node_ip", "value": reader["ray_node_ip"]}
    if overlay_on and member is not None:
        return {"source": "overlay", "value": member["ipv4"], "device": reader["easytier_dev_name"]}
    if reader["rlinf_comm_net_device"]:
        return {"source": "rlinf_comm_net_device", "value": reader["rlinf_comm_net_device"]}
    return {"source": "default route", "value": ""}


def _config_check(run: Mapping, topo: Sequence[Mapping], problems: list[Problem]) -> dict:
    source = run["rlinf_config"] or (run["rlinf_cluster"] or None)
    if not source:
        return {}
    try:
        cluster, where = resolve_cluster(source)
    except RLinfConfigError as err:
        problems.extend(Problem(None, text) for text in err.problems)
        return {}
    try:
        report = check_cluster(cluster, list(topo) or None, where)
    except Exception as err:  # never a traceback
        problems.append(Problem(None, f"{where}: could not be checked ({type(err).__name__}: {err})."))
        return {}
    problems.extend(Problem(None, text) for text in report["problems"])
    report["cluster"] = _plain(dict(cluster))
    report["interpreters"] = env_config_interpreters(cluster, len(topo), where) if topo else {}
    return report


def _interpreter_paths(nodes: Mapping[str, dict], interpreters: Mapping[int, list]) -> None:
    """Each node's env_configs interpreters join the paths preflight reads (node_state), under keys
    ``env_config_python_<i>``; ``env_config_pythons`` says where each is set, for the message."""
    by_rank = {node["rank"]: node for node in nodes.values()}
    for rank, entries in interpreters.items():
        node = by_rank.get(rank)
        if node is None:
            continue
        node["env_config_pythons"] = {}
        for i, (path, where) in enumerate(entries):
            key = f"env_config_python_{i}"
            node["paths"][key] = path
            node["env_config_pythons"][key] = where
