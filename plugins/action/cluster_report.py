# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""Controller side of rlinf.cluster.cluster_report (documented in plugins/modules/cluster_report.py)."""

from __future__ import annotations

import datetime
import json
import os

from ansible_collections.rlinf.cluster.plugins.module_utils.action_specs import CLUSTER_REPORT
from ansible_collections.rlinf.cluster.plugins.module_utils.cluster_report import build, gpu_readings, table
from ansible_collections.rlinf.cluster.plugins.plugin_utils.controller_action import ControllerAction


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = CLUSTER_REPORT

    @staticmethod
    def _registered(hostvars, expected, var):
        """Each expected host's registered ``var``, for the hosts that have it."""
        out = {}
        for node in expected:
            try:
                found = hostvars[node["name"]].get(var)
            except Exception:
                found = None
            if found:
                out[node["name"]] = found
        return out

    def act(self, args, task_vars):
        hostvars = task_vars.get("hostvars") or {}
        manifests = self._registered(hostvars, args["expected_nodes"], args["manifest_var"])
        probes = self._registered(hostvars, args["expected_nodes"], args["probe_var"])
        gpus = gpu_readings(probes, self._registered(hostvars, args["expected_nodes"], args["gpus_var"]))
        disks = {name: dict(probe.get("disk") or {}) for name, probe in probes.items()}
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        report = build(
            args["check"],
            args["expected_nodes"],
            manifests,
            task_vars.get("inventory_hostname"),
            args["address"],
            now,
            gpus=gpus,
            gpu_nodes=args["gpu_nodes"],
            disks=disks,
            disk_limits=args["disk"],
        )
        path = args["path"]
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(f"{path}.tmp", "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2, default=str)
            handle.write("\n")
        os.replace(f"{path}.tmp", path)
        # A controller artifact whose timestamp changes every run, not a change to any node.
        return {"changed": False, "report": report, "table": table(report), "path": path}
