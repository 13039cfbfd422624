"""Where the roles may write on a node (docs/security.md, "Paths the roles may write"): every path
they write, sync into, record or delete sits under rlinf_node_path_roots; every path Ray may write
passes one sandbox rule (rules.ray_writable). Each refusal names the host, the variable, the
value, the rule and the fix, before any host is contacted."""

from __future__ import annotations

import pytest

from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, sentences
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P
from ansible_collections.rlinf.cluster.plugins.plugin_utils import rules as r
from ansible_collections.rlinf.cluster.plugins.plugin_utils import schema

GROUPS = {"ray_head": ["h"], "ray_workers": ["w1"]}
OVERLAY_GROUPS = {**GROUPS, "easytier_bootstrap": ["b"]}
ROOTS_FIX = "move it under one of them, or add a directory of its own to rlinf_node_path_roots"
RAY_FIX = "a path Ray may write lets whoever holds the Ray token change it"


def problems_of(settings: dict, overlay: bool = False) -> list[str]:
    """The problems of an inventory whose worker w1 has ``settings`` (a cluster-wide one: every host)."""
    base = {"easytier_enabled": True, "easytier_network_secret": "a-long-enough-secret"} if overlay else {}
    shared = {k: v for k, v in settings.items() if schema.BY_NAME[k].scope == "cluster"}
    hostvars = {
        "h": {"ansible_host": "10.0.0.1", **base, **shared},
        "w1": {"ansible_host": "10.0.0.2", **base, **settings},
    }
    try:
        P.static_plan(GROUPS, hostvars)
    except PlanError as err:
        return [p for p in sentences(err.problems) if not p.startswith("host 'h'")]
    return []


def refusal(settings: dict, **kwargs) -> str:
    found = problems_of(settings, **kwargs)
    assert len(found) == 1, found
    return found[0]


# Paths the roles write, sync into with --delete, record as ours or delete: under the roots.
@pytest.mark.parametrize(
    ("var", "value", "why"),
    [
        ("python_env_node_wheelhouse_dir", "/var/lib/dpkg", "is under /var/lib/dpkg, which another program owns"),
        ("python_env_node_wheelhouse_dir", "/root/.ssh", "is under /root/.ssh, a dotfile of a home directory"),
        ("python_env_node_wheelhouse_dir", "/home/alice", "is the home directory /home/alice"),
        ("python_env_node_wheelhouse_dir", "/srv/wheels", "is not under one of rlinf_node_path_roots"),
        ("code_sync_node_wheel_dir", "/etc/ssl", "is under /etc/ssl, which another program owns"),
        ("code_sync_node_record_dir", "/var/backups/rlinf", "is under /var/backups, which the operating system"),
        ("rlinf_env_file", "/etc/sudoers.d/rlinf", "is under /etc/sudoers.d, which another program owns"),
        ("ray_auth_token_file", "/usr/local/etc/token", "is under /usr, which the operating system owns"),
        ("firewall_rules_file", "/etc/nftables.conf", "is under /etc/nftables.conf, which another program owns"),
        ("rlinf_launch_log_dir", "/var/log/journal", "is under /var/log/journal, which another program owns"),
        ("rlinf_venv_dir", "/lib64/venv", "is under /lib64, which the operating system owns"),
        ("rlinf_venv_dir", "/opt/conda/envs/rlinf", "is under /opt/conda, which another program owns"),
        ("ray_temp_dir", "/etc/cron.d", "is under /etc/cron.d, which another program owns"),
        ("ray_temp_dir", "/var/spool/cron/crontabs", "is under /var/spool, which the operating system"),
        ("ray_temp_dir", "/data/ray", "is not under one of rlinf_node_path_roots"),
    ],
)
def test_a_path_the_roles_write_outside_the_roots_is_refused_naming_it(var, value, why):
    problem = refusal({var: value})
    assert problem.startswith((f"host 'w1': {var}={value!r} {why}", f"hosts h, w1: {var}={value!r} {why}")), problem
    assert "rlinf_node_path_roots" in problem, problem


def test_the_refusal_lists_the_roots_and_how_to_add_one():
    problem = refusal({"python_env_node_wheelhouse_dir": "/srv/wheels"})
    assert "(/opt/rlinf, /etc/rlinf, /var/lib/rlinf*, /var/log/rlinf*, /tmp/ray*, /tmp/rlinf*)" in problem
    assert problem.endswith(ROOTS_FIX + "."), problem


