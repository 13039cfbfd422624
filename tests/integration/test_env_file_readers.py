"""One env file, three readers: what render_env (plugins/module_utils/env_file.py) writes is
read the same by systemd's EnvironmentFile= (Ray's unit), by `set -a; . file` in sh and bash
(the login-shell snippet, launch.yml) and, for RAY_*, by read_ray_env (the modules' drivers).
Run on a lab host with its own systemd and shells; touches nothing of the cluster.
"""

from __future__ import annotations

import base64
import time

import pytest
from lab_helpers import ssh

from ansible_collections.rlinf.cluster.plugins.module_utils.env_file import render_env
from ansible_collections.rlinf.cluster.plugins.module_utils.ray_env import read_ray_env

pytestmark = pytest.mark.lab

# Values a careless writer or reader changes: spaces kept, $ ` % # = left alone, empty, control
# characters, non-ASCII, a rank of 0 and a boolean.
VARIABLES = {
    "RLINF_NODE_RANK": 0,
    "RLINF_COMM_NET_DEVICES": "eth0",
    "RAY_AUTH_MODE": "token",
    "RAY_AUTH_TOKEN_PATH": "/etc/rlinf/ray-auth-token",
    "RAY_EXTRA": "--x $HOME ${HOME} a#b c=d 100%n `id` $(id) ;&|<>*?",
    "RAY_EMPTY": "",
    "RAY_SPACED": "  padded  ",
    "RLINF_FLAG": True,
    "RLINF_CONTROL": "tab\there cr\rthere esc\x1bthere",
    "HF_HOME": "/data/hf cäche",
}
EXPECTED = {key: ("1" if value is True else str(value)) for key, value in VARIABLES.items()}
HEADER = "# Managed by rlinf-ansible (rlinf.cluster.ray_node); local edits are overwritten.\n"


def environment(encoded: str) -> dict[str, str]:
    """``env -0 | base64`` output (base64: SSH's text mode would turn a CR into a newline),
    only the variables the file defines."""
    pairs = (entry.partition("=") for entry in base64.b64decode(encoded).decode().split("\0") if entry)
    return {key: value for key, _, value in pairs if key in VARIABLES}


def test_systemd_the_shells_and_read_ray_env_read_what_render_env_wrote(tmp_path, hosts):
    body = HEADER + render_env(VARIABLES)
    local = tmp_path / "rlinf.env"
    local.write_text(body)
    assert read_ray_env(str(local)) == {k: v for k, v in EXPECTED.items() if k.startswith("RAY_")}

    address = list(hosts.values())[-1]
    path = f"/tmp/rlinf-env-readers-{time.time_ns()}.env"
    ssh(address, f"cat > {path}", stdin=body)
    try:
        unit = f"systemd-run --wait --pipe --quiet --collect --property=EnvironmentFile={path}"
        systemd = ssh(address, f"{unit} /usr/bin/env -0 | base64 -w0")
        assert environment(systemd.stdout) == EXPECTED, systemd.stderr
        for shell in ("sh", "bash"):
            sourced = ssh(address, f"env -i /bin/{shell} -c 'set -a; . {path}; set +a; exec env -0' | base64 -w0")
            assert environment(sourced.stdout) == EXPECTED, (shell, sourced.stderr)
    finally:
        ssh(address, f"rm -f {path}", check=False)
