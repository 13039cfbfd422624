"""The Ray unit's sandbox: which directives the plan renders for which settings (issue 19).

The unit is read back as systemd reads it (key -> every value, in order), so the tests assert
what systemd would apply, not that a word appears somewhere. The lab test
(tests/integration/test_ray_sandbox.py) has systemd itself verify and score the unit.
"""

from __future__ import annotations

import pytest

from ansible_collections.rlinf.cluster.plugins.module_utils import plan as P
from ansible_collections.rlinf.cluster.plugins.module_utils import sandbox
from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, sentences

GROUPS = {"ray_head": ["h"], "ray_workers": ["w1"]}
NAMES = ("h", "w1")


def probe(address, executable="/usr/bin/python3.11"):
    return {
        "systemd": True,
        "apt": True,
        "python": {"version": "3.11.2", "machine": "x86_64", "glibc": "2.36", "executable": executable},
        "interfaces": {"lo": ["127.0.0.1"], "eth0": [address]},
        "default_route": {"device": "eth0", "address": address},
        "paths": {},
        "manifest": [],
        "record": {},
        "unit": {"active": "active"},
    }


def unit_of(settings=None, executable="/usr/bin/python3.11", node="w1"):
    """The Ray unit of ``node`` when every host has ``settings``, as {section: {key: [values]}}."""
    hostvars = {name: {"ansible_host": f"10.0.0.{i + 1}", **(settings or {})} for i, name in enumerate(NAMES)}
    probes = {name: probe(f"10.0.0.{i + 1}", executable) for i, name in enumerate(NAMES)}
    resolved = P.resolve(P.static_plan(GROUPS, hostvars), probes)
    files = resolved["nodes"][node]["files"]
    text = next(f["content"] for f in files if f["path"].endswith(".service"))
    return parse_unit(text)


def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key, []).append(value)
    return sections


def words(service: dict, key: str) -> list[str]:
    """Every word of every ``key=`` line (path lists may be split over several lines)."""
    return [w for value in service.get(key, []) for w in value.split()]


def problems_of(settings) -> list[str]:
    """The problems of an inventory where w1 alone has ``settings``."""
    hostvars = {name: {"ansible_host": f"10.0.0.{i + 1}"} for i, name in enumerate(NAMES)}
    hostvars["w1"].update(settings)
    with pytest.raises(PlanError) as err:
        P.static_plan(GROUPS, hostvars)
    return sentences(err.value.problems)


def test_the_default_unit_is_sandboxed_and_runs_as_root():
    service = unit_of()["Service"]
    assert "User" not in service  # root
    assert service["NoNewPrivileges"] == ["yes"]
    assert service["CapabilityBoundingSet"] == [""] and service["AmbientCapabilities"] == [""]
    assert service["ProtectSystem"] == ["strict"]
    assert words(service, "ReadWritePaths") == ["/tmp", "/var/tmp"]
    assert service["ProtectHome"] == ["yes"] and "BindPaths" not in service
    # Drivers reach /tmp/ray: Ray must share the machine's /tmp.
    assert service["PrivateTmp"] == ["no"]
    assert service["UMask"] == ["0027"]
    for key in ("ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups"):
        assert service[key] == ["yes"], key
    for key in ("LockPersonality", "RestrictRealtime", "RestrictSUIDSGID", "RestrictNamespaces"):
        assert service[key] == ["yes"], key
    assert words(service, "RestrictAddressFamilies") == list(sandbox.ADDRESS_FAMILIES)
    assert service["SystemCallFilter"] == ["@system-service"] and service["SystemCallErrorNumber"] == ["EPERM"]
    # Ray's home is the unit's state directory, writable under ProtectSystem=strict.
    assert "HOME=/var/lib/rlinf-ray" in service["Environment"]
    assert service["StateDirectory"] == ["rlinf-ray"]
    # What Ray (GPUs, robots) or its JITs do not tolerate stays unset.
    for key in (
        "MemoryDenyWriteExecute",
        "PrivateDevices",
        "DevicePolicy",
        "DeviceAllow",
        "ProtectClock",
        "ProcSubset",
    ):
        assert key not in service, key


def test_the_temp_dir_is_handed_to_the_account_ray_runs_as_before_each_start():
    pre = unit_of()["Service"]["ExecStartPre"]
    assert pre == ["+/bin/mkdir -p /tmp/ray", "+/bin/chown -R -h root:root /tmp/ray"]
    pre = unit_of({"ray_node_user": "rlinf-ray", "ray_temp_dir": "/data/ray-tmp"})["Service"]["ExecStartPre"]
    assert pre == ["+/bin/mkdir -p /data/ray-tmp", "+/bin/chown -R -h rlinf-ray: /data/ray-tmp"]


def test_ray_node_user_runs_ray_as_that_account_with_its_groups():
    service = unit_of({"ray_node_user": "rlinf-ray", "ray_node_user_groups": ["render", "video"]})["Service"]
    assert service["User"] == ["rlinf-ray"]
    assert service["SupplementaryGroups"] == ["render video"]
    assert service["NoNewPrivileges"] == ["yes"] and service["ProtectSystem"] == ["strict"]


