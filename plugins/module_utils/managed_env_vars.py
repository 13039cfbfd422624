"""Environment variables ``rlinf_env_vars`` may not set, each with the reason.

The env file Ray starts with (``rlinf.cluster.ray_node``) writes these itself, or RLinf's
driver sets them at run time; a value frozen into the node's environment would override
either on that node's workers. Plain data for the roles, the validator and the variable
schema; no Ansible imports, Python 3.9+.
"""

from __future__ import annotations

from collections.abc import Mapping

MANAGED_ENV_VARS = {
    "RLINF_NODE_RANK": "the env file sets it from the inventory rank; set rlinf_node_rank instead",
    "RLINF_COMM_NET_DEVICES": "the env file sets it from the NIC Ray binds to; set rlinf_comm_net_device instead",
    "RLINF_RAY_HEAD_ADDRESS": "the env file sets it to the head's address and ray_port",
    "CUDA_VISIBLE_DEVICES": "the env file sets it from rlinf_cuda_visible_devices; set that instead",
    "RAY_AUTH_MODE": "the env file sets it from ray_auth_enabled",
    "RAY_AUTH_TOKEN": "the token lives only in a 0600 file (RAY_AUTH_TOKEN_PATH); set ray_auth_token in Ansible Vault",
    "RAY_AUTH_TOKEN_PATH": "the env file points it at the token file the ray_auth role writes",
    # rlinf/scheduler/cluster/cluster.py (main): the driver sets RLINF_NET_EMULATION=1 only
    # when cluster.net_emulation.enabled, after the node envs are read; _set_scheduler_env_vars
    # keeps a value already in a node's env, and collective_group.py then waits for a
    # NetEmulationManager when it is "1".
    "RLINF_NET_EMULATION": (
        "RLinf's driver sets it (1 when cluster.net_emulation.enabled is true); a value in Ray's "
        "environment wins on that node's workers, so 1 without net_emulation makes every collective "
        "wait for an emulation manager that never starts, and 0 with it sends undelayed; set "
        "cluster.net_emulation in the RLinf config instead"
    ),
}


def managed_env_problems(variables, host: str, source: str = "rlinf_env_vars") -> list[str]:
    """One sentence per managed variable that ``variables`` (a host's rlinf_env_vars) sets."""
    if not isinstance(variables, Mapping):
        return []
    return [
        f"host '{host}': {source} sets {name}, which must not be set there: {reason}."
        for name, reason in MANAGED_ENV_VARS.items()
        if name in variables
    ]
