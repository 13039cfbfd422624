"""The RAY_* settings of the nodes' env file, for a driver or GCS client started by a module.

Ray reads RAY_AUTH_MODE / RAY_AUTH_TOKEN_PATH at import time: set them before importing ray.
"""

from __future__ import annotations

import os


def read_env_file(path):
    """Every assignment of an env file (systemd EnvironmentFile syntax, simple subset)."""
    values = {}
    if not path or not os.path.isfile(path):
        return values
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, _eq, value = line.partition("=")
            key = key.strip()
            if key.startswith("export "):
                key = key[len("export ") :].strip()
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            values[key] = value
    return values


def read_ray_env(path):
    """RAY_* assignments of an env file."""
    return {key: value for key, value in read_env_file(path).items() if key.startswith("RAY_")}
