# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""Controller side of rlinf.cluster.cluster_plan (documented in plugins/modules/cluster_plan.py)."""

from __future__ import annotations

import json
import os
import stat

from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.utils.vars import load_extra_vars

from ansible_collections.rlinf.cluster.plugins.module_utils import auth_token, restarts, wheelhouse
from ansible_collections.rlinf.cluster.plugins.module_utils.action_specs import CLUSTER_PLAN
from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, Problem, report, sentences
from ansible_collections.rlinf.cluster.plugins.module_utils.topology import rank_table
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan, rules
from ansible_collections.rlinf.cluster.plugins.plugin_utils.controller_action import ControllerAction
from ansible_collections.rlinf.cluster.plugins.plugin_utils.rlinf_config import cluster_block_yaml


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = CLUSTER_PLAN

    def act(self, args, task_vars):
        if rules.PACKAGING_IMPORT_ERROR:
            raise AnsibleError(
                "rlinf.cluster.cluster_plan needs the Python package 'packaging' on the controller"
            ) from rules.PACKAGING_IMPORT_ERROR
        if args["stage"] == "restarts":
            return self._restarts(args, task_vars)
        result = {}
        try:
            if args["stage"] == "static":
                context = {
                    "playbook_dir": task_vars.get("playbook_dir"),
                    "purpose": args["purpose"],
                    "extra_vars": self._extra_var_names(),
                    "installed_collection": _installed_collection(task_vars.get("playbook_dir")),
                    "cwd": os.getcwd(),
                }
                hostvars = task_vars.get("hostvars") or {}
                built = plan.static_plan(task_vars.get("groups") or {}, hostvars, context)
                removed = built.get("removal") or {}
                for name, node in [
                    *built["nodes"].items(),
                    *([(removed["node"], removed["node_plan"])] if removed else []),
                ]:
                    node["ssh_verify_host"] = _host_key_checking(hostvars.get(name) or {})
                self._adopt_legacy_token(built)
                if args["purpose"] in plan.RENDER_PURPOSES:
                    _refuse_unsafe_token_file(built)
            else:
                if not args["plan"]:
                    return {"failed": True, "msg": "stage=resolve needs plan (the static plan's result)."}
                built = plan.resolve(args["plan"], self._probes(task_vars, args["probe_var"]), args["purpose"])
                changed_wheels = []
                for build in built.get("wheelhouses", []):
                    build["complete"], found = wheelhouse.lock_state(build["dir"], build["locks"])
                    changed_wheels += [Problem(None, text) for text in found]
                if changed_wheels:
                    raise PlanError(changed_wheels, "preflight")
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

    def _extra_var_names(self) -> list[str]:
        """The names given with -e (hostvars mixes them into every host's variables)."""
        try:
            return sorted(str(name) for name in load_extra_vars(self._loader))
        except Exception:  # the extra vars were already parsed by ansible-playbook; never fail here
            return []

    @staticmethod
    def _adopt_legacy_token(built):
        """A token generated where earlier releases kept it (artifacts/) and none at the new place:
        the run copies it there (roles/ray_auth), so moving the state does not rotate the token."""
        controller = built["cluster"]["controller"]
        legacy = controller.get("legacy_token_file")
        adopt = bool(legacy) and os.path.isfile(legacy) and not os.path.exists(controller["token_file"])
        controller["adopt_token_from"] = legacy if adopt else ""
        controller["token_ready"] = _token_ready(controller["token_file"])
        # Without one (an AWX job's fresh container), the run takes the nodes' token (plan.resolve).
        controller["token_present"] = adopt or os.path.isfile(controller["token_file"])

    def _restarts(self, args, task_vars):
        """Which nodes this run would restart and, given the drivers read on the head, whether it may."""
        if not args["plan"]:
            return {"failed": True, "msg": "stage=restarts needs plan (the resolved plan)."}
        hostvars = task_vars.get("hostvars") or {}
        states = {}
        for name in task_vars.get("ansible_play_hosts") or []:
            try:
                host = hostvars[name]
                probe = plan._plain(host.get(args["probe_var"]) or {})
                files = plan._plain(host.get(args["files_var"]) or {})
                code = bool(host.get(args["code_var"]))
            except Exception:  # a host without its facts (unreachable): it restarts nothing
                continue
            venv = probe.get("venv") or {}
            states[name] = {
                "active": (probe.get("unit") or {}).get("active") == "active",
                "files": list(files.get("changed_paths") or []) if files.get("restart") else [],
                "venv": [] if venv.get("satisfied", True) else list(venv.get("unsatisfied") or ["not satisfied"]),
                "code": code,
            }
        plain = plan._plain(args["plan"])
        planned = restarts.restarts(plain, states, args["every"])
        result = {
            "changed": False,
            "restarts": planned,
            "restart_needed": bool(planned),
            "stop_first": restarts.stop_first(plain, planned),
        }
        if args["drivers"] is not None:
            result.update(restarts.restart_verdict(planned, plan._plain(args["drivers"]), args["allow"]))
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


