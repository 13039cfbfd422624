#!/usr/bin/python
# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_state
short_description: Read everything the plan needs to know about one node, in one call
description:
  - Reads, without changing anything, what the cluster plan (preflight) and the roles need from a
    node, so one module call replaces the fact gathering and the per-file reads of a run.
  - The network (every interface and its IPv4 addresses, the default route's device and address),
    the operating system (systemd, apt, os-release), the Python O(python) the venv is made from
    (version, machine, glibc), the venv O(venv) and whether it holds O(requirements), the Ray unit
    O(unit) (active state, units of the same name installed by the system or a package), each path
    in O(paths) (exists, kind, whether rlinf-ansible wrote it), the record and manifest rlinf-ansible
    keeps under C(/etc/rlinf/state), whether O(port) is taken by a process outside the unit, and the free
    space of the filesystem each path in O(disk) is on.
  - With O(sandbox), whether systemd here can give a unit a mount namespace of its own (a transient
    unit with C(PrivateMounts=yes) reads its namespace). Where it cannot (a container without
    C(CAP_SYS_ADMIN)), systemd skips C(ProtectSystem=), C(ProtectHome=) and C(ReadWritePaths=)
    silently.
  - The host firewalls that are not rlinf-ansible's (C(ufw status verbose), whether firewalld runs and its
    trusted zone's sources), since they drop Ray's traffic whatever rlinf-ansible's own nft table accepts.
  - With O(gpus), the node's NVIDIA GPUs as M(rlinf.cluster.gpu_facts) reads them (Ray's bundled C(pynvml) of the
    venv's Ray, then C(nvidia-smi)), when the venv has Ray; so a run whose venv is unchanged does not read them
    again after Ray's start.
  - With O(gcs), on a head whose Ray unit is active, the node table of the GCS its record names, read through the
    venv's own Ray with the RAY_AUTH_* settings of O(env_file) (one RPC, beside the other reads); the plan
    restarts the workers it lacks.
  - A path is rlinf-ansible's when its manifest O(manifest) lists it or its first line says
    C(Managed by rlinf-ansible).
version_added: 0.2.0
author:
  - rlinf-ansible maintainers (!UNKNOWN)
extends_documentation_fragment:
  - rlinf.cluster.attributes.read_only
options:
  python:
    description: The interpreter the venv is made from (a command on PATH or an absolute path).
    type: str
    default: python3
  venv:
    description: The venv Ray runs under; its interpreter is C(<venv>/bin/python).
    type: path
  requirements:
    description: Pinned requirements the venv must hold (C(name[extras]==version)).
    type: list
    elements: str
    default: []
  unit:
    description: Name of the Ray unit (without C(.service)).
    type: str
  paths:
    description: Paths rlinf-ansible would write or own here, by the plan's name for each.
    type: dict
    default: {}
  manifest:
    description: This node's manifest of the paths rlinf-ansible created.
    type: path
  record:
    description: This node's record of the plan's decisions (address, rank, unit).
    type: path
  port:
    description:
      - A TCP port (the head's GCS port) to report as busy when a process listens on it while O(unit) is not active.
    type: int
  sandbox:
    description: Test whether systemd can set up a unit's mount namespace (see RV(sandbox)).
    type: bool
    default: false
  disk:
    description:
      - Paths, by the plan's name for each (C(temp_dir), C(venv)), whose filesystem to read (see RV(disk)); a path that
        does not exist yet is read at its nearest existing parent.
    type: dict
    default: {}
  token_file:
    description:
      - The node's Ray token file, to report whether it exists and its SHA-256 (see RV(token)); never its value.
    type: path
  services:
    description:
      - Units whose state to report (see RV(services)), such as the Prometheus packages' units the metrics role
        would run.
    type: list
    elements: str
    default: []
  gpus:
    description: Read the node's NVIDIA GPUs through the venv's Ray (see RV(gpus)).
    type: bool
    default: false
  gcs:
    description: On the head, read the node table of its running Ray's GCS (see RV(gcs)).
    type: bool
    default: false
  env_file:
    description: The env file whose RAY_* settings (token authentication) the GCS read uses.
    type: path
  versions:
    description:
      - Read this node's version manifest through the venv's own Python (see RV(versions)), beside the other reads.
    type: bool
    default: false
  easytier_dir:
    description: Where EasyTier is installed, for RV(versions).
    type: path
    default: /opt/rlinf/easytier
  digests:
    description:
      - Files to describe for a comparison on the controller (see RV(digests)); their content is never
        returned.
    type: list
    elements: path
    default: []
notes:
  - Needs C(ip) (iproute2) for the network part.
"""

EXAMPLES = r"""
- name: Read the node's state
  rlinf.cluster.node_state:
    python: python3
    venv: /opt/rlinf/venv
    requirements: ["ray[default]==2.60.0"]
    unit: rlinf-ray
    paths:
      env_file: /etc/rlinf/rlinf.env
      unit_file: /etc/systemd/system/rlinf-ray.service
    manifest: /etc/rlinf/state/rlinf-ray.manifest.json
    record: /etc/rlinf/state/rlinf-ray.json
    port: 6379
    sandbox: true
    disk:
      temp_dir: /tmp/ray
      venv: /opt/rlinf/venv
  register: rlinf_probe
"""

RETURN = r"""
interfaces:
  description: Every interface and its IPv4 addresses (primary first).
  returned: always
  type: dict
  sample: {eth0: [10.89.77.10], lo: [127.0.0.1]}
default_route:
  description: Device and primary IPv4 of the default route (empty when there is none).
  returned: always
  type: dict
  sample: {device: eth0, address: 10.89.77.10}
systemd:
  description: Whether systemd manages services here.
  returned: always
  type: bool
apt:
  description: Whether apt-get is installed (Debian family).
  returned: always
  type: bool
os:
  description: C(id), C(version_id), C(pretty_name) from os-release.
  returned: always
  type: dict
python:
  description: C(version), C(machine), C(glibc), C(executable) of O(python), or C(error).
  returned: always
  type: dict
venv:
  description:
    - C(exists), C(satisfied), C(unsatisfied) (requirement problems), C(python), C(ray), C(ray_init) (the venv's
      C(ray/__init__.py), found without importing Ray).
  returned: always
  type: dict
unit:
  description: C(active) (systemctl is-active) and C(enabled) (systemctl is-enabled says enabled) of O(unit).
  returned: always
  type: dict
os_units:
  description: Unit files of the system or a package with the name O(unit) (ours would replace them).
  returned: always
  type: list
  elements: str
paths:
  description: For each key of O(paths) - C(path), C(exists), C(kind) (file, dir, other), C(ours), C(is_venv), C(empty).
  returned: always
  type: dict
record:
  description: The record's JSON, or an empty dict.
  returned: always
  type: dict
manifest:
  description: The paths the manifest lists (C(path), C(kind)).
  returned: always
  type: list
  elements: dict
port_busy:
  description: Whether O(port) has a listener while O(unit) is not active.
  returned: always
  type: bool
sandbox:
  description:
    - With O(sandbox) and systemd, C(mount_namespace) (whether a unit got a mount namespace of its own) or
      C(error) (the test could not run); empty otherwise.
  returned: always
  type: dict
  sample: {mount_namespace: true}
disk:
  description:
    - For each key of O(disk), the filesystem its path is on - C(path), C(probed) (the path read, its nearest existing
      parent when it does not exist), C(exists), C(total) and C(free) (bytes an unprivileged writer may use,
      C(f_bavail * f_frsize)), C(percent_free), C(mount); or C(error).
  returned: always
  type: dict
  sample: {temp_dir: {path: /tmp/ray, probed: /tmp, exists: false, total: 1073741824, free: 536870912,
           percent_free: 50.0, mount: /}}
token:
  description:
    - With O(token_file), C(present) (a readable regular file) and C(sha256) of its bytes, so the controller
      can tell whether the nodes hold one token; the value itself is never returned. Empty otherwise.
  returned: always
  type: dict
  sample: {present: true, sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08}
services:
  description: For each unit of O(services), C(active) (systemctl is-active) and C(enabled); empty without systemd.
  returned: always
  type: dict
  sample: {prometheus: {active: active, enabled: true}}
gpus:
  description:
    - With O(gpus), what M(rlinf.cluster.gpu_facts) returns as C(gpus) (C(count),
      C(nvml_count), C(driver_version), C(cuda_driver_version), C(models), C(uuids), C(source)).
    - Not returned without a venv, or when the venv's Ray pynvml does not load in this interpreter (then
      M(rlinf.cluster.gpu_facts) reads them with the venv's own Python).
  returned: when O(gpus) and the venv was read
  type: dict
  sample: {count: 0, nvml_count: 0, driver_version: null, cuda_driver_version: null, models: {}, uuids: [],
           source: null, nvml_error: NVML Shared Library Not Found}
gcs:
  description:
    - With O(gcs), when O(unit) is active and the venv and the record are there - C(address) (the record's
      C(ip:ray_port)) and either C(nodes) (every node the GCS lists, C(NodeID), C(NodeManagerAddress),
      C(NodeManagerPort), C(Alive), C(RayletSocketName)) or C(error). Empty otherwise.
  returned: always
  type: dict
  sample: {address: 10.0.0.1:6379, nodes: [{NodeID: 3f2a, NodeManagerAddress: 10.0.0.1, NodeManagerPort: 40000,
           Alive: true, RayletSocketName: /tmp/ray/session_x/sockets/raylet}]}
versions:
  description:
    - With O(versions), the venv's version manifest - C(python), C(python_executable), C(ray) (null without Ray),
      C(pip_freeze_sha256) and C(pip_freeze_source) (C(pip freeze), or C(importlib.metadata) in a venv without pip),
      C(packages), C(easytier) (null when not installed); or C(error). Empty without O(versions).
  returned: always
  type: dict
  sample: {python: 3.11.2, python_executable: /opt/rlinf/venv/bin/python, ray: 2.60.0, packages: 61,
           pip_freeze_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08,
           pip_freeze_source: pip freeze, easytier: null}
digests:
  description:
    - For each path of O(digests) - C(exists); for a regular file also C(regular), C(readable) and, when
      readable, C(sha256) of its bytes, C(mode) (octal text), C(uid), C(gid), C(owner) and C(group) (names, or
      null). The plan compares them with the files it renders, so a run whose files match them does not
      compare them again on the node.
  returned: always
  type: dict
  sample: {/etc/rlinf/rlinf.env: {exists: true, regular: true, readable: true, mode: "0644", uid: 0, gid: 0,
           owner: root, group: root, sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08}}
host_firewall:
  description:
    - The host firewalls that are not rlinf-ansible's. C(ufw) is C(ufw status verbose) read as C(active),
      C(incoming) (the default policy), C(sources) (addresses or networks allowed on every port) and C(ours)
      (those rules commented C(rlinf-ansible)), empty without ufw; C(firewalld) whether it runs, and
      C(firewalld_trusted) the sources of its trusted zone.
  returned: always
  type: dict
  sample:
    ufw: {active: true, incoming: deny, sources: [10.0.0.11], ours: [10.0.0.11]}
    firewalld: false
    firewalld_trusted: ""
"""

import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.rlinf.cluster.plugins.module_utils import gpu_facts  # noqa: E402
from ansible_collections.rlinf.cluster.plugins.module_utils.disk import usage  # noqa: E402
from ansible_collections.rlinf.cluster.plugins.module_utils.gcs_probe import GcsRead, head_address  # noqa: E402
from ansible_collections.rlinf.cluster.plugins.module_utils.host_firewall import parse_ufw  # noqa: E402
from ansible_collections.rlinf.cluster.plugins.module_utils.node_files import (  # noqa: E402
    file_state,
    is_ours,
    read_manifest,
)
from ansible_collections.rlinf.cluster.plugins.module_utils.ray_env import read_ray_env  # noqa: E402
from ansible_collections.rlinf.cluster.plugins.module_utils.venv_probe import VENV_PROBE  # noqa: E402
from ansible_collections.rlinf.cluster.plugins.module_utils.version_manifest import VersionRead  # noqa: E402

PYTHON_PROBE = (
    "import json, platform, sys; print(json.dumps({'version': platform.python_version(), "
    "'machine': platform.machine(), 'glibc': platform.libc_ver()[1], 'executable': sys.executable}))"
)
UNIT_DIRS = ("/lib/systemd/system", "/usr/lib/systemd/system")


def network(module):
    interfaces = {}
    rc, out, _err = module.run_command(["ip", "-o", "link", "show"])
    if rc == 0:
        for line in out.splitlines():
            parts = line.split(":", 2)
            if len(parts) >= 2:
                interfaces.setdefault(parts[1].strip().split("@")[0], [])
    rc, out, _err = module.run_command(["ip", "-o", "-4", "addr", "show"])
    if rc == 0:
        for line in out.splitlines():
            fields = line.split()
            if len(fields) >= 4 and fields[2] == "inet":
                device = fields[1].split("@")[0]
                interfaces.setdefault(device, []).append(fields[3].split("/")[0])
    default = {"device": "", "address": ""}
    rc, out, _err = module.run_command(["ip", "-4", "route", "show", "default"])
    if rc == 0:
        for line in out.splitlines():
            fields = line.split()
            if "dev" in fields:
                device = fields[fields.index("dev") + 1]
                source = fields[fields.index("src") + 1] if "src" in fields else ""
                addresses = interfaces.get(device) or []
                default = {"device": device, "address": source or (addresses[0] if addresses else "")}
                break
    return interfaces, default


def os_release():
    found = {}
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    key, sep, value = line.strip().partition("=")
                    if sep:
                        found[key.lower()] = value.strip().strip('"')
            break
        except OSError:
            continue
    return {key: found.get(key, "") for key in ("id", "id_like", "version_id", "pretty_name")}


def run_json(module, argv):
    try:
        rc, out, err = module.run_command(argv)
    except Exception as exc:  # a missing interpreter
        return None, str(exc)
    if rc != 0:
        return None, (err or out).strip()[-300:] or f"exit status {rc}"
    try:
        return json.loads(out.strip().splitlines()[-1]), None
    except (ValueError, IndexError):
        return None, f"unreadable output: {out.strip()[-200:]}"


# A transient unit that only reads its own mount namespace; --wait --pipe: its output is ours.
NAMESPACE_PROBE = [
    "systemd-run",
    "--quiet",
    "--wait",
    "--pipe",
    "--collect",
    "--property=PrivateMounts=yes",
    "/bin/readlink",
    "/proc/self/ns/mnt",
]


def sandbox_info(module):
    """Whether systemd gives a unit a mount namespace of its own (the Ray unit's sandbox needs one)."""
    try:
        init = os.readlink("/proc/1/ns/mnt")
    except OSError as err:
        return {"error": f"cannot read /proc/1/ns/mnt: {err.strerror}"}
    rc, out, err = module.run_command(NAMESPACE_PROBE)
    if rc != 0 or not out.strip():
        return {"error": (err or out).strip()[-300:] or f"systemd-run exited with status {rc}"}
    return {"mount_namespace": out.strip().splitlines()[-1] != init}


def python_info(module, python):
    if os.path.realpath(module.get_bin_path(python) or python) == os.path.realpath(sys.executable):
        return {
            "version": platform.python_version(),
            "machine": platform.machine(),
            "glibc": platform.libc_ver()[1],
            "executable": sys.executable,
        }
    binary = python if python.startswith("/") else module.get_bin_path(python)
    if not binary or not os.path.exists(binary):
        return {"error": f"{python} is not installed"}
    info, error = run_json(module, [binary, "-c", PYTHON_PROBE])
    return info if info is not None else {"error": error}


def venv_info(module, venv, requirements):
    python = os.path.join(venv, "bin", "python") if venv else ""
    if not venv or not os.path.exists(python):
        return {"exists": False, "satisfied": False, "unsatisfied": [r + ": no venv" for r in requirements]}
    info, error = run_json(module, [python, "-c", VENV_PROBE, json.dumps(requirements)])
    if info is None:
        return {"exists": True, "satisfied": False, "unsatisfied": [f"cannot read the venv: {error}"], "error": error}
    return {
        "exists": True,
        "satisfied": not info["unsatisfied"],
        "unsatisfied": info["unsatisfied"],
        "python": info["python"],
        "ray": info["ray"],
        "ray_init": info.get("ray_init"),
    }


def gpu_info(module, venv: dict):
    """gpu_facts' reading through the venv's Ray pynvml; None when the venv was not read or that
    pynvml does not load here (gpu_facts then runs under the venv's own Python)."""
    if not venv.get("exists") or venv.get("error"):
        return None
    path = gpu_facts.ray_pynvml_path(venv.get("ray_init"))
    nvml = gpu_facts.load_pynvml(path) if path else None
    if path and nvml is None:
        return None
    return gpu_facts.read_node(nvml, module, "nvidia-smi")


def path_info(path, recorded):
    info = {"path": path, "exists": os.path.lexists(path)}
    if not info["exists"]:
        info.update(kind="none", ours=False)
        return info
    if os.path.isdir(path) and not os.path.islink(path):
        kind = "dir"
    elif os.path.isfile(path):
        kind = "file"
    else:
        kind = "other"
    info["kind"] = kind
    info["ours"] = path in recorded or (kind == "file" and is_ours(path))
    if kind == "dir":
        try:
            info["empty"] = not os.listdir(path)
        except OSError:
            info["empty"] = False
        info["is_venv"] = os.path.isfile(os.path.join(path, "pyvenv.cfg"))
    return info


def listening(port):
    """Whether a TCP socket listens on ``port`` (any address), from /proc/net/tcp{,6}."""
    wanted = f"{port:04X}"
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as handle:
                next(handle, None)
                for line in handle:
                    fields = line.split()
                    if len(fields) > 3 and fields[3] == "0A" and fields[1].rsplit(":", 1)[-1] == wanted:
                        return True
        except OSError:
            continue
    return False


def read_record(path):
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def token_info(path):
    """Whether the node holds a token at ``path`` and its digest (the value stays on the node)."""
    try:
        if not os.path.isfile(path):
            return {"present": False, "sha256": ""}
        with open(path, "rb") as handle:
            return {"present": True, "sha256": hashlib.sha256(handle.read()).hexdigest()}
    except OSError as err:
        return {"present": False, "sha256": "", "error": err.strerror or str(err)}


def host_firewalls(module):
    """What ufw and firewalld say here, in their own words (host_firewall.py judges them)."""
    found = {"ufw": {}, "firewalld": False, "firewalld_trusted": ""}
    ufw = module.get_bin_path("ufw", opt_dirs=["/usr/sbin", "/sbin"])
    if ufw:
        rc, out, _err = module.run_command([ufw, "status", "verbose"], environ_update={"LC_ALL": "C"})
        if rc == 0:
            found["ufw"] = parse_ufw(out)
    if os.path.isdir("/run/systemd/system"):
        _rc, out, _err = module.run_command(["systemctl", "is-active", "firewalld"])
        found["firewalld"] = out.strip() == "active"
    if found["firewalld"]:
        cmd = module.get_bin_path("firewall-cmd", opt_dirs=["/usr/bin", "/usr/sbin"])
        if cmd:
            _rc, out, _err = module.run_command([cmd, "--zone=trusted", "--list-sources"])
            found["firewalld_trusted"] = out.strip()
    return found


def service_state(module, name):
    """Whether a unit runs or starts at boot now (someone else's, until a file of ours configures it)."""
    _rc, out, _err = module.run_command(["systemctl", "is-active", name])
    active = out.strip() or "unknown"
    _rc, out, _err = module.run_command(["systemctl", "is-enabled", name])
    return {"active": active, "enabled": out.strip() == "enabled"}


def venv_python(params):
    return os.path.join(params["venv"] or "", "bin", "python")


def start_gcs_read(params, unit, record):
    """The GCS read of a head whose Ray runs (started now, collected last), or None."""
    python = venv_python(params)
    address = head_address(record)
    if not params["gcs"] or unit.get("active") != "active" or address is None or not os.path.exists(python):
        return None
    return GcsRead(python, address, read_ray_env(params["env_file"]))


def main():
    module = AnsibleModule(
        argument_spec={
            "python": {"type": "str", "default": "python3"},
            "venv": {"type": "path"},
            "requirements": {"type": "list", "elements": "str", "default": []},
            "unit": {"type": "str"},
            "paths": {"type": "dict", "default": {}},
            "manifest": {"type": "path"},
            "record": {"type": "path"},
            "port": {"type": "int"},
            "sandbox": {"type": "bool", "default": False},
            "disk": {"type": "dict", "default": {}},
            "token_file": {"type": "path"},
            "services": {"type": "list", "elements": "str", "default": []},
            "gpus": {"type": "bool", "default": False},
            "gcs": {"type": "bool", "default": False},
            "env_file": {"type": "path"},
            "versions": {"type": "bool", "default": False},
            "easytier_dir": {"type": "path", "default": "/opt/rlinf/easytier"},
            "digests": {"type": "list", "elements": "path", "default": []},
        },
        supports_check_mode=True,
    )
    params = module.params
    record = read_record(params["record"]) if params["record"] else {}
    unit = service_state(module, params["unit"]) if params["unit"] else {}
    gcs = start_gcs_read(params, unit, record)
    versions = VersionRead(venv_python(params), params["easytier_dir"]) if params["versions"] else None
    interfaces, default = network(module)
    manifest = read_manifest(params["manifest"]) if params["manifest"] else []
    recorded = {entry["path"] for entry in manifest}
    result = {
        "changed": False,
        "interfaces": interfaces,
        "default_route": default,
        "systemd": os.path.isdir("/run/systemd/system"),
        "apt": os.path.exists("/usr/bin/apt-get"),
        "os": os_release(),
        "python": python_info(module, params["python"]),
        "venv": venv_info(module, params["venv"], params["requirements"]),
        "paths": {key: path_info(str(path), recorded) for key, path in params["paths"].items() if path},
        "manifest": [{"path": e["path"], "kind": e["kind"]} for e in manifest],
        "record": record,
        "unit": unit,
        "os_units": [],
        "port_busy": False,
        "sandbox": {},
        "disk": {key: usage(str(path)) for key, path in params["disk"].items() if path},
        "token": token_info(params["token_file"]) if params["token_file"] else {},
        "host_firewall": host_firewalls(module),
        "digests": {str(path): file_state(str(path)) for path in params["digests"]},
    }
    if params["unit"]:
        result["os_units"] = [
            os.path.join(d, params["unit"] + ".service")
            for d in UNIT_DIRS
            if os.path.exists(os.path.join(d, params["unit"] + ".service"))
            and not is_ours(os.path.join(d, params["unit"] + ".service"))
        ]
        # /lib is often a symlink to /usr/lib: one unit, one report.
        result["os_units"] = sorted({os.path.realpath(p): p for p in result["os_units"]}.values())
    result["services"] = {name: service_state(module, name) for name in params["services"]} if result["systemd"] else {}
    if params["sandbox"] and result["systemd"]:
        result["sandbox"] = sandbox_info(module)
    gpus = gpu_info(module, result["venv"]) if params["gpus"] else None
    if gpus is not None:
        result["gpus"] = gpus
    if params["port"] and result["unit"].get("active") != "active":
        result["port_busy"] = listening(params["port"])
    result["gcs"] = gcs.result() if gcs is not None else {}
    result["versions"] = versions.result() if versions is not None else {}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
