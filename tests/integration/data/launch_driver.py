"""Test driver for launch.yml: connects like RLinf (ray.init(address="auto")), runs a task
pinned to every ALIVE node and writes what it saw to argv[1]."""

import json
import os
import sys

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

ray.init(address="auto")


@ray.remote(num_cpus=0)
def where():
    return {"ip": ray.util.get_node_ip_address(), "rank": os.environ.get("RLINF_NODE_RANK"), "python": sys.executable}


nodes = [n for n in ray.nodes() if n["Alive"]]
strategies = [NodeAffinitySchedulingStrategy(n["NodeID"], soft=False) for n in nodes]
result = {
    "driver_python": sys.executable,
    "cwd": os.getcwd(),
    "path0": os.environ["PATH"].split(":")[0],
    "nodes": ray.get([where.options(scheduling_strategy=s).remote() for s in strategies], timeout=120),
}
with open(sys.argv[1], "w") as out:
    out.write(json.dumps(result) + "\n")
print("launch_driver: done,", len(result["nodes"]), "nodes")
