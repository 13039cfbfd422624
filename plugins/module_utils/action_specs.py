"""Argument specs of the controller-only actions, shared by each action plugin and its module
stub (the stub only documents the action and refuses to run on a node)."""

from __future__ import annotations

PURPOSES = ("validate", "site", "status", "teardown", "purge", "launch", "remove-node")

CLUSTER_PLAN = {
    "stage": {"type": "str", "choices": ["static", "resolve", "restarts"], "default": "static"},
    "purpose": {"type": "str", "choices": list(PURPOSES), "default": "site"},
    "plan": {"type": "dict"},
    "probe_var": {"type": "str", "default": "rlinf_probe"},
    "files_var": {"type": "str", "default": "ray_node_files_check"},
    "code_var": {"type": "str", "default": "code_sync_install_needed"},
    "drivers": {"type": "list", "elements": "dict"},
    "allow": {"type": "bool", "default": False},
    "every": {"type": "str", "default": ""},
    "write": {"type": "bool", "default": False},
}

CLUSTER_REPORT = {
    "check": {"type": "dict", "required": True},
    "expected_nodes": {"type": "list", "elements": "dict", "required": True},
    "address": {"type": "str", "required": True},
    "path": {"type": "path", "required": True},
    "manifest_var": {"type": "str", "default": "rlinf_probe"},
    "gpus_var": {"type": "str", "default": "ray_check_gpus"},
    "gpu_nodes": {"type": "list", "elements": "dict", "default": []},
    "probe_var": {"type": "str", "default": "rlinf_probe"},
    "disk": {"type": "dict", "default": {}},
}


def refuse_on_a_node(module_name: str, spec: dict) -> None:
    """The module stub's main: an action of the controller was called as a module on a node."""
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    module.fail_json(msg=f"rlinf.cluster.{module_name} runs on the controller as an action plugin, never on a node.")
