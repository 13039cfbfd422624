#!/usr/bin/python
# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ray_gcs_nodes
short_description: Tell which inventory hosts the Ray head's GCS lists as ALIVE
description:
  - Asks the GCS at O(address) for its node table with one RPC (no driver joins the cluster,
    no task runs) and pairs the ALIVE nodes with O(expected_nodes) as
    M(rlinf.cluster.ray_cluster_check) does (by IP, then by the raylet socket under the node's
    temp dir when several Ray nodes share one IP).
  - Used by the ray_node role after the head is up, so that a worker whose raylet is still
    attached to an earlier head (the head was restarted behind Ansible's back, without GCS fault
    tolerance) is restarted at once instead of waiting for Ray's reconnect timeouts.
  - Read-only; never changes anything.
  - Run it on the head with the node venv's Python, where C(import ray) works.
version_added: 0.1.0
author:
  - rlinf-ansible maintainers (!UNKNOWN)
extends_documentation_fragment:
  - rlinf.cluster.expected_nodes
  - rlinf.cluster.attributes.read_only
options:
  address:
    description: GCS address of the head, C(ip:port).
    type: str
    required: true
  env_file:
    description:
      - Env file of the Ray unit; its C(RAY_*) variables (C(RAY_AUTH_MODE), C(RAY_AUTH_TOKEN_PATH))
        are set before Ray is imported. A missing file is ignored.
    type: path
  timeout:
    description: Seconds the GCS may take to answer.
    type: int
    default: 10
notes:
  - Uses C(ray._raylet.GcsClient), the client C(ray status) uses; it needs the C(ray) package in the
    interpreter that runs the module.
requirements:
  - ray >= 2.47
"""

EXAMPLES = r"""
- name: Which workers are missing from the head's GCS?
  rlinf.cluster.ray_gcs_nodes:
    address: 10.89.77.10:6379
    expected_nodes:
      - {name: worker1, rank: 1, ip: 10.89.77.11}
      - {name: worker2, rank: 2, ip: 10.89.77.12}
    env_file: /etc/rlinf/rlinf.env
  vars:
    ansible_python_interpreter: /opt/rlinf/venv/bin/python
  register: gcs_nodes
"""

RETURN = r"""
alive:
  description: The ALIVE nodes of the GCS, whether expected or not.
  returned: success
  type: list
  elements: dict
  contains:
    node_id:
      description: Ray node ID (hex).
      type: str
    ip:
      description: NodeManagerAddress of the node.
      type: str
    port:
      description: NodeManagerPort of the node.
      type: int
present:
  description: Names of the expected hosts with an ALIVE node, in rank order.
  returned: success
  type: list
  elements: str
missing:
  description: Names of the expected hosts with no ALIVE node, in rank order.
  returned: success
  type: list
  elements: str
  sample: [worker2]
"""

import os  # noqa: E402 (imports follow the docs, as in every Ansible module)

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.rlinf.cluster.plugins.module_utils.expected_nodes import EXPECTED_NODES  # noqa: E402
from ansible_collections.rlinf.cluster.plugins.module_utils.ray_cluster_state import (  # noqa: E402
    ExpectedNodesError,
    alive_nodes,
    match_nodes,
    normalize_expected,
)
from ansible_collections.rlinf.cluster.plugins.module_utils.ray_env import read_ray_env  # noqa: E402

# GcsNodeInfo.GcsNodeState
GCS_ALIVE = 0


def gcs_client(address):
    """A GCS client for ``address``; the unit tests replace this function."""
    from ray._raylet import GcsClient

    return GcsClient(address=address)


def node_records(infos):
    """GcsNodeInfo messages as ``ray.nodes()``-style dicts (what ray_cluster_state reads)."""
    records = []
    for info in infos:
        records.append(
            {
                "NodeID": info.node_id.hex() if isinstance(info.node_id, bytes) else str(info.node_id),
                "NodeManagerAddress": info.node_manager_address,
                "NodeManagerPort": info.node_manager_port,
                "Alive": info.state == GCS_ALIVE,
                "RayletSocketName": info.raylet_socket_name,
            }
        )
    return records


def membership(expected, records):
    matched = match_nodes(expected, records)
    return {
        "alive": [{"node_id": n["node_id"], "ip": n["ip"], "port": n["port"]} for n in alive_nodes(records)],
        "present": [e["name"] for e in expected if e["name"] in matched["matched"]],
        "missing": [e["name"] for e in matched["missing"]],
    }


ARGUMENT_SPEC = dict(
    address=dict(type="str", required=True),
    expected_nodes=EXPECTED_NODES,
    env_file=dict(type="path"),
    timeout=dict(type="int", default=10),
)


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        supports_check_mode=True,
    )
    address = module.params["address"]
    try:
        expected = normalize_expected(module.params["expected_nodes"])
    except ExpectedNodesError as err:
        module.fail_json(msg="expected_nodes is unusable: " + " ".join(err.problems))
    os.environ.update(read_ray_env(module.params["env_file"]))
    try:
        infos = gcs_client(address).get_all_node_info(timeout=module.params["timeout"]).values()
    except Exception as err:  # ImportError, connection, authentication: one sentence each
        module.fail_json(
            msg=(
                f"cannot read the node table of the Ray GCS at {address} ({type(err).__name__}: "
                f"{str(err).strip()[:400]}); Ray must run on the head (see `journalctl -u rlinf-ray` there) "
                "and this module must run with the node venv's Python and the cluster's RAY_AUTH_* settings."
            )
        )
    module.exit_json(changed=False, **membership(expected, node_records(infos)))


if __name__ == "__main__":
    main()
