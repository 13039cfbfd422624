"""The controller's token file is copied to every node: one that is not safely ours is refused
before contact, naming the file and the fix (never its content)."""

from __future__ import annotations

import stat

import pytest

from ansible_collections.rlinf.cluster.plugins.action.cluster_plan import _refuse_unsafe_token_file, _token_file_problem
from ansible_collections.rlinf.cluster.plugins.module_utils.auth_token import controller_file_problem
from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError

VAR = "ray_auth_controller_token_file"
TOKEN = b"A" * 64 + b"\n"
REG = stat.S_IFREG | 0o600


def judge(mode=REG, uid=1000, euid=1000, head=TOKEN):
    return controller_file_problem("/s/t", mode, uid, euid, head)


def test_the_token_ray_auth_generates_is_accepted():
    assert judge() is None
    assert judge(head=b"x" * 32) is None
    assert judge(head=b"%" * 4096 + b"\n") is None


def test_a_symlink_is_refused_whatever_it_names():
    assert "is a symbolic link" in judge(mode=stat.S_IFLNK | 0o777)


def test_a_directory_is_refused():
    assert "is not a regular file" in judge(mode=stat.S_IFDIR | 0o700)


def test_a_file_of_another_user_is_refused_naming_both_uids():
    problem = judge(uid=0, euid=1000)
    assert "owned by uid 0, not by the user running Ansible (uid 1000)" in problem
    assert "`chown 1000 /s/t`" in problem


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o602])
def test_a_file_others_may_read_or_change_is_refused_with_the_chmod(mode):
    problem = judge(mode=stat.S_IFREG | mode)
    assert f"has mode {mode:04o}" in problem and "`chmod 0600 /s/t`" in problem


def test_an_ssh_key_is_refused_as_a_pem_key_and_its_content_is_not_quoted():
    key = b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
    problem = judge(head=key)
    assert "does not hold a Ray token (a PEM key or certificate)" in problem
    assert "b3BlbnNz" not in problem and "BEGIN" not in problem


@pytest.mark.parametrize(
    "head",
    [b"", b"short\n", b"two words " + b"x" * 40, b"x" * 40 + b"\n" + b"y" * 40, b"x" * 4097, b"\x01" * 40],
    ids=["empty", "short", "space", "two-lines", "too-long", "control"],
)
def test_a_file_not_shaped_like_a_token_is_refused(head):
    assert "not one line of 32-4096 printable characters" in judge(head=head)


def test_on_disk_a_missing_file_is_fine_and_a_loose_one_is_named(tmp_path):
    path = tmp_path / "ray-auth-token"
    assert _token_file_problem(str(path)) is None
    path.write_bytes(TOKEN)
    path.chmod(0o600)
    assert _token_file_problem(str(path)) is None
    path.chmod(0o644)
    assert "has mode 0644" in _token_file_problem(str(path))
    link = tmp_path / "link"
    link.symlink_to(path)
    assert "is a symbolic link" in _token_file_problem(str(link))


def built(token_file, auth=True, vault=False, adopt=""):
    controller = {"token_file": str(token_file), "adopt_token_from": adopt, "vault_token": vault}
    return {"cluster": {"auth": auth, "controller": controller}}


def test_the_run_is_refused_for_the_token_file_and_for_a_legacy_one_to_adopt(tmp_path):
    key = tmp_path / "id_ed25519"
    key.write_bytes(b"-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----\n")
    key.chmod(0o600)
    with pytest.raises(PlanError) as err:
        _refuse_unsafe_token_file(built(key))
    assert [p.text for p in err.value.problems] == [
        f"the controller's Ray token file {key} does not hold a Ray token (a PEM key or certificate); point {VAR} "
        "at the token file ray_auth generated, or remove the file to take the nodes' token."
    ]
    with pytest.raises(PlanError) as err:
        _refuse_unsafe_token_file(built(tmp_path / "none", adopt=str(key)))
    assert len(err.value.problems) == 1 and str(key) in err.value.problems[0].text


def test_vault_and_no_auth_never_read_the_file(tmp_path):
    key = tmp_path / "k"
    key.write_bytes(b"-----BEGIN X-----\n")
    key.chmod(0o644)
    _refuse_unsafe_token_file(built(key, vault=True))
    _refuse_unsafe_token_file(built(key, auth=False))
