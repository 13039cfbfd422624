"""plugins/module_utils/env_file.py (the writer) and ray_env.py (the modules' reader of RAY_*)."""

import pytest

from ansible_collections.rlinf.cluster.plugins.module_utils.env_file import (
    EnvFileError,
    env_problems,
    render_env,
)
from ansible_collections.rlinf.cluster.plugins.module_utils.ray_env import read_ray_env


def test_renders_in_order_single_quoted():
    body = render_env({"RLINF_NODE_RANK": 2, "RLINF_COMM_NET_DEVICES": "et0", "HF_HOME": "/data/hf"})
    assert body == "RLINF_NODE_RANK='2'\nRLINF_COMM_NET_DEVICES='et0'\nHF_HOME='/data/hf'\n"


def test_rank_zero_is_written_not_dropped():
    assert render_env({"RLINF_NODE_RANK": 0}) == "RLINF_NODE_RANK='0'\n"


def test_booleans_become_1_and_0():
    assert render_env({"A": True, "B": False}) == "A='1'\nB='0'\n"


def test_dollar_and_spaces_stay_literal():
    # Single quotes: neither systemd nor sh expands $ or splits on spaces.
    assert render_env({"OPTS": "--x $HOME a b"}) == "OPTS='--x $HOME a b'\n"


@pytest.mark.parametrize(
    ("variables", "fragment"),
    [
        ({"1BAD": "x"}, "'1BAD' is not a valid environment variable name"),
        ({"BAD-NAME": "x"}, "'BAD-NAME' is not a valid environment variable name"),
        ({"Q": "it's"}, "the value of Q contains a quote"),
        ({"N": "a\nb"}, "the value of N contains a quote, backslash or newline"),
        ({"B": "C:\\path"}, "the value of B contains a quote, backslash or newline"),
        ({"L": [1, 2]}, "L must be a string or number, not list"),
        ({"D": None}, "D must be a string or number, not NoneType"),
    ],
)
def test_refuses_what_systemd_and_sh_read_differently(variables, fragment):
    with pytest.raises(EnvFileError) as err:
        render_env(variables, "rlinf_env_vars")
    assert fragment in str(err.value)
    assert str(err.value).startswith("rlinf_env_vars: ")


def test_reports_every_problem():
    problems = env_problems({"1A": "x", "B": "'", "C": "fine"})
    assert problems == [
        "rlinf_env_vars: '1A' is not a valid environment variable name (letters, digits and '_', not starting "
        "with a digit).",
        "rlinf_env_vars: the value of B contains a quote, backslash or newline; systemd and the shell read those "
        "differently, so use a plain value.",
    ]


# Values whose meaning a careless writer or reader would change: spaces, $, #, =, %, empty.
AWKWARD = {
    "RLINF_NODE_RANK": 0,
    "RAY_AUTH_MODE": "token",
    "RAY_AUTH_TOKEN_PATH": "/etc/rlinf/ray-auth-token",
    "RAY_EXTRA": "--x $HOME a#b c=d 100% `id` $(id)",
    "RAY_EMPTY": "",
    "RAY_SPACED": "  padded  ",
    "RAY_FLAG": True,
    "HF_HOME": "/data/hf cache",
}


def test_what_render_env_writes_read_ray_env_reads_back(tmp_path):
    # The file as rlinf.env.j2 writes it: a comment header, then render_env's lines.
    env_file = tmp_path / "rlinf.env"
    env_file.write_text("# Managed by rlinf-ansible\n# a comment with KEY='x' in it\n" + render_env(AWKWARD))
    expected = {k: ("1" if v is True else str(v)) for k, v in AWKWARD.items() if k.startswith("RAY_")}
    assert read_ray_env(str(env_file)) == expected
