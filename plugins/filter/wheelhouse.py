"""Jinja filter over plugins/module_utils/wheelhouse.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rlinf.cluster.plugins.module_utils.wheelhouse import (
    lock_text,
    pip_download_args,
    wheelhouse_key,
    wheelhouse_platforms,
)


def _pip_download_args(platform):
    try:
        return pip_download_args(platform["python_version"], platform["machine"], platform["glibc"])
    except (KeyError, TypeError, ValueError) as err:
        raise AnsibleFilterError(f"pip_download_args: {err}") from None


def _pip_lock(report):
    try:
        return lock_text(report)
    except (KeyError, TypeError, ValueError) as err:
        raise AnsibleFilterError(f"pip_lock: {err}") from None


class FilterModule:
    def filters(self):
        return {
            "pip_download_args": _pip_download_args,
            "pip_lock": _pip_lock,
            "wheelhouse_key": wheelhouse_key,
            "wheelhouse_platforms": wheelhouse_platforms,
        }
