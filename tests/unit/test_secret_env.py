"""rlinf_secret_env_vars (issue 25): names in the plan, values only in a 0600 file the role writes
from the inventory; the unit reads that file as a second EnvironmentFile= only when there is one."""

from __future__ import annotations

import json

import pytest
from test_plan import GROUPS, hostvars, probes, problems_of

from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P

SECRET = "hf_NotARealTokenQ7xZ2"


def every_host(**variables):
    return hostvars(**{name: dict(variables) for name in ("h", "w1", "w2")})


def test_the_plan_holds_the_names_and_the_file_never_the_values():
    static = P.static_plan(GROUPS, every_host(rlinf_secret_env_vars={"HF_TOKEN": SECRET}))
    node = static["nodes"]["w1"]
    assert node["secret_env_names"] == ["HF_TOKEN"]
    assert node["paths"]["secret_env_file"] == "/etc/rlinf/rlinf.secret.env"
    done = P.resolve(static, probes(), "site")
    assert SECRET not in json.dumps(done, default=str)
    assert SECRET not in json.dumps(P.summary(static), default=str)


def test_the_unit_reads_the_secret_file_only_when_there_are_secrets():
    with_secret = P.resolve(P.static_plan(GROUPS, every_host(rlinf_secret_env_vars={"HF_TOKEN": SECRET})), probes())
    unit = with_secret["nodes"]["h"]["files"][1]["content"]
    assert "EnvironmentFile=/etc/rlinf/rlinf.env\n" in unit
    assert "EnvironmentFile=/etc/rlinf/rlinf.secret.env\n" in unit
    # The env file Ray reads first; the secret file after it.
    assert unit.index("rlinf.env\n") < unit.index("rlinf.secret.env\n")
    plain = P.resolve(P.static_plan(GROUPS, hostvars()), probes())["nodes"]["h"]["files"][1]["content"]
    assert "secret" not in plain


def test_the_secret_file_follows_a_custom_env_file():
    static = P.static_plan(
        GROUPS, every_host(rlinf_env_file="/etc/rlinf/site.env", rlinf_secret_env_vars={"WANDB_API_KEY": SECRET})
    )
    assert static["nodes"]["h"]["paths"]["secret_env_file"] == "/etc/rlinf/site.secret.env"


@pytest.mark.parametrize(
    "secret, phrase",
    [
        ({"RLINF_NODE_RANK": "3"}, "rlinf_secret_env_vars sets RLINF_NODE_RANK, which must not be set there"),
        ({"1BAD": SECRET}, "rlinf_secret_env_vars (value hidden) key '1BAD' is not an environment variable name"),
        ({"HF_TOKEN": SECRET + "'"}, "rlinf_secret_env_vars (value hidden) the value of HF_TOKEN holds a quote"),
    ],
)
def test_a_bad_secret_is_refused_naming_host_and_name_never_the_value(secret, phrase):
    found = problems_of(lambda: P.static_plan(GROUPS, hostvars(w1={"rlinf_secret_env_vars": secret})))
    assert any(phrase in s and "w1" in s for s in found), found
    assert all(SECRET not in s for s in found), found


def test_a_name_in_both_env_variables_is_refused():
    found = problems_of(
        lambda: P.static_plan(
            GROUPS, hostvars(w2={"rlinf_env_vars": {"HF_TOKEN": "x"}, "rlinf_secret_env_vars": {"HF_TOKEN": SECRET}})
        )
    )
    assert any("rlinf_secret_env_vars and rlinf_env_vars both set HF_TOKEN" in s and "w2" in s for s in found), found
    assert all(SECRET not in s for s in found)


def test_an_odd_but_harmless_secret_value_is_accepted():
    static = P.static_plan(GROUPS, every_host(rlinf_secret_env_vars={"PASS": 'a b%c#d=e;f&g|h"i'}))
    assert static["nodes"]["h"]["secret_env_names"] == ["PASS"]
