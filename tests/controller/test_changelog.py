"""CHANGELOG.md is what antsibull-changelog generates from changelogs/changelog.yaml, so
an edit by hand (or a release that forgot to regenerate it) fails. Controller only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.package

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_changelog_md_is_generated_from_changelog_yaml(tmp_path):
    generated = tmp_path / "CHANGELOG.md"
    run = subprocess.run(
        [BIN / "antsibull-changelog", "generate", "--output", generated, "--output-format", "md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert (ROOT / "CHANGELOG.md").read_text() == generated.read_text(), (
        "CHANGELOG.md differs from what changelogs/changelog.yaml generates: it is never edited by hand "
        "(a change gets a fragment in changelogs/fragments/, CONTRIBUTING.md); `antsibull-changelog generate` "
        "rewrites it"
    )