# The ssh connection's own variables for its host_key_checking option (ansible-doc -t connection ssh).
HOST_KEY_CHECKING_VARS = ("ansible_host_key_checking", "ansible_ssh_host_key_checking")


def _host_key_checking(host) -> bool:
    """Whether Ansible's ssh checks this host's key, as it resolves it (host variables, then
    ANSIBLE_HOST_KEY_CHECKING, then ansible.cfg): rsync's ssh, which synchronize runs for the
    pushes, is then told the same (it skips the check by default)."""
    variables = {}
    for name in HOST_KEY_CHECKING_VARS:
        try:
            if name in host:
                variables[name] = host[name]
        except Exception:  # an undefined or broken variable: the check stays on
            continue
    try:
        value = C.config.get_config_value(
            "host_key_checking", plugin_type="connection", plugin_name="ssh", variables=variables
        )
    except Exception:
        return True
    return boolean(value, strict=False)


def _refuse_unsafe_token_file(built) -> None:
    """A run that copies the controller's token file to every node refuses one that is not safely ours
    (auth_token.controller_file_problem); Vault's token and a cluster without auth never read it."""
    cluster = built["cluster"]
    controller = cluster["controller"]
    if not cluster.get("auth") or controller.get("vault_token"):
        return
    problems = []
    for key in ("token_file", "adopt_token_from"):
        path = controller.get(key) or ""
        problem = _token_file_problem(path) if path else None
        if problem:
            problems.append(Problem(None, problem))
    if problems:
        raise PlanError(problems, stage="validation")


def _token_file_problem(path: str) -> str | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"the controller's Ray token file {path} cannot be read ({err.strerror}); fix its directory's modes."
    head = b""
    if stat.S_ISREG(info.st_mode):
        try:
            with open(path, "rb") as handle:
                head = handle.read(auth_token.TOKEN_MAX + 2)
        except OSError as err:
            return f"the controller's Ray token file {path} cannot be read ({err.strerror}); `chmod 0600 {path}`."
    return auth_token.controller_file_problem(path, info.st_mode, info.st_uid, os.geteuid(), head)


def _token_ready(token_file: str) -> bool:
    """The generated token exists in a directory only its owner reads: nothing for ray_auth to set up."""
    try:
        return os.path.isfile(token_file) and not os.stat(os.path.dirname(token_file) or ".").st_mode & 0o077
    except OSError:
        return False


def _installed_collection(playbook_dir) -> bool:
    """The playbooks are an installed collection's (ansible-galaxy writes MANIFEST.json; a checkout has galaxy.yml)."""
    if not playbook_dir:
        return False
    root = os.path.dirname(os.path.abspath(str(playbook_dir)))
    return os.path.isfile(os.path.join(root, "MANIFEST.json")) and not os.path.isfile(os.path.join(root, "galaxy.yml"))
