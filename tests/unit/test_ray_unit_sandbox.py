"""The Ray unit's sandbox: which directives the plan renders for which settings (issue 19).

The unit is read back as systemd reads it (key -> every value, in order), so the tests assert
what systemd would apply, not that a word appears somewhere. The lab test
(tests/integration/test_ray_sandbox.py) has systemd itself verify and score the unit.
"""

from __future__ import annotations

import pytest

from ansible_collections.rlinf.cluster.plugins.module_utils import sandbox
from ansible_collections.rlinf.cluster.plugins.module_utils.problems import PlanError, sentences
from ansible_collections.rlinf.cluster.plugins.plugin_utils import plan as P

GROUPS = {"ray_head": ["h"], "ray_workers": ["w1"]}
STRICT = {"ray_node_sandbox_profile": "strict"}
NAMES = ("h", "w1")


def probe(address, executable="/usr/bin/python3.11", sandbox=None):
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
        "sandbox": {"mount_namespace": True} if sandbox is None else sandbox,
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


def test_the_strict_unit_is_sandboxed():
    service = unit_of(STRICT)["Service"]
    assert "User" not in service and "ExecStartPre" not in service  # root, nothing run with full privileges
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


def test_the_default_unit_trains_with_the_system_protected():
    """ray_node_sandbox_profile: training (issue 24): what RLinf's jobs do works, the OS stays read-only."""
    service = unit_of()["Service"]
    assert service["NoNewPrivileges"] == ["yes"] and service["AmbientCapabilities"] == [""]
    # Root reads weights in other users' homes and writes into a researcher's checkpoint dir.
    assert words(service, "CapabilityBoundingSet") == ["CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER"]
    assert service["ProtectSystem"] == ["full"] and service["ProtectHome"] == ["no"]
    # What root runs or installs from outside the unit: read-only.
    assert words(service, "ReadOnlyPaths") == ["/opt/rlinf/venv", "-/opt/rlinf", "-/var/spool"]
    assert "ReadWritePaths" not in service and "BindPaths" not in service
    # Caches under root's own HOME (RLinf copies the driver's HOME=/root to its workers).
    assert service["User"] == ["root"] and "StateDirectory" not in service
    assert not [e for e in service["Environment"] if e.startswith("HOME=")]
    assert service["UMask"] == ["0022"] and service["PrivateTmp"] == ["no"]
    # CUDA IPC between co-located workers (pidfd_getfd, ptrace) and Nsight (perf_event_open).
    assert service["SystemCallFilter"] == ["@system-service @debug"]
    assert service["LimitMEMLOCK"] == ["infinity"]  # NCCL over InfiniBand/RoCE
    for key in ("ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups"):
        assert service[key] == ["yes"], key
    for key in ("LockPersonality", "RestrictRealtime", "RestrictSUIDSGID", "RestrictNamespaces"):
        assert service[key] == ["yes"], key


def test_training_keeps_a_checkout_and_named_paths_writable_even_under_opt_rlinf():
    service = unit_of({"rlinf_code_dest": "/opt/rlinf/RLinf", "ray_node_writable_paths": ["/data/ckpt"]})["Service"]
    assert words(service, "ReadWritePaths") == ["/data/ckpt", "-/opt/rlinf/RLinf"]
    assert "-/opt/rlinf" in words(service, "ReadOnlyPaths")


def test_training_keeps_a_python_under_a_home_read_only():
    service = unit_of(executable="/root/.pyenv/versions/3.11.7/bin/python3.11")["Service"]
    assert words(service, "ReadOnlyPaths")[:2] == ["/opt/rlinf/venv", "/root/.pyenv/versions/3.11.7"]
    assert service["ProtectHome"] == ["no"] and "BindReadOnlyPaths" not in service


def test_training_with_ray_node_user_drops_every_capability_and_keeps_the_users_home():
    service = unit_of({"ray_node_user": "ray"})["Service"]
    assert service["User"] == ["ray"] and service["CapabilityBoundingSet"] == [""]
    assert service["StateDirectory"] == ["rlinf-ray"] and "HOME=/var/lib/rlinf-ray" in service["Environment"]
    assert service["ProtectSystem"] == ["full"] and service["LimitMEMLOCK"] == ["infinity"]


