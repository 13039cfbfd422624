"""Jinja filter over plugins/module_utils/wheelhouse.py."""

from __future__ import annotations

import os
import posixpath

from ansible.errors import AnsibleFilterError

from ansible_collections.rlinf.cluster.plugins.module_utils.wheelhouse import (
    lock_text,
    pip_download_args,
    push_rsync_opts,
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


def _wheelhouse_push_opts(directory, locks):
    texts = {}
    for path in (locks or {}).values():
        if not path:
            continue
        name = posixpath.basename(path)
        lock = os.path.join(directory, name)
        try:
            with open(lock, encoding="utf-8") as handle:
                texts[name] = handle.read()
        except OSError as err:
            raise AnsibleFilterError(
                f"wheelhouse_push_opts: the controller's lock {lock} cannot be read ({err.strerror}); re-run "
                "site.yml, which downloads the set again"
            ) from None
    try:
        return push_rsync_opts(texts)
    except ValueError as err:
        raise AnsibleFilterError(f"wheelhouse_push_opts: {directory}: {err}") from None


class FilterModule:
    def filters(self):
        return {
            "pip_download_args": _pip_download_args,
            "pip_lock": _pip_lock,
            "wheelhouse_key": wheelhouse_key,
            "wheelhouse_push_opts": _wheelhouse_push_opts,
            "wheelhouse_platforms": wheelhouse_platforms,
        }
