"""A whole ``cluster:`` block checked against the inventory's nodes (check_cluster): every field,
``node_groups`` (``env_configs``, ``hardware``, robots), profiling, and where each component
would be placed, so mistakes RLinf only finds when workers are placed are found here. Every
problem is one sentence naming the field and the fix; all problems are collected."""

from __future__ import annotations

import difflib
import ipaddress
import json
from collections.abc import Mapping, Sequence

from ansible_collections.rlinf.cluster.plugins.module_utils.topology import RESERVED_LABELS, as_bool, format_ranks
from ansible_collections.rlinf.cluster.plugins.plugin_utils.rlinf_config.grammar import (
    ACCELERATOR,
    ALL_ROBOT_FIELDS,
    CLUSTER_KEYS,
    DEFAULT_GROUP,
    ENV_CONFIG_KEYS,
    GIMARM_VARIANTS,
    GROUP_KEYS,
    HARDWARE_CONFIG_KEYS,
    HARDWARE_KEYS,
    HARDWARE_TYPES,
    IP_FIELDS,
    NODE_GROUP,
    PROFILE_BACKENDS,
    ROBOT_COUNT_FIELDS,
    SYSTEMD_DEFAULT_PATH,
    Group,
    PlacementError,
    RankError,
    UnknownResources,
    hardware_kind,
    parse_placement,
    parse_rank_config,
    place,
    process_resources,
    rank_overlaps,
)


def _unknown_keys(mapping: Mapping, valid: Sequence[str]) -> list[str]:
    return [str(k) for k in mapping if str(k) not in valid]


