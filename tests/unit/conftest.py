"""Fixtures shared by the unit tests of the collection's modules."""

from __future__ import annotations

import pytest
from ansible.module_utils import basic
from module_results import exit_json, fail_json


@pytest.fixture
def module_exits(monkeypatch):
    """A module's exit_json / fail_json raise ExitJson / FailJson (module_results.py)."""
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
