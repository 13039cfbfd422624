"""What a module that runs as a Ray driver needs around ``ray.init``: its stdout kept for the JSON result."""

from __future__ import annotations

import contextlib
import os
import sys


@contextlib.contextmanager
def stdout_to_stderr():
    """Send what Ray prints (fd 1 and sys.stdout) to stderr, so the module's stdout stays pure JSON."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:
        saved = None
    try:
        if saved is not None:
            os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def split_address(address):
    """'10.0.0.1:6379' -> ('10.0.0.1', 6379); (None, None) when it is not host:port."""
    host, _colon, port = str(address).strip().rpartition(":")
    if not host or not port.isdigit():
        return None, None
    return host.strip("[]"), int(port)
