"""Helpers for tests that drive the real playbooks against the podman lab.

The lab is made by `make lab-up` (lab/lab.py); these tests fail, never skip, when it is
missing, so a run without hosts cannot pass by accident.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import ansible_runner
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
# Another lab made with `LAB_NAME=... lab/lab.py up` is tested by pointing this at its
# inventory directory (.lab/<name>/inventory).
LAB_INVENTORY = Path(os.environ.get("RLINF_LAB_INVENTORY", ROOT / "inventories" / "lab")).resolve()
# ansible-runner finds ansible-playbook on PATH: use the one beside the interpreter running
# the tests (the controller venv), however pytest was started.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
PLAYBOOK_TIMEOUT = 900
# Prefix for commands on a node that act as a Ray driver: the nodes' environment, with
# RAY_AUTH_MODE and the token's path, as Ray itself runs with.
NODE_ENV = "set -a; . /etc/rlinf/rlinf.env; set +a;"
DATA = Path(__file__).parent / "data"
# What the controller keeps for the lab's inventory (the token, the wheelhouses): next to it.
LAB_STATE = LAB_INVENTORY / ".rlinf"
# The cluster's token on the controller (roles/ray_auth generates it there, 0600).
CONTROLLER_TOKEN = LAB_STATE / "secrets" / "ray-auth-token"
SSH_OPTS = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]


def lab_inventory() -> dict:
    hosts_file = LAB_INVENTORY / "hosts.yml"
    if not hosts_file.exists():
        pytest.fail(f"the lab is not up: run `make lab-up` first ({hosts_file} is missing)")
    return yaml.safe_load(hosts_file.read_text())


def lab_key() -> str:
    return lab_inventory()["all"]["vars"]["ansible_ssh_private_key_file"]


def lab_hosts() -> dict[str, str]:
    """Inventory name -> address of the lab hosts, in inventory (rank) order."""
    data = lab_inventory()
    groups = data["all"]["children"]["rlinf_cluster"]["children"]
    ordered = {}
    for group in ("ray_head", "ray_workers"):
        for name, hostvars in (groups[group].get("hosts") or {}).items():
            ordered[name] = hostvars["ansible_host"]
    return ordered


@pytest.fixture(scope="module")
def hosts() -> dict[str, str]:
    """The lab hosts, name -> address, in rank order."""
    return lab_hosts()


def write_inventory(tmp_path: Path, mutate) -> Path:
    """A copy of the lab inventory changed by ``mutate(groups)``, with the lab's group_vars."""
    data = lab_inventory()
    mutate(data["all"]["children"]["rlinf_cluster"]["children"])
    inventory = tmp_path / f"inventory-{time.monotonic_ns()}"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text(yaml.safe_dump(data, sort_keys=False))
    (inventory / "group_vars" / "all.yml").write_text((LAB_INVENTORY / "group_vars" / "all.yml").read_text())
    # The same cluster: its token and wheelhouses, not a new state for a copy of its inventory.
    LAB_STATE.mkdir(exist_ok=True)
    (inventory / ".rlinf").symlink_to(LAB_STATE)
    return inventory


def fake_checkout(root: Path, marker: str) -> Path:
    """A tiny RLinf checkout whose rlinf.__version__ is ``marker``, with a .git and a logs/
    that code sync must leave out."""
    (root / "rlinf").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "rlinf"\nversion = "0.0.0+codesynctest"\n\n[tool.setuptools]\npackages = ["rlinf"]\n'
    )
    (root / "rlinf" / "__init__.py").write_text(f'__version__ = "{marker}"\n')
    (root / "marker_driver.py").write_text((DATA / "marker_driver.py").read_text())
    # Things rsync must leave out.
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "logs").mkdir()
    (root / "logs" / "train.log").write_text("old log\n")
    return root


