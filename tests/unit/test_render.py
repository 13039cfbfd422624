"""What render.py writes for systemd and the shell (the systemd round trip is a lab test, test_quoting.py)."""

from __future__ import annotations

import subprocess

import pytest

from ansible_collections.rlinf.cluster.plugins.module_utils import render


@pytest.mark.parametrize(
    ("word", "written"),
    [
        ("plain/path-1.2", "plain/path-1.2"),
        ('--resources={"a":1}', '"--resources={\\"a\\":1}"'),
        ("100%", '"100%%"'),
        ("$HOME", '"$$HOME"'),
        ("a b", '"a b"'),
        ("back\\slash", '"back\\\\slash"'),
        (";", "\\;"),
    ],
)
def test_words_are_quoted_for_systemd(word, written):
    assert render.systemd_word(word) == written


def test_a_control_character_is_refused_not_quoted():
    with pytest.raises(render.RenderError):
        render.systemd_word("x\nExecStartPre=/bin/true")


def test_the_profile_snippet_runs_in_a_posix_shell_and_puts_the_venv_first(tmp_path):
    env = tmp_path / "rlinf.env"
    env.write_text("RLINF_RAY_HEAD_ADDRESS='10.0.0.1:6379'\nRLINF_NODE_RANK='2'\n")
    node = {"paths": {"env_file": str(env), "venv": str(tmp_path / "venv")}}
    snippet = tmp_path / "rlinf.sh"
    snippet.write_text(render.profile(node))
    out = subprocess.run(
        ["sh", "-c", f'. {snippet}; echo "$RAY_ADDRESS $RLINF_NODE_RANK ${{PATH%%:*}}"; . {snippet}; echo "$PATH"'],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout.splitlines()
    assert out[0] == f"10.0.0.1:6379 2 {tmp_path}/venv/bin"
    assert out[1].count(f"{tmp_path}/venv/bin") == 1, "a second login shell added the venv again"


def test_the_env_file_is_single_quoted_values_after_our_header():
    text = render.env_file({"RLINF_NODE_RANK": 1, "HF_HOME": "/data/hf cache"})
    assert text.splitlines()[0].startswith("# Managed by rlinf-ansible")
    assert text.splitlines()[-2:] == ["RLINF_NODE_RANK='1'", "HF_HOME='/data/hf cache'"]


def test_numbers_are_written_as_ray_reads_them():
    assert [render.number_text(v) for v in (2.0, 1.5, 3, "4")] == ["2", "1.5", "3", "4"]


def test_json_is_indented_two_and_sorted():
    assert render.json_text({"b": 1, "a": [1]}) == '{\n  "a": [\n    1\n  ],\n  "b": 1\n}\n'


def test_the_unit_names_the_role_and_rank():
    from test_plan import resolved

    plan = resolved()
    descriptions = [
        next(line for line in plan["nodes"][n]["files"][1]["content"].splitlines() if line.startswith("Description="))
        for n in plan["order"]
    ]
    assert descriptions == [
        "Description=Ray head for RLinf (rank 0)",
        "Description=Ray worker for RLinf (rank 1)",
        "Description=Ray worker for RLinf (rank 2)",
    ]
