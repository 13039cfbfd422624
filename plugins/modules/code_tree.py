#!/usr/bin/python
# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: code_tree
short_description: Measure an RLinf checkout's rlinf/ tree against the code-sync size limit
description:
  - Checks that O(path) is an RLinf checkout (every file of O(required_files) is there), then sums
    the size of every file under C(rlinf/), lists the largest ones and compares the total with
    O(max_mb). Caches count too - RLinf's own Ray code sync ships C(rlinf/) whole, with no exclusions.
  - Reports a missing file or an oversized tree in RV(missing) and RV(problem) instead of failing,
    so the caller can say where the checkout is and how to fix it (the C(rlinf.cluster.code_sync)
    role fails the play with them). It fails only when the tree cannot be read.
  - Optionally hashes what a wheel of the checkout is built from (O(digest)) and lists what an
    rsync of the checkout with O(excludes) copies (O(list_paths)).
  - Read-only; runs wherever the checkout is (the controller with C(delegate_to), or the Ray head).
version_added: 0.1.0
author:
  - rlinf-ansible maintainers (!UNKNOWN)
extends_documentation_fragment:
  - rlinf.cluster.attributes.read_only
options:
  path:
    description: Root of the RLinf checkout (the directory holding C(pyproject.toml) and C(rlinf/)).
    type: path
    required: true
  max_mb:
    description: Largest C(rlinf/) tree accepted, in MiB.
    type: float
    default: 50
  required_files:
    description: Files, relative to O(path), without which O(path) is not an RLinf checkout.
    type: list
    elements: str
    default: [rlinf/__init__.py]
  excludes:
    description:
      - rsync-style exclude patterns for O(digest) and O(list_paths) (a pattern without a slash
        matches a name at any depth). The size guard ignores them.
    type: list
    elements: str
    default: []
  digest:
    description: Return RV(digest), the sha256 of the build files and C(rlinf/), when the tree fits.
    type: bool
    default: false
  list_paths:
    description: Return RV(paths), the files and directories an rsync of O(path) with O(excludes) copies.
    type: bool
    default: false
  top:
    description: How many of the largest files RV(largest) lists.
    type: int
    default: 10
"""

EXAMPLES = r"""
- name: Measure the controller's checkout before syncing it
  rlinf.cluster.code_tree:
    path: /home/me/RLinf
    max_mb: 50
    digest: true
    excludes: [.git, __pycache__, logs]
  delegate_to: localhost
  run_once: true
  register: tree

- name: Stop on a missing or oversized checkout
  ansible.builtin.fail:
    msg: "{{ tree.problem }}"
  when: tree.problem

- name: The checkout Ray ships from, on the head
  rlinf.cluster.code_tree:
    path: /srv/RLinf
    required_files: [pyproject.toml, rlinf/__init__.py]
"""

RETURN = r"""
package_dir:
  description: The measured tree, O(path)/rlinf.
  returned: always
  type: str
  sample: /home/me/RLinf/rlinf
missing:
  description: Entries of O(required_files) that are not files under O(path); the tree is not measured then.
  returned: always
  type: list
  elements: str
  sample: [pyproject.toml]
total_bytes:
  description: Size of every regular file under C(rlinf/), in bytes (0 when files are missing).
  returned: always
  type: int
  sample: 3145728
files:
  description: Number of those files.
  returned: always
  type: int
largest:
  description: The O(top) largest files, largest first, paths relative to C(rlinf/).
  returned: always
  type: list
  elements: dict
  sample: [{path: checkpoints/model.pt, bytes: 3145728}]
problem:
  description: Why the checkout cannot be synced (not a checkout, or above O(max_mb)), or null.
  returned: always
  type: str
  sample: "/home/me/RLinf/rlinf holds 3.0 MiB in 4 files, above the code-sync limit of 2 MiB. ..."
digest:
  description: sha256 of the build files and every file under C(rlinf/) minus O(excludes).
  returned: when O(digest) is true and RV(problem) is null
  type: str
paths:
  description: What rsync copies, relative to O(path) - C(files) (symlinks included) and C(dirs) (deepest first).
  returned: when O(list_paths) is true and no required file is missing
  type: dict
  sample: {files: [pyproject.toml, rlinf/__init__.py], dirs: [rlinf]}
"""

import os  # noqa: E402 (imports follow the docs, as in every Ansible module)

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.rlinf.cluster.plugins.module_utils.code_sync import (  # noqa: E402
    copied_paths,
    measure_tree,
    size_problem,
    tree_digest,
)


def inspect(params: dict) -> dict:
    root = params["path"]
    package_dir = os.path.join(root, "rlinf")
    result = {"package_dir": package_dir, "total_bytes": 0, "files": 0, "largest": [], "problem": None}
    result["missing"] = [rel for rel in params["required_files"] if not os.path.isfile(os.path.join(root, rel))]
    if result["missing"]:
        result["problem"] = f"{root} is not an RLinf checkout: {' and '.join(result['missing'])} missing under {root}."
        return result
    result.update(measure_tree(package_dir, top=params["top"]))
    result["problem"] = size_problem(result, params["max_mb"], package_dir)
    if params["digest"] and not result["problem"]:
        result["digest"] = tree_digest(root, params["excludes"])
    if params["list_paths"]:
        result["paths"] = copied_paths(root, params["excludes"])
    return result


ARGUMENT_SPEC = dict(
    path=dict(type="path", required=True),
    max_mb=dict(type="float", default=50),
    required_files=dict(type="list", elements="str", default=["rlinf/__init__.py"]),
    excludes=dict(type="list", elements="str", default=[]),
    digest=dict(type="bool", default=False),
    list_paths=dict(type="bool", default=False),
    top=dict(type="int", default=10),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = inspect(module.params)
    except OSError as err:
        module.fail_json(
            msg=f"cannot read the checkout {module.params['path']} ({err}); check the path and that "
            "the connecting user can read every file under it."
        )
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
