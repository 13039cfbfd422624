#!/usr/bin/python
# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ray_cluster_check
short_description: Check that a running Ray cluster matches the inventory
description:
  - Connects to the Ray cluster at O(address) as a driver, waits up to O(timeout) seconds for
    every expected node to be ALIVE (DEAD entries dropped, one node per NodeManagerAddress and
    port), then runs one tiny actor pinned to each node that reads the Ray worker's environment,
    Python and Ray versions.
  - Fails, listing every problem, when a host is missing, an extra node is ALIVE (RLinf would
    silently drop some nodes), a node's C(RLINF_NODE_RANK) differs from the inventory's rank,
    Python or Ray versions differ between nodes, a node has fewer CPUs, GPUs or custom resources
    than expected, or a custom resource sits on the wrong node.
  - Resources are compared as numbers, at least the expected amount; more is fine.
  - Read-only; never changes anything.
  - Run it on the Ray head with the node venv's Python
    (C(ansible_python_interpreter=/opt/rlinf/venv/bin/python)), where C(import ray) works.
version_added: 0.1.0
author:
  - rlinf-ansible maintainers (!UNKNOWN)
extends_documentation_fragment:
  - rlinf.cluster.expected_nodes
  - rlinf.cluster.attributes.read_only
options:
  address:
    description:
      - GCS address of the head, C(ip:port). Always given explicitly, never auto-discovered
        (C(ray.init(address="auto")) may find another cluster on the same machine).
    type: str
    required: true
  node_ip:
    description:
      - IP of the local Ray node the driver attaches to.
      - Defaults to the host part of O(address) (the driver runs on the head); a hostname that
        resolves to 127.0.0.1 would otherwise attach to the wrong raylet.
    type: str
  expected_totals:
    description:
      - "Cluster-wide minimums over the expected ALIVE nodes, for example C({GPU: 8}): at least
        that much, compared as numbers (more GPUs than expected pass)."
      - Without it, the per-node amounts of O(expected_nodes[].resources) are summed.
    type: dict
    default: {}
  timeout:
    description:
      - Seconds to wait for the head to accept connections and this driver to connect (a head Ray
        just restarted refuses drivers until its own node has registered), and again for the
        expected nodes to be ALIVE once it is connected (importing Ray and connecting, slow on a
        loaded head, do not eat into the nodes' time).
      - The probes (one actor per node) get up to the same number of seconds again, unless O(probe_timeout) is set.
    type: int
    default: 60
  probe_timeout:
    description:
      - Seconds the probes get; defaults to O(timeout). A dry run that must not wait for
        nodes it did not start (O(timeout=1)) still gives the running nodes' tasks the time a
        Ray worker takes to start.
    type: int
    version_added: 0.2.0
  poll_interval:
    description: Seconds between two reads of the node table, and between two attempts to connect.
    type: float
    default: 1
  probe:
    description:
      - Run one task pinned to each ALIVE node to read its worker environment and versions.
      - Without it ranks and versions are not checked.
    type: bool
    default: true
  env_keys:
    description: Environment variables read in each node's Ray worker.
    type: list
    elements: str
    default: [RLINF_NODE_RANK, RLINF_COMM_NET_DEVICES]
  ray_version:
    description:
      - The Ray version every node must run (the pin, C(rlinf_ray_version)); empty checks only that all nodes
        run the same one.
    type: str
    default: ""
  env_file:
    description:
      - Optional env file (C(KEY=VALUE) lines) of the Ray unit; its C(RAY_*) variables (for example
        C(RAY_AUTH_MODE)) are set in the driver before it connects. A missing file is ignored.
    type: path
notes:
  - Needs the C(ray) package in the interpreter that runs the module.
requirements:
  - ray >= 2.47
"""

EXAMPLES = r"""
- name: Check the cluster from the head
  rlinf.cluster.ray_cluster_check:
    address: 10.89.77.10:6379
    expected_nodes:
      - {name: head, rank: 0, ip: 10.89.77.10, resources: {CPU: 2}}
      - {name: worker1, rank: 1, ip: 10.89.77.11, resources: {GPU: 4, robot: 1}}
      - {name: worker2, rank: 2, ip: 10.89.77.12}
    timeout: 60
  vars:
    ansible_python_interpreter: /opt/rlinf/venv/bin/python
  register: ray_cluster

- name: Only membership and resources, no probes
  rlinf.cluster.ray_cluster_check:
    address: "{{ rlinf_plan.cluster.head_address }}"
    expected_nodes: "{{ expected }}"
    probe: false
"""

RETURN = r"""
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
      description: Expected IP.
      type: str
    state:
      description: C(ALIVE), C(DEAD) (Ray lists only dead entries for this IP) or C(MISSING).
      type: str
    node_id:
      description: Ray node ID, null when the node is not ALIVE.
      type: str
    resources:
      description: Resources Ray reports for the node (C(node:*) keys left out).
      type: dict
    custom_resources:
      description: The resources that are not CPU, GPU, memory, object_store_memory or accelerator_type.
      type: dict
    env:
      description: Values of O(env_keys) read by a task pinned to the node (null when unset).
      type: dict
    python:
      description: Worker Python version, for example C(3.11.2).
      type: str
    python_executable:
      description: Worker C(sys.executable).
      type: str
    ray_version:
      description: Worker C(ray.__version__).
      type: str
    problems:
      description: The problems about this node.
      type: list
      elements: str
  sample:
    - name: head
      rank: 0
      ip: 10.89.77.10
      state: ALIVE
      node_id: 3f2a...
      python: 3.11.2
      ray_version: 2.60.0
      env: {RLINF_NODE_RANK: "0"}
      resources: {CPU: 2.0}
      problems: []
missing:
  description: Names of the expected hosts with no ALIVE Ray node.
  returned: always
  type: list
  elements: str
extra:
  description: ALIVE Ray nodes that match no expected host (same fields as RV(nodes), name null).
  returned: always
  type: list
  elements: dict
problems:
  description: Every problem, one sentence each, naming the host, its rank and the fix.
  returned: always
  type: list
  elements: str
totals:
  description: CPU and GPU totals over the expected nodes, C({actual, expected}).
  returned: always
  type: dict
summary:
  description: One line, starting with C(OK:) or C(FAILED:).
  returned: always
  type: str
  sample: "OK: 3/3 nodes ALIVE at 10.89.77.10:6379, ranks 0-2 match the inventory, Ray 2.60.0, Python 3.11.2"
driver:
  description: Interpreter, Python and Ray of the driver (this module).
  returned: always
  type: dict
"""

import contextlib  # noqa: E402 (imports follow the docs, as in every Ansible module)
import os  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.rlinf.cluster.plugins.module_utils.expected_nodes import EXPECTED_NODES  # noqa: E402
from ansible_collections.rlinf.cluster.plugins.module_utils.ray_cluster_state import (  # noqa: E402
    DEFAULT_ENV_KEYS,
    ExpectedNodesError,
    evaluate,
    match_nodes,
    normalize_expected,
    normalize_totals,
)
from ansible_collections.rlinf.cluster.plugins.module_utils.ray_driver import (  # noqa: E402
    CheckFailed,
    run_checked,
    split_address,
)
from ansible_collections.rlinf.cluster.plugins.module_utils.ray_env import read_ray_env  # noqa: E402

# Seconds to wait for an extra ALIVE node to vanish once every expected node is ALIVE (a
# killed raylet's entry stays ALIVE until the GCS health check gives up on it).
EXTRA_GRACE = 45


class RayImportError(Exception):
    pass


def import_ray():
    """Return (ray, NodeAffinitySchedulingStrategy); the unit tests replace this function."""
    try:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    except Exception as err:  # ImportError, or a broken install raising anything else
        raise RayImportError(f"{type(err).__name__}: {err}") from None
    return ray, NodeAffinitySchedulingStrategy


def probe_task(env_keys):
    """Runs inside a Ray worker on one node; self-contained so cloudpickle ships it by value."""
    import os
    import socket
    import sys

    import ray

    return {
        "env": {key: os.environ.get(key) for key in env_keys},
        "python": sys.version,
        "python_executable": sys.executable,
        "ray_version": ray.__version__,
        "hostname": socket.gethostname(),
    }


class NodeProbe:
    """The actor pinned to one node (what an RLinf Worker is): its read() is probe_task."""

    def read(self, env_keys):
        return probe_task(env_keys)


class RayClusterCheck:
    def __init__(self, module, clock=time.monotonic, sleep=time.sleep):
        self.module = module
        self.params = module.params
        self.address = self.params["address"]
        self.timeout = max(0, self.params["timeout"])
        probe_timeout = self.params.get("probe_timeout")
        self.probe_timeout = max(1, self.timeout if probe_timeout is None else probe_timeout)
        self.poll_interval = max(0.05, float(self.params["poll_interval"]))
        self.env_keys = list(self.params["env_keys"] or DEFAULT_ENV_KEYS)
        self.clock = clock
        self.sleep = sleep
        self.result = {
            "changed": False,
            "nodes": [],
            "missing": [],
            "extra": [],
            "problems": [],
            "totals": {},
            "summary": "",
            "driver": {"python_executable": sys.executable, "python": sys.version.split()[0]},
        }

    def fail(self, msg):
        self.result["summary"] = self.result["summary"] or f"FAILED: could not check the Ray cluster at {self.address}"
        if not self.result["problems"]:
            self.result["problems"] = [msg]
        raise CheckFailed(msg)

    def wait_for_port(self, host, port, deadline):
        """Wait until something listens on the GCS port; None when it does, else the last error."""
        last = None
        while True:
            try:
                with socket.create_connection((host, port), timeout=min(5.0, self.poll_interval + 2)):
                    return None
            except OSError as err:
                last = err
            if self.clock() >= deadline:
                return last
            self.sleep(self.poll_interval)

    def connect(self, ray, init_args, deadline):
        """ray.init, again until the deadline: a head whose Ray just restarted answers on its port
        before its own node has registered, and refuses drivers until then."""
        while True:
            try:
                ray.init(**init_args)
                return
            except Exception as err:
                with contextlib.suppress(Exception):
                    ray.shutdown()
                if self.clock() >= deadline:
                    self.fail(
                        f"cannot connect to the Ray cluster at {self.address} as a driver from "
                        f"{sys.executable} within {self.timeout} s ({type(err).__name__}: {str(err).strip()[:500]}); "
                        "the driver must run on the head with the same Python and Ray as the cluster (and the "
                        "same RAY_AUTH_* settings when token auth is on)."
                    )
            self.sleep(self.poll_interval)

    def wait_for_nodes(self, ray, expected, deadline):
        """Poll until every expected node is ALIVE and no extra one is, or the deadline.

        An extra ALIVE node once all expected ones are there may be a restarted raylet's old
        entry that the GCS has not marked DEAD yet: wait up to EXTRA_GRACE s for it to go.
        """
        complete_since = None
        while True:
            raw = ray.nodes()
            now = self.clock()
            membership = match_nodes(expected, raw)
            # A node with no known address cannot join; waiting for it would only delay the report.
            if not [exp for exp in membership["missing"] if exp["ip"]]:
                complete_since = now if complete_since is None else complete_since
                if not membership["extra"] or now - complete_since >= EXTRA_GRACE:
                    return raw
            else:
                complete_since = None
            if now >= deadline:
                return raw
            self.sleep(self.poll_interval)

    def run_probes(self, ray, affinity, node_ids):
        """One actor per node, pinned with a hard node affinity; results keyed by node_id. An actor, not a
        task: for a task's lease Ray 2.60's raylet starts a second, unused worker (its backlog prestart)."""
        probe = ray.remote(num_cpus=0, max_restarts=0)(NodeProbe)
        actors = {}
        refs = {}
        probes = {}
        for node_id in node_ids:
            try:
                actors[node_id] = probe.options(scheduling_strategy=affinity(node_id=node_id, soft=False)).remote()
                refs[node_id] = actors[node_id].read.remote(self.env_keys)
            except Exception as err:
                probes[node_id] = {"error": f"could not submit the task ({type(err).__name__}: {err})"}
        try:
            if refs:
                ready, _pending = ray.wait(list(refs.values()), num_returns=len(refs), timeout=self.probe_timeout)
                for node_id, ref in refs.items():
                    if ref not in ready:
                        probes[node_id] = {"error": f"the task did not finish within {self.probe_timeout} s"}
                        continue
                    try:
                        probes[node_id] = dict(ray.get(ref, timeout=10))
                    except Exception as err:
                        probes[node_id] = {"error": f"{type(err).__name__}: {str(err).strip()[:300]}"}
        finally:
            for actor in actors.values():
                with contextlib.suppress(Exception):
                    ray.kill(actor, no_restart=True)
        return probes

    def run(self):
        try:
            expected = normalize_expected(self.params["expected_nodes"])
            totals = normalize_totals(self.params["expected_totals"])
        except ExpectedNodesError as err:
            self.result["problems"] = err.problems
            self.fail("expected_nodes is unusable: " + " ".join(err.problems))
        # Until the cluster is read, every expected node is UNKNOWN (the report still lists it).
        self.result["nodes"] = [
            {"name": n["name"], "rank": n["rank"], "ip": n["ip"], "state": "UNKNOWN", "problems": []} for n in expected
        ]

        host, port = split_address(self.address)
        if host is None:
            self.fail(f"address '{self.address}' is not ip:port; pass the head's Ray address, e.g. 10.0.0.1:6379.")

        # Before importing ray: Ray reads RAY_AUTH_MODE / RAY_AUTH_TOKEN_PATH at import time.
        os.environ.update(read_ray_env(self.params.get("env_file")))
        try:
            ray, affinity = import_ray()
        except RayImportError as err:
            self.fail(
                f"cannot import ray with the interpreter {sys.executable} ({err}); run this module with "
                "the node venv's Python, where Ray is installed: set ansible_python_interpreter to "
                "<rlinf_venv_dir>/bin/python (default /opt/rlinf/venv/bin/python)."
            )
        self.result["driver"]["ray_version"] = getattr(ray, "__version__", None)

        deadline = self.clock() + self.timeout
        port_error = self.wait_for_port(host, port, deadline)
        if port_error is not None:
            self.fail(
                f"nothing accepts connections at the Ray head address {self.address} after "
                f"{self.timeout} s ({port_error}); start Ray on the head (re-run site.yml or restart its "
                "Ray unit) and check ray_port and the head's address in its record (/etc/rlinf/state)."
            )

        init_args = {
            "address": self.address,
            "log_to_driver": False,
            "logging_level": "ERROR",
            "namespace": "rlinf_cluster_check",
            "_node_ip_address": self.params.get("node_ip") or host,
        }
        self.connect(ray, init_args, deadline)
        try:
            raw = self.wait_for_nodes(ray, expected, self.clock() + self.timeout)
            probes = {}
            if self.params["probe"]:
                alive_ids = [n.get("NodeID") for n in raw if n.get("Alive") or str(n.get("State")).upper() == "ALIVE"]
                probes = self.run_probes(ray, affinity, list(dict.fromkeys(i for i in alive_ids if i)))
        finally:
            with contextlib.suppress(Exception):
                ray.shutdown()

        report = evaluate(
            expected,
            raw,
            probes,
            address=self.address,
            env_keys=self.env_keys,
            probed=self.params["probe"],
            expected_totals=totals,
            ray_version=self.params["ray_version"] or None,
        )
        for key in ("nodes", "missing", "extra", "problems", "totals", "summary"):
            self.result[key] = report[key]
        worker_pythons = sorted({n["python_executable"] for n in report["nodes"] if n.get("python_executable")})
        if worker_pythons and worker_pythons != [sys.executable]:
            self.module.warn(
                f"Ray workers run {', '.join(worker_pythons)} but this driver runs {sys.executable}; RLinf "
                "warns when a driver's interpreter path differs from the workers': start RLinf drivers "
                f"with {worker_pythons[0]} (or start Ray through the same path as the drivers)."
            )
        if not report["ok"]:
            raise CheckFailed(f"{report['summary']}:\n- " + "\n- ".join(report["problems"]))
        return self.result


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            address=dict(type="str", required=True),
            node_ip=dict(type="str"),
            expected_nodes=EXPECTED_NODES,
            expected_totals=dict(type="dict", default={}),
            timeout=dict(type="int", default=60),
            probe_timeout=dict(type="int"),
            poll_interval=dict(type="float", default=1),
            probe=dict(type="bool", default=True),
            env_keys=dict(type="list", elements="str", default=list(DEFAULT_ENV_KEYS), no_log=False),
            env_file=dict(type="path"),
            ray_version=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )


def main():
    module = build_module()
    checker = RayClusterCheck(module)
    # Ray may print on fd 1; the JSON result is written only after fd 1 is back.
    failure, exception = run_checked("ray_cluster_check", checker.run)
    if failure is not None:
        if not checker.result["problems"]:
            checker.result["problems"] = [failure]
        extra = {"exception": exception} if exception else {}
        module.fail_json(msg=failure, **extra, **checker.result)
    module.exit_json(**checker.result)


if __name__ == "__main__":
    main()
