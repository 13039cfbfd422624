# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""What the collection's controller-only actions share: no connection, check mode, checked arguments."""

from __future__ import annotations

from typing import ClassVar

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase


class ControllerAction(ActionBase):
    """An action that runs on the controller alone; ``act`` gets the validated arguments."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    ARGUMENT_SPEC: ClassVar[dict] = {}

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        validation = ArgumentSpecValidator(self.ARGUMENT_SPEC).validate(self._task.args)
        if validation.error_messages:
            return {"failed": True, "msg": "; ".join(validation.error_messages)}
        result.update(self.act(validation.validated_parameters, task_vars or {}))
        return result

    def act(self, args: dict, task_vars: dict) -> dict:
        raise NotImplementedError
