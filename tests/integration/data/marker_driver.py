"""Test driver: a Ray task pinned to every ALIVE node imports `rlinf` and returns its
__version__ and file. Emulates RLinf's code sync: when RLINF_CODE_WORKING_DIR is set (as
launch.yml does for rlinf_code_sync=ray) rlinf/ of that checkout goes to every node as a
Ray runtime_env py_module. Prints one JSON line; writes it to argv[1] too when given."""

import json
import os
import sys

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

working_dir = os.environ.get("RLINF_CODE_WORKING_DIR", "0")
runtime_env = {}
if working_dir.lower() not in ("", "0", "false", "no", "off"):
    runtime_env["py_modules"] = [os.path.join(working_dir, "rlinf")]
ray.init(address="auto", runtime_env=runtime_env or None)


@ray.remote(num_cpus=0)
def marker():
    import rlinf

    return {
        "ip": ray.util.get_node_ip_address(),
        "version": rlinf.__version__,
        "file": rlinf.__file__,
        "python": sys.executable,
        "rank": os.environ.get("RLINF_NODE_RANK"),
    }


nodes = [n for n in ray.nodes() if n["Alive"]]
refs = [
    marker.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote() for n in nodes
]
result = {"driver_python": sys.executable, "code_working_dir": working_dir, "nodes": ray.get(refs, timeout=120)}
line = json.dumps(result)
if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as out:
        out.write(line + "\n")
print(line)