def test_without_the_sandbox_the_unit_is_the_plain_one():
    service = unit_of({"ray_node_sandbox": False})["Service"]
    for key in ("NoNewPrivileges", "ProtectSystem", "ProtectHome", "CapabilityBoundingSet", "StateDirectory"):
        assert key not in service, key
    assert not [e for e in service["Environment"] if e.startswith("HOME=")]
    assert service["ExecStart"][0].startswith("/opt/rlinf/venv/bin/python /opt/rlinf/venv/bin/ray start --block")


def test_writable_paths_and_a_temp_dir_outside_tmp_become_read_write_paths():
    service = unit_of({"ray_node_writable_paths": ["/data/ckpt", "/srv/hf"], "ray_temp_dir": "/data/ray-tmp"})[
        "Service"
    ]
    assert words(service, "ReadWritePaths") == ["/tmp", "/var/tmp", "/data/ray-tmp", "/data/ckpt", "/srv/hf"]
    node = P.static_plan(
        GROUPS,
        {
            n: {"ansible_host": f"10.0.0.{i + 1}", "ray_node_writable_paths": ["/data/ckpt"]}
            for i, n in enumerate(NAMES)
        },
    )["nodes"]["w1"]
    assert node["service"]["create_dirs"] == ["/data/ckpt"]


def test_the_checkout_is_writable_and_may_be_missing_on_a_node():
    service = unit_of({"rlinf_code_dest": "/srv/RLinf"})["Service"]
    assert words(service, "ReadWritePaths") == ["/tmp", "/var/tmp", "-/srv/RLinf"]
    assert service["ProtectHome"] == ["yes"]


def test_a_checkout_under_a_home_is_bound_into_an_empty_home():
    service = unit_of({"rlinf_code_dest": "/home/alice/RLinf"})["Service"]
    assert service["ProtectHome"] == ["tmpfs"]
    assert words(service, "BindPaths") == ["-/home/alice/RLinf"]
    assert "-/home/alice/RLinf" not in words(service, "ReadWritePaths")


def test_a_python_or_venv_under_a_home_stays_readable():
    service = unit_of(executable="/root/.pyenv/versions/3.11.7/bin/python3.11")["Service"]
    assert service["ProtectHome"] == ["tmpfs"]
    assert words(service, "BindReadOnlyPaths") == ["/root/.pyenv/versions/3.11.7"]
    service = unit_of({"rlinf_venv_dir": "/home/alice/venv"})["Service"]
    assert words(service, "BindReadOnlyPaths") == ["/home/alice/venv"]


def test_realtime_nodes_get_the_limits_and_no_realtime_ban():
    service = unit_of({"ray_node_realtime": True})["Service"]
    assert service["LimitRTPRIO"] == ["99"] and service["LimitMEMLOCK"] == ["infinity"]
    assert "RestrictRealtime" not in service
    assert service["CapabilityBoundingSet"] == [""]  # the limits need no capability


@pytest.mark.parametrize(
    ("settings", "phrase"),
    [
        ({"ray_node_user": "root"}, "ray_node_user='root' is 'root'; leave it empty to run Ray as root"),
        ({"ray_node_user": "nobody"}, "ray_node_user='nobody' is 'nobody'"),
        ({"ray_node_user": "Ray User"}, "ray_node_user='Ray User' is not a user name"),
        ({"ray_node_writable_paths": ["/etc/cron.d"]}, "item 1 ('/etc/cron.d') is under /etc"),
        ({"ray_node_writable_paths": ["/var/spool/cron"]}, "is under /var/spool"),
        ({"ray_node_writable_paths": ["/tmp/x"]}, "is under /tmp; Ray may write there already"),
        ({"ray_node_writable_paths": "/data"}, "ray_node_writable_paths='/data' is a str, not a list"),
        ({"ray_node_user_groups": ["render"]}, "ray_node_user_groups is set but ray_node_user is empty"),
        ({"ray_node_sandbox": "maybe"}, "ray_node_sandbox='maybe'"),
    ],
)
def test_bad_sandbox_settings_are_refused_naming_host_and_variable(settings, phrase):
    found = problems_of(settings)
    assert any(phrase in p and p.startswith("host 'w1'") for p in found), found


def test_the_record_keeps_the_account_ray_runs_as():
    hostvars = {n: {"ansible_host": f"10.0.0.{i + 1}", "ray_node_user": "rlinf-ray"} for i, n in enumerate(NAMES)}
    probes = {n: probe(f"10.0.0.{i + 1}") for i, n in enumerate(NAMES)}
    node = P.resolve(P.static_plan(GROUPS, hostvars), probes)["nodes"]["w1"]
    record = next(f["content"] for f in node["files"] if f["path"] == node["paths"]["record"])
    assert '"user": "rlinf-ray"' in record
    assert node["paths"]["users_dir"] == "/etc/rlinf/state/rlinf-ray.users"