def test_a_bad_profile_is_refused_naming_host_and_variable():
    found = problems_of({"ray_node_sandbox_profile": "loose"})
    assert any(p.startswith("host 'w1'") and "ray_node_sandbox_profile='loose'" in p for p in found), found


def test_without_the_sandbox_the_unit_is_the_plain_one():
    service = unit_of({"ray_node_sandbox": False})["Service"]
    for key in ("NoNewPrivileges", "ProtectSystem", "ProtectHome", "CapabilityBoundingSet", "StateDirectory"):
        assert key not in service, key
    assert not [e for e in service["Environment"] if e.startswith("HOME=")]
    assert service["ExecStart"][0].startswith("/opt/rlinf/venv/bin/python /opt/rlinf/venv/bin/ray start --block")


def test_writable_paths_and_a_temp_dir_outside_tmp_become_read_write_paths():
    settings = {
        **STRICT,
        "ray_node_writable_paths": ["/data/ckpt", "/srv/hf"],
        "ray_temp_dir": "/data/ray-tmp",
        "rlinf_node_path_roots": ["/opt/rlinf", "/etc/rlinf", "/var/log/rlinf", "/data/ray-tmp"],
    }
    service = unit_of(settings)["Service"]
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
    service = unit_of({**STRICT, "rlinf_code_dest": "/srv/RLinf"})["Service"]
    assert words(service, "ReadWritePaths") == ["/tmp", "/var/tmp", "-/srv/RLinf"]
    assert service["ProtectHome"] == ["yes"]


def test_a_checkout_under_a_home_is_bound_into_an_empty_home():
    service = unit_of({**STRICT, "rlinf_code_dest": "/home/alice/RLinf"})["Service"]
    assert service["ProtectHome"] == ["tmpfs"]
    assert words(service, "BindPaths") == ["-/home/alice/RLinf"]
    assert "-/home/alice/RLinf" not in words(service, "ReadWritePaths")


def test_a_python_or_venv_under_a_home_stays_readable():
    service = unit_of(STRICT, executable="/root/.pyenv/versions/3.11.7/bin/python3.11")["Service"]
    assert service["ProtectHome"] == ["tmpfs"]
    assert words(service, "BindReadOnlyPaths") == ["/root/.pyenv/versions/3.11.7"]
    roots = ["/home/alice/venv", "/opt/rlinf", "/etc/rlinf", "/var/log/rlinf"]
    service = unit_of({**STRICT, "rlinf_venv_dir": "/home/alice/venv", "rlinf_node_path_roots": roots})["Service"]
    assert words(service, "BindReadOnlyPaths") == ["/home/alice/venv"]


def test_realtime_nodes_get_the_limits_and_no_realtime_ban():
    service = unit_of({**STRICT, "ray_node_realtime": True})["Service"]
    assert service["LimitRTPRIO"] == ["99"] and service["LimitMEMLOCK"] == ["infinity"]
    assert "RestrictRealtime" not in service
    assert service["CapabilityBoundingSet"] == [""]  # the limits need no capability


@pytest.mark.parametrize(
    ("settings", "phrase"),
    [
        ({"ray_node_writable_paths": ["/etc/cron.d"]}, "item 1 ('/etc/cron.d') is under /etc"),
        ({"ray_node_writable_paths": ["/var/spool/cron"]}, "is under /var/spool"),
        ({"ray_node_writable_paths": ["/tmp/x"]}, "is under /tmp; Ray may write there already"),
        ({"ray_node_writable_paths": "/data"}, "ray_node_writable_paths='/data' is a str, not a list"),
        ({"ray_node_sandbox": "maybe"}, "ray_node_sandbox='maybe'"),
    ],
)
def test_bad_sandbox_settings_are_refused_naming_host_and_variable(settings, phrase):
    found = problems_of(settings)
    assert any(phrase in p and p.startswith("host 'w1'") for p in found), found


def resolve_problems(sandbox_found, settings=None, purpose="site"):
    """The problems of resolving a plan where w1's probe found ``sandbox_found``."""
    hostvars = {name: {"ansible_host": f"10.0.0.{i + 1}", **(settings or {})} for i, name in enumerate(NAMES)}
    probes = {name: probe(f"10.0.0.{i + 1}") for i, name in enumerate(NAMES)}
    probes["w1"]["sandbox"] = sandbox_found
    try:
        P.resolve(P.static_plan(GROUPS, hostvars), probes, purpose=purpose)
    except PlanError as err:
        return sentences(err.problems)
    return []


