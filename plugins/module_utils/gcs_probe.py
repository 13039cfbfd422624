# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""The head's GCS node table, read by the venv's own interpreter (rlinf.cluster.node_state).

Run as ``<venv>/bin/python -c GCS_PROBE <ip:port> <timeout>`` with the env file's RAY_AUTH_* in its
environment (Ray reads them at import); prints one JSON object: ``nodes``, each GcsNodeInfo as a
``ray.nodes()``-style dict (what ray_cluster_state reads), or ``error``. It is started before the
node's other reads and collected after them, so the import of Ray costs the read no wall time.
"""

from __future__ import annotations

import json
import os
import subprocess

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
    """One GCS read in a child process: ``start`` it, do the other reads, then ``result``."""

    def __init__(self, python, address, ray_env, timeout=10):
        self.address = address
        self.error = None
        self.proc = None
        try:
            self.proc = subprocess.Popen(
                [python, "-c", GCS_PROBE, address, str(timeout)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **ray_env},
                text=True,
            )
        except OSError as err:
            self.error = f"{type(err).__name__}: {err}"

    def result(self, timeout=60):
        """``{"address", "nodes"}`` or ``{"address", "error"}``."""
        if self.proc is not None:
            try:
                out, err = self.proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()
                self.error = f"no answer within {timeout} s"
            else:
                self.error = None
                try:
                    found = json.loads(out.strip().splitlines()[-1])
                except (ValueError, IndexError):
                    found = {"error": (err or out).strip()[-300:] or f"exit status {self.proc.returncode}"}
                if "nodes" in found:
                    return {"address": self.address, "nodes": found["nodes"]}
                self.error = str(found.get("error"))
        return {"address": self.address, "error": self.error}
