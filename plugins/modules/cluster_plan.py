#!/usr/bin/python
# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cluster_plan
short_description: Check every variable of the inventory and compute the cluster plan, on the controller
description:
  - Runs on the controller only (an action plugin); contacts no host.
  - With O(stage=static), reads every user-facing variable of every Ray node once, checks it against the
    collection's schema (C(plugins/module_utils/schema.py)), computes ranks, node groups, each node's
    paths, unit, ports and the rule for its Ray address, and the RLinf C(cluster:) cross-check. Fails
    with one report of every problem (host, variable, what is wrong, the fix).
  - With O(stage=resolve), after C(rlinf.cluster.node_state) probed the nodes of the play, applies the
    address rule to each node's interfaces, checks what only a host can tell (systemd, apt, Python,
    paths that exist and are not ours), and renders each node's environment file, C(ray start)
    arguments, unit and record. For O(purpose=status) and the others that only read, the address is
    the one the node's record keeps.
  - Use it with C(run_once) and C(register); every host of the play then reads its own entry as
    C(<registered>.plan.nodes[inventory_hostname]).
version_added: 0.2.0
author:
  - rlinf-ansible maintainers
extends_documentation_fragment:
  - rlinf.cluster.attributes.controller
options:
  stage:
    description: C(static) (before contact) or C(resolve) (after the probe).
    type: str
    choices: [static, resolve]
    default: static
  purpose:
    description: The playbook asking; selects the checks (C(launch) needs C(rlinf_entry), C(remove-node) needs C(node)).
    type: str
    choices: [validate, site, status, teardown, purge, launch, remove-node]
    default: site
  plan:
    description: With O(stage=resolve), the C(plan) the static stage returned.
    type: dict
  probe_var:
    description: With O(stage=resolve), the variable each host registered the C(rlinf.cluster.node_state) result in.
    type: str
    default: rlinf_probe
  write:
    description:
      - Also write the plan as JSON to C(cluster_plan_path) (default C(artifacts/cluster-plan.json)) - names,
        ranks, roles, groups, units, ports, paths and env keys of every node, never a secret.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Check the inventory and compute the plan
  rlinf.cluster.cluster_plan:
    purpose: site
  run_once: true
  register: rlinf_plan

- name: Resolve each node's address from its probe
  rlinf.cluster.cluster_plan:
    stage: resolve
    plan: "{{ rlinf_plan.plan }}"
  run_once: true
  register: rlinf_resolved
"""

RETURN = r"""
plan:
  description:
    - The plan - C(order) (names in rank order), C(cluster) (settings of the whole cluster), C(nodes) (by name).
  returned: success
  type: dict
table:
  description: With O(stage=static), the rank table.
  returned: success
  type: str
cluster_block:
  description: With O(stage=static), the C(cluster:) block that matches the inventory.
  returned: success
  type: str
problems:
  description: Every problem found (on failure).
  returned: failure
  type: list
  elements: str
"""

from ansible_collections.rlinf.cluster.plugins.module_utils.action_specs import CLUSTER_PLAN, refuse_on_a_node  # noqa: E402


def main():
    refuse_on_a_node("cluster_plan", CLUSTER_PLAN)


if __name__ == "__main__":
    main()
