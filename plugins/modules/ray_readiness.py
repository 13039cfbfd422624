#!/usr/bin/python
# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ray_readiness
short_description: Check that a running Ray cluster is ready to train with RLinf
description:
  - "B(Collectives.) One Ray actor pinned to each expected node reads the environment
    C(ray start) froze there and sets the socket interface exactly as RLinf's workers do
    (C(RLINF_COMM_NET_DEVICES) copied into C(GLOO_SOCKET_IFNAME), and into
    C(NCCL_SOCKET_IFNAME) on a CUDA node, each only when unset). The actors then join one
    C(torch.distributed) gloo group of all nodes (rank 0 on the lowest rank), run an
    all-reduce of each of O(sizes) O(iterations) times, check every sum and report per node
    the interface and address used, the latency (median time of the smallest all-reduce) and
    the bus bandwidth of the largest."
  - With O(nccl) on, the nodes that have GPUs and a CUDA build of torch also join an NCCL
    group and run the same all-reduces on a GPU.
  - When a group fails, an all-pairs TCP check between the nodes' collective addresses
    (every node listens, every other connects from its own collective address) names the
    nodes that cannot reach which peer.
  - Without torch in the venv the module says so and the all-pairs TCP check is the check,
    with the same per-node figures (connect time, throughput).
  - "B(RLinf attached.) When C(rlinf) is importable, RLinf's own C(rlinf.scheduler.Cluster)
    attaches to the running cluster with O(num_nodes) in a separate driver process on the head
    (the venv's Python, the env file's environment, C(RAY_ADDRESS)=O(address)); its rank -> node
    address map must equal O(expected_nodes)'. A failure or a hang (killed after O(rlinf_timeout)
    seconds) fails naming the ranks."
  - "B(RLinf's workers.) With O(rlinf_workers), RLinf's driver then launches one RLinf C(Worker) on
    every node (C(NodePlacementStrategy), 1 CPU each, as RLinf's actors ask), sends a message from
    each node to the next with RLinf's C(send)/C(recv), and has each worker write and remove a file
    in its node's O(expected_nodes[].write_dirs) (creating what is missing, and removing what it
    created). A node with no CPU in Ray, a worker that cannot write, or a message that does not
    arrive fails naming the node and the operation."
  - Bounded. The collectives take at most O(timeout) seconds, RLinf's attach at most
    O(rlinf_timeout) more, less what ending the collectives took beyond their own timeout; the
    whole check ends within O(timeout) + O(rlinf_timeout).
  - Read-only; the actors and RLinf's driver end with the module.
  - Run it on the Ray head with the node venv's Python
    (C(ansible_python_interpreter=/opt/rlinf/venv/bin/python)).
version_added: 0.1.0
author:
  - rlinf-ansible maintainers (!UNKNOWN)
extends_documentation_fragment:
  - rlinf.cluster.expected_nodes
  - rlinf.cluster.attributes.read_only
options:
  address:
    description: GCS address of the head, C(ip:port), always explicit.
    type: str
    required: true
  node_ip:
    description: IP of the local Ray node the driver attaches to; defaults to the host part of O(address).
    type: str
  num_nodes:
    description: C(num_nodes) RLinf's Cluster is created with; 0 means the number of O(expected_nodes).
    type: int
    default: 0
  timeout:
    description:
      - Seconds for the whole collective part (actors placed, group joined, all-reduces, the TCP
        check). The torch group's own timeout is what is left of it after the actors started,
        less what the TCP check needs.
    type: int
    default: 60
  connect_timeout:
    description: Seconds one TCP connection of the all-pairs check may take.
    type: float
    default: 5
  sizes:
    description:
      - Bytes of each all-reduce (float32 elements), ascending; the smallest gives the latency,
        the largest the bandwidth.
    type: list
    elements: int
    default: [1024, 1048576, 16777216]
  iterations:
    description: Timed all-reduces of each size (after one checked warm-up); the figures are their median.
    type: int
    default: 5
  nccl:
    description:
      - Also check NCCL among the nodes with GPUs and a CUDA torch. Their actors then ask Ray for one
        GPU each, so run it before a training run holds them all.
    type: bool
    default: true
  rlinf_attach:
    description:
      - C(auto) attaches RLinf's Cluster when C(rlinf) is installed in the venv; C(always) also fails
        when it is not; C(never) skips it.
    type: str
    choices: [auto, always, never]
    default: auto
  rlinf_timeout:
    description: Seconds RLinf's Cluster may take to attach and its workers to run before its driver is killed.
    type: int
    default: 60
  rlinf_workers:
    description: After the attach, run RLinf's workers on every node (a round trip, a file in each job directory).
    type: bool
    default: true
    version_added: 0.2.0
  env_file:
    description:
      - The Ray unit's env file. Its C(RAY_*) settings (token auth) are set before this driver
        connects; RLinf's driver gets all of it, as a login shell on the head would. A missing file is ignored.
    type: path
