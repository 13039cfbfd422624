# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""RLinf's ``cluster:`` grammar, checked on the controller before any node is touched.

Mirrors rlinf 0.3.0 (``rlinf/scheduler/cluster/{config,utils,node}.py`` and
``rlinf/scheduler/placement/{placement,node,flexible}.py``): rank expressions,
``node_groups`` (``env_configs``, ``hardware``), ``component_placement`` in both forms,
and the placement of every component on the resources of its node groups, so mistakes
that RLinf only finds when workers are placed (a process spanning two nodes, a GPU and a
robot in one process) are found here. Also loads RLinf YAML safely and generates the
``cluster:`` block that matches an inventory (see ``topology.cluster_nodes``).

Plain Python plus PyYAML, no Ansible imports. Every problem is one sentence naming the
field and the fix; all problems are collected.

grammar.py reads RLinf's grammar, checks.py checks a ``cluster:`` block against the inventory,
generation.py writes the block for an inventory. This package's names are its API: import them from here.
"""

from __future__ import annotations

from ansible_collections.rlinf.cluster.plugins.plugin_utils.rlinf_config.checks import (
    check_cluster,
    env_config_interpreters,
    placed_node_ranks,
)
from ansible_collections.rlinf.cluster.plugins.plugin_utils.rlinf_config.generation import (
    cluster_block,
    cluster_block_yaml,
)
from ansible_collections.rlinf.cluster.plugins.plugin_utils.rlinf_config.grammar import (
    ACCELERATOR,
    DEFAULT_GROUP,
    HARDWARE_TYPES,
    NODE_GROUP,
    PROFILE_BACKENDS,
    ROBOT_COUNT_FIELDS,
    ROBOT_FIELDS,
    PlacementError,
    RankError,
    RLinfConfigError,
    UnknownResources,
    load_config_file,
    load_config_text,
    parse_placement,
    parse_rank_config,
    place,
    process_resources,
    rank_overlaps,
    resolve_cluster,
)

__all__ = [
    "ACCELERATOR",
    "DEFAULT_GROUP",
    "HARDWARE_TYPES",
    "NODE_GROUP",
    "PROFILE_BACKENDS",
    "ROBOT_COUNT_FIELDS",
    "ROBOT_FIELDS",
    "PlacementError",
    "RLinfConfigError",
    "RankError",
    "UnknownResources",
    "check_cluster",
    "cluster_block",
    "cluster_block_yaml",
    "env_config_interpreters",
    "load_config_file",
    "load_config_text",
    "parse_placement",
    "parse_rank_config",
    "place",
    "placed_node_ranks",
    "process_resources",
    "rank_overlaps",
    "resolve_cluster",
]
