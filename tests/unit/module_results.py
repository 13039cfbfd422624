"""What a module under test ends with: AnsibleModule.exit_json / fail_json raise these,
carrying the result (msg included); the module_exits fixture (conftest.py) installs them."""

from __future__ import annotations


class ExitJson(Exception):
    pass


class FailJson(Exception):
    pass


def exit_json(self, **kwargs):
    raise ExitJson(kwargs)


def fail_json(self, msg, **kwargs):
    kwargs["msg"] = msg
    raise FailJson(kwargs)
