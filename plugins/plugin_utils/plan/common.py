# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""What every step of the plan shares: its version, the paths and purposes it knows, the node paths'
variables (for messages) and Ansible's values as plain Python data. Controller-only."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.rlinf.cluster.plugins.plugin_utils import metrics

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
