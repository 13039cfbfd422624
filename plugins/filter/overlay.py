"""Jinja filters over plugins/module_utils/overlay.py (EasyTier members and addresses)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rlinf.cluster.plugins.module_utils.overlay import (
    DEFAULT_DEV,
    DEFAULT_SUBNET,
    OverlayError,
    overlay_members,
    overlay_problems,
)


def _overlay_members(groups, hostvars, subnet=DEFAULT_SUBNET, dev_name=DEFAULT_DEV, allow_public=False):
    try:
        return overlay_members(groups, hostvars, subnet, dev_name, bool(allow_public))
    except OverlayError as err:
        raise AnsibleFilterError(str(err)) from None


def _overlay_problems(groups, hostvars, subnet=DEFAULT_SUBNET, dev_name=DEFAULT_DEV, allow_public=False):
    try:
        return overlay_problems(groups, hostvars, subnet, dev_name, bool(allow_public))
    except OverlayError as err:
        return err.problems


class FilterModule:
    def filters(self):
        return {
            "overlay_members": _overlay_members,
            "overlay_problems": _overlay_problems,
        }