def test_a_host_whose_systemd_cannot_sandbox_is_refused_naming_host_and_fix():
    found = resolve_problems({"mount_namespace": False})
    assert len(found) == 1, found
    assert found[0].startswith("host 'w1'"), found
    assert "cannot set up a mount namespace" in found[0]
    assert "--cap-add SYS_ADMIN" in found[0] and "ray_node_sandbox: false" in found[0]
    failed = resolve_problems({"error": "Failed to start transient service unit: Access denied"})
    assert len(failed) == 1 and failed[0].startswith("host 'w1'") and "Access denied" in failed[0], failed


def test_the_sandbox_test_matters_only_for_a_sandboxed_unit_written_by_site():
    assert resolve_problems({"mount_namespace": True}) == []
    assert resolve_problems({"mount_namespace": False}, {"ray_node_sandbox": False}) == []
    assert resolve_problems({"mount_namespace": False}, purpose="status") == []


def test_a_checkout_that_defaults_to_rlinf_src_under_root_keeps_the_homes_but_that_one_hidden():
    # rlinf_code_dest empty: the checkout lands on each node at rlinf_src's path, here under /root.
    service = unit_of({**STRICT, "rlinf_src": "/root/RLinf", "rlinf_code_sync": "rsync"})["Service"]
    assert service["ProtectHome"] == ["tmpfs"]
    assert words(service, "BindPaths") == ["-/root/RLinf"]
    assert words(service, "ReadWritePaths") == ["/tmp", "/var/tmp"]


# ray_node_user (issue 19): Ray as a system user of its own ------------------------------------


def node_plan(settings=None, node="w1"):
    hostvars = {name: {"ansible_host": f"10.0.0.{i + 1}", **(settings or {})} for i, name in enumerate(NAMES)}
    return P.static_plan(GROUPS, hostvars)["nodes"][node]


def test_by_default_root_runs_ray_and_the_plan_says_so():
    node = node_plan()
    assert node["run_as"] == "root" and node["service"]["user"] == ""
    # User=root only gives the unit root's HOME, as the driver has it; strict runs root with Ray's own.
    service = unit_of()["Service"]
    assert service["User"] == ["root"] and "Group" not in service
    assert "User" not in unit_of(STRICT)["Service"]


def test_ray_node_user_runs_ray_as_that_user_with_its_home_in_the_sandbox():
    node = node_plan({"ray_node_user": "ray"})
    assert node["run_as"] == "ray" and node["service"]["user"] == "ray"
    assert node["service"]["temp_dir"] == "/tmp/ray"
    assert node["paths"]["user_record"] == "/etc/rlinf/state/rlinf-ray.user"
    service = unit_of({**STRICT, "ray_node_user": "ray"})["Service"]
    assert service["User"] == ["ray"] and service["Group"] == ["ray"]
    # The sandbox stays as it is; the user only drops root.
    assert service["StateDirectory"] == ["rlinf-ray"] and "HOME=/var/lib/rlinf-ray" in service["Environment"]
    assert service["NoNewPrivileges"] == ["yes"] and service["CapabilityBoundingSet"] == [""]
    assert words(service, "ReadWritePaths") == ["/tmp", "/var/tmp"]


def test_ray_node_user_without_the_sandbox_still_gets_its_home():
    service = unit_of({"ray_node_user": "ray", "ray_node_sandbox": False})["Service"]
    assert service["User"] == ["ray"]
    assert service["StateDirectory"] == ["rlinf-ray"] and "HOME=/var/lib/rlinf-ray" in service["Environment"]
    assert "ProtectSystem" not in service
    assert node_plan({"ray_node_user": "ray", "ray_node_sandbox": False})["service"]["record"] == [
        {"path": "/var/lib/rlinf-ray", "kind": "dir"}
    ]


# An operator's extra root (docs/security.md): the defaults and /data/ray.
ROOTS_AND_DATA = ["/opt/rlinf", "/etc/rlinf", "/var/lib/rlinf*", "/var/log/rlinf*", "/tmp/ray*", "/data/ray"]


