# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""A read run in a child process that prints one JSON object as its last line (rlinf.cluster.node_state's
GCS and version reads): started first, left to run beside the module's other reads, collected last."""

from __future__ import annotations

import json
import subprocess


class ChildRead:
    """``argv`` started now (with ``env`` when given); ``result`` collects it."""

    def __init__(self, argv, env=None):
        self.proc = None
        self.error = None
        try:
            self.proc = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                env=env,
                text=True,
            )
        except OSError as err:
            self.error = f"{type(err).__name__}: {err}"

    def result(self, timeout):
        """The JSON object the child printed last, or ``{"error": why there is none}``: the child could not
        start, did not end within ``timeout`` seconds (it is killed), or printed no object (the end of its
        output, or its exit status)."""
        if self.proc is None:
            return {"error": self.error}
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            return {"error": f"no answer within {timeout} s"}
        lines = (out or "").strip().splitlines()
        try:
            found = json.loads(lines[-1]) if lines else None
        except ValueError:
            found = None
        if isinstance(found, dict):
            return found
        return {"error": f"{err or ''} {out or ''}".strip()[-300:] or f"exit status {self.proc.returncode}"}