def ssh(address: str, command: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        ["ssh", "-i", lab_key(), *SSH_OPTS, f"root@{address}", command],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"ssh {address} {command!r} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


class PlaybookRun:
    def __init__(self, runner: ansible_runner.Runner):
        self.rc = runner.rc
        self.stats = runner.stats or {}
        self.stdout = runner.stdout.read()

    def changed(self) -> dict[str, int]:
        return dict(self.stats.get("changed", {}))


def run_playbook(playbook: str, tmp_path: Path, inventory: Path = LAB_INVENTORY, **kwargs) -> PlaybookRun:
    """Run a playbook of the repository with ansible-runner, as `ansible-playbook` from the root would."""
    private_data_dir = tmp_path / f"runner-{time.monotonic_ns()}"
    private_data_dir.mkdir()
    runner = ansible_runner.run(
        private_data_dir=str(private_data_dir),
        project_dir=str(ROOT),
        playbook=str(ROOT / playbook),
        inventory=str(inventory),
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"},
        quiet=True,
        # No run may hang a test session (a prompt nobody answers, a host that never replies).
        timeout=PLAYBOOK_TIMEOUT,
        **kwargs,
    )
    return PlaybookRun(runner)


def run_status(tmp_path, inventory=LAB_INVENTORY, **extravars):
    """status.yml and the JSON report it wrote."""
    report = tmp_path / f"report-{time.monotonic_ns()}.json"
    extravars = {"cluster_report_path": str(report), **extravars}
    run = run_playbook("status.yml", tmp_path, inventory=inventory, extravars=extravars)
    return run, json.loads(report.read_text())


def repaired_by_site(tmp_path, hosts):
    """One site.yml run, then status.yml: every host ALIVE."""
    run = run_playbook("site.yml", tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    status, report = run_status(tmp_path)
    assert status.rc == 0 and report["ok"], report["problems"]
    assert [n["state"] for n in report["nodes"]] == ["ALIVE"] * len(hosts)


def run_controller_playbook(tmp_path: Path, name: str, playbook_text: str, variables: dict):
    """Run a playbook on the controller alone (`-i localhost,`), with ``variables`` as extra vars."""
    playbook = tmp_path / f"{name}.yml"
    playbook.write_text(playbook_text)
    extra = tmp_path / f"{name}-vars.yml"
    extra.write_text(yaml.safe_dump(variables))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    env.pop("http_proxy", None)  # the tests' mirror is on loopback
    return subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-e", f"@{extra}", str(playbook)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def probe_cluster(head_address: str, port: int = 6379) -> dict[str, dict]:
    """ALIVE nodes by IP, with node ID and the RLINF_* env a pinned Ray task reads there."""
    script = (Path(__file__).parent / "probe_cluster.py").read_text()
    # A driver with the nodes' environment: RAY_AUTH_MODE and the token's path included.
    driver = f"{NODE_ENV} /opt/rlinf/venv/bin/python - {head_address}:{port}"
    proc = ssh(head_address, driver, stdin=script)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def wait_for_alive(head_address: str, count: int, timeout: float = 90) -> dict[str, dict]:
    deadline = time.monotonic() + timeout
    nodes: dict[str, dict] = {}
    while time.monotonic() < deadline:
        nodes = probe_cluster(head_address)
        if len(nodes) == count:
            return nodes
        time.sleep(2)
    raise AssertionError(f"expected {count} ALIVE nodes within {timeout}s, saw {sorted(nodes)}")


def ray_processes(address: str) -> list[str]:
    # The [x] brackets keep the grep and the ssh shell from matching themselves.
    proc = ssh(address, "ps -eo pid,args | grep -E '[r]aylet|[g]cs_server|[r]ay start|[d]efault_worker' || true")
    return [line for line in proc.stdout.splitlines() if line.strip()]


def lab_container(host: str) -> str:
    """The podman container of a lab host: lab/lab.py names each container after its host."""
    proc = subprocess.run(
        ["podman", "container", "inspect", "--format", '{{ index .Config.Labels "rlinf.lab" }}', host],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and proc.stdout.strip(), f"{host} is not a lab container: {proc.stderr.strip()}"
    return host