notes:
  - Needs C(ray) in the interpreter that runs the module; C(torch) and C(rlinf) are used when present.
  - The collectives run on ports of their own (random ones, not Ray's); a firewall that only opens
    Ray's ports between the nodes makes this check fail, as it would make training hang.
requirements:
  - ray >= 2.47
"""

EXAMPLES = r"""
- name: Check the cluster is ready to train
  rlinf.cluster.ray_readiness:
    address: 10.89.77.10:6379
    expected_nodes:
      - {name: head, rank: 0, ip: 10.89.77.10, comm_device: eth0}
      - {name: worker1, rank: 1, ip: 10.89.77.11, comm_device: eth0}
      - {name: worker2, rank: 2, ip: 10.89.77.12, comm_device: eth0}
    env_file: /etc/rlinf/rlinf.env
  vars:
    ansible_python_interpreter: /opt/rlinf/venv/bin/python
  register: readiness

- name: Collectives only, small and quick
  rlinf.cluster.ray_readiness:
    address: "{{ rlinf_head_ip }}:6379"
    expected_nodes: "{{ nodes }}"
    sizes: [4096]
    iterations: 3
    timeout: 30
    rlinf_attach: never
"""

RETURN = r"""
ok:
  description: Whether every check passed.
  returned: always
  type: bool
summary:
  description: One line, starting with C(OK:) or C(FAILED:).
  returned: always
  type: str
  sample: >-
    OK: gloo all-reduce across 3/3 nodes correct (1 KiB-16 MiB, slowest 0.41 GB/s);
    RLinf 0.3.0 attached, ranks 0-2 at the inventory's addresses
mode:
  description:
    - C(torch) (collective groups), C(tcp) (torch is not installed, the TCP check instead) or
      C(none) (nothing could run).
  returned: always
  type: str
backends:
  description: The collective backends checked, C(gloo) and maybe C(nccl).
  returned: always
  type: list
  elements: str
torch:
  description: torch version of the nodes (the head's when they differ), null without torch.
  returned: always
  type: str
sizes:
  description: The all-reduce sizes in bytes.
  returned: always
  type: list
  elements: int
nodes:
  description: One entry per expected node, in rank order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Inventory host name.
      type: str
    rank:
      description: Rank the inventory gives the host.
      type: int
    ip:
      description: Ray address of the host.
      type: str
    interface:
      description:
        - The interface the collectives use there (C(GLOO_SOCKET_IFNAME) after RLinf's copy, else
          the one holding the hostname's address).
      type: str
    address:
      description: The IPv4 the collectives bind to there.
      type: str
    source:
      description: C(GLOO_SOCKET_IFNAME) or C(hostname) (neither variable set, gloo resolves the hostname).
      type: str
    env:
      description:
        - C(RLINF_COMM_NET_DEVICES), C(GLOO_SOCKET_IFNAME), C(NCCL_SOCKET_IFNAME) and C(RLINF_NODE_RANK)
          in Ray's environment there.
      type: dict
    torch:
      description: torch version there, null when it does not import.
      type: str
    cuda_devices:
      description: GPUs torch sees in the actor (one when O(nccl) asked Ray for one).
      type: int
    gloo:
      description:
        - "C({joined, ok, latency_s, busbw_gbps, join_s, error, sizes}), each size
          C({bytes, seconds, algbw_gbps, busbw_gbps, correct})."
      type: dict
    nccl:
      description: Like RV(nodes[].gloo), for NCCL; null when not checked there.
      type: dict
    tcp:
      description:
        - "C({ok, reached, unreachable, latency_s, gbps}) when the TCP check ran: median connect
          time and throughput of its connections out."
      type: dict
    problems:
      description: This node's problems.
      type: list
      elements: str
groups:
  description: Per backend C({ok, members, master, port, timeout_s, seconds}).
  returned: always
  type: dict
tcp:
  description:
    - "C({ran, reason, pairs, broken, seconds}); each pair C({from, to, address, port, ok, connect_s, gbps,
      error}); broken names the nodes to blame."
  returned: always
  type: dict
rlinf:
  description:
    - "C({state, version, num_nodes, seconds, wall_s, ranks, problems, ok}); each rank
      C({rank, name, expected_ip, ip, ok})."
    - state is C(attached), C(failed), C(timeout), C(not_installed) or C(skipped).
    - C(workers) (with O(rlinf_workers), once attached) is C({state, seconds, nodes}), state C(ran),
      C(no_cpu), C(timeout) (with the C(phase) it was in) or C(failed); each node
      C({rank, name, ok, cpus, writes, ring}), each write C({dir, ok, op, error}).
  returned: always
  type: dict
problems:
  description: Every problem, one sentence each, naming the host, its rank and the fix.
  returned: always
  type: list
  elements: str
warnings_seen:
  description: What RLinf would warn about (an interface variable that overrides RLINF_COMM_NET_DEVICES).
  returned: always
  type: list
  elements: str
table:
  description: The per-node table as lines (rank, host, interface, address, check, latency, bandwidth, RLinf's address).
  returned: always
  type: list
  elements: str
actors_s:
  description: Seconds until every node's actor had started and reported (torch imported).
  returned: always
  type: float
elapsed_s:
  description: Seconds the check took.
  returned: always
  type: float
"""

import contextlib  # noqa: E402 (imports follow the docs, as in every Ansible module)
import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.rlinf.cluster.plugins.module_utils.expected_nodes import EXPECTED_NODES  # noqa: E402
from ansible_collections.rlinf.cluster.plugins.module_utils.ray_cluster_state import match_nodes  # noqa: E402
from ansible_collections.rlinf.cluster.plugins.module_utils.ray_driver import (  # noqa: E402
    CheckFailed,
    run_checked,
    split_address,
)
from ansible_collections.rlinf.cluster.plugins.module_utils.ray_env import (  # noqa: E402
    read_env_file,
    read_ray_env,
)
from ansible_collections.rlinf.cluster.plugins.module_utils.readiness import (  # noqa: E402
    DEFAULT_SIZES,
    ENV_KEYS,
    ReadinessInputError,
    broken_nodes,
    evaluate_rlinf,
    label,
    node_group_result,
    normalize_expected,
    normalize_sizes,
    plan_node,
    render_table,
    summarize,
    tcp_node_figures,
    tcp_pairs,
    tcp_problems,
)
from ansible_collections.rlinf.cluster.plugins.module_utils.session_run import run_session  # noqa: E402

# Seconds kept from the whole check's budget for ending RLinf's session (killing its processes,
# reading what they printed) and writing the report.
SESSION_REAP_S = 2.0
# Seconds kept from the collective budget, beyond one connect timeout, for the TCP check
# that names the broken nodes (new actors, listeners, transfers).
TCP_RESERVE = 8
# Bytes each node sends to each peer in the TCP check (at most).
TCP_PAYLOAD_MAX = 16 << 20
ATTACH_MARK = "RLINF_READINESS_RESULT "
PHASE_MARK = "RLINF_READINESS_PHASE "
# Bytes each RLinf worker sends to the next node's in the round trip.
RING_PAYLOAD = 1 << 20

# RLinf's own Cluster, in a driver process of its own: its singleton, atexit hook and
# signal handlers stay out of the module, and a hang is ended by killing it.
ATTACH_SCRIPT = r"""
import json, os, sys, time
result_mark, phase_mark = sys.argv[2], sys.argv[3]
out = {"state": "failed"}
start = time.monotonic()


def phase(name, **info):
    sys.stdout.write(phase_mark + json.dumps({"phase": name, **info}) + "\n")
    sys.stdout.flush()


def error_text(err):
    lines = [line for line in str(err).strip().splitlines() if line.strip()]
    return type(err).__name__ + ": " + (lines[-1] if lines else repr(err))[:400]


def run_workers(cluster, write_dirs, payload):
    # What a job asks: one RLinf Worker per node, 1 CPU each (Ray's default for an actor),
    # pinned to its node; a message round the ring of nodes; a file where the job writes.
    import ray
    from rlinf.scheduler import NodePlacementStrategy, Worker

    ranks = list(range(cluster.num_nodes))
    found = {"nodes": {}}

    class ReadinessWorker(Worker):
        def __init__(self, dirs):
            super().__init__()
            self.dirs = dirs

        def where(self):
            return {"rank": self._rank, "node_rank": self._cluster_node_rank,
                    "ip": ray.util.get_node_ip_address(), "pid": os.getpid()}

        def write(self):
            rows = []
            for path in self.dirs.get(str(self._cluster_node_rank), []):
                missing, parent = [], path
                while parent not in ("", "/") and not os.path.lexists(parent):
                    missing.append(parent)
                    parent = os.path.dirname(parent)
                target = os.path.join(path, ".rlinf-readiness-%d" % os.getpid())
                row = {"dir": path, "ok": False, "op": "create the directory"}
                try:
                    os.makedirs(path, exist_ok=True)
                    row["op"] = "write a file in it"
                    with open(target, "w") as handle:
                        handle.write("rlinf readiness\n")
                    row["op"] = "remove the file"
                    os.unlink(target)
                    for made in missing:
                        os.rmdir(made)
                    row.update(ok=True, op=None)
                except OSError as err:
                    row["error"] = error_text(err)
                rows.append(row)
            return rows

        def ring(self, group, size):
            began = time.monotonic()
            nxt, prev = (self._rank + 1) % self._world_size, (self._rank - 1) % self._world_size
            work = self.send({"from": self._rank, "blob": b"r" * size}, dst_group_name=group, dst_rank=nxt,
                             async_op=True)
            got = self.recv(src_group_name=group, src_rank=prev)
            work.wait()
            return {"from": got.get("from"), "bytes": len(got.get("blob", b"")),
                    "seconds": round(time.monotonic() - began, 4)}

    name = "rlinf_readiness_workers"
    phase("launch", ranks=ranks)
    group = ReadinessWorker.create_group(write_dirs).launch(
        cluster=cluster, name=name, placement_strategy=NodePlacementStrategy(ranks))
    phase("where")
    for row in group.where().wait():
        found["nodes"].setdefault(str(row["node_rank"]), {}).update(worker=row)
    phase("write")
    for rank, rows in enumerate(group.write().wait()):
        found["nodes"].setdefault(str(rank), {})["writes"] = rows
    if len(ranks) > 1:
        phase("ring")
        for rank, row in enumerate(group.ring(name, payload).wait()):
            found["nodes"].setdefault(str(rank), {})["ring"] = row
    found["state"] = "ran"
    return found


try:
    try:
        from importlib.metadata import version
        out["version"] = version("rlinf")
    except Exception:
        pass
    from rlinf.scheduler import Cluster
    phase("attach")
    cluster = Cluster(num_nodes=int(sys.argv[1]))
    nodes = []
    for rank in range(cluster.num_nodes):
        info = cluster.get_node_info(rank)
        nodes.append({"rank": info.node_rank, "ip": info.node_ip, "ray_id": info.ray_id,
                      "accelerators": info.num_accelerators})
    out.update(state="attached", nodes=nodes, num_nodes=cluster.num_nodes)
    workers = json.loads(sys.argv[4])
    if workers is not None:
        began = time.monotonic()
        try:
            out["workers"] = run_workers(cluster, workers["write_dirs"], workers["payload"])
        except BaseException as err:
            out["workers"] = {"state": "failed", "error": error_text(err)}
        out["workers"]["seconds"] = round(time.monotonic() - began, 3)
except BaseException as err:
    out["error"] = type(err).__name__ + ": " + (str(err).strip() or repr(err))[:800]
out["seconds"] = round(time.monotonic() - start, 3)
sys.stdout.write(result_mark + json.dumps(out) + "\n")
sys.stdout.flush()
try:
    import ray
    ray.shutdown()
except BaseException:
    pass
os._exit(0)
"""


class RayImportError(Exception):
    pass


def import_ray():
    """Return (ray, NodeAffinitySchedulingStrategy); the unit tests replace this function."""
    try:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    except Exception as err:
        raise RayImportError(f"{type(err).__name__}: {err}") from None
    return ray, NodeAffinitySchedulingStrategy


class ReadinessProbe:
    """The actor pinned to one node. Self-contained (imports inside), so Ray ships it by value."""

    def __init__(self):
        self._servers = []

    def facts(self, env_keys):
        import os
        import socket
        import sys

        out = {
            "env": {key: os.environ.get(key) for key in env_keys},
            "hostname": socket.gethostname(),
            "python_executable": sys.executable,
            "interfaces": {},
            "hostname_addresses": [],
        }
        try:
            import psutil

            for name, addrs in psutil.net_if_addrs().items():
                out["interfaces"][name] = [a.address for a in addrs if a.family == socket.AF_INET]
        except Exception:
            import fcntl
            import struct

            for _index, name in socket.if_nameindex():
                try:
                    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                        packed = fcntl.ioctl(sock.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
                    out["interfaces"][name] = [socket.inet_ntoa(packed[20:24])]
                except OSError:
                    out["interfaces"][name] = []
        try:
            for info in socket.getaddrinfo(out["hostname"], None, socket.AF_INET, socket.SOCK_STREAM):
                if info[4][0] not in out["hostname_addresses"]:
                    out["hostname_addresses"].append(info[4][0])
        except OSError:
            pass
        try:
            import torch
            import torch.distributed as dist

            out["torch"] = torch.__version__
            out["torch_cuda"] = torch.version.cuda
            out["cuda_devices"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
            out["gloo_available"] = bool(dist.is_available() and dist.is_gloo_available())
            out["nccl_available"] = bool(dist.is_available() and dist.is_nccl_available())
        except Exception as err:
            out["torch"] = None
            out["torch_error"] = f"{type(err).__name__}: {err}"
            out["cuda_devices"] = 0
        return out

    def free_port(self, address):
        import socket

        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((address, 0))
            return sock.getsockname()[1]

    def join(self, backend, env_updates, rank, world, master, port, timeout_s, sizes, iterations):
        import datetime
        import os
        import time

        os.environ.update(env_updates)
        import torch
        import torch.distributed as dist

        result = {"phase": "join", "sizes": []}
        start = time.monotonic()
        cuda = backend == "nccl"
        try:
            if cuda:
                torch.cuda.set_device(0)
            dist.init_process_group(
                backend=backend,
                init_method=f"tcp://{master}:{port}",
                rank=rank,
                world_size=world,
                timeout=datetime.timedelta(seconds=timeout_s),
            )
            device = torch.device("cuda", 0) if cuda else torch.device("cpu")
            want = world * (world + 1) / 2
            for size in sizes:
                tensor = torch.full((max(1, size // 4),), float(rank + 1), dtype=torch.float32, device=device)
                dist.all_reduce(tensor)
                if result["phase"] == "join":
                    # Joined means one collective went through (NCCL connects lazily, at the first).
                    result["phase"] = "all_reduce"
                    result["join_seconds"] = round(time.monotonic() - start, 4)
                correct = bool(torch.all(tensor == want).item())
                value = float(tensor[0].item())
                times = []
                for _iteration in range(iterations):
                    tensor.fill_(float(rank + 1))
                    if cuda:
                        torch.cuda.synchronize()
                    began = time.perf_counter()
                    dist.all_reduce(tensor)
                    if cuda:
                        torch.cuda.synchronize()
                    times.append(time.perf_counter() - began)
                    if not bool(torch.all(tensor == want).item()):
                        correct, value = False, float(tensor[0].item())
                result["sizes"].append(
                    {"bytes": tensor.numel() * 4, "seconds": times, "correct": correct, "value": value}
                )
        except Exception as err:
            result["error"] = f"{type(err).__name__}: {' '.join(str(err).split())[:600]}"
        finally:
            try:
                if dist.is_initialized():
                    dist.destroy_process_group()
            except Exception:
                pass
        result["seconds"] = round(time.monotonic() - start, 4)
        return result

    def listen(self, address):
        import socket
        import threading

        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((address, 0))
        server.listen(128)

        def handle(conn):
            with conn:
                conn.settimeout(60)
                received = 0
                try:
                    while True:
                        chunk = conn.recv(1 << 20)
                        if not chunk:
                            break
                        received += len(chunk)
                    conn.sendall(received.to_bytes(8, "big"))
                except OSError:
                    pass

        def serve():
            while True:
                try:
                    conn, _peer = server.accept()
                except OSError:
                    return
                threading.Thread(target=handle, args=(conn,), daemon=True).start()

        threading.Thread(target=serve, daemon=True).start()
        self._servers.append(server)
        return server.getsockname()[1]

    def connect(self, source, peers, timeout_s, payload):
        import concurrent.futures
        import socket
        import time

        def open_one(peer):
            began = time.perf_counter()
            try:
                sock = socket.create_connection(
                    (peer["address"], peer["port"]), timeout=timeout_s, source_address=(source, 0)
                )
            except OSError as err:
                text = "timed out" if isinstance(err, socket.timeout) else f"{type(err).__name__}: {err}"
                return (
                    peer,
                    None,
                    {"to": peer["name"], "ok": False, "error": f"{text} after {time.perf_counter() - began:.1f} s"},
                )
            return peer, sock, {"to": peer["name"], "ok": True, "connect_s": time.perf_counter() - began}

        # Connections open at once (a dead peer costs one timeout, not one per peer), data sent
        # one peer at a time so each throughput figure is that path's alone.
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(32, len(peers)))) as pool:
            opened = list(pool.map(open_one, peers))
        results = []
        block = b"\0" * min(payload, 1 << 20)
        for _peer, sock, result in opened:
            if sock is not None:
                try:
                    with sock:
                        sock.settimeout(max(timeout_s, 10))
                        began = time.perf_counter()
                        sent = 0
                        while sent < payload:
                            sock.sendall(block[: payload - sent])
                            sent += min(len(block), payload - sent)
                        sock.shutdown(socket.SHUT_WR)
                        ack = b""
                        while len(ack) < 8:
                            chunk = sock.recv(8 - len(ack))
                            if not chunk:
                                break
                            ack += chunk
                        result["transfer_s"] = time.perf_counter() - began
                        result["bytes"] = sent
                        confirmed = int.from_bytes(ack, "big") if len(ack) == 8 else None
                        if confirmed != sent:
                            result.update(ok=False, error=f"sent {sent} bytes but the peer confirmed {confirmed}")
                except OSError as err:
                    result.update(ok=False, error=f"connected, then {type(err).__name__}: {err}")
            results.append(result)
        return results


class Readiness:
    def __init__(self, module, clock=time.monotonic):
        self.module = module
        self.params = module.params
        self.address = self.params["address"]
        self.clock = clock
        self.started = clock()
        # The collectives end by `deadline`; the whole check, RLinf's attach included, by `whole_deadline`.
        self.rlinf_timeout = max(1, self.params["rlinf_timeout"])
        self.deadline = self.started + max(1, self.params["timeout"])
        self.whole_deadline = self.deadline + self.rlinf_timeout
        self.actors = []
        # Each matched node's CPUs in Ray (RLinf's actors ask 1 each).
        self.cpus = {}
        self.result = {
            "changed": False,
            "ok": False,
            "summary": "",
            "mode": "none",
            "backends": [],
            "torch": None,
            "sizes": [],
            "nodes": [],
            "groups": {},
            "tcp": {"ran": False, "reason": None, "pairs": [], "broken": []},
            "rlinf": {"state": "skipped", "ok": True, "ranks": [], "problems": []},
            "problems": [],
            "warnings_seen": [],
            "elapsed_s": 0.0,
            "table": [],
            "actors_s": None,
        }

    # ------------------------------------------------------------------ plumbing

    def remaining(self, deadline):
        return deadline - self.clock()

    def rlinf_budget(self):
        """RLinf's attach gets rlinf_timeout, less what the collectives took beyond their own timeout
        (stopping their actors, leaving Ray): the whole check ends within timeout + rlinf_timeout."""
        return max(1.0, min(self.rlinf_timeout, self.whole_deadline - self.clock() - SESSION_REAP_S))

    def reserve(self):
        return float(self.params["connect_timeout"]) + TCP_RESERVE

    def gather(self, ray, refs, timeout):
        """Results of {name: ref} by name, and {name: error} for those that failed or are late."""
        results, errors = {}, {}
        if not refs:
            return results, errors
        timeout = max(0.5, timeout)
        ready, _pending = ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout)
        ready = set(ready)
        for name, ref in refs.items():
            if ref not in ready:
                errors[name] = f"no answer within {timeout:.0f} s"
                continue
            try:
                results[name] = ray.get(ref, timeout=10)
            except Exception as err:
                lines = [line for line in str(err).strip().splitlines() if line.strip()]
                errors[name] = f"{type(err).__name__}: {(lines[-1] if lines else '')[:300]}"
        return results, errors

    def start_actors(self, ray, affinity, expected, matched, gpus):
        probe = ray.remote(ReadinessProbe)
        actors = {}
        for exp in expected:
            node = matched[exp["name"]]
            options = {
                "num_cpus": 0,
                "num_gpus": 1 if exp["name"] in gpus else 0,
                "max_restarts": 0,
                "scheduling_strategy": affinity(node_id=node["node_id"], soft=False),
            }
            actors[exp["name"]] = probe.options(**options).remote()
        self.actors.extend(actors.values())
        return actors

    def kill_actors(self, ray):
        for actor in self.actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        self.actors = []

    # ------------------------------------------------------------------ collectives

    def run_group(self, ray, backend, members, actors, plans, expected_by_name, sizes, deadline):
        """One torch.distributed group over ``members`` (names, rank order)."""
        iterations = max(1, self.params["iterations"])
        master_name = members[0]
        master = plans[master_name]["address"] or expected_by_name[master_name]["ip"]
        began = self.clock()
        group = {"ok": False, "members": list(members), "master": master, "port": None, "timeout_s": None}
        ports, errors = self.gather(ray, {master_name: actors[master_name].free_port.remote(master)}, 15)
        if master_name not in ports:
            group["error"] = f"no free port on {master}: {errors.get(master_name)}"
            return group, {name: {"phase": "join", "error": group["error"]} for name in members}, 15
        group["port"] = ports[master_name]
        pg_timeout = max(5, int(self.remaining(deadline) - self.reserve()))
        group["timeout_s"] = pg_timeout
        refs = {}
        for index, name in enumerate(members):
            refs[name] = actors[name].join.remote(
                backend,
                plans[name]["updates"],
                index,
                len(members),
                master,
                group["port"],
                pg_timeout,
                sizes,
                iterations,
            )
        # The group's own timeout ends a failed join; the all-reduces after it take seconds.
        wait_s = pg_timeout + 3
        results, errors = self.gather(ray, refs, wait_s)
        for name, error in errors.items():
            results[name] = {"phase": "join", "error": error} if "no answer" not in error else None
        group["ok"] = all(
            results.get(name) and not results[name].get("error") and results[name].get("sizes") for name in members
        )
        group["seconds"] = round(self.clock() - began, 2)
        return group, results, wait_s

    def run_tcp(self, ray, affinity, expected, matched, plans, deadline, reason, actors=None):
        began = self.clock()
        tcp = {"ran": True, "reason": reason, "pairs": [], "broken": []}
        if actors is None:
            actors = self.start_actors(ray, affinity, expected, matched, set())
        addresses = {n["name"]: plans.get(n["name"], {}).get("address") or n["ip"] for n in expected}
        budget = max(2, self.remaining(deadline))
        ports, errors = self.gather(ray, {n: actors[n].listen.remote(addresses[n]) for n in addresses}, min(budget, 20))
        listeners = {n: {"address": addresses[n], "port": ports[n]} for n in ports}
        listeners.update({n: {"address": addresses[n], "error": e} for n, e in errors.items()})
        payload = min(TCP_PAYLOAD_MAX, max(self.result["sizes"] or [1 << 20]))
        connect_timeout = float(self.params["connect_timeout"])
        refs = {}
        for node in expected:
            peers = [
                {
                    "name": other["name"],
                    "address": listeners[other["name"]]["address"],
                    "port": listeners[other["name"]].get("port"),
                }
                for other in expected
                if other["name"] != node["name"] and listeners[other["name"]].get("port")
            ]
            if node["name"] in ports:
                refs[node["name"]] = actors[node["name"]].connect.remote(
                    addresses[node["name"]], peers, connect_timeout, payload
                )
        results, _errors = self.gather(ray, refs, max(connect_timeout + 5, self.remaining(deadline)))
        connects = {n: results.get(n) for n in addresses}
        tcp["pairs"] = tcp_pairs(expected, listeners, connects)
        tcp["broken"] = broken_nodes(expected, tcp["pairs"])
        tcp["seconds"] = round(self.clock() - began, 2)
        return tcp

    def collectives(self, ray, affinity, expected, deadline):
        res = self.result
        by_name = {n["name"]: n for n in expected}
        rows = {n["name"]: {"name": n["name"], "rank": n["rank"], "ip": n["ip"], "problems": []} for n in expected}
        res["nodes"] = [rows[n["name"]] for n in expected]

        membership = match_nodes(expected, ray.nodes())
        for exp in membership["missing"]:
            rows[exp["name"]]["problems"].append(
                f"{label(exp)} ({exp['ip']}) is not ALIVE in Ray, so it cannot take part; run status.yml "
                "to see why, then site.yml."
            )
        if membership["missing"]:
            return
        matched = membership["matched"]
        for name, node in matched.items():
            rows[name]["node_id"] = node["node_id"]
            self.cpus[name] = float(node["resources"].get("CPU") or 0)
        gpus = set()
        if self.params["nccl"]:
            gpus = {name for name, node in matched.items() if float(node["resources"].get("GPU") or 0) >= 1}

        actors = self.start_actors(ray, affinity, expected, matched, gpus)
        # Starting an actor imports torch there (seconds on a loaded host): all the budget but
        # the TCP check's share and a minimal group timeout.
        facts_wait = max(5.0, self.remaining(deadline) - self.reserve() - 5)
        facts, errors = self.gather(ray, {n: a.facts.remote(list(ENV_KEYS)) for n, a in actors.items()}, facts_wait)
        res["actors_s"] = round(self.clock() - self.started, 2)
        for name, error in errors.items():
            need = " and one free GPU" if name in gpus else ""
            rows[name]["problems"].append(
                f"{label(by_name[name])}: the readiness actor did not start there ({error}); the node must "
                f"run a Ray worker process{need}: check `journalctl -u rlinf-ray` on it."
            )
        if errors:
            return
        plans = {}
        for exp in expected:
            plan = plan_node(exp, facts[exp["name"]])
            plans[exp["name"]] = plan
            fact = facts[exp["name"]]
            rows[exp["name"]].update(
                interface=plan["interface"],
                address=plan["address"],
                source=plan["source"],
                env=fact.get("env"),
                torch=fact.get("torch"),
                cuda_devices=fact.get("cuda_devices") or 0,
                python_executable=fact.get("python_executable"),
            )
            rows[exp["name"]]["problems"].extend(plan["problems"])
            res["warnings_seen"].extend(plan["warnings"])

        with_torch = [n["name"] for n in expected if facts[n["name"]].get("torch")]
        torch_versions = sorted({facts[n].get("torch") for n in with_torch})
        res["torch"] = facts[expected[0]["name"]].get("torch") or (torch_versions[0] if torch_versions else None)
        if not with_torch:
            error = facts[expected[0]["name"]].get("torch_error") or "ModuleNotFoundError"
            res["mode"] = "tcp"
            reason = f"torch is not installed in the venv ({error}): all-pairs TCP check instead"
            res["tcp"] = self.run_tcp(ray, affinity, expected, matched, plans, deadline, reason, actors)
            self.add_tcp(expected, plans, rows)
            return
        res["mode"] = "torch"
        without = [n for n in by_name if n not in with_torch]
        if without or len(torch_versions) > 1:
            res["problems"].append(
                "torch differs between the nodes ("
                + ", ".join(f"{n}: {facts[n].get('torch') or 'not installed'}" for n in by_name)
                + "); every node needs the same venv: set python_env_extra_packages for all and re-run site.yml."
            )
            res["tcp"] = self.run_tcp(
                ray, affinity, expected, matched, plans, deadline, "torch differs between the nodes"
            )
            self.add_tcp(expected, plans, rows)
            return

        members = [n["name"] for n in expected]
        res["backends"] = ["gloo"]
        group, results, wait_s = self.run_group(ray, "gloo", members, actors, plans, by_name, res["sizes"], deadline)
        res["groups"]["gloo"] = group
        for name in members:
            outcome = node_group_result(by_name[name], results.get(name), len(members), "gloo", wait_s)
            rows[name]["gloo"] = {k: v for k, v in outcome.items() if k != "problems"}
            rows[name]["problems"].extend(outcome["problems"])
        if group.get("error"):
            res["problems"].append(f"gloo: {group['error']}")

        cuda_nodes = [
            n for n in members if n in gpus and facts[n].get("cuda_devices") and facts[n].get("nccl_available")
        ]
        for name in sorted(gpus - set(cuda_nodes)):
            res["warnings_seen"].append(
                f"{label(by_name[name])} has GPUs but torch {facts[name].get('torch')} there has no "
                "CUDA/NCCL: NCCL not checked."
            )
        if group["ok"] and len(cuda_nodes) >= 2 and self.remaining(deadline) > self.reserve() + 5:
            res["backends"].append("nccl")
            nccl, nccl_results, nccl_wait = self.run_group(
                ray, "nccl", cuda_nodes, actors, plans, by_name, res["sizes"], deadline
            )
            res["groups"]["nccl"] = nccl
            for name in cuda_nodes:
                outcome = node_group_result(by_name[name], nccl_results.get(name), len(cuda_nodes), "nccl", nccl_wait)
                rows[name]["nccl"] = {k: v for k, v in outcome.items() if k != "problems"}
                rows[name]["problems"].extend(outcome["problems"])
            group = nccl

        if not group["ok"]:
            # Actors may still hang in a collective: new ones for the TCP check.
            self.kill_actors(ray)
            if self.remaining(deadline) >= 3:
                res["tcp"] = self.run_tcp(
                    ray,
                    affinity,
                    expected,
                    matched,
                    plans,
                    deadline,
                    "a collective group failed: which node reaches which",
                )
                self.add_tcp(expected, plans, rows)
            else:
                res["tcp"]["reason"] = f"not run: the {self.params['timeout']} s timeout was used up"

    def add_tcp(self, expected, plans, rows):
        pairs = self.result["tcp"]["pairs"]
        for node in expected:
            rows[node["name"]]["tcp"] = tcp_node_figures(node["name"], pairs)
        self.result["problems"].extend(tcp_problems(expected, pairs, plans))

    # ------------------------------------------------------------------ RLinf

    def attach_env(self):
        """A login shell's environment on the head: the env file over a minimal base."""
        venv_bin = os.path.dirname(sys.executable)
        env = {
            "PATH": f"{venv_bin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": os.environ.get("HOME", "/root"),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        }
        env.update(read_env_file(self.params.get("env_file")))
        env["RAY_ADDRESS"] = self.address
        return env

    def attach_rlinf(self, num_nodes, expected):
        setting = self.params["rlinf_attach"]
        if setting == "never":
            return {"state": "skipped"}
        # RLinf's actors ask 1 CPU each and its managers sit on rank 0: on a node without one,
        # RLinf's Cluster (rank 0) or its workers (any rank) would wait out the timeout.
        starved = [n for n in expected if self.cpus.get(n["name"], 1) < 1]
        if starved and importlib.util.find_spec("rlinf") is not None:
            return {
                "state": "no_cpu",
                "workers": {
                    "state": "no_cpu",
                    "ranks": [n["rank"] for n in starved],
                    "cpus": {str(n["rank"]): self.cpus.get(n["name"]) for n in expected},
                },
            }
        if importlib.util.find_spec("rlinf") is None:
            if setting == "always":
                return {
                    "state": "failed",
                    "error": f"rlinf is not installed in {sys.prefix}; add it to python_env_extra_packages "
                    "(or python_env_no_deps_packages) and re-run site.yml, or set rlinf_attach to auto.",
                }
            return {"state": "not_installed"}
        timeout = self.rlinf_budget()
        workers = self.workers_arg(expected)
        argv = [sys.executable, "-c", ATTACH_SCRIPT, str(num_nodes), ATTACH_MARK, PHASE_MARK, workers]
        with tempfile.TemporaryDirectory(prefix="rlinf-readiness-") as cwd:
            returncode, out, err, timed_out = run_session(argv, self.attach_env(), cwd, timeout)
        text_out = out.decode("utf-8", "replace")
        lines = [line.strip() for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
        tail = " | ".join(lines[-3:])[-600:]
        phases = [json.loads(line[len(PHASE_MARK) :]) for line in text_out.splitlines() if line.startswith(PHASE_MARK)]
        for line in text_out.splitlines():
            if line.startswith(ATTACH_MARK):
                found = json.loads(line[len(ATTACH_MARK) :])
                found["log_tail"] = tail
                return found
        if timed_out:
            # Attached, then stuck with RLinf's workers: say in which step (placing them, writing...).
            last = phases[-1] if phases else {}
            if last.get("phase", "attach") != "attach":
                return {
                    "state": "attached_unconfirmed",
                    "workers": {"state": "timeout", "phase": last["phase"], "timeout": timeout},
                    "log_tail": tail,
                }
            return {"state": "timeout", "timeout": timeout, "log_tail": tail}
        return {
            "state": "failed",
            "error": f"RLinf's driver exited with {returncode} and no result",
            "log_tail": tail,
        }

    def workers_arg(self, expected):
        """What RLinf's workers do after the attach (JSON), or null when they are not asked for."""
        if not self.params["rlinf_workers"]:
            return "null"
        dirs = {str(node["rank"]): node.get("write_dirs") or [] for node in expected}
        return json.dumps({"write_dirs": dirs, "payload": RING_PAYLOAD})

    # ------------------------------------------------------------------ run

    def run(self):
        res = self.result
        try:
            expected = normalize_expected(self.params["expected_nodes"])
            res["sizes"] = normalize_sizes(self.params["sizes"] or list(DEFAULT_SIZES))
        except ReadinessInputError as err:
            res["problems"] = err.problems
            raise CheckFailed("the readiness check's input is unusable: " + " ".join(err.problems)) from None
        host, port = split_address(self.address)
        if host is None:
            raise CheckFailed(
                f"address '{self.address}' is not ip:port; pass the head's Ray address, e.g. 10.0.0.1:6379."
            )
        num_nodes = self.params["num_nodes"] or len(expected)
        deadline = self.deadline

        os.environ.update(read_ray_env(self.params.get("env_file")))
        try:
            ray, affinity = import_ray()
        except RayImportError as err:
            raise CheckFailed(
                f"cannot import ray with {sys.executable} ({err}); run this module with the node venv's "
                "Python: set ansible_python_interpreter to <rlinf_venv_dir>/bin/python."
            ) from None
        try:
            socket.create_connection((host, port), timeout=5).close()
        except OSError as err:
            raise CheckFailed(
                f"nothing accepts connections at the Ray head address {self.address} ({err}); run status.yml "
                "first, then site.yml if Ray is down."
            ) from None
        try:
            ray.init(
                address=self.address,
                log_to_driver=False,
                logging_level="ERROR",
                namespace="rlinf_readiness",
                _node_ip_address=self.params.get("node_ip") or host,
            )
        except Exception as err:
            raise CheckFailed(
                f"cannot connect to the Ray cluster at {self.address} as a driver ({type(err).__name__}: "
                f"{str(err).strip()[:400]}); run it on the head with the venv's Python and the env "
                "file's RAY_AUTH_* settings."
            ) from None
        try:
            self.collectives(ray, affinity, expected, deadline)
        finally:
            self.kill_actors(ray)
            with contextlib.suppress(Exception):
                ray.shutdown()

        began = self.clock()
        res["rlinf"] = evaluate_rlinf(expected, num_nodes, self.attach_rlinf(num_nodes, expected))
        res["rlinf"]["wall_s"] = round(self.clock() - began, 2)
        res["problems"] = (
            [p for row in res["nodes"] for p in row["problems"]] + res["problems"] + res["rlinf"]["problems"]
        )
        if res["mode"] == "none" and not res["problems"]:
            res["problems"].append("no collective check ran; see the nodes' entries.")
        res["ok"] = not res["problems"]
        res["elapsed_s"] = round(self.clock() - self.started, 2)
        res["summary"] = summarize(res)
        res["table"] = render_table(res)
        for warning in res["warnings_seen"]:
            self.module.warn(warning)
        return res


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            address=dict(type="str", required=True),
            node_ip=dict(type="str"),
            expected_nodes=EXPECTED_NODES,
            num_nodes=dict(type="int", default=0),
            timeout=dict(type="int", default=60),
            connect_timeout=dict(type="float", default=5),
            sizes=dict(type="list", elements="int", default=list(DEFAULT_SIZES)),
            iterations=dict(type="int", default=5),
            nccl=dict(type="bool", default=True),
            rlinf_attach=dict(type="str", choices=["auto", "always", "never"], default="auto"),
            rlinf_timeout=dict(type="int", default=60),
            rlinf_workers=dict(type="bool", default=True),
            env_file=dict(type="path"),
        ),
        supports_check_mode=True,
    )


def main():
    module = build_module()
    check = Readiness(module)
    failure, exception = run_checked("ray_readiness", check.run)
    result = check.result
    result["elapsed_s"] = round(check.clock() - check.started, 2)
    if failure is not None:
        result["problems"] = result["problems"] or [failure]
        result["summary"] = f"FAILED: {failure}"
        extra = {"exception": exception} if exception else {}
        module.fail_json(msg=failure, **extra, **result)
    if not result["ok"]:
        module.fail_json(msg=f"{result['summary']}:\n- " + "\n- ".join(result["problems"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
