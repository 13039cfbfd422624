"""Jinja filter over plugins/plugin_utils/files_as_planned.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rlinf.cluster.plugins.plugin_utils.files_as_planned import files_as_planned


def _files_as_planned(probe, files, secret_files=(), remove=(), record=()):
    try:
        return files_as_planned(
            probe.get("digests") or {}, probe.get("manifest") or [], files, secret_files, remove, record
        )
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise AnsibleFilterError(f"files_as_planned: {err}") from None


class FilterModule:
    def filters(self):
        return {"files_as_planned": _files_as_planned}
