# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""Controller side of rlinf.cluster.cluster_report (documented in plugins/modules/cluster_report.py)."""

from __future__ import annotations

import datetime
import json
import os

from ansible_collections.rlinf.cluster.plugins.module_utils.action_specs import CLUSTER_REPORT
from ansible_collections.rlinf.cluster.plugins.module_utils.cluster_report import build, table
from ansible_collections.rlinf.cluster.plugins.plugin_utils.controller_action import ControllerAction


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = CLUSTER_REPORT

    def act(self, args, task_vars):
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
        return {"changed": False, "report": report, "table": table(report), "path": path}
