"""The expected-node shape the plan hands to the modules that talk to the cluster
(ray_cluster_check, ray_gcs_nodes, ray_readiness): one argument spec, one doc fragment
(rlinf.cluster.expected_nodes). Each module reads the keys it needs."""

from __future__ import annotations

EXPECTED_NODE_OPTIONS = {
    "name": {"type": "str", "required": True},
    "rank": {"type": "int", "required": True},
    "ip": {"type": "str", "required": True},
    "temp_dir": {"type": "str"},
    "python": {"type": "str"},
    "comm_device": {"type": "str"},
    "resources": {"type": "dict", "default": {}},
    "env": {"type": "dict", "default": {}},
    "write_dirs": {"type": "list", "elements": "str", "default": []},
}

EXPECTED_NODES = {"type": "list", "elements": "dict", "required": True, "options": EXPECTED_NODE_OPTIONS}
