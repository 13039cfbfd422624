"""One report of every problem: host, variable, what is wrong, the fix.

The same problem on many hosts (a bad value in group_vars/all) is reported once, naming the
hosts. Controller-only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

_SHOWN_HOSTS = 5


class Problem(NamedTuple):
    host: str | None  # None: the inventory as a whole
    text: str  # "VAR=VALUE is ...; fix ..." (no host)


class PlanError(ValueError):
    """Raised with every problem found; ``report`` is the text an operator reads."""

    def __init__(self, problems: Sequence[Problem], stage: str = "validation"):
        self.problems = list(problems)
        self.stage = stage
        super().__init__(report(self.problems, stage))


def _hosts_text(hosts: Sequence[str], total: int) -> str:
    if len(hosts) == 1:
        return f"host '{hosts[0]}'"
    if total and len(hosts) == total and total > 2:
        return f"all {total} hosts"
    shown = ", ".join(hosts[:_SHOWN_HOSTS])
    more = f" and {len(hosts) - _SHOWN_HOSTS} more" if len(hosts) > _SHOWN_HOSTS else ""
    return f"hosts {shown}{more}"


def sentences(problems: Iterable[Problem], total_hosts: int = 0) -> list[str]:
    """One sentence per distinct problem, hosts grouped, in first-seen order."""
    grouped: dict[str, list[str]] = {}
    inventory: list[str] = []
    for problem in problems:
        if problem.host is None:
            if problem.text not in inventory:
                inventory.append(problem.text)
            continue
        holders = grouped.setdefault(problem.text, [])
        if problem.host not in holders:
            holders.append(problem.host)
    lines = list(inventory)
    lines += [f"{_hosts_text(hosts, total_hosts)}: {text}" for text, hosts in grouped.items()]
    return lines


def report(problems: Sequence[Problem], stage: str = "validation", total_hosts: int = 0) -> str:
    lines = sentences(problems, total_hosts)
    where = "before any host was contacted" if stage == "validation" else "before anything changed on any host"
    return f"{stage.capitalize()} found {len(lines)} problem(s), {where}; nothing was changed:\n- " + "\n- ".join(lines)
