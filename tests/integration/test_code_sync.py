"""rlinf.cluster.code_sync in the lab: each mode gets a marker written into a fake RLinf
checkout to every node, read back by a Ray task pinned to each node; an oversized rlinf/
is refused listing its biggest files."""

from __future__ import annotations

import json
import shlex
import subprocess
import time

import pytest
from lab_helpers import (
    DATA,
    NODE_ENV,
    fake_checkout,
    lab_hosts,
    probe_cluster,
    run_playbook,
    ssh,
    ssh_argv,
    wait_for_alive,
)

# Each test starts on the lab inventory's healthy cluster (conftest.py), whatever ran before.
pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

VENV_PY = "/opt/rlinf/venv/bin/python"
RECORDS = "/opt/rlinf/code-sync-checkouts"
# Every checkout record on a node, as one JSON list.
READ_RECORDS = (
    "import glob, json, sys; "
    "print(json.dumps([json.load(open(f)) for f in sorted(glob.glob(sys.argv[1] + '/*.json'))]))"
)


def marker_results(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def assert_marker_everywhere(result: dict, marker: str, hosts: dict[str, str]) -> None:
    seen = {n["ip"]: n["version"] for n in result["nodes"]}
    assert seen == {ip: marker for ip in hosts.values()}, result


def remove_everywhere(hosts: dict[str, str], *paths: str) -> None:
    for address in hosts.values():
        ssh(address, "rm -rf " + " ".join(shlex.quote(p) for p in paths), check=False)


def test_rsync_marker_on_every_node_and_idempotent(tmp_path):
    hosts = lab_hosts()
    head = next(iter(hosts.values()))
    marker = f"rsync-{time.time_ns()}"
    src = fake_checkout(tmp_path / "RLinf", marker)
    dest = "/srv/rlinf-codesync-rsync"
    extra = {"rlinf_code_sync": "rsync", "rlinf_src": str(src), "rlinf_code_dest": dest}
    try:
        first = run_playbook("tests/integration/data/code_sync.yml", tmp_path, extravars=extra)
        assert first.rc == 0, first.stdout[-3000:]
        assert all(first.changed().get(h) for h in hosts), first.changed()
        again = run_playbook("tests/integration/data/code_sync.yml", tmp_path, extravars=extra)
        assert again.rc == 0, again.stdout[-3000:]
        assert sum(again.changed().values()) == 0, f"a re-run changed {again.changed()}"
        for address in hosts.values():
            listing = ssh(address, f"cd {dest} && find . -type f | sort").stdout.split()
            assert listing == ["./marker_driver.py", "./pyproject.toml", "./rlinf/__init__.py"], (address, listing)
        # RLinf's driver runs from the checkout; Ray puts the driver's directory on every
        # worker's sys.path, so each node imports its own synced copy.
        proc = ssh(head, f"{NODE_ENV} cd {dest} && {VENV_PY} marker_driver.py")
        result = marker_results(proc.stdout)
        assert_marker_everywhere(result, marker, hosts)
        assert {n["file"] for n in result["nodes"]} == {f"{dest}/rlinf/__init__.py"}
        # The record teardown's purge reads: exactly what was copied. Its own among the records (a module
        # before may have synced another checkout on this lab, and its record stays for purge).
        records = json.loads(ssh(head, f"{VENV_PY} -c {shlex.quote(READ_RECORDS)} {RECORDS}").stdout)
        assert [r for r in records if r.get("dest") == dest] == [
            {
                "dest": dest,
                "files": ["marker_driver.py", "pyproject.toml", "rlinf/__init__.py"],
                "dirs": ["rlinf", "logs"],
            }
        ], records
    finally:
        remove_everywhere(hosts, dest, RECORDS)


def test_ray_mode_checks_the_head_and_launch_ships_rlinf(tmp_path):
    hosts = lab_hosts()
    head_name, head = next(iter(hosts.items()))
    marker = f"ray-{time.time_ns()}"
    src = fake_checkout(tmp_path / "RLinf", marker)
    dest = "/srv/rlinf-codesync-ray"
    log_dir = "/var/log/rlinf-codesync-test"
    extra = {"rlinf_code_sync": "ray", "rlinf_src": str(src), "rlinf_code_dest": dest}
    try:
        missing = run_playbook("tests/integration/data/code_sync.yml", tmp_path, extravars=extra)
        assert missing.rc != 0
        assert f"missing under {dest} on the head '{head_name}'" in missing.stdout.replace("\n", " ")

        # The checkout on the head only: the workers can get rlinf/ only through Ray.
        ssh(head, f"mkdir -p {dest}")
        tar = f"tar -C {shlex.quote(str(src))} -cf - --exclude=.git --exclude=logs ."
        ssh_cmd = shlex.join(ssh_argv(head, f"tar -C {dest} -xf -"))
        subprocess.run(f"{tar} | {ssh_cmd}", shell=True, check=True, timeout=60)
        ok = run_playbook("tests/integration/data/code_sync.yml", tmp_path, extravars=extra)
        assert ok.rc == 0, ok.stdout[-3000:]
        assert sum(ok.changed().values()) == 0, ok.changed()

        unit = f"codesync-{time.time_ns()}"
        out = f"/tmp/rlinf-codesync-{unit}.json"
        launch = run_playbook(
            "launch.yml",
            tmp_path,
            extravars={
                **extra,
                "rlinf_entry": f"python marker_driver.py {out}",
                "rlinf_launch_name": unit,
                "rlinf_launch_log_dir": log_dir,
            },
        )
        assert launch.rc == 0, launch.stdout[-3000:]
        result = _wait_for_json(head, out, 90, f"{log_dir}/rlinf-launch-{unit}.log")
        assert result["code_working_dir"] == dest
        assert_marker_everywhere(result, marker, hosts)
        # The workers have no checkout: their rlinf/ came through Ray (the head may import its own).
        workers = [n for n in result["nodes"] if n["ip"] != head]
        assert workers and all("/runtime_resources/py_modules_files/" in n["file"] for n in workers), result
    finally:
        ssh(head, f"rm -rf {dest} {log_dir} /tmp/rlinf-codesync-*.json", check=False)


def test_oversized_rlinf_is_refused_listing_the_biggest_files(tmp_path):
    src = fake_checkout(tmp_path / "RLinf", "big")
    (src / "rlinf" / "checkpoints").mkdir()
    (src / "rlinf" / "checkpoints" / "model.pt").write_bytes(b"\0" * (3 * 1024 * 1024))
    (src / "rlinf" / "data.bin").write_bytes(b"\0" * (1024 * 1024))
    extra = {
        "rlinf_code_sync": "rsync",
        "rlinf_src": str(src),
        "rlinf_code_dest": "/srv/rlinf-codesync-big",
        "code_sync_max_mb": 2,
    }
    run = run_playbook("tests/integration/data/code_sync.yml", tmp_path, extravars=extra)
    assert run.rc != 0
    text = " ".join(run.stdout.split())
    assert "above the code-sync limit of 2 MiB" in text, text[-3000:]
    assert "Largest files: checkpoints/model.pt (3.0 MiB); data.bin (1.0 MiB)" in text
    assert "-e code_sync_max_mb=N" in text
    # Nothing was copied.
    for address in lab_hosts().values():
        assert ssh(address, "test -e /srv/rlinf-codesync-big", check=False).returncode != 0


def test_package_installs_the_wheel_and_restarts_ray(tmp_path):
    hosts = lab_hosts()
    head = next(iter(hosts.values()))
    marker = f"package-{time.time_ns()}"
    src = fake_checkout(tmp_path / "RLinf", marker)
    before = wait_for_alive(head, len(hosts))
    # One wheel directory for both runs (artifacts/ follows the playbook's directory).
    extra = {"rlinf_code_sync": "package", "rlinf_src": str(src), "code_sync_wheel_dir": str(tmp_path / "wheels")}
    try:
        run = run_playbook("site.yml", tmp_path, extravars=extra)
        assert run.rc == 0, run.stdout[-3000:]
        after = wait_for_alive(head, len(hosts))
        # A new wheel in the venv restarts Ray everywhere (it froze its imports at start).
        assert all(after[ip]["node_id"] != before[ip]["node_id"] for ip in before), (before, after)
        proc = ssh(head, f"{NODE_ENV} cd / && {VENV_PY} /dev/stdin", stdin=(DATA / "marker_driver.py").read_text())
        result = marker_results(proc.stdout)
        assert_marker_everywhere(result, marker, hosts)
        assert all("/opt/rlinf/venv/lib/" in n["file"] for n in result["nodes"]), result
        # Same sources again: nothing is rebuilt, pushed or installed, so nothing restarts
        # (the code-sync play alone keeps the suite short; the restart path is proven above).
        again = run_playbook("tests/integration/data/code_sync.yml", tmp_path, extravars=extra)
        assert again.rc == 0, again.stdout[-3000:]
        assert sum(again.changed().values()) == 0, f"a re-run changed {again.changed()}"
        assert {ip: n["node_id"] for ip, n in probe_cluster(head).items()} == {
            ip: n["node_id"] for ip, n in after.items()
        }
    finally:
        for address in hosts.values():
            ssh(
                address,
                f"{VENV_PY} -m pip uninstall -q -y rlinf; rm -rf /opt/rlinf/venv/.rlinf-code-sync /opt/rlinf/code-sync",
                check=False,
            )
        # The run made this checkout writable in the Ray unit: the lab's own unit back, so the next test
        # starts from the lab inventory's cluster (the cluster fixture checks Ray, not the unit's text).
        restore = run_playbook("site.yml", tmp_path)
    assert restore.rc == 0, restore.stdout[-3000:]


def _wait_for_json(address: str, path: str, timeout: float, log: str) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = ssh(address, f"cat {path}", check=False)
        if proc.returncode == 0 and proc.stdout.strip():
            return json.loads(proc.stdout)
        time.sleep(1)
    raise AssertionError(
        f"{path} did not appear within {timeout}s; log:\n" + ssh(address, f"cat {log}", check=False).stdout
    )