def test_an_operator_root_admits_paths_below_it():
    roots = [*r.NODE_PATH_ROOTS, "/data/rlinf"]
    assert problems_of({"python_env_node_wheelhouse_dir": "/data/rlinf/wheels", "rlinf_node_path_roots": roots}) == []
    assert "is not under one of rlinf_node_path_roots" in refusal(
        {"python_env_node_wheelhouse_dir": "/data/other", "rlinf_node_path_roots": roots}
    )


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("python_env_node_wheelhouse_dir", "/opt/rlinf/models"),  # under a root: preflight judges what is there
        ("ray_temp_dir", "/tmp/ray-b"),
        ("ray_temp_dir", "/tmp/rlinf-ray"),
        ("ray_temp_dir", "/var/lib/rlinf-ray-b"),
        ("rlinf_env_file", "/etc/rlinf/b.env"),
        ("rlinf_launch_log_dir", "/var/log/rlinf/b"),
        ("rlinf_launch_log_dir", "/var/log/rlinf-launch-test"),  # the lab's
        ("rlinf_env_profile_script", "/etc/profile.d/rlinf.sh"),
        ("rlinf_env_profile_script", "/etc/profile.d/rlinf-b.sh"),
        ("rlinf_env_profile_script", "/etc/rlinf/profile.sh"),
        ("firewall_nft_bin", "/usr/sbin/nft"),  # run, never written
        ("rlinf_python", "/usr/bin/python3.11"),
    ],
)
def test_paths_under_the_roots_and_fixed_purpose_defaults_pass(var, value):
    assert problems_of({var: value}) == []


@pytest.mark.parametrize("value", ["/etc/profile.d/bash_completion.sh", "/etc/profile.d/rlinf.d/x.sh", "/etc/rlinf.sh"])
def test_the_shell_snippet_is_a_file_of_ours_in_profile_d(value):
    problem = refusal({"rlinf_env_profile_script": value})
    assert problem.startswith(f"host 'w1': rlinf_env_profile_script={value!r} "), problem
    assert "write /etc/profile.d/rlinf*.sh (e.g. /etc/profile.d/rlinf.sh), or move it under" in problem


@pytest.mark.parametrize(
    ("var", "value", "why"),
    [
        ("easytier_base_dir", "/home/ubuntu", "is the home directory /home/ubuntu"),
        ("easytier_venv_dir", "/usr/share/doc", "is under /usr, which the operating system owns"),
        ("easytier_config_dir", "/etc/ssh/easytier", "is under /etc/ssh, which another program owns"),
    ],
)
def test_easytier_paths_are_under_the_roots_on_every_member(var, value, why):
    found = problems_of({var: value}, overlay=True)
    assert any(p.startswith(f"host 'w1': {var}={value!r} {why}") for p in found), found
    # The bootstrap host (no Ray node) too.
    hostvars = {
        "h": {"ansible_host": "10.0.0.1"},
        "w1": {"ansible_host": "10.0.0.2"},
        "b": {"ansible_host": "203.0.113.5", var: value},
    }
    common = {"easytier_enabled": True, "easytier_network_secret": "a-long-enough-secret"}
    hostvars = {name: {**vars_, **common} for name, vars_ in hostvars.items()}
    with pytest.raises(PlanError) as err:
        P.static_plan(OVERLAY_GROUPS, hostvars)
    assert any(p.startswith(f"host 'b': {var}={value!r} {why}") for p in sentences(err.value.problems)), sentences(
        err.value.problems
    )


def test_easytier_paths_are_not_judged_with_the_overlay_off():
    assert problems_of({"easytier_base_dir": "/srv/easytier"}) == []


