"""How pip reads an argument list: its own options for the three commands the roles run.

pip parses its command line with optparse, which takes any unique prefix of a long option for
the option (``--find=URL`` is ``--find-links=URL``), clusters short options (``-qq``, ``-iURL``)
and takes an option's value from the next argument when it has no ``=``. A guard that
compares the written text with a list of names misses all three; this module reads the list
the way pip does, so the rules (rules.py) judge the option pip would act on.

``OPTIONS`` is pip 23.2.1's (the controller venv's pip), read with
``create_command(cmd).parser._get_all_options()``; tests/unit/test_pip_options.py compares it
with the installed pip, so an upgrade that adds or renames an option shows up there. pip is
never imported here: the plan runs under any controller Python. Controller-only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

COMMANDS = ("install", "download", "wheel")

# pip's first long spelling of an option: (its other spellings, whether it takes a value,
# the commands that have it; "" = all three).
OPTIONS = {
    "--abi": ((), True, "install download"),
    "--break-system-packages": ((), False, "install"),
    "--build-option": ((), True, "wheel"),
    "--cache-dir": ((), True, ""),
    "--cert": ((), True, ""),
    "--check-build-dependencies": ((), False, ""),
    "--client-cert": ((), True, ""),
    "--compile": ((), False, "install"),
    "--config-settings": (("-C",), True, "install wheel"),
    "--constraint": (("-c",), True, ""),
    "--debug": ((), False, ""),
    "--dest": (("--destination-dir", "--destination-directory", "-d"), True, "download"),
    "--disable-pip-version-check": ((), False, ""),
    "--dry-run": ((), False, "install"),
    "--editable": (("-e",), True, "install wheel"),
    "--exists-action": ((), True, ""),
    "--extra-index-url": ((), True, ""),
    "--find-links": (("-f",), True, ""),
    "--force-reinstall": ((), False, "install"),
    "--global-option": ((), True, ""),
    "--help": (("-h",), False, ""),
    "--ignore-installed": (("-I",), False, "install"),
    "--ignore-requires-python": ((), False, ""),
    "--implementation": ((), True, "install download"),
    "--index-url": (("--pypi-url", "-i"), True, ""),
    "--isolated": ((), False, ""),
    "--keyring-provider": ((), True, ""),
    "--log": (("--log-file", "--local-log"), True, ""),
    "--no-binary": ((), True, ""),
    "--no-build-isolation": ((), False, ""),
    "--no-cache-dir": ((), False, ""),
    "--no-clean": ((), False, ""),
    "--no-color": ((), False, ""),
    "--no-compile": ((), False, "install"),
    "--no-deps": (("--no-dependencies",), False, ""),
    "--no-index": ((), False, ""),
    "--no-input": ((), False, ""),
    "--no-python-version-warning": ((), False, ""),
    "--no-use-pep517": ((), False, ""),
    "--no-user": ((), False, "install"),
    "--no-verify": ((), False, "wheel"),
    "--no-warn-conflicts": ((), False, "install"),
    "--no-warn-script-location": ((), False, "install"),
    "--only-binary": ((), True, ""),
    "--platform": ((), True, "install download"),
    "--pre": ((), False, ""),
    "--prefer-binary": ((), False, ""),
    "--prefix": ((), True, "install"),
    "--progress-bar": ((), True, ""),
    "--proxy": ((), True, ""),
    "--python": ((), True, ""),
    "--python-version": ((), True, "install download"),
    "--quiet": (("-q",), False, ""),
    "--report": ((), True, "install"),
    "--require-hashes": ((), False, ""),
    "--require-virtualenv": (("--require-venv",), False, ""),
    "--requirement": (("-r",), True, ""),
    "--retries": ((), True, ""),
    "--root": ((), True, "install"),
    "--root-user-action": ((), True, "install"),
    "--src": (("--source", "--source-dir", "--source-directory"), True, ""),
    "--target": (("-t",), True, "install"),
    "--timeout": (("--default-timeout",), True, ""),
    "--trusted-host": ((), True, ""),
    "--upgrade": (("-U",), False, "install"),
    "--upgrade-strategy": ((), True, "install"),
    "--use-deprecated": ((), True, ""),
    "--use-feature": ((), True, ""),
    "--use-pep517": ((), False, ""),
    "--user": ((), False, "install"),
    "--verbose": (("-v",), False, ""),
    "--version": (("-V",), False, ""),
    "--wheel-dir": (("-w",), True, "wheel"),
}


class Arg(NamedTuple):
    item: int  # 1-based index of the list item the argument starts at
    written: str  # as written (the option's spelling, or the positional argument)
    option: str | None  # pip's first long spelling; None: a positional argument (a package, a path)
    value: str | None  # the option's value (None for a flag)


class Unreadable(ValueError):
    """pip would stop with a usage error here: ``what`` says why, for item ``item``."""

    def __init__(self, item: int, written: str, what: str):
        self.item = item
        self.written = written
        self.what = what
        super().__init__(f"item {item} ({written!r}) {what}")


def _spellings(command: str) -> dict[str, str]:
    found = {}
    for name, (others, _takes_value, where) in OPTIONS.items():
        if not where or command in where.split():
            for spelling in (name, *others):
                found[spelling] = name
    return found


_BY_COMMAND = {command: _spellings(command) for command in COMMANDS}


def long_option(command: str, written: str) -> tuple[str | None, list[str]]:
    """The option pip reads ``--written`` as (optparse's ``_match_abbrev``) and the candidates."""
    spellings = _BY_COMMAND[command]
    if written in spellings:
        return spellings[written], [written]
    candidates = sorted(s for s in spellings if s.startswith(written))
    names = sorted({spellings[s] for s in candidates})
    return (names[0] if len(candidates) == 1 else None), candidates


def read(command: str, args: Sequence[str]) -> list[Arg]:
    """Every argument pip would see in ``args``, in order; raises Unreadable where pip stops."""
    found: list[Arg] = []
    items = list(args)
    index = 0
    only_positional = False
    while index < len(items):
        item = items[index]
        index += 1
        start = index
        if only_positional or not item.startswith("-") or item == "-":
            found.append(Arg(start, item, None, None))
            continue
        if item == "--":
            only_positional = True
            continue
        if item.startswith("--"):
            written, has_value, value = item.partition("=")
            name, candidates = long_option(command, written)
            if name is None and candidates:
                raise Unreadable(start, item, f"is ambiguous to pip ({', '.join(candidates)}), which stops there")
            if name is None:
                raise Unreadable(start, item, f"is no option of `pip {command}`, which stops there")
            takes_value = OPTIONS[name][1]
            if has_value and not takes_value:
                raise Unreadable(start, item, f"gives a value to {name}, which takes none")
            if takes_value and not has_value:
                if index >= len(items):
                    raise Unreadable(start, item, f"is {name}, which needs a value")
                value = items[index]
                index += 1
            found.append(Arg(start, written, name, value if takes_value else None))
            continue
        # Short options, clustered as optparse reads them: -qq, -iURL, -i URL.
        chars = item[1:]
        while chars:
            letter, chars = "-" + chars[0], chars[1:]
            name = _BY_COMMAND[command].get(letter)
            if name is None:
                raise Unreadable(start, item, f"holds {letter}, no option of `pip {command}`, where pip stops")
            value = None
            if OPTIONS[name][1]:
                if chars:
                    value, chars = chars, ""
                elif index < len(items):
                    value = items[index]
                    index += 1
                else:
                    raise Unreadable(start, item, f"is {name}, which needs a value")
            found.append(Arg(start, letter, name, value))
    return found
