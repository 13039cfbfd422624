# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""The head's GCS node table, read by the venv's own interpreter (rlinf.cluster.node_state).

Run as ``<venv>/bin/python -c GCS_PROBE <ip:port> <timeout>`` with the env file's RAY_AUTH_* in its
environment (Ray reads them at import); prints one JSON object: ``nodes``, each GcsNodeInfo as a
``ray.nodes()``-style dict (what ray_cluster_state reads), or ``error``. It is started before the
node's other reads and collected after them, so the import of Ray costs the read no wall time.
"""

from __future__ import annotations

import os

from ansible_collections.rlinf.cluster.plugins.module_utils.child_read import ChildRead

GCS_PROBE = r"""
import json, sys
try:
    from ray._raylet import GcsClient
    infos = GcsClient(address=sys.argv[1]).get_all_node_info(timeout=int(sys.argv[2])).values()
    nodes = [{"NodeID": i.node_id.hex() if isinstance(i.node_id, bytes) else str(i.node_id),
              "NodeManagerAddress": i.node_manager_address, "NodeManagerPort": i.node_manager_port,
              "Alive": i.state == 0, "RayletSocketName": i.raylet_socket_name} for i in infos]
    print(json.dumps({"nodes": nodes}))
except Exception as err:
    print(json.dumps({"error": type(err).__name__ + ": " + (str(err).strip()[:400] or "no message")}))
"""


def head_address(record):
    """The GCS address the head's running Ray was started with (its record), or None."""
    ip = (record or {}).get("ip")
    port = ((record or {}).get("ports") or {}).get("ray_port")
    if not ip or not isinstance(port, int) or isinstance(port, bool):
        return None
    return f"{ip}:{port}"


class GcsRead:
    """One GCS read in a child process, started when made: make it, do the other reads, then ``result``."""

    def __init__(self, python, address, ray_env, timeout=10):
        self.address = address
        self.read = ChildRead([python, "-c", GCS_PROBE, address, str(timeout)], env={**os.environ, **ray_env})

    def result(self, timeout=60):
        """``{"address", "nodes"}`` or ``{"address", "error"}``."""
        found = self.read.result(timeout)
        if "nodes" in found:
            return {"address": self.address, "nodes": found["nodes"]}
        return {"address": self.address, "error": str(found.get("error"))}
