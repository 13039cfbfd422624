"""Test-only Ansible callback: pauses a lab container when the first task of a role starts.

ansible-runner gives a test's event handler each event after the task was sent to the hosts, and
later still on a loaded machine, so a pause from there lands at a point that depends on the load
(CI once paused the host after its last connection but one, and it was never left out). Ansible's
strategy calls v2_playbook_on_task_start in the controller's main process before it queues the task
for any host, so a pause made here is in place before the first host runs that task.

Enabled by run_playbook(..., pause_at_role=(container, role)), which sets the variables below.
"""

from __future__ import annotations

import os
import subprocess

from ansible.plugins.callback import CallbackBase

CONTAINER_VAR = "RLINF_TEST_PAUSE_CONTAINER"
ROLE_VAR = "RLINF_TEST_PAUSE_ROLE"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "pause_at_role"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self._container = os.environ.get(CONTAINER_VAR, "")
        self._role = os.environ.get(ROLE_VAR, "")
        self._paused = False

    def v2_playbook_on_task_start(self, task, is_conditional) -> None:
        role = task._role.get_name() if task._role else ""
        if self._paused or not self._container or not self._role or self._role not in role:
            return
        subprocess.run(["podman", "pause", self._container], check=True, capture_output=True)
        self._paused = True
        self._display.display(f"pause_at_role: paused {self._container} before the task '{task.get_name()}'")
