"""Jinja filter over plugins/module_utils/env_file.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rlinf.cluster.plugins.module_utils.env_file import (
    EnvFileError,
    env_problems,
    render_env,
)


def _render_env(variables, source="rlinf_env_vars"):
    try:
        return render_env(variables, source)
    except EnvFileError as err:
        raise AnsibleFilterError(str(err)) from None


class FilterModule:
    def filters(self):
        return {"env_file": _render_env, "env_problems": env_problems}
