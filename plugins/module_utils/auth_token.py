# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""Which Ray token a site run uses: the cluster is the source of truth for its own token.

A controller without one (an AWX job's fresh container, a deleted state dir) takes the token the
nodes already have instead of minting one, which would restart Ray everywhere. Only digests are
compared here; the value is read on the node that holds it (roles/ray_auth, no_log).
Controller-only.
"""

from __future__ import annotations

import stat
from collections.abc import Mapping, Sequence

from ansible_collections.rlinf.cluster.plugins.module_utils.problems import Problem

# Where the run's token comes from (roles/ray_auth acts on it).
VAULT = "vault"  # ray_auth_token
CONTROLLER = "controller"  # the controller's token file (state dir)
NODE = "node"  # read on `read_from`, then kept in the controller's token file
NEW = "new"  # no node has one: a fresh cluster, generated once on the controller
ROTATE = "rotate"  # -e ray_auth_rotate=true: a new one, Ray restarts on every node


def node_digests(order: Sequence[str], probes: Mapping[str, Mapping]) -> dict[str, str]:
    """Inventory name -> sha256 of its token file, for the probed nodes that have one (in order)."""
    found = {}
    for name in order:
        token = (probes.get(name) or {}).get("token") or {}
        if token.get("present") and token.get("sha256"):
            found[name] = token["sha256"]
    return found


def choose(
    vault: bool,
    on_controller: bool,
    rotate: bool,
    digests: Mapping[str, str],
    head: str,
) -> tuple[dict, list[Problem]]:
    """The token's source (``{"source", "read_from"}``) and the problems that refuse the run."""
    if rotate and vault:
        return {"source": VAULT, "read_from": ""}, [
            Problem(
                None,
                "ray_auth_rotate=true and ray_auth_token is set: the Vault variable is the token; to rotate, put a "
                "new ray_auth_token in Vault (and drop -e ray_auth_rotate=true).",
            )
        ]
    if rotate:
        return {"source": ROTATE, "read_from": ""}, []
    if vault:
        return {"source": VAULT, "read_from": ""}, []
    if on_controller:
        return {"source": CONTROLLER, "read_from": ""}, []
    if not digests:
        return {"source": NEW, "read_from": ""}, []
    groups: dict[str, list[str]] = {}
    for name, digest in digests.items():
        groups.setdefault(digest, []).append(name)
    if len(groups) > 1:
        listing = "; ".join(f"{', '.join(hosts)} hold token #{i}" for i, hosts in enumerate(groups.values(), 1))
        return {"source": NODE, "read_from": ""}, [
            Problem(
                None,
                f"the controller has no Ray token and the nodes hold different ones ({listing}), so none is the "
                "cluster's: run with -e ray_auth_rotate=true (a new token on every node; Ray restarts everywhere), "
                "or set ray_auth_token (in Ansible Vault) to the token the cluster should use.",
            )
        ]
    read_from = head if head in digests else next(iter(digests))
    return {"source": NODE, "read_from": read_from}, []


# What ray_auth generates (the password lookup): one line of letters and digits. Ray accepts any
# printable token, so the file is judged by its shape only: one line, no spaces, 32 to 4096 characters.
TOKEN_MIN, TOKEN_MAX = 32, 4096


def controller_file_problem(path: str, mode: int, uid: int, euid: int, head: bytes) -> str | None:
    """Why the controller's token file at ``path`` must not be used as the cluster's token (None: it may).

    ``mode`` and ``uid`` are its ``lstat`` (not followed), ``euid`` the user running Ansible, ``head``
    its first TOKEN_MAX + 2 bytes (read only when it is a regular file). The run copies this file to
    every node, so a file someone else can write or swap, or one that is not a token (an SSH key, a
    certificate named by mistake), is refused instead.
    """
    fix = (
        "point ray_auth_controller_token_file at the token file ray_auth generated, or remove the file to take "
        "the nodes' token"
    )
    if stat.S_ISLNK(mode):
        return (
            f"the controller's Ray token file {path} is a symbolic link: a link can name any file, and this one "
            f"is copied to every node; {fix}."
        )
    if not stat.S_ISREG(mode):
        return f"the controller's Ray token file {path} is not a regular file; {fix}."
    if uid != euid:
        return (
            f"the controller's Ray token file {path} is owned by uid {uid}, not by the user running Ansible (uid "
            f"{euid}): its owner can change the token every node gets; {fix} (`chown {euid} {path}` if it is yours)."
        )
    if mode & 0o077:
        return (
            f"the controller's Ray token file {path} has mode {stat.S_IMODE(mode):04o}: others may read or change it; "
            f"`chmod 0600 {path}`."
        )
    text = head.decode("ascii", errors="replace")
    lines = text.splitlines() or [""]
    token = lines[0]
    shaped = (
        len(lines) == 1
        and TOKEN_MIN <= len(token) <= TOKEN_MAX
        and token.isprintable()
        and not any(c.isspace() for c in token)
    )
    if not shaped:
        # The file's content is never quoted: it may be a key.
        pem = token.startswith("-----BEGIN")
        what = "a PEM key or certificate" if pem else f"not one line of {TOKEN_MIN}-{TOKEN_MAX} printable characters"
        return f"the controller's Ray token file {path} does not hold a Ray token ({what}); {fix}."
    return None
