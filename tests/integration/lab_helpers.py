"""Helpers for tests that drive the real playbooks against the podman lab: the inventory,
SSH to a node, playbook runs, the cluster probe. Fixtures live in conftest.py.

The lab is made by `make lab-up` (lab/lab.py); these helpers fail, never skip, when it is
missing, so a run without hosts cannot pass by accident.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import ansible_runner
import cpu_account
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _one_lab_per_worker() -> None:
    """pytest-xdist with RLINF_LAB_INVENTORIES (make test: one inventory per worker, in worker
    order): worker gwN tests the N-th lab. Its name and subnet come from its inventory (as
    test_scale.py reads them), not from the caller's LAB_NAME."""
    labs = os.environ.get("RLINF_LAB_INVENTORIES", "").split()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if labs and worker.startswith("gw"):
        index = int(worker[2:])
        if index >= len(labs):
            raise RuntimeError(f"xdist worker {worker} has no lab: RLINF_LAB_INVENTORIES lists {len(labs)}")
        os.environ["RLINF_LAB_INVENTORY"] = labs[index]
        for inherited in ("LAB_NAME", "LAB_SUBNET"):
            os.environ.pop(inherited, None)


_one_lab_per_worker()
# Another lab made with `LAB_NAME=... lab/lab.py up` is tested by pointing this at its
# inventory directory (.lab/<name>/inventory).
LAB_INVENTORY = Path(os.environ.get("RLINF_LAB_INVENTORY", ROOT / "inventories" / "lab")).resolve()
# ansible-runner finds ansible-playbook on PATH: use the one beside the interpreter running
# the tests (the controller venv), however pytest was started.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
# make test runs its streams on two cores: a site.yml that installs torch on three nodes took
# 167 s alone and over 350 s there. The bound is for a run that hangs, not for a slow one.
PLAYBOOK_TIMEOUT = 1800
# Prefix for commands on a node that act as a Ray driver: the nodes' environment, with
# RAY_AUTH_MODE and the token's path, as Ray itself runs with.
NODE_ENV = "set -a; . /etc/rlinf/rlinf.env; set +a;"
# The nodes' venv (rlinf_venv_dir's default, which the lab inventory keeps).
VENV = "/opt/rlinf/venv"
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


def lab_user() -> str:
    """The user the inventory logs in as (root, or a user with sudo: LAB_SSH_USER)."""
    return lab_inventory()["all"]["vars"].get("ansible_user", "root")


def lab_hosts() -> dict[str, str]:
    """Inventory name -> address of the lab hosts, in inventory (rank) order."""
    data = lab_inventory()
    groups = data["all"]["children"]["rlinf_cluster"]["children"]
    ordered = {}
    for group in ("ray_head", "ray_workers"):
        for name, hostvars in (groups[group].get("hosts") or {}).items():
            ordered[name] = hostvars["ansible_host"]
    return ordered


# A CPU torch and the RLinf release in the nodes' venv, through our own variables, as a user installs
# them. The minimal honest set for RLinf's scheduler (rlinf's declared dependencies are ~790 MB
# more: triton, wandb, ruff, pytest, ...). +cpu pins the CPU build: without the machine's local
# wheel pip would fail fast instead of fetching CUDA torch.
TORCH_VARS = {
    "python_env_extra_packages": ["torch==2.13.0+cpu", "numpy==2.4.6", "omegaconf==2.4.0"],
    "python_env_no_deps_packages": ["rlinf==0.3.0"],
    # pip byte-compiling torch is ~70% of its install (119 s with it, 33 s without, here).
    "python_env_pip_extra_args": ["--no-compile"],
}
# What a module that found torch in the venvs (another's failed clean-up) takes out again.
TORCH_REMOVED = "rlinf torch numpy omegaconf"


def remove_torch(hosts: dict[str, str]) -> None:
    for address in hosts.values():
        ssh(address, f"{VENV}/bin/pip uninstall -q -y {TORCH_REMOVED} 2>&1 || true")


