"""Variables with our prefixes that nothing reads: typos, refused with the nearest real name.

``rlinf_firewal_enabled: true`` is accepted by Ansible and read by no role: the firewall stays
off and nothing says so. Every host the plan reads (the Ray nodes, the EasyTier bootstrap) and
the extra vars are scanned once for names that start with one of schema.PREFIXES and are not in
schema.KNOWN; a host opts its own variables out with ``rlinf_user_vars`` (names, or
shell-style patterns such as ``firewall_zone_*``). Hosts outside our groups are not scanned:
their variables belong to other roles. Controller-only.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable, Mapping, Sequence

from ansible_collections.rlinf.cluster.plugins.module_utils.problems import Problem
from ansible_collections.rlinf.cluster.plugins.plugin_utils import schema

# Only settings a user writes are offered as the nearest name, never a name a role sets.
_SUGGESTED = sorted(set(schema.BY_NAME) | set(schema.TOPOLOGY_VARS))


def ours_unknown(names: Iterable) -> list[str]:
    """The names in ``names`` that look like ours and are not known, in their order."""
    return [n for n in names if isinstance(n, str) and n.startswith(schema.PREFIXES) and n not in schema.KNOWN]


def _opted_out(name: str, patterns: Sequence[str]) -> bool:
    return any(name == p or fnmatch.fnmatchcase(name, p) for p in patterns)


class _Nearest:
    """difflib over the table, once per distinct unknown name."""

    def __init__(self):
        self._seen: dict[str, str] = {}

    def text(self, name: str) -> str:
        if name not in self._seen:
            close = difflib.get_close_matches(name, _SUGGESTED, n=1)
            guess = f"did you mean {close[0]}? Rename it" if close else "no variable of ours is close; rename it"
            self._seen[name] = (
                f"{name} is not a variable of rlinf.cluster and nothing reads it; {guess}, or list it in "
                "rlinf_user_vars if it is a variable of yours."
            )
        return self._seen[name]


def problems(
    hosts: Mapping[str, Iterable],
    user_vars: Mapping[str, Sequence[str]],
    extra_vars: Iterable[str] = (),
    extra_user_vars: Sequence[str] = (),
) -> list[Problem]:
    """One problem per unknown name: per host for inventory variables (group_vars reach every
    host of the group; the report names them together), once for extra vars.

    ``hosts`` maps a host to the names of its variables; ``user_vars`` a host to its
    ``rlinf_user_vars``; ``extra_user_vars`` applies to the extra vars."""
    nearest = _Nearest()
    extra = set(extra_vars)
    found = [
        Problem(None, "extra vars: " + nearest.text(name))
        for name in ours_unknown(sorted(extra))
        if not _opted_out(name, extra_user_vars)
    ]
    for host, names in hosts.items():
        patterns = user_vars.get(host) or ()
        for name in ours_unknown(names):
            if name not in extra and not _opted_out(name, patterns):
                found.append(Problem(host, nearest.text(name)))
    return found
