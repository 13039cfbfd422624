#!/usr/bin/python
# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: venv_requirements
short_description: Report which pip requirements a virtualenv does not satisfy
description:
  - Asks the venv's own Python which distributions it has (C(importlib.metadata)) and
    compares them with O(requirements), including the dependencies the requested extras add
    (C(ray[default]) needs the dashboard's packages too).
  - Lets a play skip the wheelhouse push and the pip run when the venv already holds the
    pinned set; C(ansible.builtin.pip) would start pip for the same answer.
  - A venv that does not exist yet satisfies nothing.
  - Read-only; never changes anything.
version_added: 0.1.0
author:
  - rlinf-ansible maintainers
extends_documentation_fragment:
  - rlinf.cluster.attributes.read_only
options:
  virtualenv:
    description: Directory of the venv (its interpreter is C(bin/python) there).
    type: path
    required: true
  requirements:
    description: PEP 508 requirement strings, as given to pip.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Read what the venv lacks
  rlinf.cluster.venv_requirements:
    virtualenv: /opt/rlinf/venv
    requirements: ["ray[default]==2.60.0", "numpy==2.2.6"]
  register: venv_state

- name: Install only when something is missing
  ansible.builtin.pip:
    name: ["ray[default]==2.60.0", "numpy==2.2.6"]
    virtualenv: /opt/rlinf/venv
  when: not venv_state.satisfied
"""

RETURN = r"""
satisfied:
  description: Whether every requirement (and every dependency of its extras) is installed at a matching version.
  returned: always
  type: bool
  sample: true
unsatisfied:
  description: One line per requirement that is missing or at another version.
  returned: always
  type: list
  elements: str
  sample: ["ray[default]==2.60.0: installed 2.59.0"]
exists:
  description: Whether the venv's interpreter exists.
  returned: always
  type: bool
  sample: true
"""

import json  # noqa: E402 (imports follow the docs, as in every Ansible module)
import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

# Runs under the venv's Python: packaging is vendored by pip, which every venv has.
PROBE = r"""
import json, sys
from importlib import metadata
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement

def installed(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None

def problems(text):
    req = Requirement(text)
    version = installed(req.name)
    if version is None:
        return [text + ": not installed"]
    if not req.specifier.contains(version, prereleases=True):
        return [text + ": installed " + version]
    found = []
    for extra in sorted(req.extras):
        for dep_text in metadata.requires(req.name) or []:
            dep = Requirement(dep_text)
            if dep.marker is None or not dep.marker.evaluate({"extra": extra}):
                continue
            dep_version = installed(dep.name)
            if dep_version is None:
                found.append(text + ": " + dep.name + " (extra " + extra + ") not installed")
            elif not dep.specifier.contains(dep_version, prereleases=True):
                found.append(text + ": " + dep.name + " " + dep_version + " does not match " + str(dep.specifier))
    return found

print(json.dumps([line for text in json.loads(sys.argv[1]) for line in problems(text)]))
"""


ARGUMENT_SPEC = {
    "virtualenv": {"type": "path", "required": True},
    "requirements": {"type": "list", "elements": "str", "required": True},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    python = os.path.join(module.params["virtualenv"], "bin", "python")
    requirements = module.params["requirements"]
    if not os.path.exists(python):
        module.exit_json(
            changed=False, exists=False, satisfied=False, unsatisfied=[f"{req}: no venv" for req in requirements]
        )
    rc, out, err = module.run_command([python, "-c", PROBE, json.dumps(requirements)])
    if rc != 0:
        module.fail_json(msg=f"cannot read the venv {module.params['virtualenv']}: {err.strip() or out.strip()}")
    unsatisfied = json.loads(out)
    module.exit_json(changed=False, exists=True, satisfied=not unsatisfied, unsatisfied=unsatisfied)


if __name__ == "__main__":
    main()
