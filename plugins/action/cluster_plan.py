# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""Controller side of rlinf.cluster.cluster_plan (documented in plugins/modules/cluster_plan.py)."""

from __future__ import annotations

import json
import os

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.rlinf.cluster.plugins.module_utils import plan
from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, report
from ansible_collections.rlinf.cluster.plugins.module_utils.rlinf_config import cluster_block_yaml
from ansible_collections.rlinf.cluster.plugins.module_utils.topology import rank_table

ARGUMENT_SPEC = {
    "stage": {"type": "str", "choices": ["static", "resolve"], "default": "static"},
    "purpose": {"type": "str", "choices": list(plan.PURPOSES), "default": "site"},
    "plan": {"type": "dict"},
    "probe_var": {"type": "str", "default": "rlinf_probe"},
    "write": {"type": "bool", "default": False},
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
            return {"failed": True, "msg": report(err.problems, err.stage, total), "problems": err.problems}
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
