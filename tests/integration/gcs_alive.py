"""Run on the head with the node venv's Python and the nodes' environment (piped over SSH).

Prints JSON: node ID (hex) -> IP of every node the GCS at argv[1] lists as ALIVE, asked with the RPC
timeout argv[2] (seconds). One RPC and no driver: no job starts and no Ray worker process is spawned
on any node.
"""

import json
import sys

from ray._raylet import GcsClient

infos = GcsClient(address=sys.argv[1]).get_all_node_info(timeout=float(sys.argv[2])).values()
print(json.dumps({info.node_id.hex(): info.node_manager_address for info in infos if info.state == 0}))
