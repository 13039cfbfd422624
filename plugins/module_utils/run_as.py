"""Run one function as another account, in a child process, and get its JSON result back.

A Ray driver writes into Ray's temp dir (its log files in the session directory). When Ray
runs as ``ray_node_user``, that account owns the directory, so a driver running as root there
would follow whatever symlink the account (whoever holds the Ray token) planted: the modules
that act as drivers run their Ray part as the account Ray runs as.

Runs on the nodes: Python 3.9+, standard library only.
"""

from __future__ import annotations

import json
import os
import pwd
import traceback


class AccountError(Exception):
    pass


def account(user):
    """The passwd entry of ``user``; AccountError when missing."""
    try:
        return pwd.getpwnam(user)
    except KeyError:
        raise AccountError(f"the account {user!r} does not exist") from None


def needs_switch(user):
    return bool(user) and os.geteuid() == 0 and user != "root"


def run_as(user, func):
    """``func()`` as ``user`` (its groups, uid, gid, HOME) when running as root, else as is.

    The value must be JSON-serialisable. An exception in the child comes back as
    AccountError with its text (and the traceback as ``.detail``).
    """
    if not needs_switch(user):
        return func()
    entry = account(user)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        code = 0
        try:
            os.initgroups(user, entry.pw_gid)
            os.setgid(entry.pw_gid)
            os.setuid(entry.pw_uid)
            os.environ["HOME"] = entry.pw_dir
            os.environ["USER"] = os.environ["LOGNAME"] = user
            payload = {"value": func()}
        except BaseException as err:  # everything goes back to the parent, as data
            payload = {"error": f"{type(err).__name__}: {err}", "detail": traceback.format_exc()}
            code = 1
        try:
            with os.fdopen(write_end, "w", encoding="utf-8") as out:
                out.write(json.dumps(payload))
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, encoding="utf-8") as source:
        text = source.read()
    _, status = os.waitpid(pid, 0)
    try:
        payload = json.loads(text)
    except ValueError:
        raise AccountError(f"the process running as {user!r} ended without a result (wait status {status})") from None
    if "error" in payload:
        err = AccountError(f"as {user!r}: {payload['error']}")
        err.detail = payload.get("detail", "")
        raise err
    return payload["value"]
