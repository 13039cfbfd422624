"""Every user-facing variable: its default, the rule its value must pass and where it applies.

One table, read by the plan (plugins/plugin_utils/plan/) in one pass over the inventory
before any host is contacted. Defaults here are the roles' defaults: tools/generate_vars.py
writes them into roles/*/defaults/main.yml and meta/argument_specs.yml (make generate). Scope:

- ``node``: read on every Ray node; may differ between hosts.
- ``cluster``: read on every Ray node; must be the same on all of them (one Ray version,
  one token, one overlay...).
- ``run``: a setting of this run (usually ``-e``), read once.
- ``member``: read on every EasyTier member (the bootstrap and the Ray nodes) when the
  overlay is on.

Variables whose rules need the whole inventory (ranks, node groups, GPUs) are checked by
plugins/module_utils/topology.py; their names are listed in ``TOPOLOGY_VARS``.

Controller-only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from ansible_collections.rlinf.cluster.plugins.module_utils import sandbox
from ansible_collections.rlinf.cluster.plugins.plugin_utils import rules as r


class Var(NamedTuple):
    name: str
    default: object
    rule: Callable[[object], object]
    scope: str
    rule_text: str


# `ray start` options the plan sets, and the variable that sets each.
MANAGED_RAY_FLAGS = {
    "--head": "the ray_head group",
    "--address": "the ray_head group",
    "--port": "ray_port",
    "--node-ip-address": "ray_node_ip or rlinf_comm_net_device",
    "--block": "nothing (the unit runs Ray in the foreground)",
    "--temp-dir": "ray_temp_dir",
    "--num-cpus": "ray_num_cpus",
    "--num-gpus": "ray_num_gpus",
    "--resources": "ray_resources",
    "--object-store-memory": "ray_node_object_store_memory",
    "--include-dashboard": "ray_node_include_dashboard",
    "--dashboard-host": "ray_node_dashboard_host",
    "--dashboard-port": "ray_node_dashboard_port",
    "--node-manager-port": "ray_node_manager_port",
    "--object-manager-port": "ray_object_manager_port",
    "--dashboard-agent-grpc-port": "ray_dashboard_agent_grpc_port",
    "--dashboard-agent-listen-port": "ray_dashboard_agent_listen_port",
    "--runtime-env-agent-port": "ray_runtime_env_agent_port",
    "--metrics-export-port": "ray_metrics_export_port",
    "--min-worker-port": "ray_min_worker_port",
    "--max-worker-port": "ray_max_worker_port",
    "--ray-client-server-port": "ray_client_server_port",
    "--disable-usage-stats": "nothing (always set)",
}

_NAME64 = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+){1,3}$")
_SHA256 = re.compile(r"^[0-9A-Fa-f]{64}$")
_FLAG = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_NODE_PATH = "absolute, normalised, no space/quote/$/%/:; never a system directory, file or a parent of one"
_OWNED = _NODE_PATH + "; under rlinf_node_path_roots"
_RAY_WRITES = "Ray may write it: not under /etc, a home directory itself or its dotfiles, the venv or a path of ours"
_PORT = "a port, 1..65535"
_PINNED = "a port Ray pins, 1024..65535; distinct on one machine"
_BOOL = "true or false"
_ENV_VALUES = "values without a quote, backslash or control character ('$' and backticks stay as written)"
_PIP_ARGS = "a list of pip options as pip reads them; none that changes where pip looks or writes, no package"

VARS = (
    # Where the roles may write on a node (rules.owned_path; docs/security.md)
    Var(
        "rlinf_node_path_roots",
        list(r.NODE_PATH_ROOTS),
        r.list_of(r.node_path_root, "directories"),
        "node",
        "a list of directories of ours (a '*' may end the last name); never the system's, a home or its dotfiles",
    ),
    # Python environment
    Var("rlinf_venv_dir", "/opt/rlinf/venv", r.node_path, "node", _OWNED),
    Var("rlinf_python", "python3", r.interpreter, "node", "python3[.N] on PATH, or an absolute path"),
    Var(
        "rlinf_ray_version",
        "2.60.0",
        r.version_at_least("2.47.0", "RLinf requires ray[default]>=2.47.0"),
        "cluster",
        'a quoted "X.Y.Z" >= 2.47.0, the same on every node',
    ),
    Var(
        "python_env_extra_packages",
        [],
        r.list_of(r.requirement, "requirements"),
        "cluster",
        "a list of name==version, one requirement per item, no pip option or URL",
    ),
    Var(
        "python_env_no_deps_packages",
        [],
        r.list_of(r.requirement, "requirements"),
        "cluster",
        "a list of name==version, one requirement per item, no pip option or URL",
    ),
    Var(
        "python_env_pip_extra_args",
        [],
        r.pip_arguments(r.PIP_INSTALL),
        "cluster",
        _PIP_ARGS,
    ),
    Var("python_env_ray_extras", ["default"], r.list_of(r.extra_name, "extras"), "cluster", "a list of extra names"),
    Var("python_env_index_url", "", r.url, "cluster", "empty, or an http(s) index URL the nodes reach"),
    Var("python_env_require_hashes", False, r.boolean, "cluster", _BOOL + "; not with python_env_index_url"),
    Var("python_env_node_wheelhouse_dir", "/opt/rlinf/wheelhouse", r.node_path, "node", _OWNED),
    # Environment file
    Var("rlinf_env_file", "/etc/rlinf/rlinf.env", r.node_path, "node", _OWNED + "; not a file we did not write"),
    Var(
        "rlinf_env_vars",
        {},
        r.mapping_of(r.env_name, r.env_value, "environment variables"),
        "node",
        "a mapping NAME: value; names [A-Za-z_][A-Za-z0-9_]*, not a managed one; " + _ENV_VALUES,
    ),
    Var(
        "rlinf_secret_env_vars",
        {},
        r.mapping_of(r.env_name, r.env_value, "environment variables"),
        "node",
        "like rlinf_env_vars; values never shown (keep them in Ansible Vault)",
    ),
    Var(
        "rlinf_env_profile_script",
        "/etc/profile.d/rlinf.sh",
        r.node_path,
        "node",
        _NODE_PATH + "; /etc/profile.d/rlinf*.sh or under rlinf_node_path_roots",
    ),
    # Network
    Var("rlinf_comm_net_device", "", r.device, "node", "empty, or a NIC name (1-15 of A-Z a-z 0-9 _ . -)"),
    Var("ray_node_ip", "", r.ipv4(), "node", "empty, or an IPv4 address other nodes reach (not loopback)"),
    # Ray
    Var("ray_port", 6379, r.port, "node", _PORT),
    Var("ray_num_cpus", None, r.optional(r.number(low=0)), "node", "unset, or a number >= 0"),
    Var("ray_num_gpus", None, r.optional(r.number(low=0)), "node", "unset, or a number >= 0"),
    Var(
        "ray_resources",
        {},
        r.mapping_of(r.resource_name, r.number(low=0), "resources"),
        "node",
        "a mapping name: amount (>= 0)",
    ),
    Var("ray_temp_dir", "", r.optional_node_path, "node", "empty (/tmp/ray), or " + _OWNED + "; " + _RAY_WRITES),
    Var(
        "ray_node_object_store_memory",
        0,
        r.integer(0),
        "node",
        "bytes, a whole number >= 0 (0 = Ray's default)",
    ),
    Var("ray_node_include_dashboard", True, r.boolean, "node", _BOOL),
    Var(
        "ray_node_dashboard_host",
        "127.0.0.1",
        r.ipv4(loopback=True, unspecified=True),
        "node",
        "an IPv4 address (loopback by default)",
    ),
    Var("ray_node_dashboard_port", 8265, r.pinned_port, "node", _PINNED),
    Var(
        "ray_node_unit_name",
        "rlinf-ray",
        r.unit_name,
        "node",
        "a unit name of ours, never an OS unit (ssh, systemd-*...)",
    ),
    Var(
        "ray_node_extra_args",
        [],
        r.list_of(r.ray_argument(MANAGED_RAY_FLAGS), "`ray start` options"),
        "node",
        "a list, one --flag[=value] per item, not a flag rlinf-ansible sets",
    ),
    # The Ray unit's sandbox (plugins/module_utils/sandbox.py)
    Var("ray_node_sandbox", True, r.boolean, "node", _BOOL + "; false drops the unit's sandbox (not advised)"),
    Var(
        "ray_node_sandbox_profile",
        "training",
        r.choice(*sandbox.PROFILES),
        "node",
        "training or strict",
    ),
    Var(
        "ray_node_writable_paths",
        [],
        r.list_of(r.writable_path, "directories"),
        "node",
        "a list of directories Ray may write (created when missing); " + _NODE_PATH + "; " + _RAY_WRITES,
    ),
    Var(
        "ray_node_user",
        "",
        r.system_user,
        "node",
        "empty (root, in the sandbox), or a system user the role creates to run Ray, e.g. ray",
    ),
    Var("ray_node_realtime", False, r.boolean, "node", _BOOL + "; true lets Ray's workers use SCHED_FIFO and mlock"),
    Var("ray_node_head_wait_timeout", 60, r.integer(1), "cluster", "seconds, >= 1"),
    Var("ray_join_batch", "100%", r.join_batch, "cluster", "a count >= 1 or a percentage"),
    Var("ray_client_server_port", 10001, r.pinned_port, "node", _PINNED),
    Var("ray_node_manager_port", 6380, r.pinned_port, "node", _PINNED),
    Var("ray_object_manager_port", 6381, r.pinned_port, "node", _PINNED),
    Var("ray_dashboard_agent_grpc_port", 6382, r.pinned_port, "node", _PINNED),
    Var("ray_runtime_env_agent_port", 6383, r.pinned_port, "node", _PINNED),
    Var("ray_metrics_export_port", 6384, r.pinned_port, "node", _PINNED),
    Var("ray_dashboard_agent_listen_port", 52365, r.pinned_port, "node", _PINNED),
    Var("ray_min_worker_port", 10002, r.pinned_port, "node", _PINNED),
    Var("ray_max_worker_port", 19999, r.pinned_port, "node", _PINNED),
    # Authentication
    Var("ray_auth_enabled", True, r.boolean, "cluster", _BOOL + ", the same on every node"),
    Var("ray_auth_token", "", r.secret(32), "cluster", "empty (generated), or a secret of >= 32 printable characters"),
    Var(
        "ray_auth_token_file",
        "/etc/rlinf/ray-auth-token",
        r.node_path,
        "node",
        _OWNED + "; not a file we did not write",
    ),
    # Firewall
    Var("rlinf_firewall_enabled", False, r.boolean, "cluster", _BOOL + ", the same on every node"),
    Var("rlinf_firewall_manage_host", False, r.boolean, "cluster", _BOOL + ", the same on every node"),
    Var(
        "rlinf_firewall_allowed_sources",
        [],
        r.list_of(r.ipv4_source, "IPv4 addresses or networks"),
        "node",
        "a list of IPv4 addresses or networks",
    ),
    Var(
        "rlinf_firewall_client_sources",
        [],
        r.list_of(r.ipv4_source, "IPv4 addresses or networks"),
        "node",
        "a list of IPv4 addresses or networks",
    ),
    Var("firewall_table", "rlinf", r.nft_table, "node", "an nft table name of ours (letters, digits, _)"),
    Var("firewall_rules_file", "/etc/rlinf/firewall.nft", r.node_path, "node", _OWNED),
    Var("firewall_unit_name", "rlinf-firewall", r.unit_name, "node", "a unit name of ours"),
    Var("firewall_nft_bin", "/usr/sbin/nft", r.node_path, "node", "the absolute path of nft"),
    # Metrics (opt-in)
    Var("rlinf_metrics_enabled", False, r.boolean, "cluster", _BOOL + ", the same on every node"),
    Var(
        "rlinf_metrics_host",
        "",
        r.text(re.compile(r"^[^\s,]*$"), hint="write one inventory host name"),
        "cluster",
        "empty (the head), or a Ray node of the inventory",
    ),
    Var("rlinf_metrics_node_exporter_port", 9100, r.pinned_port, "node", _PINNED),
    Var(
        "rlinf_metrics_prometheus_host",
        "127.0.0.1",
        r.ipv4(loopback=True, unspecified=True),
        "cluster",
        "an IPv4 address of the scraper (loopback by default)",
    ),
    Var("rlinf_metrics_prometheus_port", 9090, r.pinned_port, "cluster", _PINNED),
    Var("rlinf_metrics_scrape_interval", 15, r.integer(1, 3600), "cluster", "seconds, 1..3600"),
    # Code sync and launch
    Var(
        "rlinf_code_sync", "none", r.choice("none", "rsync", "package", "ray"), "cluster", "none, rsync, package or ray"
    ),
    Var(
        "rlinf_src",
        "",
        r.optional_controller_path,
        "cluster",
        "empty, or the checkout's absolute path on the controller",
    ),
    Var(
        "rlinf_code_dest",
        "",
        r.optional_node_path,
        "node",
        "empty (= rlinf_src), or " + _NODE_PATH + "; " + _RAY_WRITES,
    ),
    Var("code_sync_max_mb", 50, r.number(above=0), "cluster", "MiB, a number > 0"),
    Var(
        "code_sync_rsync_excludes",
        [
            ".git",
            "__pycache__",
            "*.pyc",
            ".mypy_cache",
            ".pytest_cache",
            ".ruff_cache",
            ".cache",
            ".venv",
            "*.egg-info",
            "build",
            "dist",
            "logs",
            "outputs",
            "results",
            "checkpoints",
            "wandb",
            "ray_utils/ray_head_ip.txt",
        ],
        r.list_of(r.text(empty=False), "patterns"),
        "cluster",
        "a list of rsync patterns, one per item",
    ),
    Var("code_sync_rsync_delete", True, r.boolean, "cluster", _BOOL),
    Var("code_sync_pip_wheel_args", [], r.pip_arguments(r.PIP_WHEEL), "cluster", _PIP_ARGS),
    Var("code_sync_node_wheel_dir", "/opt/rlinf/code-sync", r.node_path, "node", _OWNED),
    Var("code_sync_node_record_dir", "/opt/rlinf/code-sync-checkouts", r.node_path, "node", _OWNED),
    Var(
        "rlinf_launch_name",
        "",
        r.text(_NAME64, hint="use letters, digits, '_', '.', '-'"),
        "run",
        "empty (a timestamp), or up to 64 of A-Z a-z 0-9 _ . -",
    ),
    Var("rlinf_launch_log_dir", "/var/log/rlinf", r.node_path, "cluster", _OWNED),
    Var(
        "rlinf_launch_env",
        {},
        r.mapping_of(r.env_name, r.env_value, "environment variables"),
        "run",
        "a mapping NAME: value; " + _ENV_VALUES,
    ),
    Var("rlinf_launch_allow_concurrent", False, r.boolean, "run", _BOOL),
    # Check and reports
    Var("ray_check_timeout", 60, r.integer(1), "cluster", "seconds, >= 1"),
    Var("ray_check_poll_interval", 1, r.number(above=0), "cluster", "seconds, > 0"),
    Var(
        "ray_check_expected_totals",
        {},
        r.mapping_of(r.resource_name, r.number(low=0), "resources"),
        "cluster",
        "a mapping resource: minimum",
    ),
    Var("rlinf_disk_warn_percent", 20, r.integer(0, 100), "cluster", "a whole percentage, 0..100"),
    Var(
        "rlinf_disk_fail_percent",
        5,
        r.integer(0, 100),
        "cluster",
        "a whole percentage, 0..100, below rlinf_disk_warn_percent",
    ),
    Var("rlinf_disk_venv_min_free_mib", 2048, r.integer(0), "cluster", "MiB, a whole number >= 0"),
    # Validation
    Var("rlinf_config", "", r.optional_controller_path, "run", "empty, or a path to an RLinf YAML on the controller"),
    Var("rlinf_cluster", {}, r.any_mapping, "run", "a mapping (the block under cluster:)"),
    Var("validate_inventory_show", True, r.boolean, "run", _BOOL),
    Var(
        "rlinf_user_vars",
        [],
        r.list_of(r.text(re.compile(r"^[A-Za-z0-9_*?]{1,128}$"), empty=False, hint="write a name or a name*"), "names"),
        "node",
        "a list of variable names (or name* patterns) of yours that start with one of our prefixes",
    ),
    Var("cluster_plan_path", None, r.optional_controller_path, "run", "a path on the controller"),
    Var("cluster_report_path", "", r.optional_controller_path, "cluster", "a path on the controller"),
    # Controller directories (the plan computes the defaults: the state next to the inventory,
    # the reports next to the playbooks)
    Var(
        "rlinf_state_dir",
        "",
        r.optional_controller_path,
        "cluster",
        "empty (<inventory_dir>/.rlinf), or a directory on the controller",
    ),
    Var("rlinf_artifacts_dir", "", r.optional_controller_path, "cluster", "a directory on the controller"),
    Var("python_env_wheelhouse_dir", "", r.optional_controller_path, "cluster", "a directory on the controller"),
    Var(
        "ray_auth_controller_token_file",
        "",
        r.controller_token_file,
        "cluster",
        "a path on the controller, never an SSH key's (~/.ssh/..., id_*)",
    ),
    Var("code_sync_wheel_dir", "", r.optional_controller_path, "cluster", "a directory on the controller"),
    # launch.yml and remove-node.yml
    Var("rlinf_entry", "", r.text(), "run", "one line: the command launch.yml runs on the head"),
    Var("node", "", r.text(), "run", "an inventory host name (remove-node.yml)"),
    # The readiness check (-e rlinf_readiness=true)
    Var("rlinf_readiness", False, r.boolean, "run", _BOOL),
    Var("readiness_timeout", 60, r.integer(1), "cluster", "seconds, >= 1"),
    Var("readiness_connect_timeout", 5, r.number(above=0), "cluster", "seconds, > 0"),
    Var(
        "readiness_sizes",
        [1024, 1048576, 16777216],
        r.list_of(r.integer(1), "sizes"),
        "cluster",
        "a list of byte counts >= 1",
    ),
    Var("readiness_iterations", 5, r.integer(1), "cluster", "a whole number >= 1"),
    Var("readiness_nccl", True, r.boolean, "cluster", _BOOL),
    Var("readiness_rlinf_attach", "auto", r.choice("auto", "always", "never"), "cluster", "auto, always or never"),
    Var("readiness_rlinf_timeout", 60, r.integer(1), "cluster", "seconds, >= 1"),
    Var("readiness_rlinf_workers", True, r.boolean, "cluster", _BOOL),
    Var("readiness_num_nodes", 0, r.integer(0), "cluster", "0 (every node) or a count"),
    Var("remove_node_confirm", "", r.text(), "run", "'yes' skips remove-node.yml's prompt"),
    # Day-2 safety
    Var("rlinf_allow_restart", False, r.boolean, "run", _BOOL + ": restart Ray although an RLinf driver runs"),
    Var("ray_auth_rotate", False, r.boolean, "run", _BOOL + ": a new Ray token on every node (Ray restarts)"),
    # Teardown
    Var("teardown_purge", False, r.boolean, "run", _BOOL),
    Var("teardown_confirm", "", r.text(), "run", "'yes' skips the prompt"),
    # EasyTier overlay
    Var("easytier_enabled", False, r.boolean, "cluster", _BOOL + ", the same on every node"),
)

# Checked only when the overlay is on, on every member (bootstrap included).
EASYTIER_VARS = (
    Var(
        "easytier_install_source",
        "pypi",
        r.choice("pypi", "release", "archive"),
        "member",
        "pypi, release or archive",
    ),
    Var(
        "easytier_network_name",
        "rlinf-cloud-edge",
        r.text(_NAME64, empty=False, hint="use 1-64 of A-Z a-z 0-9 _ . -"),
        "member",
        "1-64 of A-Z a-z 0-9 _ . -",
    ),
    Var("easytier_network_secret", "", r.secret(12), "member", "a secret of >= 12 printable characters (Vault)"),
    Var("easytier_subnet", "10.144.0.0/24", r.ipv4_network, "member", "an IPv4 network in CIDR form"),
    Var("easytier_allow_public_subnet", False, r.boolean, "member", _BOOL + ", the same on every member"),
    Var("easytier_dev_name", "et0", r.device, "member", "a device name (1-15 of A-Z a-z 0-9 _ . -)"),
    Var("easytier_listen_port", 11010, r.port, "member", _PORT),
    Var(
        "easytier_listen_protocols",
        ["tcp", "udp"],
        r.list_of(r.choice("tcp", "udp", "ws", "wss", "quic", "wg"), "protocols"),
        "member",
        "a list of tcp, udp, ws, wss, quic, wg",
    ),
    Var(
        "easytier_peer_protocol",
        "tcp",
        r.choice("tcp", "udp", "ws", "wss", "quic", "wg"),
        "member",
        "one of easytier_listen_protocols",
    ),
    Var("easytier_bootstrap_address", "", r.host_address, "member", "empty, an IP address or a DNS name"),
    Var(
        "easytier_extra_flags",
        {},
        r.mapping_of(
            r.text(_FLAG, empty=False, hint="use lower-case flag names"),
            r.scalar,
            "flags",
        ),
        "member",
        "a mapping flag: value (EasyTier's [flags] keys)",
    ),
    Var("easytier_base_dir", "/opt/rlinf/easytier", r.node_path, "member", _OWNED),
    Var("easytier_venv_dir", "/opt/rlinf/easytier/venv", r.node_path, "member", _OWNED),
    Var("easytier_config_dir", "/etc/rlinf/easytier", r.node_path, "member", _OWNED),
    Var("easytier_python", "/usr/bin/python3", r.interpreter, "member", "an interpreter path or python3[.N]"),
    Var("easytier_wait_timeout", 90, r.integer(1), "member", "seconds, >= 1"),
    Var("easytier_pypi_package", "easytier-pyo3", r.text(_NAME64, empty=False), "member", "a package name"),
    Var("easytier_pypi_version", "0.1.3", r.text(_VERSION, empty=False, hint="write e.g. 0.1.3"), "member", "X.Y.Z"),
    Var("easytier_pip_download_args", [], r.pip_arguments(r.PIP_DOWNLOAD), "member", _PIP_ARGS),
    Var("easytier_release_version", "2.6.4", r.text(_VERSION, empty=False, hint="write e.g. 2.6.4"), "member", "X.Y.Z"),
    Var(
        "easytier_release_base_url",
        "https://github.com/EasyTier/EasyTier/releases/download",
        r.url,
        "member",
        "an http(s) URL",
    ),
    Var("easytier_release_sha256", "", r.text(_SHA256, hint="write 64 hex digits"), "member", "empty or 64 hex digits"),
    Var("easytier_archive_path", "", r.optional_controller_path, "member", "a path on the controller"),
    Var("easytier_archive_sha256", "", r.text(_SHA256, hint="write 64 hex digits"), "member", "empty or 64 hex digits"),
    Var("easytier_controller_cache_dir", None, r.optional_controller_path, "member", "a directory on the controller"),
    Var("easytier_ipv4", "", r.text(), "member", "empty, or an address inside easytier_subnet"),
)

# Checked by topology.py (they need the whole inventory).
TOPOLOGY_VARS = (
    "rlinf_node_rank",
    "rlinf_node_group",
    "rlinf_node_groups",
    "rlinf_gpus_per_node",
    "rlinf_cuda_visible_devices",
    "rlinf_gpu_isolated",
    "rlinf_accelerator_type",
)

BY_NAME = {var.name: var for var in VARS + EASYTIER_VARS}
SECRETS = frozenset({"ray_auth_token", "easytier_network_secret", "rlinf_secret_env_vars"})

# The prefixes of our variables. An inventory or extra variable that starts with one of them and
# is neither in this file nor set by our roles and playbooks is a typo (``rlinf_firewal_enabled``
# would leave the firewall off): the plan refuses it with the nearest known name
# (plugins/plugin_utils/unknown_vars.py), unless the host lists it in ``rlinf_user_vars``.
PREFIXES = (
    "rlinf_",
    "ray_",
    "easytier_",
    "python_env_",
    "code_sync_",
    "firewall_",
    "metrics_",
    "readiness_",
    "teardown_",
    "validate_inventory_",
    "cluster_",
    "launch_",
    "remove_node_",
    "preflight_",
    "restart_guard_",
)

# Names with our prefixes that the roles and playbooks set themselves (role defaults and
# vars/main.yml that are not settings, set_fact, register, vars:): set_fact and register results
# are in hostvars when a later play computes the plan again. tests/unit/test_unknown_vars.py
# reads roles/ and playbooks/ and keeps this equal to what they set.
RUNTIME_VARS = frozenset(
    {
        "code_sync_build_dir",
        "code_sync_built",
        "code_sync_copied",
        "code_sync_dest",
        "code_sync_dest_before",
        "code_sync_digest",
        "code_sync_digest_value",
        "code_sync_head_tree",
        "code_sync_install",
        "code_sync_install_needed",
        "code_sync_installed",
        "code_sync_launch_workdir",
        "code_sync_launch_running",
        "code_sync_list_paths",
        "code_sync_pushed",
        "code_sync_record",
        "code_sync_record_contents",
        "code_sync_records",
        "code_sync_rmdir",
        "code_sync_src",
        "code_sync_stage",
        "code_sync_tree_result",
        "code_sync_wheels",
        "easytier_members",
        "easytier_node_ip",
        "firewall_active",
        "firewall_nft",
        "firewall_rules",
        "firewall_rules_written",
        "firewall_running",
        "firewall_state",
        "firewall_table_listed",
        "firewall_ufw",
        "firewall_ufw_status",
        "firewall_unit",
        "firewall_unit_file",
        "metrics_bins",
        "metrics_changed",
        "metrics_dashboards",
        "metrics_dropins",
        "metrics_missing",
        "metrics_purge_units",
        "metrics_written",
        "preflight_purpose",
        "python_env_download",
        "python_env_download_no_deps",
        "python_env_resolved",
        "python_env_resolved_no_deps",
        "python_env_failed",
        "python_env_pip",
        "python_env_push_src",
        "ray_auth_cluster_token",
        "ray_auth_node_token",
        "ray_auth_source",
        "ray_check_expected_nodes",
        "ray_check_gpus",
        "ray_check_head_ip",
        "ray_check_address",
        "ray_check_report",
        "ray_check_report_path",
        "ray_check_result",
        "ray_check_runs",
        "ray_node_created_user",
        "ray_node_dirs_before",
        "ray_node_dirs_created",
        "ray_node_files",
        "ray_node_files_as_planned",
        "ray_node_files_check",
        "ray_node_head",
        "ray_node_manual_stop",
        "ray_node_not_owned",
        "ray_node_owner",
        "ray_node_purged",
        "ray_node_remove_files",
        "ray_node_restart",
        "ray_node_secret_files",
        "ray_node_secret_values",
        "ray_node_start_needed",
        "ray_node_started",
        "ray_node_stop",
        "ray_node_stopped_first",
        "ray_node_stray",
        "ray_node_token_mode",
        "ray_node_user_existed",
        "ray_node_user_ready",
        "ray_node_user_record",
        "ray_node_was_active",
        "readiness_base",
        "readiness_keys",
        "readiness_report",
        "readiness_result",
        "remove_node_answer",
        "restart_guard_drivers",
        "restart_guard_every",
        "restart_guard_planned",
        "restart_guard_verdict",
        "rlinf_node",
        "rlinf_plan",
        "rlinf_probe",
        "rlinf_venv_changed",
        "teardown_answer",
        "teardown_ray_node",
        "preflight_resolved",
        "validate_inventory_purpose",
        "validate_inventory_result",
        "validate_inventory_write",
    }
)

# Node paths the roles write, sync into with --delete, record as ours or may delete: each under one of
# rlinf_node_path_roots (rules.owned_path). The shell snippet may also be /etc/profile.d/rlinf*.sh
# (rules.profile_script); firewall_nft_bin and the interpreters are run, never written.
OWNED_PATHS = (
    "rlinf_venv_dir",
    "python_env_node_wheelhouse_dir",
    "rlinf_env_file",
    "ray_auth_token_file",
    "firewall_rules_file",
    "code_sync_node_wheel_dir",
    "code_sync_node_record_dir",
    "rlinf_launch_log_dir",
    "ray_temp_dir",
)
OWNED_MEMBER_PATHS = ("easytier_base_dir", "easytier_venv_dir", "easytier_config_dir")
PROFILE_PATH = "rlinf_env_profile_script"
# Paths the Ray unit may write: one sandbox rule (rules.ray_writable) for all of them, and none may be or
# hold a path of OWNED_PATHS that root runs or reads (RAY_READ_ONLY).
RAY_WRITABLE = ("ray_temp_dir", "rlinf_code_dest", "ray_node_writable_paths")
RAY_READ_ONLY = tuple(name for name in OWNED_PATHS if name != "ray_temp_dir") + OWNED_MEMBER_PATHS

KNOWN = frozenset(BY_NAME) | frozenset(TOPOLOGY_VARS) | RUNTIME_VARS
