"""Run on the head with the node venv's Python (piped over SSH by the tests).

Prints JSON: every ALIVE node that runs a task, by IP, with its node ID and, read by a
task pinned to that node, the RLINF_* variables of the Ray worker's environment.
argv[1] is the head's address.
"""

import json
import os
import sys

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)


@ray.remote(num_cpus=0)
def worker_env():
    return {k: v for k, v in os.environ.items() if k.startswith("RLINF_")}


alive = [n for n in ray.nodes() if n["Alive"]]
pending = [
    (n, worker_env.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote())
    for n in alive
]
# Only nodes whose pinned task ran: right after a raylet dies, Ray still lists its old
# entry as ALIVE beside the new one at the same IP.
nodes = {}
for node, ref in pending:
    try:
        env = ray.get(ref, timeout=60)
    except (ray.exceptions.RayError, TimeoutError):
        continue
    nodes[node["NodeManagerAddress"]] = {"node_id": node["NodeID"], "env": env}
print(json.dumps(nodes))
