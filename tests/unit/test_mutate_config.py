"""tests/mutate.py's configuration names what exists: every source file COVER maps and the unit test
files that cover it, and every mutant CONTRIBUTING.md lists as equivalent is a site of a covered file
(a listed ID that names no site, after a file or function moved, would hide nothing and say nothing).
Pure text and ``ast``, no mutant runs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("mutate", ROOT / "tests" / "mutate.py")
mutate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutate)


def test_covered_files_and_their_tests_exist():
    missing = [rel for rel in mutate.COVER if not (ROOT / rel).is_file()]
    missing += [f"tests/unit/{t}" for tests in mutate.COVER.values() for t in tests]
    assert [path for path in missing if not (ROOT / path).is_file()] == []
    assert set(mutate.SHARE) <= set(mutate.COVER)


def test_every_listed_equivalent_mutant_is_a_site():
    listed = mutate.equivalents()
    assert listed, "CONTRIBUTING.md lists no equivalent mutants (### Equivalent mutants)"
    sites = {site.id for rel in mutate.COVER for site in mutate.sites_of(ROOT / rel)}
    assert sorted(set(listed) - sites) == []


def test_file_names_tell_sources_apart():
    """An ID and --file name a source by its file name alone."""
    names = [Path(rel).name for rel in mutate.COVER]
    assert len(names) == len(set(names))