def test_a_temp_dir_outside_tmp_is_created_for_the_user():
    node = node_plan({"ray_node_user": "ray", "ray_temp_dir": "/data/ray", "rlinf_node_path_roots": ROOTS_AND_DATA})
    assert node["service"]["temp_dir"] == "/data/ray" and node["service"]["create_dirs"] == ["/data/ray"]


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        ("root", "ray_node_user='root' is root; leave it empty to run Ray as root"),
        ("Ray", "ray_node_user='Ray' is not a portable user name; use 1-32 of lower-case letters"),
        ("1ray", "ray_node_user='1ray' is not a portable user name"),
        ("ray user", "is not a portable user name"),
        ("r" * 33, "is not a portable user name"),
        ("nobody", "ray_node_user='nobody' is an account the operating system or another service uses; name a user"),
        ("www-data", "is an account the operating system or another service uses"),
        ("systemd-ray", "is an account the operating system or another service uses"),
        (["ray"], "ray_node_user=['ray']"),
    ],
)
def test_a_bad_ray_node_user_is_refused_naming_host_variable_and_fix(value, phrase):
    found = problems_of({"ray_node_user": value})
    assert any(phrase in p and p.startswith("host 'w1'") for p in found), found


@pytest.mark.parametrize("value", ["ray", "_ray", "rlinf-ray", "ray_1", "r" * 32])
def test_a_portable_system_user_name_is_accepted(value):
    assert node_plan({"ray_node_user": value})["run_as"] == value


# RLinf's CPUs (issue 24): every RLinf actor asks for 1 CPU, its managers sit on rank 0 ---------


@pytest.mark.parametrize("cpus", [0, 0.5])
def test_a_head_with_fewer_than_one_cpu_is_refused_with_the_reason(cpus):
    hostvars = {name: {"ansible_host": f"10.0.0.{i + 1}"} for i, name in enumerate(NAMES)}
    hostvars["h"]["ray_num_cpus"] = cpus
    with pytest.raises(PlanError) as err:
        P.static_plan(GROUPS, hostvars)
    (found,) = sentences(err.value.problems)
    assert found.startswith(f"host 'h': ray_num_cpus={cpus:g} on the head: RLinf pins its managers to rank 0")
    assert "asks Ray for 1 CPU" in found and "wait forever" in found


def test_a_head_with_one_cpu_and_a_worker_without_cpus_are_accepted_without_a_config():
    hostvars = {name: {"ansible_host": f"10.0.0.{i + 1}"} for i, name in enumerate(NAMES)}
    hostvars["h"]["ray_num_cpus"] = 1
    hostvars["w1"]["ray_num_cpus"] = 0
    assert P.static_plan(GROUPS, hostvars)["nodes"]["h"]["start_resources"] == {"CPU": 1}


def test_a_ray_node_user_without_a_synced_checkout_is_told_how_its_jobs_can_log():
    hostvars = {
        n: {"ansible_host": f"10.0.0.{i + 1}", "ray_node_user": "ray", "rlinf_src": "/srv/RLinf"}
        for i, n in enumerate(NAMES)
    }
    plan = P.static_plan(GROUPS, hostvars)
    (first, second) = [w for w in plan["warnings"] if "checkout's logs" in w]
    assert first.startswith("host 'h': RLinf's jobs write /srv/RLinf/logs (the checkout's logs)")
    assert "add /srv/RLinf/logs to ray_node_writable_paths, or use rlinf_code_sync: rsync" in first
    assert second.startswith("host 'w1'")
    for name in NAMES:
        hostvars[name]["ray_node_writable_paths"] = ["/srv/RLinf/logs"]
    assert not [w for w in P.static_plan(GROUPS, hostvars)["warnings"] if "checkout's logs" in w]
    for name in NAMES:
        hostvars[name].update(rlinf_code_sync="rsync", ray_node_writable_paths=[])
    assert not [w for w in P.static_plan(GROUPS, hostvars)["warnings"] if "checkout's logs" in w]


def test_every_unit_starts_no_idle_workers_for_the_first_driver():
    """Every run's cluster check is the first driver after a start: Ray would prestart one worker per CPU."""
    for settings in ({}, {"ray_node_sandbox": False}, STRICT):
        environment = unit_of(settings)["Service"]["Environment"]
        assert "RAY_prestart_worker_first_driver=0" in environment, environment
