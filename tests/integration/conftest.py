"""Fixtures of the tests that drive the real playbooks against the podman lab (helpers: lab_helpers.py)."""

from __future__ import annotations

import pytest
from lab_helpers import lab_hosts


@pytest.fixture(scope="module")
def hosts() -> dict[str, str]:
    """The lab hosts, name -> address, in rank order."""
    return lab_hosts()
