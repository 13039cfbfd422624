# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""The cluster plan: every node's rank, paths, unit, ports and Ray settings, decided once.

Two stages, both on the controller, both linear in the number of hosts:

1. ``static_plan(groups, hostvars, context)`` (static.py), before any host is contacted: reads
   every user-facing variable of every host once (plugins/plugin_utils/schema.py), checks it,
   computes ranks and node groups (topology.py), the overlay addresses (overlay.py), each
   node's paths, unit, ports and the rule that will pick its Ray address. Raises PlanError
   with every problem. What remove-node and launch.yml add to it is in purposes.py.
2. ``resolve(plan, probes, purpose)`` (resolution.py), after each node was probed once (the
   read-only module rlinf.cluster.node_state): applies the address rule to the node's interfaces,
   checks what only a host can tell (systemd, apt, Python, paths we would write that exist
   and are not ours), and computes (outputs.py) the environment file, the `ray start` arguments,
   the unit and the record each node keeps of these decisions (under /etc/rlinf/state/), so
   status, teardown, remove-node and launch read what site.yml decided.

common.py holds what they share. Whether a node's Ray restarts is not the plan's: see
plugins/module_utils/restarts.py. This package's names are the plan's API: import them from here.

Roles and playbooks read the plan (``rlinf_plan.nodes[inventory_hostname]``); Jinja formats
it, it does not decide. Controller-only.
"""

from __future__ import annotations

from ansible_collections.rlinf.cluster.plugins.plugin_utils.plan.common import (
    BOOTSTRAP_GROUP,
    FILE_PATHS,
    LAUNCH_STATE_DIR,
    MIN_PYTHON,
    MIN_RAY_AUTH,
    PATH_VARS,
    PLAN_VERSION,
    PROJECT_DIRS,
    RECORD_PURPOSES,
    RENDER_PURPOSES,
    STATE_DIR,
    STATE_SUBDIR,
    UNIT_DIR,
    _plain,
)
from ansible_collections.rlinf.cluster.plugins.plugin_utils.plan.outputs import (
    expected_nodes,
    gpu_nodes,
    node_env,
    ray_args,
    record_of,
    summary,
    wheelhouse_builds,
)
from ansible_collections.rlinf.cluster.plugins.plugin_utils.plan.purposes import (
    LAUNCH_UNIT_PREFIX,
    launch_names,
    removal_plan,
    removal_summary,
)
from ansible_collections.rlinf.cluster.plugins.plugin_utils.plan.resolution import FILLED_DIRS, resolve, resolve_address
from ansible_collections.rlinf.cluster.plugins.plugin_utils.plan.static import (
    controller_paths,
    secret_env_file,
    static_plan,
)

# _plain too: the cluster_plan action turns Ansible's values into plain data with it.
__all__ = [
    "BOOTSTRAP_GROUP",
    "FILE_PATHS",
    "FILLED_DIRS",
    "LAUNCH_STATE_DIR",
    "LAUNCH_UNIT_PREFIX",
    "MIN_PYTHON",
    "MIN_RAY_AUTH",
    "PATH_VARS",
    "PLAN_VERSION",
    "PROJECT_DIRS",
    "RECORD_PURPOSES",
    "RENDER_PURPOSES",
    "STATE_DIR",
    "STATE_SUBDIR",
    "UNIT_DIR",
    "_plain",
    "controller_paths",
    "expected_nodes",
    "gpu_nodes",
    "launch_names",
    "node_env",
    "ray_args",
    "record_of",
    "removal_plan",
    "removal_summary",
    "resolve",
    "resolve_address",
    "secret_env_file",
    "static_plan",
    "summary",
    "wheelhouse_builds",
]
