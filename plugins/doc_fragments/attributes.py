# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)

from __future__ import annotations


class ModuleDocFragment:
    # The attributes of a module that only reads (extends_documentation_fragment:
    # rlinf.cluster.attributes.read_only).
    READ_ONLY = r"""
options: {}
attributes:
  check_mode:
    support: full
    description: The module only reads, so it runs the same in check mode.
  diff_mode:
    support: none
    description: Nothing to diff.
"""

    # An action that runs on the controller alone (extends_documentation_fragment:
    # rlinf.cluster.attributes.controller).
    CONTROLLER = r"""
options: {}
attributes:
  check_mode:
    support: full
    description: Runs the same in check mode; it changes nothing on any node.
  diff_mode:
    support: none
    description: Nothing to diff.
  action:
    support: full
    description: Runs on the controller; no host is contacted.
"""
