"""The lab suite's modules, longest first, each to whichever lab is free (make test's two labs).

xdist's ``loadfile`` hands out modules in the order of their test counts and gives a lab its
next module while the current one still has two tests to run, so the last long module can
start on one lab while the other has finished. Here the next module is the longest left by the
durations a whole run measured (``module_durations.json``, ``make lab-durations`` rewrites it
from the last run), and a lab gets it only when it is on its current module's last test (xdist
runs a test only once it knows the next one, so that is the earliest a lab is free).
"""

from __future__ import annotations

import json
import pathlib
import xml.etree.ElementTree as ET

from xdist.scheduler import LoadFileScheduling

DURATIONS = pathlib.Path(__file__).with_name("module_durations.json")


def load_durations(path: pathlib.Path = DURATIONS) -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(path.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def junit_durations(xml_text: str) -> dict[str, float]:
    """Seconds per test module (setup, call and teardown of its tests) from pytest's JUnit XML."""
    totals: dict[str, float] = {}
    for case in ET.fromstring(xml_text).iter("testcase"):
        classname = case.get("classname") or ""
        module = classname.split(".")
        # classname is the dotted module path, with a test class's name after it.
        while module and not module[-1].startswith("test_"):
            module.pop()
        if not module:
            continue
        key = "/".join(module) + ".py"
        totals[key] = totals.get(key, 0.0) + float(case.get("time") or 0)
    return {k: round(v, 1) for k, v in sorted(totals.items())}


def order(scopes, durations: dict[str, float]) -> list[str]:
    """The scopes longest first; one not measured yet counts as the mean of those measured."""
    unknown = sum(durations.values()) / len(durations) if durations else 0.0
    return sorted(scopes, key=lambda s: (-durations.get(s, unknown), s))


class LongestFirst(LoadFileScheduling):
    def __init__(self, config, log=None, durations: dict[str, float] | None = None):
        super().__init__(config, log)
        self.durations = load_durations() if durations is None else durations

    def _assign_work_unit(self, node) -> None:
        longest = order(self.workqueue, self.durations)[0]
        self.workqueue.move_to_end(longest, last=False)
        super()._assign_work_unit(node)

    def _reschedule(self, node) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        if self._pending_of(self.assigned_work[node]) > 1:
            return
        self._assign_work_unit(node)


if __name__ == "__main__":
    import sys

    measured = junit_durations(pathlib.Path(sys.argv[1]).read_text())
    DURATIONS.write_text(json.dumps(measured, indent=1) + "\n")
    print(f"{DURATIONS}: {len(measured)} modules, {sum(measured.values()):.0f} s in all")
