"""Run a command in a session of its own and kill the whole session when it overruns.

Not ``AnsibleModule.run_command``: that has no timeout, adds the given environment to the
module's own instead of replacing it, and would leave the command's children running after
a kill. ``ray_readiness`` attaches RLinf in a child Python whose Ray workers must die with it
when the attach hangs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence


def run_session(
    argv: Sequence[str], env: Mapping[str, str], cwd: str, timeout: float
) -> tuple[int, bytes, bytes, bool]:
    """``(returncode, stdout, stderr, timed_out)`` of ``argv`` run with exactly ``env`` in ``cwd``, no stdin."""
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return proc.returncode, out, err, True
    return proc.returncode, out, err, False
