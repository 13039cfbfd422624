"""What a module that runs as a Ray driver needs around ``ray.init``: its stdout kept for the JSON result."""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Callable


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


class CheckFailed(Exception):
    """The check cannot go on or found the cluster wrong; the message is the sentence the task fails with."""


def run_checked(module_name: str, work: Callable[[], None]) -> tuple[str | None, str | None]:
    """Run a driver module's work with fd 1 kept for its JSON result: (failure sentence, traceback).

    (None, None) when it ran through; the traceback only for an exception that is a bug: a module
    never ends in a bare traceback, but with one sentence and the trace as data."""
    with stdout_to_stderr():
        try:
            work()
        except CheckFailed as err:
            return str(err), None
        except Exception as err:
            failure = (
                f"{module_name} failed unexpectedly ({type(err).__name__}: {err}); this is a bug in the "
                "module: report it with the exception text."
            )
            return failure, traceback.format_exc()
    return None, None


def split_address(address):
    """'10.0.0.1:6379' -> ('10.0.0.1', 6379); (None, None) when it is not host:port."""
    host, _colon, port = str(address).strip().rpartition(":")
    if not host or not port.isdigit():
        return None, None
    return host.strip("[]"), int(port)
