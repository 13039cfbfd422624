# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)

from __future__ import annotations


class ModuleDocFragment:
    # The nodes the plan expects (rlinf_plan.expected_nodes), shared by the modules
    # that talk to the cluster (extends_documentation_fragment: rlinf.cluster.expected_nodes).
    DOCUMENTATION = r"""
options:
  expected_nodes:
    description:
      - The Ray nodes of the plan in rank order, one dict per node (C(rlinf_plan.expected_nodes)).
      - Each module reads the keys it needs.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Inventory host name.
        type: str
        required: true
      rank:
        description: RLinf node rank of the host (the head is 0).
        type: int
        required: true
      ip:
        description:
          - The address Ray binds to on this host, as the plan resolved it (or the node's record keeps it).
          - Several hosts may share one IP (several Ray nodes on one machine); see O(expected_nodes[].temp_dir).
          - Empty when the node keeps no record of it; the node is then reported missing.
        type: str
        required: true
      temp_dir:
        description:
          - The node's Ray temp dir (C(ray_temp_dir)). It tells apart several Ray nodes on one machine
            (same IP); a node whose raylet socket lies under it is this host's.
        type: str
      python:
        description:
          - The interpreter the node's Ray starts with (C(rlinf_venv_dir)/bin/python). With it, each node's Ray
            worker interpreter is compared with its own; without it, with the other nodes'.
        type: str
      comm_device:
        description:
          - The NIC the collectives use there (C(RLINF_COMM_NET_DEVICES)); omitted means accept whatever the node's
            environment says.
        type: str
      resources:
        description:
          - "Minimum resources Ray must report on this node, by Ray name, for example C({CPU: 2, GPU: 4, robot: 1})."
          - Custom resources (anything but CPU, GPU, memory, object_store_memory) must also be absent from the
            nodes that do not declare them.
        type: dict
        default: {}
      env:
        description: Environment values the Ray workers on this node must read.
        type: dict
        default: {}
      write_dirs:
        description:
          - Directories a training job writes on this node (C(<checkout>/logs), C(ray_node_writable_paths)); the
            readiness check's RLinf workers write and remove a file in each (C(rlinf.cluster.ray_readiness)).
        type: list
        elements: str
        default: []
"""
