"""Controller paths (the plan, the report, the state dir...) are normalised before they are
judged, and a '..' segment is refused: ``.../etc/../etc/passwd`` never passes as a plan path."""

from __future__ import annotations

import pytest

from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, sentences
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P
from ansible_collections.rlinf.cluster.plugins.plugin_utils import rules as r

GROUPS = {"ray_head": ["h"], "ray_workers": ["w1"]}


@pytest.mark.parametrize(
    ("value", "normal"),
    [
        ("/srv/ctl/./plan.json", "/srv/ctl/plan.json"),
        ("/srv//ctl/plan.json", "/srv/ctl/plan.json"),
        ("//srv/ctl/plan.json", "/srv/ctl/plan.json"),
        ("artifacts/", "artifacts"),
        ("./artifacts/plan.json", "artifacts/plan.json"),
    ],
)
def test_controller_paths_are_normalised(value, normal):
    assert r.controller_path(value) == normal


@pytest.mark.parametrize(
    ("value", "fix"),
    [
        ("/srv/ctl/etc/../etc/passwd", "(/srv/ctl/etc/passwd)"),
        ("/tmp/../etc/passwd", "(/etc/passwd)"),
        ("../state", "(an absolute path)"),
    ],
)
def test_a_dot_dot_segment_is_refused_with_what_it_stands_for(value, fix):
    with pytest.raises(r.Bad) as err:
        r.controller_path(value)
    assert err.value.what == "has a '..' segment"
    assert fix in err.value.fix


@pytest.mark.parametrize("value", ["/etc/./passwd", "//etc/passwd", "/etc//passwd/"])
def test_a_path_that_normalises_to_a_system_file_is_refused(value):
    with pytest.raises(r.Bad) as err:
        r.controller_path(value)
    assert "is a directory or file of the operating system" in err.value.what


@pytest.mark.parametrize("var", ["cluster_plan_path", "cluster_report_path", "rlinf_state_dir", "rlinf_artifacts_dir"])
def test_the_plan_refuses_a_controller_path_with_dot_dot_naming_the_variable(var):
    value = "/srv/ctl/etc/../etc/passwd"
    hostvars = {"h": {"ansible_host": "10.0.0.1", var: value}, "w1": {"ansible_host": "10.0.0.2", var: value}}
    with pytest.raises(PlanError) as err:
        P.static_plan(GROUPS, hostvars)
    found = sentences(err.value.problems)
    assert any(var + f"={value!r} has a '..' segment; write the path it stands for" in p for p in found), found


def test_the_plan_uses_the_normalised_controller_paths():
    hostvars = {"h": {"ansible_host": "10.0.0.1"}, "w1": {"ansible_host": "10.0.0.2"}}
    for host in hostvars.values():
        host.update(rlinf_state_dir="/srv/ctl//state/", cluster_report_path="/srv/ctl/./report.json")
    controller = P.static_plan(GROUPS, hostvars)["cluster"]["controller"]
    assert controller["state_dir"] == "/srv/ctl/state"
    assert controller["token_file"] == "/srv/ctl/state/secrets/ray-auth-token"
    assert controller["report_path"] == "/srv/ctl/report.json"


# The controller's token file is never an SSH key's path (issue 25: it would be shipped to every node).
@pytest.mark.parametrize(
    "value", ["/root/.ssh/id_ed25519", "/home/alice/.ssh/ray-token", "~/.ssh/id_rsa", "/srv/keys/id_ecdsa_sk"]
)
def test_an_ssh_key_path_as_the_controller_token_file_is_refused(value):
    with pytest.raises(r.Bad) as err:
        r.controller_token_file(value)
    assert err.value.what == (
        "is an SSH key's path (in a .ssh directory, or named like id_ed25519), which the run would copy to every "
        "node as the Ray token"
    )


@pytest.mark.parametrize("value", ["", "/srv/ctl/secrets/ray-auth-token", "tokens/id", "/srv/ssh/ray-token"])
def test_a_token_file_of_its_own_is_accepted(value):
    assert r.controller_token_file(value) == value