# The venv as site.yml made it, kept (hard links: pip replaces files, it does not write into them)
# on the same filesystem, outside what node_state lists. Uninstalling torch is not enough: the
# dependencies pip added or upgraded for it (sympy, networkx, setuptools, ...) would stay, installed
# with --no-compile, and the next Python run as root would write their __pycache__ into the venv.
VENV_KEPT = "/opt/rlinf-venv-kept"


def keep_venv(hosts: dict[str, str]) -> None:
    for address in hosts.values():
        ssh(address, f"rm -rf {VENV_KEPT} && cp -al {VENV} {VENV_KEPT}")


def restore_venv(hosts: dict[str, str]) -> None:
    """Every venv back to what keep_venv kept: the same files, sizes and times."""
    for address in hosts.values():
        ssh(address, f"test -d {VENV_KEPT} && rsync -a --delete {VENV_KEPT}/ {VENV}/ && rm -rf {VENV_KEPT}")


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


def ssh_options(address: str) -> list[str]:
    """ssh's options for a lab host: the inventory's own for that host (a worker behind the head:
    ProxyJump, LAB_BASTION=1), else the lab's."""
    data = lab_inventory()
    for group in data["all"]["children"]["rlinf_cluster"]["children"].values():
        for hostvars in (group.get("hosts") or {}).values():
            if hostvars.get("ansible_host") == address and "ansible_ssh_common_args" in hostvars:
                return shlex.split(hostvars["ansible_ssh_common_args"])
    return list(SSH_OPTS)


# The tests' own SSH connections, one per host and user, kept open between commands (as Ansible's are):
# a new connection costs about 0.1 CPU s on the controller and the node, and the suite makes hundreds.
# A host that goes away is dropped after the keepalives (15 s); closed at the end (close_ssh_masters).
SSH_MASTERS = Path(os.environ.get("TMPDIR", "/tmp")) / f"rlinf-lab-ssh-{os.getpid()}"
SSH_MUX = [
    "-o", "ControlMaster=auto",
    "-o", f"ControlPath={SSH_MASTERS}/%C",
    "-o", "ControlPersist=30",
    "-o", "ServerAliveInterval=5",
    "-o", "ServerAliveCountMax=3",
]  # fmt: skip


@functools.cache
def ssh_masters_dir() -> Path:
    SSH_MASTERS.mkdir(mode=0o700, exist_ok=True)
    return SSH_MASTERS


def ssh_argv(address: str, command: str) -> list[str]:
    """ssh running ``command`` as root on a lab host, as the inventory's user (through sudo unless root)."""
    user = lab_user()
    remote = command if user == "root" else f"sudo -n -H bash -c {shlex.quote(command)}"
    ssh_masters_dir()
    return ["ssh", "-i", lab_key(), *ssh_options(address), *SSH_MUX, f"{user}@{address}", remote]


