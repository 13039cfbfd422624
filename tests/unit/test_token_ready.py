"""Whether ray_auth must set up the controller's secrets directory (plugins/action/cluster_plan.py):
only before the token exists, or when others can read the directory holding it."""

from __future__ import annotations

from ansible_collections.rlinf.cluster.plugins.action.cluster_plan import _token_ready


def test_no_token_yet_needs_the_directory(tmp_path):
    assert not _token_ready(str(tmp_path / "secrets" / "ray-auth-token"))


def test_a_token_in_a_private_directory_is_ready(tmp_path):
    secrets = tmp_path / "secrets"
    secrets.mkdir(mode=0o700)
    (secrets / "ray-auth-token").write_text("t")
    assert _token_ready(str(secrets / "ray-auth-token"))


def test_a_directory_others_can_read_is_fixed_again(tmp_path):
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    secrets.chmod(0o755)
    (secrets / "ray-auth-token").write_text("t")
    assert not _token_ready(str(secrets / "ray-auth-token"))
