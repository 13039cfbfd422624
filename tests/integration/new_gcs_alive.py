"""Run on the head with the node venv's Python and the nodes' environment (piped over SSH).

Waits until the GCS at argv[1] answers with a node table that no longer holds the node ID
argv[2] (the head before it was killed: a new cluster), then prints JSON: the IPs of the
nodes that new GCS lists as ALIVE at that moment. One RPC per poll, so the answer comes
within a fraction of a second of the new GCS opening.
"""

import json
import sys
import time

from ray._raylet import GcsClient

address, old_head_id = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + 180
while True:
    try:
        infos = GcsClient(address=address).get_all_node_info(timeout=2).values()
        if old_head_id not in {info.node_id.hex() for info in infos}:
            break
    except Exception:  # the old GCS is gone and the new one not yet up
        pass
    if time.monotonic() > deadline:
        sys.exit(f"no new GCS answered at {address} within 180 s")
    time.sleep(0.2)
print(json.dumps(sorted(info.node_manager_address for info in infos if info.state == 0)))
