"""Test-only Ansible callback: writes the run's stats, as Ansible counts them, to a JSON file.

run_playbook runs ansible-playbook as an operator types it (ansible-runner, with its job events,
only where a test reads those). Its PlaybookRun.stats come from here: per key (ok, changed, dark,
failures, ...), the hosts with a count above zero, which is what ansible-runner's stats event holds.

Enabled by run_playbook, which names the file in the variable below.
"""

from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase

STATS_FILE_VAR = "RLINF_TEST_STATS_FILE"
KEYS = ("processed", "ok", "changed", "dark", "failures", "skipped", "rescued", "ignored")


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "playbook_stats"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_stats(self, stats) -> None:
        path = os.environ.get(STATS_FILE_VAR)
        if path:
            with open(path, "w", encoding="utf-8") as out:
                json.dump({key: dict(getattr(stats, key)) for key in KEYS}, out)
