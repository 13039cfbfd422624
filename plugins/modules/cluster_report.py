#!/usr/bin/python
# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cluster_report
short_description: Write the cluster report on the controller and render its table
description:
  - Runs on the controller only (an action plugin); contacts no host.
  - Builds the report from the result of M(rlinf.cluster.ray_cluster_check) and each node's version
    manifest (the C(versions) of the node read each host registered), writes it as JSON to O(path) and returns
    it with the table status prints.
  - The report is a controller artifact, never a change (C(changed=false)); it is written in check mode too.
version_added: 0.2.0
author:
  - rlinf-ansible maintainers (!UNKNOWN)
extends_documentation_fragment:
  - rlinf.cluster.attributes.controller
options:
  check:
    description: The registered result of M(rlinf.cluster.ray_cluster_check) (a failed one included).
    type: dict
    required: true
  expected_nodes:
    description: The plan's expected nodes (C(name), C(rank), C(ip)), in rank order.
    type: list
    elements: dict
    required: true
  address:
    description: The head's Ray address the check used.
    type: str
    required: true
  path:
    description: Where the JSON report goes on the controller.
    type: path
    required: true
  manifest_var:
    description:
      - The variable each host registered its M(rlinf.cluster.node_state) result in; its C(versions) is the node's
        manifest. Hosts without it, or a read without C(versions), get an empty manifest.
    type: str
    default: rlinf_probe
  gpus_var:
    description:
      - The variable each host registered its M(rlinf.cluster.gpu_facts) result in; kept as the manifest's C(gpus).
      - Hosts without it have no GPU facts and are left out of the GPU rules.
    type: str
    default: ray_check_gpus
  gpu_nodes:
    description:
      - What the plan says of each node's GPUs (C(rlinf_plan.gpu_nodes)); with it the report fails, naming
        the host, when NVIDIA drivers differ within a node group, when NVML's GPU count (the one RLinf places by) and
        Ray's GPU resource or C(rlinf_gpus_per_node) disagree, or when Ray nodes of one machine see the same GPUs.
      - Empty applies no GPU rule.
    type: list
    elements: dict
    default: []
  probe_var:
    description: The variable each host registered its M(rlinf.cluster.node_state) result in; its C(disk) is reported.
    type: str
    default: rlinf_probe
  disk:
    description:
      - The plan's disk limits (C(rlinf_plan.cluster.disk) - C(warn_percent), C(fail_percent)); with them the
        report warns, naming the host and path, when Ray's temp dir or the venv has less than C(warn_percent) of its
        filesystem free, and fails below C(fail_percent).
      - Empty reports the free space and judges nothing.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Write the report
  rlinf.cluster.cluster_report:
    check: "{{ ray_check_result }}"
    expected_nodes: "{{ rlinf_plan.expected_nodes }}"
    address: "{{ rlinf_plan.cluster.head_address }}"
    path: artifacts/cluster-report.json
  register: report
"""

RETURN = r"""
report:
  description:
    - The report (C(ok), C(summary), C(problems), C(missing), C(extra), C(totals), C(nodes) with manifests).
    - Each node's C(manifest.gpus) holds its M(rlinf.cluster.gpu_facts) (count, NVML count, driver and CUDA
      versions, models, UUIDs).
  returned: always
  type: dict
table:
  description: The lines status prints (rows, the summary and the problems).
  returned: always
  type: list
  elements: str
path:
  description: Where the report was written.
  returned: always
  type: str
"""

from ansible_collections.rlinf.cluster.plugins.module_utils.action_specs import CLUSTER_REPORT, refuse_on_a_node  # noqa: E402


def main():
    refuse_on_a_node("cluster_report", CLUSTER_REPORT)


if __name__ == "__main__":
    main()