def close_ssh_masters() -> None:
    """Ends every SSH connection ssh_argv kept open (its master processes), and their directory."""
    if not SSH_MASTERS.is_dir():
        return
    for socket_path in SSH_MASTERS.iterdir():
        subprocess.run(
            ["ssh", "-o", f"ControlPath={socket_path}", "-O", "exit", "lab-host"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    shutil.rmtree(SSH_MASTERS, ignore_errors=True)
    ssh_masters_dir.cache_clear()


def ssh(address: str, command: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        ssh_argv(address, command),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"ssh {address} {command!r} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


# Events of a task the run reached: its start (a meta task that ends a role where it has nothing
# to do has no result on any host), or a host's result, skipped by its condition included. A task
# its tags leave out has none.
REACHED_EVENTS = {
    "playbook_on_task_start",
    "runner_on_ok",
    "runner_on_skipped",
    "runner_on_failed",
    "runner_on_unreachable",
}


class PlaybookRun:
    """A playbook's run: its exit code, its output (stderr within), Ansible's stats (per key, the hosts
    counted above zero) and, for a run through ansible-runner (run_playbook's events=True), the job events."""

    def __init__(self, rc: int, stdout: str, stats: dict | None, events: list[dict] | None = None):
        self.rc = rc
        self.stdout = stdout
        self.stats = stats or {}
        self._events = events

    @property
    def events(self) -> list[dict]:
        assert self._events is not None, "this run kept no job events: run_playbook(..., events=True)"
        return self._events

    @property
    def roles_reached(self) -> set[str]:
        """The roles (short names) with a task the run reached, whether or not it printed one."""
        return {
            str(event["event_data"]["role"]).rsplit(".", 1)[-1]
            for event in self.events
            if event.get("event") in REACHED_EVENTS and event.get("event_data", {}).get("role")
        }

    @property
    def results(self) -> dict[str, dict[str, dict]]:
        """host -> task name -> its result (ok or failed), for a check on what a task really ran."""
        results: dict[str, dict[str, dict]] = {}
        for event in self.events:
            data = event.get("event_data", {})
            if event.get("event") in ("runner_on_ok", "runner_on_failed") and data.get("host"):
                results.setdefault(data["host"], {})[data.get("task", "")] = data.get("res") or {}
        return results

    def changed(self) -> dict[str, int]:
        return dict(self.stats.get("changed", {}))


CALLBACK_PLUGINS = Path(__file__).parent / "callback_plugins"


def run_playbook(
    playbook: str,
    tmp_path: Path,
    inventory: Path = LAB_INVENTORY,
    pause_at_role: tuple[str, str] | None = None,
    events: bool = False,
    **kwargs,
) -> PlaybookRun:
    """Run a playbook of the repository as `ansible-playbook` from the root would; kwargs: extravars,
    limit, tags, skip_tags, cmdline, verbosity.

    events=True: through ansible-runner instead, for a test that reads the job events an AWX job shows
    (their files, an event_handler, roles_reached, results) or answers a prompt (passwords). It costs the
    controller about 0.8 CPU s more a run (a no-op site.yml on 3 nodes), so the other runs go without it.
    pause_at_role=(container, role): `podman pause` that lab container just before the first task
    of that role is sent to any host (callback_plugins/pause_at_role.py)."""
    private_data_dir = tmp_path / f"runner-{time.monotonic_ns()}"
    private_data_dir.mkdir()
    envvars = {"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    callbacks = [] if events else ["playbook_stats"]
    if pause_at_role:
        container, role = pause_at_role
        callbacks.append("pause_at_role")
        envvars.update(RLINF_TEST_PAUSE_CONTAINER=container, RLINF_TEST_PAUSE_ROLE=role)
    if callbacks:
        envvars.update(ANSIBLE_CALLBACK_PLUGINS=str(CALLBACK_PLUGINS), ANSIBLE_CALLBACKS_ENABLED=",".join(callbacks))
    before = cpu_account.snapshot(lab_containers()) if cpu_account.LOG else None
    if events:
        runner = ansible_runner.run(
            private_data_dir=str(private_data_dir),
            project_dir=str(ROOT),
            playbook=str(ROOT / playbook),
            inventory=str(inventory),
            envvars=envvars,
            quiet=True,
            # No run may hang a test session (a prompt nobody answers, a host that never replies).
            timeout=PLAYBOOK_TIMEOUT,
            **kwargs,
        )
        run = PlaybookRun(runner.rc, runner.stdout.read(), runner.stats, list(runner.events))
    else:
        run = _ansible_playbook(ROOT / playbook, private_data_dir, inventory, envvars, **kwargs)
    if before:
        cpu_account.record("playbook", playbook, before, cpu_account.snapshot(lab_containers()))
    return run


def _ansible_playbook(
    playbook: Path,
    private_data_dir: Path,
    inventory: Path,
    envvars: dict[str, str],
    extravars: dict | None = None,
    limit: str | None = None,
    tags: str | None = None,
    skip_tags: str | None = None,
    cmdline: str | None = None,
    verbosity: int = 0,
) -> PlaybookRun:
    """ansible-playbook in the repository's root, stdin closed, stderr in its output."""
    stats_file = private_data_dir / "stats.json"
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(inventory), str(playbook)]
    if extravars:
        # A file, as ansible-runner passes them: the values stay out of the process list.
        extravars_file = private_data_dir / "extravars.json"
        extravars_file.write_text(json.dumps(extravars))
        argv += ["-e", f"@{extravars_file}"]
    for option, value in (("--limit", limit), ("--tags", tags), ("--skip-tags", skip_tags)):
        if value:
            argv += [option, value]
    argv += shlex.split(cmdline or "")
    if verbosity:
        argv.append("-" + "v" * verbosity)
    # What ansible-runner sets besides its own callback, so that a run means here what it meant through it.
    env = {"ANSIBLE_HOST_KEY_CHECKING": "False", **os.environ, "ANSIBLE_RETRY_FILES_ENABLED": "False", **envvars}
    env["RLINF_TEST_STATS_FILE"] = str(stats_file)
    with subprocess.Popen(
        argv,
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # Its own process group: a run past the time limit is stopped with every worker it forked.
        start_new_session=True,
    ) as proc:
        try:
            stdout, _ = proc.communicate(timeout=PLAYBOOK_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            stdout, _ = proc.communicate()
            pytest.fail(f"{playbook.name} ran past {PLAYBOOK_TIMEOUT} s and was stopped:\n{stdout[-3000:]}")
    stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    return PlaybookRun(proc.returncode, stdout, stats)


def purge_node(tmp_path: Path, inventory: Path, host: str) -> PlaybookRun:
    """teardown.yml -e teardown_purge=true (confirmed) on one host of ``inventory``; it must pass."""
    run = run_playbook(
        "teardown.yml",
        tmp_path,
        inventory=inventory,
        limit=host,
        extravars={"teardown_purge": True, "teardown_confirm": "yes"},
    )
    assert run.rc == 0, run.stdout[-3000:]
    return run


def run_status(tmp_path, inventory=LAB_INVENTORY, events=False, **extravars):
    """status.yml and the JSON report it wrote (events: run_playbook's)."""
    report = tmp_path / f"report-{time.monotonic_ns()}.json"
    extravars = {"cluster_report_path": str(report), **extravars}
    run = run_playbook("status.yml", tmp_path, inventory=inventory, events=events, extravars=extravars)
    return run, json.loads(report.read_text())


def run_site(tmp_path, inventory=LAB_INVENTORY, events=False, **extravars):
    """site.yml and the report its last step, the cluster check status.yml runs too, wrote (events:
    run_playbook's)."""
    report = tmp_path / f"site-report-{time.monotonic_ns()}.json"
    extravars = {"cluster_report_path": str(report), **extravars}
    run = run_playbook("site.yml", tmp_path, inventory=inventory, events=events, extravars=extravars)
    return run, json.loads(report.read_text()) if report.exists() else {}


def repaired_by_site(tmp_path, hosts):
    """One site.yml run, whose check finds every host ALIVE."""
    run, report = run_site(tmp_path)
    assert run.rc == 0, run.stdout[-3000:]
    assert report["ok"], report["problems"]
    assert [n["state"] for n in report["nodes"]] == ["ALIVE"] * len(hosts)


def probe_cluster(head_address: str, port: int = 6379, ray_address: str | None = None) -> dict[str, dict]:
    """ALIVE nodes by IP, with node ID and the RLINF_* env a pinned Ray task reads there.

    The driver runs on the head (reached over SSH at ``head_address``) and joins Ray at
    ``ray_address`` (the head's Ray address, when it is not the SSH one)."""
    script = (Path(__file__).parent / "probe_cluster.py").read_text()
    # A driver with the nodes' environment: RAY_AUTH_MODE and the token's path included.
    driver = f"{NODE_ENV} {VENV}/bin/python - {ray_address or head_address}:{port}"
    proc = ssh(head_address, driver, stdin=script)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def wait_for_alive(
    head_address: str, count: int, timeout: float = 90, ray_address: str | None = None
) -> dict[str, dict]:
    """probe_cluster once ``count`` nodes run its actors. While the head's GCS lists another number of
    ALIVE addresses, it asks the GCS alone (gcs_alive: 0.1 CPU s of the head's, 0.2 with the SSH, against
    3 for a probe, which starts a Ray worker on every node)."""
    deadline = time.monotonic() + timeout
    nodes: dict[str, dict] | None = None
    while time.monotonic() < deadline:
        if alive_addresses(head_address, ray_address) == count:
            nodes = probe_cluster(head_address, ray_address=ray_address)
            if len(nodes) == count:
                return nodes
        time.sleep(2)
    if nodes is None:
        seen = f"no probe: the head's GCS lists {alive_addresses(head_address, ray_address)} addresses"
    else:
        seen = f"the last probe's {sorted(nodes)}"
    raise AssertionError(f"expected {count} ALIVE nodes within {timeout}s, saw {seen}")


def alive_addresses(head_address: str, ray_address: str | None = None) -> int:
    """How many addresses the head's GCS lists ALIVE nodes at (0 while no GCS answers)."""
    try:
        return len(set(gcs_alive(head_address, gcs_address=ray_address).values()))
    except (AssertionError, ValueError, IndexError, subprocess.TimeoutExpired):
        return 0


# What site.yml makes on a node, as node_state reads it: the content of every file under
# /etc/rlinf and of the unit, and the listing (path, size, mtime) of /opt/rlinf (the venv: its
# content is too large to hash on every call), then the venv's Ray (-B: this read writes no
# bytecode into the venv).
NODE_FILES = (
    "find /etc/rlinf /etc/systemd/system/rlinf-ray.service -type f | sort | xargs sha256sum;"
    " find /opt/rlinf -printf '%p %s %T@\\n' | sort | sha256sum;"
    f" {VENV}/bin/python -B -c 'import ray; print(ray.__version__)'"
)


@dataclass(frozen=True)
class NodeState:
    """The node ID Ray runs, by IP, and per host what site.yml made there (NODE_FILES)."""

    ids: dict
    files: dict
    read_at: float = field(compare=False, repr=False)


def node_state(hosts) -> NodeState:
    read_at = time.time()
    head = next(iter(hosts.values()))
    ids = {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()}
    with ThreadPoolExecutor(max_workers=len(hosts)) as pool:
        read = pool.map(lambda address: ssh(address, NODE_FILES).stdout, hosts.values())
        files = dict(zip(hosts, read, strict=True))
    return NodeState(ids, files, read_at)


def assert_node_state_unchanged(hosts, before: NodeState) -> None:
    """node_state is as it was; if not, the failure names what changed since (paths by mtime or ctime)."""
    after = node_state(hosts)
    if after == before:
        return
    since = f"@{before.read_at - 1:.0f}"
    touched = {
        name: ssh(
            hosts[name],
            f"find /etc/rlinf /etc/systemd/system/rlinf-ray.service /opt/rlinf"
            f" \\( -newermt {since} -o -newerct {since} \\) -printf '%TT %p\\n' | sort | head -20",
            check=False,
        ).stdout.splitlines()
        for name in hosts
        if after.files.get(name) != before.files.get(name)
    }
    ids = "" if after.ids == before.ids else f"Ray's node IDs {before.ids} -> {after.ids}; "
    pytest.fail(f"the nodes changed: {ids}changed since the first read: {touched}")


# What a test may leave on a node that site.yml with the lab inventory removes: the opt-in firewall,
# the drop-ins metrics runs Prometheus and the node exporter with.
LEFTOVERS = (
    "/etc/rlinf/firewall.nft",
    "/etc/systemd/system/rlinf-firewall.service",
    "/etc/systemd/system/prometheus.service.d/rlinf.conf",
    "/etc/systemd/system/prometheus-node-exporter.service.d/rlinf.conf",
)


def gcs_alive(head_address: str, timeout: float = 10, gcs_address: str | None = None) -> dict[str, str]:
    """Node ID -> IP of every node the head's GCS lists as ALIVE (gcs_alive.py: one RPC with that
    timeout, no driver), asked on the head (over SSH at ``head_address``) at ``gcs_address`` (the head's
    Ray address, when it is not the SSH one)."""
    return json.loads(_gcs_nodes(head_address, timeout, gcs_address))


def gcs_cpus(head_address: str, timeout: float = 10) -> dict[str, tuple[str, float]]:
    """Node ID -> (IP, total CPU resource) of every node the head's GCS lists as ALIVE (no driver)."""
    nodes = json.loads(_gcs_nodes(head_address, timeout, None, "cpus"))
    return {node_id: (ip, cpus) for node_id, (ip, cpus) in nodes.items()}


def _gcs_nodes(head_address: str, timeout: float, gcs_address: str | None, *mode: str) -> str:
    script = (Path(__file__).parent / "gcs_alive.py").read_text()
    address = gcs_address or head_address
    command = f"{NODE_ENV} {VENV}/bin/python - {address}:6379 {timeout} {' '.join(mode)}"
    return ssh(head_address, command.rstrip(), stdin=script).stdout.strip().splitlines()[-1]


# Per node, in one SSH: the unit's state, then for each raylet its node ID and the RLINF_* variables of
# its environment (the Ray workers it starts inherit them), then the digest of the token file every Ray
# worker the raylet starts reads, then what a test left that site.yml removes.
NODE_TOKEN = "/etc/rlinf/ray-auth-token"
NODE_CHECK = (
    "systemctl is-active rlinf-ray;"
    " for p in $(pgrep -x raylet); do echo raylet;"
    " tr '\\0' '\\n' < /proc/$p/cmdline | grep '^--node_id=';"
    " tr '\\0' '\\n' < /proc/$p/environ | grep '^RLINF_'; done;"
    f" echo token=$(printf %s \"$(cat {NODE_TOKEN} 2>/dev/null)\" | sha256sum | cut -d' ' -f1);"
    f" ls {' '.join(LEFTOVERS)} 2>/dev/null"
)


def token_digest(path: Path) -> str:
    """A token file's sha256 as the nodes hold the token: the password lookup ends the controller's
    file with a newline, the nodes' files have none."""
    return hashlib.sha256(path.read_bytes().rstrip(b"\n")).hexdigest()


def lab_cluster(hosts: dict[str, str], tmp_path_factory) -> dict[str, str]:
    """The lab hosts, running the cluster site.yml makes from the lab inventory: checked, and repaired
    by one site.yml run when it is not that cluster (conftest.py's ``cluster``)."""
    problems = cluster_problems(hosts)
    if not problems:
        return hosts
    before = cpu_account.snapshot(lab_containers()) if cpu_account.LOG else None
    found = problems
    run = run_playbook("site.yml", tmp_path_factory.mktemp("repair"))
    if run.rc != 0:
        pytest.fail(f"site.yml could not repair the lab ({'; '.join(problems)}):\n{run.stdout[-3000:]}")
    # Workers restarted after the head may need a few seconds to run tasks again.
    deadline = time.monotonic() + 90
    while problems := cluster_problems(hosts):
        if time.monotonic() > deadline:
            pytest.fail(f"the lab is still not the lab inventory's cluster after site.yml: {'; '.join(problems)}")
        time.sleep(3)
    if before:
        # Which test found the lab changed, and how: what the module before it left for this one to repair.
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
        after = cpu_account.snapshot(lab_containers())
        cpu_account.record("repair", f"{test}: {'; '.join(found)[:300]}", before, after)
    return hosts


def cluster_problems(hosts: dict[str, str]) -> list[str]:
    """How the lab differs from the cluster site.yml makes from the lab inventory (empty when
    it does not): every host's unit active with one raylet, that raylet ALIVE in the head's GCS (its
    node ID, so not an entry a dead raylet left) and reading its rank and the default environment,
    no other node ALIVE, no firewall or metrics left, the controller's token present and on every
    node (the Ray workers a raylet starts read it: without it they never start). One SSH per host
    and one GCS RPC on the head: no driver, so no Ray worker is started."""
    problems = []
    token = ""
    if not CONTROLLER_TOKEN.exists():
        problems.append(f"the controller's token {CONTROLLER_TOKEN} is missing")
    else:
        token = token_digest(CONTROLLER_TOKEN)
    head = next(iter(hosts.values()))
    node_ids = {}
    with ThreadPoolExecutor(len(hosts)) as pool:
        found = pool.map(lambda a: ssh(a, NODE_CHECK, check=False).stdout.split("\n"), hosts.values())
        for rank, (name, (active, *lines)) in enumerate(zip(hosts, found, strict=True)):
            if active != "active":
                problems.append(f"rlinf-ray is {active or 'unreachable'} on {name}")
                continue
            raylets = lines.count("raylet")
            if raylets != 1:
                problems.append(f"{name} runs {raylets} raylets")
                continue
            env = dict(line.split("=", 1) for line in lines if line.startswith("RLINF_"))
            node_ids[name] = next((line.split("=", 1)[1] for line in lines if line.startswith("--node_id=")), "")
            left = [line for line in lines if line.startswith("/")]
            if left:
                problems.append(f"{name} still has {left}")
            if token and f"token={token}" not in lines:
                problems.append(f"{NODE_TOKEN} on {name} is missing or is not the controller's token")
            # RLINF_COMM_NET_DEVICES is always there: the NIC of the node's address (eth0 in the lab).
            nic = env.pop("RLINF_COMM_NET_DEVICES", "")
            want = {"RLINF_NODE_RANK": str(rank), "RLINF_RAY_HEAD_ADDRESS": f"{head}:6379"}
            if env != want or not nic:
                problems.append(f"the Ray workers of {name} read {env} (NIC {nic!r}), the lab inventory gives {want}")
    if any(p.startswith("rlinf-ray is ") for p in problems):
        return problems
    try:
        alive = gcs_alive(head)
    except (AssertionError, ValueError, IndexError, subprocess.TimeoutExpired) as err:
        return [*problems, f"no Ray cluster answers at {head}: {str(err)[-500:]}"]
    for name, node_id in node_ids.items():
        if alive.get(node_id) != hosts[name]:
            problems.append(f"the raylet of {name} ({node_id[:12]}) is not ALIVE in the head's GCS")
    others = sorted(set(alive.values()) - set(hosts.values()))
    if others:
        problems.append(f"the head's GCS has other nodes ALIVE: {others}")
    return problems


def ray_processes(address: str) -> list[str]:
    # The [x] brackets keep the grep and the ssh shell from matching themselves.
    proc = ssh(address, "ps -eo pid,args | grep -E '[r]aylet|[g]cs_server|[r]ay start|[d]efault_worker' || true")
    return [line for line in proc.stdout.splitlines() if line.strip()]


def lab_containers() -> list[str]:
    """The podman containers of this lab's hosts (lab/lab.py names each after its host; a test may
    add a host, as test_scale.py does, which is not counted here)."""
    return list(lab_hosts())


def lab_container(host: str) -> str:
    """The podman container of a lab host: lab/lab.py names each container after its host."""
    proc = subprocess.run(
        ["podman", "container", "inspect", "--format", '{{ index .Config.Labels "rlinf.lab" }}', host],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and proc.stdout.strip(), f"{host} is not a lab container: {proc.stderr.strip()}"
    return host