# The one sandbox rule: what Ray may write.
@pytest.mark.parametrize(
    ("var", "value", "why"),
    [
        ("rlinf_code_dest", "/opt/rlinf/venv", "is /opt/rlinf/venv, which root runs or reads"),
        ("rlinf_code_dest", "/opt/rlinf", "holds /opt/rlinf/venv, which root runs or reads"),
        ("rlinf_code_dest", "/etc/systemd/system/rlinf.d", "is under /etc"),
        ("rlinf_code_dest", "/etc/rlinf/RLinf", "is under /etc"),
        ("rlinf_code_dest", "/home/alice", "is the home directory /home/alice"),
        ("rlinf_code_dest", "/root/.config/RLinf", "is under /root/.config, a dotfile of a home directory"),
        ("rlinf_code_dest", "/var/lib/docker/RLinf", "is under /var/lib/docker, which another program owns"),
        ("rlinf_code_dest", "/opt/rlinf/wheelhouse/x", "is inside /opt/rlinf/wheelhouse, which root runs or reads"),
        ("rlinf_code_dest", "/var/log/rlinf", "is /var/log/rlinf, which root runs or reads"),
        ("ray_node_writable_paths", ["/opt/rlinf"], "item 1 ('/opt/rlinf') holds /opt/rlinf/venv"),
        ("ray_node_writable_paths", ["/home/ubuntu"], "item 1 ('/home/ubuntu') is the home directory /home/ubuntu"),
        (
            "ray_node_writable_paths",
            ["/opt/rlinf/venv/lib"],
            "item 1 ('/opt/rlinf/venv/lib') is inside /opt/rlinf/venv",
        ),
        ("ray_node_writable_paths", ["/data/ok", "/etc/cron.d"], "item 2 ('/etc/cron.d') is under /etc"),
        ("ray_node_writable_paths", ["/var/spool/cron"], "item 1 ('/var/spool/cron') is under /var/spool"),
        ("ray_node_writable_paths", ["/home/alice/.ssh"], "is under /home/alice/.ssh, a dotfile of a home directory"),
        ("ray_node_writable_paths", ["/opt/rlinf/code-sync"], "is /opt/rlinf/code-sync, which root runs or reads"),
        ("ray_temp_dir", "/opt/rlinf/venv/tmp", "is inside /opt/rlinf/venv, which root runs or reads"),
        ("ray_temp_dir", "/etc/rlinf/ray", "is under /etc"),
    ],
)
def test_a_path_ray_may_write_never_widens_the_sandbox(var, value, why):
    problem = refusal({var: value})
    assert problem.startswith(f"host 'w1': {var}={value!r} "), problem
    assert why in problem and RAY_FIX in problem, problem


def test_the_checkout_defaults_to_rlinf_srcs_path_and_is_judged_by_the_same_rule():
    hostvars = {
        "h": {"ansible_host": "10.0.0.1", "rlinf_src": "/home/alice"},
        "w1": {"ansible_host": "10.0.0.2", "rlinf_src": "/home/alice"},
    }
    with pytest.raises(PlanError) as err:
        P.static_plan(GROUPS, hostvars)
    found = sentences(err.value.problems)
    assert any(
        p.startswith("hosts h, w1: rlinf_code_dest (empty: rlinf_src's path)='/home/alice' is the home directory")
        for p in found
    ), found


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("rlinf_code_dest", "/srv/RLinf"),
        ("rlinf_code_dest", "/data/ckpt"),
        ("rlinf_code_dest", "/home/alice/RLinf"),
        ("rlinf_code_dest", "/root/RLinf"),
        ("rlinf_code_dest", "/opt/rlinf/RLinf"),
        ("ray_node_writable_paths", ["/data/ckpt", "/srv/hf", "/home/alice/checkpoints", "/mnt/nfs/runs"]),
        ("ray_node_writable_paths", ["/opt/rlinf/outputs"]),
    ],
)
def test_user_data_paths_ray_may_write_pass(var, value):
    assert problems_of({var: value}) == []


def test_every_problem_of_a_host_is_reported_at_once():
    found = problems_of(
        {
            "python_env_node_wheelhouse_dir": "/var/lib/dpkg",
            "rlinf_env_file": "/etc/sudoers.d/rlinf",
            "ray_node_writable_paths": ["/opt/rlinf"],
        }
    )
    assert [p.split("=", 1)[0] for p in found] == [
        "host 'w1': python_env_node_wheelhouse_dir",
        "host 'w1': rlinf_env_file",
        "host 'w1': ray_node_writable_paths",
    ], found


# The roots themselves.
@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("/", "is a parent of the system directory"),
        ("/opt", "is a directory of the operating system"),
        ("/etc/ssl", "is under /etc/ssl, which another program owns"),
        ("/usr/local/rlinf", "is under /usr, which the operating system owns"),
        ("/home/alice", "is the home directory /home/alice"),
        ("/root/.cache/rlinf", "is under /root/.cache"),
        ("/tmp/*", "has a '*' other than after a name at its end"),
        ("/var/*/rlinf", "has a '*' other than after a name at its end"),
        ("/data/../etc", "is not normalised"),
        ("data", "is not an absolute path"),
    ],
)
def test_a_root_is_a_directory_of_ours(value, why):
    with pytest.raises(r.Bad) as err:
        r.node_path_root(value)
    assert why in err.value.what


@pytest.mark.parametrize("value", ["/opt/rlinf", "/var/lib/rlinf*", "/tmp/ray*", "/data/rlinf", "/home/alice/rlinf"])
def test_plain_roots_pass(value):
    assert r.node_path_root(value) == value


