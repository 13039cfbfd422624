"""venv_requirements run as a real AnsibleModule against a real interpreter and real dist-info."""

from __future__ import annotations

import sys

import pytest
from ansible.module_utils.testing import patch_module_args
from module_docs import assert_read_only_module_documented
from module_results import ExitJson, FailJson

from ansible_collections.rlinf.cluster.plugins.modules import venv_requirements as mod

pytestmark = pytest.mark.usefixtures("module_exits")


def dist(site, name, version, requires=()):
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {req}" for req in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")


@pytest.fixture
def venv(tmp_path):
    """A venv-shaped directory whose bin/python also sees the dist-info written here."""
    site = tmp_path / "site"
    site.mkdir()
    dist(site, "demo", "1.0", ['extra-dep>=2; extra == "full"', 'other-dep; extra == "more"'])
    dist(site, "extra-dep", "1.5")
    dist(site, "other-dep", "0.1")
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    python = tmp_path / "venv" / "bin" / "python"
    # The controller's interpreter brings packaging; the names above are not among its packages.
    python.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return tmp_path / "venv"


def run(args):
    with patch_module_args(args), pytest.raises((ExitJson, FailJson)) as outcome:
        mod.main()
    return outcome.value.args[0]


def test_pinned_set_present_is_satisfied(venv):
    result = run({"virtualenv": str(venv), "requirements": ["demo==1.0", "other-dep"]})
    assert result == {"changed": False, "exists": True, "satisfied": True, "unsatisfied": []}


def test_wrong_version_and_missing_package_are_named(venv):
    result = run({"virtualenv": str(venv), "requirements": ["demo==2.0", "absent==1"]})
    assert result["satisfied"] is False
    assert result["unsatisfied"] == ["demo==2.0: installed 1.0", "absent==1: not installed"]


def test_an_extra_needs_its_own_dependencies(venv):
    result = run({"virtualenv": str(venv), "requirements": ["demo[full]==1.0", "demo[more]==1.0"]})
    assert result["unsatisfied"] == ["demo[full]==1.0: extra-dep 1.5 does not match >=2"]


def test_a_missing_venv_satisfies_nothing(tmp_path):
    result = run({"virtualenv": str(tmp_path / "none"), "requirements": ["demo==1.0"]})
    assert result == {"changed": False, "exists": False, "satisfied": False, "unsatisfied": ["demo==1.0: no venv"]}


def test_check_mode_reads_the_same(venv):
    result = run({"virtualenv": str(venv), "requirements": ["demo==1.0"], "_ansible_check_mode": True})
    assert result["satisfied"] is True


def test_a_broken_interpreter_fails_with_the_venv_named(venv):
    (venv / "bin" / "python").write_text("#!/bin/sh\necho boom >&2; exit 3\n")
    result = run({"virtualenv": str(venv), "requirements": ["demo==1.0"]})
    assert result["msg"] == f"cannot read the venv {venv}: boom"


def test_documentation_matches_the_argument_spec():
    assert_read_only_module_documented(mod, mod.ARGUMENT_SPEC)
