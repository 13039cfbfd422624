"""A controller token file that is not safely ours (an SSH key named by mistake, a file others may
change) is refused by site.yml before any host is contacted, naming the file and the fix and
never what it holds; validate.yml and teardown do not read it.

Hosts point at loopback listeners that count connections (test_refused_before_contact.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_refused_before_contact import Listeners, run, write_inventory

KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"


@pytest.fixture(scope="module")
def listener():
    server = Listeners()
    yield server
    server.close()


def with_token_file(tmp_path: Path, listener: Listeners, content: str, mode: int) -> tuple[Path, Path]:
    token = tmp_path / "token"
    token.write_text(content)
    token.chmod(mode)
    cases = [{"var": "ray_auth_controller_token_file", "value": str(token), "scope": "cluster"}]
    inventory = write_inventory(tmp_path / "inv", [], listener, overlay=False)
    hosts = inventory / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("  vars:\n", f"  vars:\n    {cases[0]['var']}: {token}\n", 1))
    return inventory, token


def test_an_ssh_key_as_the_token_file_is_refused_before_contact(tmp_path, listener):
    key = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_BODY}\n-----END OPENSSH PRIVATE KEY-----\n"
    inventory, token = with_token_file(tmp_path, listener, key, 0o600)
    result = run(["site.yml"], inventory)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out[-3000:]
    assert "Traceback" not in out
    assert f"the controller's Ray token file {token} does not hold a Ray token (a PEM key or certificate)" in out
    assert "point ray_auth_controller_token_file at the token file ray_auth generated" in out
    assert KEY_BODY not in out
    assert listener.accepted == 0


def test_a_token_file_others_may_change_is_refused_and_validate_does_not_read_it(tmp_path, listener):
    inventory, token = with_token_file(tmp_path, listener, "t" * 64 + "\n", 0o666)
    result = run(["site.yml"], inventory)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out[-3000:]
    assert f"the controller's Ray token file {token} has mode 0666" in out and f"`chmod 0600 {token}`" in out
    validate = run(["validate.yml", "-e", f"cluster_plan_path={tmp_path}/plan.json"], inventory)
    assert validate.returncode == 0, validate.stdout[-3000:]
    assert listener.accepted == 0