def test_a_bad_root_is_refused_naming_the_variable():
    problem = refusal({"rlinf_node_path_roots": ["/opt/rlinf", "/etc/ssl"]})
    assert problem.startswith(
        "host 'w1': rlinf_node_path_roots=['/opt/rlinf', '/etc/ssl'] item 2 ('/etc/ssl') is under"
    )


@pytest.mark.parametrize(
    ("path", "roots", "inside"),
    [
        ("/var/lib/rlinf-ray/x", ["/var/lib/rlinf*"], True),
        ("/var/lib/rlinf", ["/var/lib/rlinf*"], True),
        ("/var/lib/rlin", ["/var/lib/rlinf*"], False),
        ("/opt/rlinf-other", ["/opt/rlinf"], False),
        ("/opt/rlinf", ["/opt/rlinf"], True),
        ("/tmp/ray", ["/tmp/ray*"], True),
        ("/tmp/x/ray", ["/tmp/ray*"], False),
    ],
)
def test_under_roots_matches_whole_names_or_a_trailing_star(path, roots, inside):
    assert r.under_roots(path, roots) is inside


def test_a_node_path_with_dot_segments_is_refused_with_its_normal_form():
    problem = refusal({"python_env_node_wheelhouse_dir": "/opt/rlinf/x/../wheels"})
    assert "is not normalised" in problem and "write the path it stands for, /opt/rlinf/wheels" in problem
    problem = refusal({"rlinf_code_dest": "/srv//RLinf"})
    assert "write the path it stands for, /srv/RLinf" in problem
    problem = refusal({"rlinf_code_dest": "//srv/RLinf/"})
    assert "write the path it stands for, /srv/RLinf," in problem


def test_a_path_with_a_space_is_refused_as_before():
    assert "has a character systemd or the shell would read differently" in refusal(
        {"rlinf_code_dest": "/srv/my RLinf"}
    )


# Paths of ours under the roots that are, hold or sit inside another path of ours (issue 25): a
# directory synced with --delete, or one purge removes, must not be the venv or its parent.
@pytest.mark.parametrize(
    ("settings", "overlay", "sentence"),
    [
        (
            {"code_sync_node_wheel_dir": "/opt/rlinf/venv"},
            False,
            "rlinf_venv_dir='/opt/rlinf/venv' and code_sync_node_wheel_dir='/opt/rlinf/venv' overlap",
        ),
        (
            {"code_sync_node_wheel_dir": "/opt/rlinf"},
            False,
            "rlinf_venv_dir='/opt/rlinf/venv' and code_sync_node_wheel_dir='/opt/rlinf' overlap",
        ),
        (
            {"code_sync_node_record_dir": "/opt/rlinf/venv/records"},
            False,
            "rlinf_venv_dir='/opt/rlinf/venv' and code_sync_node_record_dir='/opt/rlinf/venv/records' overlap",
        ),
        (
            {"rlinf_launch_log_dir": "/opt/rlinf"},
            False,
            "rlinf_venv_dir='/opt/rlinf/venv' and rlinf_launch_log_dir='/opt/rlinf' overlap",
        ),
        (
            {"easytier_base_dir": "/opt/rlinf"},
            True,
            "rlinf_venv_dir='/opt/rlinf/venv' and easytier_base_dir='/opt/rlinf' overlap",
        ),
        (
            {"easytier_venv_dir": "/opt/rlinf/venv"},
            True,
            "rlinf_venv_dir='/opt/rlinf/venv' and easytier_venv_dir='/opt/rlinf/venv' overlap",
        ),
        (
            {"easytier_config_dir": "/etc/rlinf"},
            True,
            "rlinf_env_file='/etc/rlinf/rlinf.env' and easytier_config_dir='/etc/rlinf' overlap",
        ),
    ],
)
def test_paths_of_ours_that_overlap_are_refused_naming_both(settings, overlay, sentence):
    found = [p for p in problems_of(settings, overlay=overlay) if "overlap" in p]
    assert found[0] in (
        f"host 'w1': {sentence}; give each its own path.",
        f"hosts h, w1: {sentence}; give each its own path.",
    )


def test_easytier_base_dir_may_hold_its_venv_and_config_dir():
    settings = {"easytier_base_dir": "/opt/rlinf/et", "easytier_venv_dir": "/opt/rlinf/et/venv"}
    found = problems_of({**settings, "easytier_config_dir": "/opt/rlinf/et/conf"}, overlay=True)
    assert not [p for p in found if "overlap" in p or "easytier_base_dir" in p], found
