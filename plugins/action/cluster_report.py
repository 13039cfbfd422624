# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""Controller side of rlinf.cluster.cluster_report (documented in plugins/modules/cluster_report.py)."""

from __future__ import annotations

import datetime
import json
import os

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.rlinf.cluster.plugins.module_utils.cluster_report import build, table

ARGUMENT_SPEC = {
    "check": {"type": "dict", "required": True},
    "expected_nodes": {"type": "list", "elements": "dict", "required": True},
    "address": {"type": "str", "required": True},
    "path": {"type": "path", "required": True},
    "manifest_var": {"type": "str", "default": "ray_check_manifest"},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        validation = ArgumentSpecValidator(ARGUMENT_SPEC).validate(self._task.args)
        if validation.error_messages:
            return {"failed": True, "msg": "; ".join(validation.error_messages)}
        args = validation.validated_parameters
        task_vars = task_vars or {}
        hostvars = task_vars.get("hostvars") or {}
        manifests = {}
        for node in args["expected_nodes"]:
            try:
                found = hostvars[node["name"]].get(args["manifest_var"])
            except Exception:
                found = None
            if found:
                manifests[node["name"]] = found
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        report = build(
            args["check"], args["expected_nodes"], manifests, task_vars.get("inventory_hostname"), args["address"], now
        )
        path = args["path"]
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(f"{path}.tmp", "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2, default=str)
            handle.write("\n")
        os.replace(f"{path}.tmp", path)
        # A controller artifact whose timestamp changes every run, not a change to any node.
        result.update(changed=False, report=report, table=table(report), path=path)
        return result
