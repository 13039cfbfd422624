"""What an RLinf training job does on the cluster, with RLinf's own classes (test_rlinf_workload.py).

Run on the head as a user would (a login shell: the env file and RAY_ADDRESS). One RLinf Worker per
node (NodePlacementStrategy, 1 CPU each as RLinf's actors ask) reads weights from a home directory,
passes a tensor to the next node's worker with send/recv, puts an item in a Channel that rank 0
drains, and saves a checkpoint (torch.save) into the checkout's logs dir and into a user's data dir,
then writes a cache file under $HOME. Prints one JSON line: per node, each operation's outcome.

argv: num_nodes, weights paths (comma-separated), logs dir, data dir, run name.
"""

import json
import os
import sys
import time

import torch
from rlinf.scheduler import Channel, Cluster, NodePlacementStrategy, Worker

num_nodes, weights, logs_dir, data_dir, run = int(sys.argv[1]), *sys.argv[2:6]
GROUP = "rlinf_workload"


def attempt(results, op, action):
    try:
        value = action()
        results[op] = {"ok": True}
        return value
    except BaseException as err:  # the outcome is the test's data: name the node and the operation
        results[op] = {"ok": False, "error": f"{type(err).__name__}: {err}"[:400]}
        return None


class Trainer(Worker):
    def __init__(self, weights, logs_dir, data_dir, run):
        super().__init__()
        self.paths = (weights, logs_dir, data_dir, run)

    def step(self, channel):
        weights, logs_dir, data_dir, run = self.paths
        rank, world = self._rank, self._world_size
        out = {"rank": rank, "node_rank": self._cluster_node_rank, "home": os.environ.get("HOME"), "ops": {}}
        ops = out["ops"]
        tensor = torch.zeros(4)
        for path in weights.split(","):
            state = attempt(ops, f"read weights {path}", lambda p=path: torch.load(p))
            tensor = state["w"] if state else tensor
        tensor = tensor + rank
        nxt, prev = (rank + 1) % world, (rank - 1) % world
        work = self.send(tensor, dst_group_name=GROUP, dst_rank=nxt, async_op=True)
        got = attempt(ops, "recv from the previous node", lambda: self.recv(src_group_name=GROUP, src_rank=prev))
        work.wait()
        if got is not None and not torch.equal(got, tensor - rank + prev):
            ops["recv from the previous node"] = {"ok": False, "error": f"got {got.tolist()}"}
        attempt(ops, "put into the channel", lambda: channel.put({"rank": rank, "sum": float(tensor.sum())}))

        def save(directory):
            os.makedirs(directory, exist_ok=True)
            path = os.path.join(directory, f"rank_{rank}.pt")
            torch.save({"rank": rank, "w": tensor}, path)
            return path

        ckpt = os.path.join(logs_dir, run, "checkpoints", f"global_step_{rank}")
        attempt(ops, "save a checkpoint under the checkout's logs", lambda: save(ckpt))
        attempt(ops, "save a checkpoint into the user's data dir", lambda: save(os.path.join(data_dir, run)))
        # Where Hugging Face and torch put their caches: XDG_CACHE_HOME, else ~/.cache.
        caches = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        out["cache"] = os.path.join(caches, "rlinf-workload", run)
        attempt(ops, "write a cache", lambda: save(out["cache"]))
        return out

    def drain(self, channel, count):
        return sorted(channel.get()["rank"] for _ in range(count))


started = time.monotonic()
cluster = Cluster(num_nodes=num_nodes)
channel = Channel.create("rlinf_workload_channel")
group = Trainer.create_group(weights, logs_dir, data_dir, run).launch(
    cluster=cluster, name=GROUP, placement_strategy=NodePlacementStrategy(list(range(num_nodes)))
)
steps = group.step(channel).wait()
drained = group.execute_on(0).drain(channel, num_nodes).wait()[0]
print(json.dumps({"steps": steps, "channel": drained, "seconds": round(time.monotonic() - started, 2)}))
sys.stdout.flush()
os._exit(0)