def _suggest(key: str, valid: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, valid, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ranks_field(value, available, where: str, problems: list[str], rank_type="node"):
    """Parse a node_ranks value as RLinf does; report lists, bad syntax, range, repeats."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        problems.append(
            f"{where}: a YAML list ({list(value)}) is not accepted by RLinf; write a string such as "
            f"'{format_ranks([v for v in value if _is_int(v)]) or '0-1'}'."
        )
        return None
    if isinstance(value, (Mapping, bool)) or value is None:
        problems.append(f"{where}: {value!r} is not a rank expression; write 'all', 'N', 'N-M' or 'N,M-K'.")
        return None
    try:
        ranks = parse_rank_config(value, available, rank_type)
    except RankError as err:
        fix = f"use ranks within 0..{max(available)}" if available and err.kind == "range" else "fix the expression"
        problems.append(f"{where}: {err}; {fix}.")
        return None
    repeated = rank_overlaps(value)
    if repeated:
        problems.append(
            f"{where}: '{value}' names rank(s) {format_ranks(repeated)} more than once; list each rank once."
        )
    return ranks


def _check_env_configs(group_where, label, env_configs, group_ranks, problems):
    if not isinstance(env_configs, Sequence) or isinstance(env_configs, str):
        problems.append(
            f"{group_where}: env_configs must be a list of mappings (each starting with '- node_ranks:'); "
            "add the missing '-'."
        )
        return
    covered: set[int] = set()
    env_keys: set[str] = set()
    for j, env in enumerate(env_configs):
        where = f"{group_where} env_configs[{j}]"
        if not isinstance(env, Mapping):
            problems.append(f"{where}: is {type(env).__name__}, not a mapping; write node_ranks/env_vars under it.")
            continue
        for key in _unknown_keys(env, ENV_CONFIG_KEYS):
            problems.append(
                f"{where}: unknown key '{key}'{_suggest(key, ENV_CONFIG_KEYS)}; RLinf accepts only "
                f"{', '.join(ENV_CONFIG_KEYS)}."
            )
        if "node_ranks" not in env:
            problems.append(f"{where}: node_ranks is missing; say which nodes of group '{label}' it applies to.")
        elif group_ranks is not None:
            if not group_ranks:
                problems.append(f"{where}: group '{label}' has no nodes, so env_configs cannot apply.")
            else:
                ranks = _ranks_field(env["node_ranks"], group_ranks, f"{where} node_ranks", problems)
                if ranks is not None:
                    outside = sorted(set(ranks) - set(group_ranks))
                    if outside:
                        problems.append(
                            f"{where} node_ranks: rank(s) {format_ranks(outside)} are not in group '{label}' "
                            f"(node_ranks {format_ranks(group_ranks)}); use ranks of the group."
                        )
                    again = sorted(covered.intersection(ranks))
                    if again:
                        problems.append(
                            f"{where} node_ranks: rank(s) {format_ranks(again)} already have an "
                            "env_config in "
                            f"group '{label}'; give each node one env_config."
                        )
                    covered.update(ranks)
        env_vars = env.get("env_vars")
        if env_vars is not None:
            if not isinstance(env_vars, Sequence) or isinstance(env_vars, str):
                problems.append(f"{where}: env_vars must be a list of one-key mappings ('- NAME: value'); add the '-'.")
            else:
                for item in env_vars:
                    if not isinstance(item, Mapping) or len(item) != 1:
                        problems.append(
                            f"{where}: env_vars entry {item!r} must be a mapping with exactly one key, "
                            "written '- NAME: value'."
                        )
                        continue
                    key = str(next(iter(item)))
                    if key in env_keys:
                        problems.append(f"{where}: env var '{key}' is set twice in group '{label}'; set it once.")
                    env_keys.add(key)
        path = env.get("python_interpreter_path")
        if path is not None and (not isinstance(path, str) or not path.startswith("/")):
            problems.append(
                f"{where}: python_interpreter_path {path!r} must be an absolute path to a Python that "
                "exists on those nodes (e.g. /opt/rlinf/venv/bin/python)."
            )


def _is_ip(value) -> bool:
    """What RLinf's robot configs accept: ``ipaddress.ip_address`` (an int too, not a bool)."""
    if isinstance(value, bool):
        return False
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _env_count(raw) -> int:
    """Robots RobotAutoConfig creates from one identifier env var: its comma-separated items."""
    return len(str(raw).split(","))


def _robotics_count_differs(hw_type, env, found) -> str | None:
    """How the two sizing rules count robots created from env vars, when they disagree.

    Identifiers that disagree among themselves are refused by both (the refactor takes the
    largest count, then raises on the identifier with fewer values), so only a count of 0 or 1
    by the identifiers can differ."""
    if len(set(found.values())) > 1:
        return None
    old = next(iter(found.values()), 0)
    scalars = {
        field.upper(): _env_count(env[field.upper()])
        for field, kind in ALL_ROBOT_FIELDS.get(hw_type, {}).items()
        if kind != "list" and not field.endswith("_node_rank") and field.upper() in env
    }
    new = max(scalars.values(), default=0)
    if new == old:
        return None
    largest = max(scalars, key=lambda var: scalars[var])
    identifiers = " and ".join(f.upper() for f in ROBOT_COUNT_FIELDS.get(hw_type, ()))
    if old == 0:
        before = f"RLinf 0.3.0 (and main a3816b5) counts robots by {identifiers}, unset here, so it finds none"
        after = f"its robotics refactor (PR #1481) creates {new} from {largest}={env[largest]!r}"
    else:
        before = f"RLinf 0.3.0 (and main a3816b5) creates {old} from {identifiers} and gives it {largest} whole"
        after = (
            f"its robotics refactor (PR #1481) counts {new} from {largest}={env[largest]!r} (the largest comma "
            f"count of any scalar field) and raises because {identifiers} has {old} value(s)"
        )
    return f"{before}, {after}"


def _robot_units(where, hw_type, ranks, yaml_units, nodes_by_rank, problems, warnings):
    """Robots RLinf finds on each node of a hardware group: YAML configs, else created from env vars.

    ``rlinf/scheduler/hardware/robots/*.py`` enumerate on every node with the node's YAML
    configs of that type; RobotAutoConfig fills their unset fields from upper-cased env vars
    and, with no YAML config for the node, creates one robot per comma-separated value of the
    type's identifier env var(s). The env is the one ``ray start`` froze on the node: under the
    rlinf-ray unit, exactly ``rlinf_env_vars`` (plus what the env file manages). Returns a list
    per rank (None: unknown, because the inventory was not given).
    """
    count_fields = ROBOT_COUNT_FIELDS.get(hw_type, ())
    count_vars = [f.upper() for f in count_fields]
    per_node: list[int | None] = []
    for rank in ranks:
        node = nodes_by_rank.get(rank)
        env = (node or {}).get("env_vars") or {}
        host = f" (host {node['name']})" if node else ""
        n = yaml_units.get(rank, 0)
        created = n == 0
        if created:
            if not count_fields:
                warnings.append(f"{where}: node rank {rank} has no {hw_type} config and adds no resources.")
                per_node.append(0)
                continue
            found = {var: _env_count(env[var]) for var in count_vars if var in env}
            differ = _robotics_count_differs(hw_type, env, found) if node is not None else None
            if differ:
                warnings.append(
                    f"{where}: rlinf_env_vars of rank {rank}{host} give a {hw_type} count that depends on the RLinf "
                    f"version: {differ}; give every {hw_type} env var there one comma-separated value per robot "
                    "so both agree. Its resource ranks are not checked."
                )
                per_node.append(None)
                continue
            if len(set(found.values())) > 1:
                counts = ", ".join(f"{var} has {c}" for var, c in found.items())
                problems.append(
                    f"{where}: rlinf_env_vars of rank {rank}{host} give different robot counts ({counts}); RLinf "
                    f"raises on that: give {' and '.join(count_vars)} one comma-separated value per robot each."
                )
                per_node.append(None)
                continue
            if not found:
                needed = " and ".join(count_vars)
                if node is None:
                    warnings.append(
                        f"{where}: node rank {rank} has no {hw_type} config, so RLinf creates its {hw_type} "
                        f"robots from {needed} (one comma-separated value per robot) in that node's Ray "
                        "environment (rlinf_env_vars); without them it has none."
                    )
                    per_node.append(None)
                else:
                    warnings.append(
                        f"{where}: node rank {rank}{host} has no {hw_type} config and its rlinf_env_vars set no "
                        f"{needed}, so RLinf finds no {hw_type} there; set {needed} in rlinf_env_vars of "
                        f"{node['name']} (one comma-separated value per robot) or add a config with node_rank {rank}."
                    )
                    per_node.append(0)
                continue
            n = next(iter(found.values()))
        per_node.append(n)
        # Every field env var RLinf reads on this node must hold one value per robot there.
        for field, kind in ALL_ROBOT_FIELDS.get(hw_type, {}).items():
            var = field.upper()
            if var not in env or field.endswith("_node_rank"):
                continue
            chunks = [c.strip() for c in str(env[var]).split(",")] if n > 1 else [str(env[var]).strip()]
            if len(chunks) != n:
                problems.append(
                    f"{where}: {var} in rlinf_env_vars of rank {rank}{host} has {len(chunks)} comma-separated "
                    f"value(s) for {n} {hw_type} robot(s) there; RLinf raises unless it gives one per robot."
                )
            elif created and kind == "int" and not all(_is_int_text(c) for c in chunks):
                problems.append(
                    f"{where}: {var}={env[var]!r} in rlinf_env_vars of rank {rank}{host} is not an integer; RLinf "
                    f"raises on it (it parses {field} as int): write a number."
                )
    return per_node


def _is_int_text(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _check_hardware(group_where, label, hardware, group_ranks, problems, hw_seen):
    """Returns {node_rank: units} for the group's hardware, or None when unusable."""
    if not isinstance(hardware, Mapping):
        problems.append(f"{group_where}: hardware must be a mapping with 'type' and 'configs'.")
        return None, None
    for key in _unknown_keys(hardware, HARDWARE_KEYS):
        problems.append(
            f"{group_where} hardware: unknown key '{key}'{_suggest(key, HARDWARE_KEYS)}; RLinf accepts only "
            "type and configs."
        )
    hw_type = hardware.get("type")
    if hw_type is None:
        problems.append(f"{group_where} hardware: 'type' is missing; set one of {', '.join(HARDWARE_TYPES)}.")
        return None, None
    hw_type = str(hw_type)
    if hw_type not in HARDWARE_TYPES:
        exact = [t for t in HARDWARE_TYPES if t.lower() == hw_type.lower()]
        hint = f" (types are case-sensitive: write '{exact[0]}')" if exact else ""
        problems.append(
            f"{group_where} hardware: type '{hw_type}' is not supported{hint}; use one of {', '.join(HARDWARE_TYPES)}."
        )
        return None, None
    configs = hardware.get("configs")
    if configs is None:
        problems.append(
            f"{group_where} hardware: 'configs' is missing; add one entry per {hw_type} with its node_rank."
        )
        return hw_type, None
    if not isinstance(configs, Sequence) or isinstance(configs, str):
        problems.append(f"{group_where} hardware: configs must be a list of mappings, one per {hw_type}.")
        return hw_type, None
    valid = ("node_rank", *HARDWARE_CONFIG_KEYS[hw_type])
    units: dict[int, int] = {}
    seen_dumps: set[str] = set()
    for j, cfg in enumerate(configs):
        where = f"{group_where} hardware configs[{j}]"
        if not isinstance(cfg, Mapping):
            problems.append(f"{where}: is {type(cfg).__name__}, not a mapping with node_rank.")
            continue
        for key in _unknown_keys(cfg, valid):
            problems.append(f"{where}: unknown key '{key}'{_suggest(key, valid)} for a {hw_type}; remove or rename it.")
        dump = json.dumps({str(k): v for k, v in cfg.items()}, sort_keys=True, default=str)
        if dump in seen_dumps:
            problems.append(f"{where}: duplicates an earlier config of group '{label}'; remove one.")
        seen_dumps.add(dump)
        if "node_rank" not in cfg:
            problems.append(f"{where}: node_rank is missing; say which node this {hw_type} is attached to.")
            continue
        rank = cfg["node_rank"]
        if not _is_int(rank):
            problems.append(f"{where}: node_rank {rank!r} must be an integer (not a string or list).")
            continue
        if group_ranks is not None and rank not in group_ranks:
            problems.append(
                f"{where}: node_rank {rank} is not in group '{label}' (node_ranks "
                f"{format_ranks(group_ranks) or 'none'}); use a node of the group."
            )
            continue
        for field in IP_FIELDS.get(hw_type, ()):
            value = cfg.get(field)
            if value is not None and not _is_ip(value):
                problems.append(
                    f"{where}: {field} {value!r} is not an IP address; RLinf's {hw_type} config rejects it "
                    f"(replace the placeholder, or leave {field} out to take it from the node's "
                    f"{field.upper()} env var)."
                )
        if hw_type == "GimArm" and cfg.get("arm_variant", GIMARM_VARIANTS[1]) not in GIMARM_VARIANTS:
            problems.append(
                f"{where}: arm_variant {cfg['arm_variant']!r} is not one RLinf's GimArm config accepts; use "
                f"{' or '.join(GIMARM_VARIANTS)}."
            )
        other = hw_seen.setdefault((rank, hw_type), label)
        if other != label:
            problems.append(
                f"{where}: node rank {rank} already has a {hw_type} config in group '{other}'; define each "
                "node's hardware of one type in one group."
            )
        units[rank] = units.get(rank, 0) + 1
    return hw_type, units


def check_cluster(cluster, nodes: Sequence[Mapping] | None = None, source: str = "cluster") -> dict:
    """Check a ``cluster:`` mapping; with ``nodes`` (topology.cluster_nodes) cross-check the inventory.

    Returns ``{"problems": [...], "warnings": [...]}``. Problems are what RLinf rejects (or
    hangs on) and what disagrees with the inventory; warnings are ignored keys, unknown
    GPU counts and the like.
    """
    problems: list[str] = []
    warnings: list[str] = []
    if not isinstance(cluster, Mapping):
        return {"problems": [f"{source}: is {type(cluster).__name__}, not a mapping."], "warnings": []}

    for key in _unknown_keys(cluster, CLUSTER_KEYS):
        warnings.append(f"{source}: key '{key}'{_suggest(key, CLUSTER_KEYS)} is ignored by RLinf at the cluster level.")
    for key, switch in (("net_emulation", "enabled"), ("tracer", "enable")):
        value = cluster.get(key)
        if value is None:
            continue
        if not isinstance(value, Mapping):
            problems.append(
                f"{source}: {key} is {type(value).__name__}; RLinf reads {key}.{switch} from it, so make it a "
                f"mapping such as {{{switch}: true}}."
            )
        elif key == "tracer" and "enabled" in value and "enable" not in value:
            warnings.append(
                f"{source}: tracer.enabled is not read by RLinf (cluster.py reads tracer.enable); rename it to enable."
            )
    if cluster.get("profiling") is not None:
        _check_profiling(cluster["profiling"], source, nodes, problems, warnings)

    # num_nodes
    num_nodes = None
    if "num_nodes" not in cluster:
        problems.append(f"{source}: num_nodes is missing; set it to the number of Ray nodes.")
    elif not _is_int(cluster["num_nodes"]) or cluster["num_nodes"] <= 0:
        value = cluster["num_nodes"]
        hint = " (an OmegaConf interpolation cannot be checked here; write the number)" if "${" in str(value) else ""
        problems.append(f"{source}: num_nodes={value!r} must be a positive integer{hint}.")
    else:
        num_nodes = cluster["num_nodes"]
    if nodes is not None and num_nodes is not None and num_nodes != len(nodes):
        if num_nodes < len(nodes):
            problems.append(
                f"{source}: num_nodes={num_nodes} but the inventory has {len(nodes)} Ray nodes; RLinf would "
                f"silently leave ranks {format_ranks(range(num_nodes, len(nodes)))} unused: set num_nodes to "
                f"{len(nodes)} or remove hosts."
            )
        else:
            problems.append(
                f"{source}: num_nodes={num_nodes} but the inventory has {len(nodes)} Ray nodes; RLinf would "
                f"wait forever for the missing nodes: set num_nodes to {len(nodes)} or add hosts."
            )
    total = num_nodes if num_nodes is not None else (len(nodes) if nodes is not None else None)
    all_ranks = list(range(total)) if total is not None else None

    # node_groups
    groups: dict[str, Group] = {}
    broken: set[str] = set()  # labels whose node_ranks are already reported
    config_groups: list[tuple[str, list[int] | None]] = []
    raw_groups = cluster.get("node_groups")
    hw_seen: dict = {}
    # What RLinf counts (topology's rlinf_gpus), not what Ray's GPU resource holds.
    gpus_by_rank = {n["rank"]: n.get("rlinf_gpus", n.get("gpus")) for n in nodes} if nodes is not None else {}
    shared = _shared_gpu_machines(nodes or [])
    for rank, (_machine, _members, gpu_rank) in shared.items():
        gpus_by_rank[rank] = gpus_by_rank.get(gpu_rank)  # NVML counts the machine's GPUs on each of them
    nodes_by_rank = {n["rank"]: n for n in nodes} if nodes is not None else {}
    if raw_groups is not None:
        if not isinstance(raw_groups, Sequence) or isinstance(raw_groups, str):
            problems.append(f"{source}: node_groups must be a list of mappings, each starting with '- label:'.")
            raw_groups = []
        labels_seen: dict[str, int] = {}
        for i, group in enumerate(raw_groups):
            where = f"{source} node_groups[{i}]"
            if not isinstance(group, Mapping):
                problems.append(f"{where}: is {type(group).__name__}, not a mapping with label and node_ranks.")
                continue
            label = str(group["label"]) if "label" in group else None
            if label is not None:
                where = f"{source} node_groups[{i}] '{label}'"
            for key in _unknown_keys(group, GROUP_KEYS):
                problems.append(
                    f"{where}: unknown key '{key}'{_suggest(key, GROUP_KEYS)}; RLinf fails on it, "
                    "accepted keys "
                    f"are {', '.join(GROUP_KEYS)}."
                )
            if label is None:
                problems.append(f"{where}: label is missing; give the group a unique label.")
            elif label in RESERVED_LABELS:
                problems.append(f"{where}: label '{label}' is reserved by RLinf (cluster, node); choose another.")
            elif label in labels_seen:
                problems.append(
                    f"{where}: label '{label}' is already used by node_groups[{labels_seen[label]}]; "
                    "labels must "
                    "be unique."
                )
            elif "," in label:
                problems.append(f"{where}: label '{label}' contains a comma, which node_group splits on; rename it.")
            if label is not None:
                labels_seen.setdefault(label, i)
            ranks = None
            if "node_ranks" not in group:
                problems.append(f"{where}: node_ranks is missing; set the node ranks of this group, e.g. '0-1'.")
            elif all_ranks is not None:
                ranks = _ranks_field(group["node_ranks"], all_ranks, f"{where} node_ranks", problems)
                if ranks == []:
                    warnings.append(f"{where}: node_ranks is empty, so RLinf drops the group.")
            if "hardware" in group and group.get("hardware_type") is not None:
                problems.append(f"{where}: set either hardware or hardware_type, not both (hardware sets the type).")
            ignore = group.get("ignore_hardware", False)
            if not isinstance(ignore, bool):
                problems.append(f"{where}: ignore_hardware={ignore!r} must be true or false.")
                ignore = False
            if ignore and group.get("hardware") is not None:
                problems.append(f"{where}: ignore_hardware is true but hardware is set; drop one of them.")
            if group.get("env_configs") is not None:
                _check_env_configs(where, label, group["env_configs"], ranks, problems)
            hw_type, units = None, None
            if group.get("hardware") is not None:
                hw_type, units = _check_hardware(where, label, group["hardware"], ranks, problems, hw_seen)
            elif group.get("hardware_type") is not None:
                hw_type = str(group["hardware_type"])
                warnings.append(
                    f"{where}: hardware_type '{hw_type}' without hardware configs; its resource count is "
                    "detected on the nodes and not checked here."
                )
                units = None
            config_groups.append((label, ranks))
            if label is not None and ranks is None:
                broken.add(label)
            if label is None or ranks is None or not ranks or label in groups:
                continue
            if hw_type is not None:
                per_node = None
                if units is not None:
                    per_node = _robot_units(where, hw_type, ranks, units, nodes_by_rank, problems, warnings)
                groups[label] = Group(label, ranks, hw_type, per_node)
            elif ignore:
                groups[label] = Group(label, ranks, None, None)
            else:
                groups[label] = _accelerator_group(label, ranks, gpus_by_rank, nodes is not None)

    if all_ranks is not None:
        groups.setdefault(DEFAULT_GROUP, _accelerator_group(DEFAULT_GROUP, all_ranks, gpus_by_rank, nodes is not None))
        groups.setdefault(NODE_GROUP, Group(NODE_GROUP, all_ranks, None, None))

    # inventory cross-check
    if nodes is not None:
        from_inventory: dict[str, list[int]] = {}
        hosts_by_rank = {n["rank"]: n["name"] for n in nodes}
        for node in sorted(nodes, key=lambda n: n["rank"]):
            for label in node.get("node_groups") or []:
                from_inventory.setdefault(label, []).append(node["rank"])
        configured = {label for label, _group in config_groups if label is not None}
        for label, ranks in config_groups:
            if label is None or ranks is None or label not in from_inventory:
                continue
            want = from_inventory[label]
            if sorted(ranks) != want:
                hosts = ", ".join(hosts_by_rank[r] for r in want)
                problems.append(
                    f"{source} node_groups '{label}': node_ranks '{format_ranks(ranks)}' but the inventory's "
                    f"'{label}' hosts ({hosts}) have ranks '{format_ranks(want)}'; set node_ranks to "
                    f"'{format_ranks(want)}' or move the hosts."
                )
        by_inventory_group: dict[str, list[int]] = {}
        for node in sorted(nodes, key=lambda n: n["rank"]):
            for group_name in node.get("inventory_groups") or []:
                by_inventory_group.setdefault(group_name, []).append(node["rank"])
        for label, ranks in config_groups:
            if label is None or ranks is None or label in from_inventory or label not in by_inventory_group:
                continue
            want = by_inventory_group[label]
            if sorted(ranks) != want:
                hosts = ", ".join(hosts_by_rank[r] for r in want)
                problems.append(
                    f"{source} node_groups '{label}': node_ranks '{format_ranks(ranks)}' but the inventory group "
                    f"'{label}' holds {hosts} (ranks '{format_ranks(want)}'); set node_ranks to "
                    f"'{format_ranks(want)}', or rename the label if it is not that group."
                )
        for label in from_inventory:
            if label not in configured:
                warnings.append(
                    f"inventory node group '{label}' has no entry in {source} node_groups; add it to place "
                    "components on it."
                )

    # component_placement
    if "component_placement" not in cluster:
        problems.append(
            f"{source}: component_placement is missing; RLinf's ClusterConfig requires it (a field without a "
            "default, so from_dict_cfg fails with \"Missing fields ['component_placement']\") and its runners "
            "place every component from it: add it (e.g. 'actor,rollout: all')."
        )
    else:
        _check_placements(
            cluster["component_placement"],
            groups,
            all_ranks is not None and not broken,
            source,
            problems,
            warnings,
            nodes is not None,
            shared=shared,
            hosts={n["rank"]: n["name"] for n in nodes or []},
            cpus={n["rank"]: _cpu_count(n.get("num_cpus")) for n in nodes or []},
        )
    return {"problems": problems, "warnings": warnings}


def _cpu_count(value) -> float | None:
    try:
        return None if value is None or isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        return None  # the schema refuses it, naming the variable


def env_config_interpreters(cluster, num_nodes: int, source: str = "cluster") -> dict[int, list[tuple[str, str]]]:
    """Node rank -> [(python_interpreter_path, where it is set)] of the config's env_configs.

    RLinf asserts each exists on its node (rlinf/scheduler/cluster/node.py, the node info actor:
    ``assert os.path.exists(path)`` for every path ClusterConfig.get_node_python_interpreter_path_by_rank
    gives), so the plan asks each node for them at preflight. Malformed entries are left out:
    check_cluster reports them.
    """
    out: dict[int, list[tuple[str, str]]] = {}
    groups = cluster.get("node_groups") if isinstance(cluster, Mapping) else None
    if not _is_list(groups):
        return out
    all_ranks = list(range(num_nodes))
    for i, group in enumerate(groups):
        if not isinstance(group, Mapping) or not _is_list(group.get("env_configs")):
            continue
        label = group.get("label")
        try:
            group_ranks = parse_rank_config(group.get("node_ranks"), all_ranks)
        except (RankError, ValueError, TypeError):
            continue
        for j, env in enumerate(group["env_configs"]):
            path = env.get("python_interpreter_path") if isinstance(env, Mapping) else None
            if not isinstance(path, str) or not path.startswith("/"):
                continue
            try:
                ranks = parse_rank_config(env.get("node_ranks"), group_ranks)
            except (RankError, ValueError, TypeError):
                continue
            where = f"{source} node_groups[{i}]" + (f" '{label}'" if label is not None else "") + f" env_configs[{j}]"
            for rank in ranks:
                if rank in group_ranks and (path, where) not in out.get(rank, []):
                    out.setdefault(rank, []).append((path, where))
    return out


def _shared_gpu_machines(nodes: Sequence[Mapping]) -> dict[int, tuple[str, list[int], int]]:
    """Rank -> (machine, ranks of its Ray nodes, rank of the one holding its GPUs), for the Ray nodes
    of a GPU machine that topology accepts (RLinf's compute + control layout)."""
    by_name = {n["name"]: n for n in nodes}
    out = {}
    for node in nodes:
        gpu_node = by_name.get(node.get("machine_gpu_node") or "")
        if not node.get("machine_peers") or gpu_node is None:
            continue
        members = sorted([node["rank"], *(by_name[p]["rank"] for p in node["machine_peers"] if p in by_name)])
        out[node["rank"]] = (node["machine"], members, gpu_node["rank"])
    return out


def _shared_machine_placement(rank_map, selected, shared, hosts) -> list[str]:
    """A GPU placement whose workers land on several Ray nodes of one machine: RLinf counts the
    machine's GPUs on each, so their workers would use the same GPUs."""
    if not shared:
        return []
    owners: list[int | None] = []
    for g in selected:
        for node_rank, units in zip(g.node_ranks, g.units or [], strict=False):
            owners.extend([node_rank if g.hw_type == ACCELERATOR else None] * (units or 0))
    touched = {owners[r] for res in process_resources(rank_map).values() for r in res if r < len(owners)}
    out = []
    for machine, members, gpu_rank in {v[0]: v for v in shared.values()}.values():
        on = sorted(r for r in touched if r in members)
        if len(on) < 2:
            continue
        names = ", ".join(f"{hosts.get(r, r)} (rank {r})" for r in on)
        gpu_host = hosts.get(gpu_rank, gpu_rank)
        out.append(
            f"puts GPU workers on {names}, Ray nodes of one machine ({machine}); RLinf counts the machine's GPUs "
            "(NVML) on each of them, so their workers would run on the same GPUs: place GPU components on a node "
            f"group that holds only {gpu_host} (node_groups: - label: gpu, node_ranks: {gpu_rank}; then "
            "node_group: gpu here)"
        )
    return out


def _check_profiling(profiling, source, nodes, problems, warnings):
    """cluster.profiling as ClusterConfig.__post_init__ and the backend's ProfileConfig check it."""
    where = f"{source} profiling"
    known = ", ".join(sorted(PROFILE_BACKENDS))
    if not isinstance(profiling, Mapping):
        problems.append(f"{where}: is {type(profiling).__name__}; RLinf needs a mapping with backend ({known}).")
        return
    backend = str(profiling.get("backend", "") or "")
    if not backend:
        problems.append(f"{where}: backend is missing; RLinf raises without it: set backend to one of {known}.")
        return
    if backend not in PROFILE_BACKENDS:
        problems.append(f"{where}: backend '{backend}' is unknown to RLinf; use one of {known}.")
        return
    keys, tool = PROFILE_BACKENDS[backend]
    for key in _unknown_keys(profiling, keys):
        problems.append(
            f"{where}: unknown key '{key}'{_suggest(key, keys)} for backend {backend}; RLinf fails on it, accepted "
            f"keys are {', '.join(keys)}."
        )
    groups = profiling.get("worker_groups")
    if groups is not None and not isinstance(groups, str) and not _is_list(groups):
        problems.append(f"{where}: worker_groups must be a group name or a list of them.")
        groups = None
    steps = profiling.get("steps")
    if steps is not None and (not _is_list(steps) or not all(_is_int(x) and x >= 0 for x in steps)):
        problems.append(f"{where}: steps must be a list of step indices >= 0.")
    for key in ("options", "args", "env"):
        if key in keys and profiling.get(key) is not None and not isinstance(profiling[key], Mapping):
            problems.append(f"{where}: {key} must be a mapping of name: value.")
    if backend == "nsight":
        options = profiling.get("options") if isinstance(profiling.get("options"), Mapping) else {}
        options = {str(k) for k in options}
        flags = profiling.get("flags")
        if flags is not None and not isinstance(flags, str) and not _is_list(flags):
            problems.append(f"{where}: flags must be a flag name or a list of them.")
            flags = None
        flags = [flags] if isinstance(flags, str) else [str(f) for f in flags or []]
        if "" in flags:
            problems.append(f"{where}: flags has an empty name; remove it.")
        if {"stop-on-range-end", "capture-range-end"} <= options:
            problems.append(f"{where}: options sets both stop-on-range-end and capture-range-end; keep one.")
        if {"o", "output"} <= options:
            problems.append(f"{where}: options sets both o and output; keep one.")
        both = sorted(set(flags) & options)
        if both:
            problems.append(f"{where}: {', '.join(both)} is both a flag and an option; keep one.")
    enabled = as_bool(profiling.get("enabled", True))
    if enabled is not False and groups:
        paths = sorted({str((n.get("env_vars") or {}).get("PATH", SYSTEMD_DEFAULT_PATH)) for n in nodes or []})
        path_text = (
            " or ".join(paths) if paths else f"systemd's default {SYSTEMD_DEFAULT_PATH} unless rlinf_env_vars sets PATH"
        )
        warnings.append(
            f"{where}: backend {backend} wraps the profiled workers in {tool}, which RLinf looks up on the PATH "
            f"Ray started with on each node (it raises when a profiled worker's node lacks it); the rlinf-ray unit's "
            f"PATH is {path_text}: install {tool} there or add its directory to PATH in rlinf_env_vars."
        )


def _is_list(value) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _accelerator_group(label, ranks, gpus_by_rank, have_nodes) -> Group:
    """A group without hardware: GPUs when any node has one, else one unit per node."""
    gpus = [gpus_by_rank.get(r) if have_nodes else None for r in ranks]
    if any(g for g in gpus if g):
        return Group(label, ranks, ACCELERATOR, [g if g is not None else None for g in gpus])
    if all(g == 0 for g in gpus):
        return Group(label, ranks, None, None)
    return Group(label, ranks, ACCELERATOR, None)  # unknown


def placed_node_ranks(rank_map, groups: Sequence[Group]) -> set[int]:
    """The node ranks a placement that ``place`` accepted puts processes on."""
    proc_map = process_resources(rank_map)
    if any(g.hw_type is None for g in groups):
        flat = [rank for g in groups for rank in g.node_ranks]
        return {flat[res[0]] for res in proc_map.values() if res and res[0] < len(flat)}
    owners = [
        rank
        for g in groups
        for rank, units in zip(g.node_ranks, g.units or [], strict=False)
        for _unit in range(units or 0)
    ]
    return {owners[r] for res in proc_map.values() for r in res if r < len(owners)}


def _cpu_starved_placement(rank_map, selected, cpus, hosts) -> list[str]:
    """Every RLinf worker is an actor pinned to its node (hard affinity); Ray schedules an actor only
    where 1 CPU is (then runs it on none), so a node with fewer than 1 takes none of them."""
    starved = sorted(r for r in placed_node_ranks(rank_map, selected) if cpus.get(r) is not None and cpus[r] < 1)
    return [
        f"puts workers on {hosts.get(r, r)} (rank {r}), whose ray_num_cpus is {cpus[r]:g}; every RLinf worker "
        "asks Ray for 1 CPU on its node, so RLinf would wait forever to place it: leave ray_num_cpus unset there "
        "or set it to 1 or more"
        for r in starved
    ]


def _check_placements(
    placements, groups, ranks_known, source, problems, warnings, have_nodes=True, shared=None, hosts=None, cpus=None
):
    where0 = f"{source} component_placement"
    if not isinstance(placements, Mapping):
        problems.append(f"{where0}: must be a mapping of 'component[,component]: placement'.")
        return
    if not placements:
        problems.append(
            f"{where0}: is empty; RLinf's ClusterConfig accepts that, but its runners look up the placement of "
            "each component they start (actor, rollout, ...) and fail: place at least one component."
        )
    components: dict[str, str] = {}
    for key, value in placements.items():
        names = [n.strip() for n in str(key).split(",")]
        where = f"{where0} '{key}'"
        for name in names:
            if name == "":
                problems.append(f"{where}: has an empty component name; remove the stray comma.")
            elif name in components:
                problems.append(
                    f"{where}: component '{name}' is already placed by '{components[name]}'; place it once."
                )
            else:
                components[name] = str(key)
        labels = [DEFAULT_GROUP]
        if isinstance(value, Mapping):
            for extra in _unknown_keys(value, ("node_group", "placement")):
                warnings.append(
                    f"{where}: key '{extra}'{_suggest(extra, ('node_group', 'placement'))} is ignored by RLinf."
                )
            if "placement" not in value:
                problems.append(f"{where}: 'placement' is missing; give resource ranks such as '0-3' or 'all'.")
                continue
            if "node_group" in value:
                raw = value["node_group"]
                if isinstance(raw, Sequence) and not isinstance(raw, str):
                    joined = ",".join(str(x) for x in raw)
                    problems.append(
                        f"{where}: node_group is a YAML list, which OmegaConf does not pass through; write "
                        f'node_group: "{joined}".'
                    )
                    continue
                raw = str(raw)
                labels = [x.strip() for x in raw.split(",")] if "," in raw else [raw]
            text = value["placement"]
        elif isinstance(value, Sequence) and not isinstance(value, str):
            problems.append(f"{where}: the placement is a YAML list; write a string such as '0-3' or '0-1:0-3'.")
            continue
        else:
            text = value
        if isinstance(text, Sequence) and not isinstance(text, str):
            problems.append(f"{where}: placement is a YAML list; write a string such as '0-3'.")
            continue
        if isinstance(text, Mapping):
            problems.append(f"{where}: placement is a mapping; write a string such as '0-3'.")
            continue
        sexagesimal = (
            " (an unquoted N:M is read by YAML as a base-60 number: quote the placement)"
            if _is_int(text) and text >= 60
            else ""
        )
        missing = [label for label in labels if label not in groups]
        if missing:
            if ranks_known:
                known = sorted(g for g in groups if g not in (DEFAULT_GROUP, NODE_GROUP))
                problems.append(
                    f"{where}: node_group '{missing[0]}' is not a non-empty group of node_groups (defined: "
                    f"{', '.join(known) or 'none'}; built in: cluster, node); fix the label."
                )
            continue
        selected = [groups[label] for label in labels]
        counts = [g.count for g in selected]
        count = None if any(c is None for c in counts) else sum(counts)
        label_text = ",".join(labels)
        if count is None and have_nodes:
            robots = [g.label for g in selected if g.count is None and g.hw_type not in (None, ACCELERATOR)]
            if robots:
                warnings.append(
                    f"{where}: the robot count of node group(s) {', '.join(robots)} is unknown (robots RLinf "
                    "creates from env vars), so resource ranks are not checked."
                )
            else:
                warnings.append(
                    f"{where}: GPU count of node group '{label_text}' is unknown, so resource ranks are not "
                    "checked; set rlinf_gpus_per_node on its hosts."
                )
        hw_types = [g.hw_type for g in selected]
        resource_label = "Node" if None in hw_types else ", ".join(hardware_kind(t) for t in hw_types)
        try:
            rank_map = parse_placement(text, count, resource_label)
        except UnknownResources:
            continue
        except PlacementError as err:
            have = ", ".join(f"'{g.label}' has {g.describe()}" for g in selected)
            problems.append(f"{where}: placement '{text}' on {have}: {err}{sexagesimal}.")
            continue
        if not rank_map:
            problems.append(
                f"{where}: placement {str(text)!r} selects no resources; RLinf refuses it (its placement "
                "strategies assert the rank list is not empty): give resource ranks such as '0-3' or 'all'."
            )
            continue
        if count is None:
            continue
        reasons = (
            place(rank_map, selected)
            or _shared_machine_placement(rank_map, selected, shared, hosts or {})
            or _cpu_starved_placement(rank_map, selected, cpus or {}, hosts or {})
        )
        for reason in reasons:
            problems.append(f"{where}: placement '{text}' on node group '{label_text}': {reason}.")
