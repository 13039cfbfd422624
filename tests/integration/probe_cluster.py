"""Run on the head with the node venv's Python (piped over SSH by the tests).

Prints JSON: every ALIVE node with its node ID and, read by a task pinned to that node,
the RLINF_* variables of the Ray worker's environment. argv[1] is the head's address.
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
pending = {
    n["NodeManagerAddress"]: worker_env.options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
    ).remote()
    for n in alive
}
nodes = {
    n["NodeManagerAddress"]: {"node_id": n["NodeID"], "env": ray.get(pending[n["NodeManagerAddress"]], timeout=60)}
    for n in alive
}
print(json.dumps(nodes))
