"""Run on the head with the node venv's Python (piped over SSH by the tests).

Prints JSON: every ALIVE node that runs an actor, by IP, with its node ID and, read by an
actor pinned to that node, the RLINF_* variables of the Ray worker's environment (an actor, as in
ray_cluster_check: for a task Ray 2.60 starts a second, unused worker on the node).
argv[1] is the head's address.
"""

import json
import os
import sys

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)


@ray.remote(num_cpus=0)
class WorkerEnv:
    def read(self):
        return {k: v for k, v in os.environ.items() if k.startswith("RLINF_")}


alive = [n for n in ray.nodes() if n["Alive"]]
pinned = [(n, NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)) for n in alive]
pending = [(n, WorkerEnv.options(scheduling_strategy=strategy).remote().read.remote()) for n, strategy in pinned]
# Only nodes whose pinned actor ran: right after a raylet dies, Ray still lists its old
# entry as ALIVE beside the new one at the same IP.
nodes = {}
for node, ref in pending:
    try:
        env = ray.get(ref, timeout=60)
    except (ray.exceptions.RayError, TimeoutError):
        continue
    nodes[node["NodeManagerAddress"]] = {"node_id": node["NodeID"], "env": env}
print(json.dumps(nodes))
