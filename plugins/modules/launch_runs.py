#!/usr/bin/python
# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: launch_runs
short_description: Tell what became of each RLinf run launch.yml started on the head
description:
  - Reads the record launch.yml keeps of each run (C(<state_dir>/<unit>.json)), the outcome the run's
    wrapper writes when its entry ends (C(<unit>.outcome.json)) and the state of the run's systemd unit,
    and returns every run as C(RUNNING), C(SUCCEEDED) or C(FAILED) with its exit status and log.
  - A run is C(SUCCEEDED) only with exit status 0 (of the whole pipeline, C(pipefail)) and no failure line
    of Hydra or RLinf in the end of its log, since RLinf's exit status can be 0 after a failure.
  - A run whose unit stopped without an outcome (killed with SIGKILL, out of memory, the head rebooted) is
    C(FAILED) with an unknown exit status.
  - Read-only.
version_added: 0.2.0
author:
  - rlinf-ansible maintainers (!UNKNOWN)
extends_documentation_fragment:
  - rlinf.cluster.attributes.read_only
options:
  state_dir:
    description: Where launch.yml keeps the runs' records.
    type: path
    default: /etc/rlinf/state/launches
  limit:
    description: Return at most this many runs, the newest (0 = all).
    type: int
    default: 10
"""

EXAMPLES = r"""
- name: What became of the launched runs
  rlinf.cluster.launch_runs:
  register: runs

- name: Show them
  ansible.builtin.debug:
    msg: "{{ runs.lines }}"
"""

RETURN = r"""
runs:
  description: The runs, oldest first.
  returned: always
  type: list
  elements: dict
  contains:
    unit:
      description: The run's systemd unit (C(rlinf-launch-NAME)).
      type: str
    state:
      description: C(RUNNING), C(SUCCEEDED) or C(FAILED).
      type: str
    exit_status:
      description: The exit status of the entry's pipeline; null while running or when it was never recorded.
      type: int
    reason:
      description: Why the run has its state (C(exit 1), C(exit 0, but Hydra reported an exception ...)).
      type: str
    log:
      description: The run's log file.
      type: str
    entry:
      description: The command the run started.
      type: str
    started_at:
      description: When the run started (UTC).
      type: str
    finished_at:
      description: When its entry ended (UTC), when recorded.
      type: str
lines:
  description: One line per run, as status.yml prints them.
  returned: always
  type: list
  elements: str
  sample: ["run rlinf-launch-train: FAILED (exit 1), log /var/log/rlinf/rlinf-launch-train.log"]
older:
  description: How many older runs O(limit) left out.
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.rlinf.cluster.plugins.module_utils.launch_runs import (  # noqa: E402
    classify,
    log_tail,
    read_json,
    records,
    run_line,
)


def unit_states(module, units):
    """ActiveState of each unit, in one systemctl call (a unit systemd forgot is inactive)."""
    if not units:
        return {}
    rc, out, _err = module.run_command(["systemctl", "show", "--property=Id,ActiveState", "--", *units])
    states = {unit: "inactive" for unit in units}
    if rc != 0:
        return states
    current = {}
    for line in [*out.splitlines(), ""]:
        if not line.strip():
            if current.get("Id", "").removesuffix(".service") in states:
                states[current["Id"].removesuffix(".service")] = current.get("ActiveState", "inactive")
            current = {}
            continue
        key, _sep, value = line.partition("=")
        current[key] = value
    return states


ARGUMENT_SPEC = {
    "state_dir": {"type": "path", "default": "/etc/rlinf/state/launches"},
    "limit": {"type": "int", "default": 10},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    found = records(module.params["state_dir"])
    limit = module.params["limit"]
    shown = found[-limit:] if limit > 0 else found
    states = unit_states(module, [r["unit"] for r in shown])
    runs = []
    for record in shown:
        outcome = read_json(record["outcome"])
        text = log_tail(record.get("log", ""), outcome.get("log_offset", 0)) if outcome else ""
        runs.append(classify(record, outcome, states.get(record["unit"], "inactive"), text))
    module.exit_json(changed=False, runs=runs, lines=[run_line(r) for r in runs], older=len(found) - len(shown))


if __name__ == "__main__":
    main()
