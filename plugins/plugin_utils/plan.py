"""The cluster plan: every node's rank, paths, unit, ports and Ray settings, decided once.

Two stages, both on the controller, both linear in the number of hosts:

1. ``static_plan(groups, hostvars, context)``, before any host is contacted: reads every
   user-facing variable of every host once (plugins/plugin_utils/schema.py), checks it,
   computes ranks and node groups (topology.py), the overlay addresses (overlay.py), each
   node's paths, unit, ports and the rule that will pick its Ray address. Raises PlanError
   with every problem.
2. ``resolve(plan, probes, purpose)``, after each node was probed once (the read-only
   module rlinf.cluster.node_state): applies the address rule to the node's interfaces,
   checks what only a host can tell (systemd, apt, Python, paths we would write that exist
   and are not ours), and computes the environment file, the `ray start` arguments, the
   unit and the record each node keeps of these decisions (under /etc/rlinf/state/), so
   status, teardown, remove-node and launch read what site.yml decided.

Roles and playbooks read the plan (``rlinf_plan.nodes[inventory_hostname]``); Jinja formats
it, it does not decide. Controller-only.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from ansible_collections.rlinf.cluster.plugins.module_utils import (
    auth_token,
    disk,
    firewall,
    host_firewall,
    render,
    sandbox,
    wheelhouse,
)
from ansible_collections.rlinf.cluster.plugins.module_utils.managed_env_vars import managed_env_problems
from ansible_collections.rlinf.cluster.plugins.module_utils.overlay import OverlayError, overlay_members
from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, Problem
from ansible_collections.rlinf.cluster.plugins.module_utils.topology import (
    TopologyError,
    cluster_nodes,
    topology_warnings,
)
from ansible_collections.rlinf.cluster.plugins.plugin_utils import metrics, rules, schema, unknown_vars
from ansible_collections.rlinf.cluster.plugins.plugin_utils.rlinf_config import (
    RLinfConfigError,
    check_cluster,
    env_config_interpreters,
    resolve_cluster,
)
from ansible_collections.rlinf.cluster.plugins.plugin_utils.rules import Bad, describe

PLAN_VERSION = 1
STATE_DIR = "/etc/rlinf/state"
# Where launch.yml keeps a record of each run (and the outcome the run writes at its end).
LAUNCH_STATE_DIR = STATE_DIR + "/launches"
# The controller's state directory, next to the inventory.
STATE_SUBDIR = ".rlinf"
# Ray's token authentication (RAY_AUTH_MODE=token) appeared in this release.
MIN_RAY_AUTH = "2.52.0"
UNIT_DIR = "/etc/systemd/system"
# Directories rlinf-ansible owns by convention: an unrecorded file there is an earlier
# install's, adopted; anywhere else an unrecorded file at a path we would write is the
# operator's (or the system's) and refused.
PROJECT_DIRS = ("/etc/rlinf", "/opt/rlinf")
BOOTSTRAP_GROUP = "easytier_bootstrap"
MIN_PYTHON = (3, 10)
# Purposes that read each node's record of what site.yml decided, and those that decide and
# render every node's files again (remove-node renders the cluster without the removed node).
RECORD_PURPOSES = ("status", "teardown", "purge", "launch")
RENDER_PURPOSES = ("site", "remove-node")


# Stage 1 -------------------------------------------------------------------------------


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


def _plain(value):
    """Ansible's lazy/tagged containers and strings as plain Python data."""
    if isinstance(value, Mapping):
        return {(str(k) if isinstance(k, str) else k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return value


def _checkout_artifacts(context: Mapping) -> str:
    """artifacts/ next to the playbooks (a checkout's reports, and where earlier releases kept the token)."""
    base = str(context.get("playbook_dir") or ".")
    return base.rsplit("/", 1)[0] + "/artifacts" if base.endswith("/playbooks") else base + "/artifacts"


def _controller_defaults(context: Mapping, inventory_dir: str = "") -> dict:
    """Where the controller keeps things, unless set: state (the generated token, the wheelhouses,
    code-sync wheels) next to the inventory, so a checkout and an installed collection run against
    one inventory share one token. Reports go to artifacts/ next to the playbooks in a checkout;
    an installed collection's directory is not the operator's (and may be read-only), so there
    they go to artifacts/ next to the inventory, or in the working directory. An inventory
    without a directory (``-i a,b,``) keeps its state in artifacts/."""
    inventory_dir = str(context.get("inventory_dir") or inventory_dir or "").rstrip("/")
    if context.get("installed_collection"):
        base = inventory_dir or str(context.get("cwd") or ".").rstrip("/")
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


# The variables of these paths, for messages.
PATH_VARS = {
    "venv": "rlinf_venv_dir",
    "env_file": "rlinf_env_file",
    "secret_env_file": "rlinf_env_file",
    "token_file": "ray_auth_token_file",
    "profile": "rlinf_env_profile_script",
    "unit_file": "ray_node_unit_name",
    "record": "ray_node_unit_name",
    "manifest": "ray_node_unit_name",
    "user_record": "ray_node_unit_name",
    "wheelhouse": "python_env_node_wheelhouse_dir",
    "firewall_rules": "firewall_rules_file",
    "firewall_unit_file": "firewall_unit_name",
    "metrics_prometheus_config": "rlinf_metrics_enabled",
    "metrics_prometheus_dropin": "rlinf_metrics_enabled",
    "metrics_node_exporter_dropin": "rlinf_metrics_enabled",
}
# Paths that are one file we write (the rest are directories).
FILE_PATHS = (
    "env_file",
    "secret_env_file",
    "token_file",
    "profile",
    "unit_file",
    "record",
    "manifest",
    "user_record",
    "firewall_rules",
    "firewall_unit_file",
    *metrics.PATHS,
)


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
    """Ray nodes on one machine: each needs its own env file, shell snippet, unit and record."""
    machines: dict[str, list[dict]] = {}
    for node in nodes:
        machines.setdefault(node["machine"], []).append(node)
    for machine, members in machines.items():
        if len(members) < 2:
            continue
        for key in ("profile",):
            owners: dict[str, list[str]] = {}
            for node in members:
                owners.setdefault(node["paths"][key], []).append(node["name"])
            for path, names in owners.items():
                if len(names) > 1:
                    problems.append(
                        Problem(
                            None,
                            f"hosts {', '.join(names)}: they run Ray nodes on the same machine ({machine}) with the "
                            f"same {PATH_VARS[key]}={path!r}; give each host its own {PATH_VARS[key]}.",
                        )
                    )


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


LAUNCH_UNIT_PREFIX = "rlinf-launch-"


def launch_names(run: Mapping, head: Mapping, now: datetime) -> dict:
    """launch.yml's run on the head: its unit (rlinf_launch_name, or the UTC time), working directory
    (the head's checkout), script and log (rlinf_launch_log_dir), and its record and outcome files."""
    name = run["rlinf_launch_name"] or now.strftime("%Y%m%d-%H%M%S")
    if name.startswith(LAUNCH_UNIT_PREFIX):
        name = name[len(LAUNCH_UNIT_PREFIX) :]
    unit = LAUNCH_UNIT_PREFIX + re.sub(r"[^A-Za-z0-9_.-]", "-", name)
    logs, state = head["paths"]["launch_log_dir"], head["paths"]["launch_state_dir"]
    return {
        "unit": unit,
        "dir": re.sub(r"(.)/+$", r"\1", head["code_dest"]),
        "script": f"{logs}/{unit}.sh",
        "log": f"{logs}/{unit}.log",
        "record": f"{state}/{unit}.json",
        "outcome": f"{state}/{unit}.outcome.json",
    }


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


def removal_plan(name: str, order: Sequence[str], nodes: Mapping[str, dict], topo: Sequence[Mapping]) -> dict:
    """The cluster without worker ``name``: RLinf needs ranks 0..n-1 with no gap, so every rank
    above the removed one moves down by one; the nodes below it keep theirs (and their Ray).

    Returns the new ``order``, ``nodes`` and ``topo`` (for the RLinf config check), and what
    changed: ``node`` and ``rank`` (the removed one), ``node_plan`` (its plan entry, for
    stopping it), ``renumbered`` (``name``, ``from``, ``to``) and ``explicit`` (the renumbered
    hosts whose rank the inventory sets with ``rlinf_node_rank``: the operator changes those)."""
    removed_rank = nodes[name]["rank"]
    explicit_hosts = {t["name"] for t in topo if t.get("explicit_rank") is not None}
    kept: dict[str, dict] = {}
    renumbered = []
    for other in order:
        if other == name:
            continue
        node = dict(nodes[other])
        if node["rank"] > removed_rank:
            renumbered.append({"name": other, "from": node["rank"], "to": node["rank"] - 1})
            node["rank"] -= 1
        kept[other] = node
    # A machine whose first Ray node goes keeps an owner (it applies the machine's firewall).
    owners: set[str] = set()
    for other in sorted(kept, key=lambda n: kept[n]["rank"]):
        node = kept[other]
        node["machine_owner"] = node["machine"] not in owners
        owners.add(node["machine"])
    new_order = sorted(kept, key=lambda n: kept[n]["rank"])
    ranks = {n: kept[n]["rank"] for n in new_order}
    return {
        "node": name,
        "rank": removed_rank,
        "node_plan": dict(nodes[name]),
        "renumbered": renumbered,
        "explicit": [r["name"] for r in renumbered if r["name"] in explicit_hosts],
        "order": new_order,
        "nodes": kept,
        "topo": [dict(t, rank=ranks[t["name"]]) for t in topo if t["name"] != name],
    }


def removal_summary(removal: Mapping, remaining: int) -> list[str]:
    """What remove-node.yml does and the inventory change it needs, one line each."""
    name = removal["node"]
    lines = [f"{name} (rank {removal['rank']}) leaves the cluster: its Ray stops there, its files stay."]
    moved = removal["renumbered"]
    if moved:
        changes = ", ".join(f"{r['name']} {r['from']} -> {r['to']}" for r in moved)
        lines.append(
            f"Ranks above it move down so they stay 0..{remaining - 1}: {changes}; Ray restarts there (a rank is "
            "read at `ray start`). Every other node keeps its rank and its Ray."
        )
    else:
        lines.append("No other rank changes: no other node restarts.")
    where = f" in {removal['inventory_file']}" if removal.get("inventory_file") else ""
    change = f"Then change the inventory{where}: delete {name} from ray_workers"
    if removal["explicit"]:
        ranks = {r["name"]: r["to"] for r in moved}
        change += " and set " + ", ".join(f"rlinf_node_rank: {ranks[n]} on {n}" for n in removal["explicit"])
    lines.append(
        change + f"; and set cluster.num_nodes: {remaining} in your RLinf config (the block below). Until then "
        f"site.yml would add {name} back at rank {removal['rank']}"
        + (" and move the ranks above it up again." if moved else ".")
    )
    return lines


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


def _purpose_checks(purpose: str, run: Mapping, order: Sequence[str], nodes: Mapping, problems: list[Problem]) -> None:
    if purpose == "launch" and not run["rlinf_entry"].strip():
        problems.append(
            Problem(
                None,
                'rlinf_entry is empty; launch.yml needs the command to run on the head, e.g. -e rlinf_entry="bash '
                'examples/embodiment/run_embodiment.sh CONFIG".',
            )
        )
    if purpose == "launch" and order and not nodes[order[0]]["code_dest"].startswith("/"):
        problems.append(
            Problem(
                order[0],
                "launch.yml runs rlinf_entry in the RLinf checkout on the head: set rlinf_src (or rlinf_code_dest) "
                f"to its absolute path there (now {nodes[order[0]]['code_dest']!r}).",
            )
        )
    if purpose == "remove-node":
        node = run["node"].strip()
        if not node:
            problems.append(Problem(None, "name the node to remove: -e node=HOST (a worker of this inventory)."))
        elif node not in nodes:
            problems.append(
                Problem(None, f"node={node!r} is not a Ray node of this inventory (ray_head, ray_workers).")
            )
        elif node == order[0]:
            problems.append(
                Problem(
                    None, f"node={node!r} is the Ray head (rank 0); removing it ends the cluster: use teardown.yml."
                )
            )


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


# Stage 2 -------------------------------------------------------------------------------


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
    re-listed in the manifest after each install (``own_wheelhouse`` also before the push, so a
    failed install leaves it ours); ``adopt`` are an earlier install's to list now: a venv under
    our project directories, a wheelhouse only while it is empty (preflight refuses a full one
    that is not ours: it is somebody's data). On a machine several Ray nodes share, only the one
    that installs the venv owns it: purging another of them keeps it."""
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


def _host_firewall_problems(resolved: dict[str, dict], probes: Mapping[str, Mapping], problems: list[Problem]) -> None:
    """ufw or firewalld on a node that would drop the other nodes' Ray traffic; with
    rlinf_firewall_manage_host, the ufw rules this run adds instead (the firewall role)."""
    ips = {name: entry["ip"] for name, entry in resolved.items() if entry.get("ip")}
    for name, entry in resolved.items():
        found = probes[name].get("host_firewall") or {}
        peers = list(dict.fromkeys(ip for ip in ips.values() if ip != ips.get(name)))
        manage = entry["firewall"]["manage_host"]
        problems.extend(Problem(name, text) for text in host_firewall.problems(found, peers, manage))
        entry["host_firewall"] = {"ufw_add": host_firewall.closed_peers(found, peers) if manage else []}


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

    if purpose == "site":
        _host_firewall_problems(resolved, probes, problems)

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
        out["cluster"] = dict(out["cluster"], token=token)
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
    out["gpu_nodes"] = gpu_nodes(out)
    out["disk_warnings"] = disk_warnings
    out["purpose"] = purpose
    return out


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


def _recorded_head_port(probe: Mapping) -> int | None:
    """The GCS port the head's Ray was started with (its record), which status and teardown ask even
    when today's inventory names another one not yet applied."""
    port = ((probe.get("record") or {}).get("ports") or {}).get("ray_port")
    return port if isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536 else None


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
