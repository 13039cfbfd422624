# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""Controller side of rlinf.cluster.cluster_plan (documented in plugins/modules/cluster_plan.py)."""

from __future__ import annotations

import json
import os

from ansible_collections.rlinf.cluster.plugins.module_utils import plan
from ansible_collections.rlinf.cluster.plugins.module_utils.action_specs import CLUSTER_PLAN
from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, report, sentences
from ansible_collections.rlinf.cluster.plugins.module_utils.rlinf_config import cluster_block_yaml
from ansible_collections.rlinf.cluster.plugins.module_utils.topology import rank_table
from ansible_collections.rlinf.cluster.plugins.plugin_utils.controller_action import ControllerAction


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = CLUSTER_PLAN

    def act(self, args, task_vars):
        result = {}
        try:
            if args["stage"] == "static":
                context = {"playbook_dir": task_vars.get("playbook_dir"), "purpose": args["purpose"]}
                built = plan.static_plan(task_vars.get("groups") or {}, task_vars.get("hostvars") or {}, context)
            else:
                if not args["plan"]:
                    return {"failed": True, "msg": "stage=resolve needs plan (the static plan's result)."}
                built = plan.resolve(args["plan"], self._probes(task_vars, args["probe_var"]), args["purpose"])
        except PlanError as err:
            total = len(task_vars.get("groups", {}).get("ray_head", [])) + len(
                task_vars.get("groups", {}).get("ray_workers", [])
            )
            return {
                "failed": True,
                "msg": report(err.problems, err.stage, total),
                "problems": sentences(err.problems, total),
            }
        except Exception as err:  # never a traceback: a bug here is still one readable sentence
            return {
                "failed": True,
                "msg": f"the cluster plan could not be computed ({type(err).__name__}: {err}); please report this.",
            }
        result.update(changed=False, plan=built)
        if args["stage"] == "static":
            nodes = [built["nodes"][name] for name in built["order"]]
            result["table"] = rank_table(nodes)
            result["cluster_block"] = cluster_block_yaml(nodes)
            result["warnings_found"] = built["warnings"]
        if args["write"]:
            path = built["cluster"]["controller"]["plan_path"]
            self._write(path, plan.summary(built))
            result["written"] = path
        return result

    @staticmethod
    def _probes(task_vars, probe_var):
        hostvars = task_vars.get("hostvars") or {}
        probes = {}
        for name in task_vars.get("ansible_play_hosts_all") or []:
            try:
                probe = hostvars[name].get(probe_var)
            except Exception:
                probe = None
            if probe:
                probes[name] = plan._plain(probe)
        return probes

    @staticmethod
    def _write(path, data):
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.replace(tmp, path)
