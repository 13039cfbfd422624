"""Render /etc/rlinf/rlinf.env: one file read both by systemd (EnvironmentFile=) and by
shells (`set -a; . file`). Single quotes mean the same to both, so values are
single-quoted and a value that would need escaping in either is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class EnvFileError(ValueError):
    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


def env_problems(variables: Mapping[str, object], source: str = "rlinf_env_vars") -> list[str]:
    problems = []
    for key, value in variables.items():
        if not isinstance(key, str) or not NAME.match(key):
            problems.append(
                f"{source}: {key!r} is not a valid environment variable name "
                "(letters, digits and '_', not starting with a digit)."
            )
        if value is None or isinstance(value, (dict, list)):
            problems.append(f"{source}: {key} must be a string or number, not {type(value).__name__}.")
            continue
        text = _as_text(value)
        if "'" in text or "\n" in text or "\\" in text:
            problems.append(
                f"{source}: the value of {key} contains a quote, backslash or newline; "
                "systemd and the shell read those differently, so use a plain value."
            )
    return problems


def _as_text(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def render_env(variables: Mapping[str, object], source: str = "rlinf_env_vars") -> str:
    """Return the file body: one ``KEY='value'`` line per variable, in the given order."""
    problems = env_problems(variables, source)
    if problems:
        raise EnvFileError(problems)
    return "".join(f"{key}='{_as_text(value)}'\n" for key, value in variables.items())
