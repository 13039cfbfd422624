# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""The plan's contract, typed: every field a role or playbook may read of ``rlinf_plan`` (a
``ClusterPlan``) and ``rlinf_node`` (a ``NodePlan``). The plan (plan/) builds plain dicts of these shapes;
tests/unit/test_plan_types.py checks computed plans against them field by field (no field missing,
none unknown), and docs/plan.schema.json is generated from them (``make generate``).

A field marked ``NotRequired`` exists only after ``stage=resolve`` (the nodes were read) or only in
some runs (a remove-node plan's ``removal``); the comment says which."""

# No `from __future__ import annotations`: TypedDict reads NotRequired from evaluated annotations only.
from typing import Literal, NotRequired, TypedDict, get_args, get_origin, get_type_hints, is_typeddict

from ansible_collections.rlinf.cluster.plugins.plugin_utils.plan import PLAN_VERSION


class AddressRule(TypedDict):
    source: Literal["ray_node_ip", "overlay", "rlinf_comm_net_device", "default route"]
    value: str  # the address or NIC the rule names ("" for the default route)
    device: NotRequired[str]  # the overlay's device


class Dashboard(TypedDict):
    include: bool
    host: str
    port: int


class FirewallSettings(TypedDict):
    table: str  # our nft table
    unit: str  # the unit loading it at boot
    nft: str
    allowed_sources: list[str]  # every cluster node's address
    client_sources: list[str]  # who may reach Ray's client port
    manage_host: bool  # rlinf_firewall_manage_host: open Ray's ports through the host's own firewall


class Service(TypedDict):
    sandbox: bool  # the Ray unit's systemd sandbox on
    profile: str
    user: str  # ray_node_user ("" = root)
    run_as: str
    home: str
    state_dir: str
    record: list[dict]  # what the role records of the user it creates
    create_dirs: list[dict]
    job_dirs: list[str]  # where an RLinf job writes (checkpoints, logs): writable inside the sandbox
    temp_dir: str
    code_dest: str
    realtime: bool


class RemovedFile(TypedDict):
    path: str
    reload: NotRequired[bool]  # a unit drop-in: systemd reloads after


class MetricsUnit(TypedDict):
    unit: str
    package: str
    bin: str
    dropin: str
    files: list[str]
    remove: list[RemovedFile]
    runs_on: Literal["scraper", "node_exporter"]


class NodeMetrics(TypedDict):
    scraper: bool  # this node runs Prometheus
    node_exporter: bool
    node_exporter_port: int
    units: list[MetricsUnit]
    dashboards_dir: str
    services: list[str]  # the units preflight reads (one someone else runs is refused)


class OwnedTree(TypedDict):
    path: str
    kind: str


class HostFirewall(TypedDict):
    ufw_add: list[str]  # node addresses ufw lets through this run (rlinf_firewall_manage_host)
    our_table: Literal["apply", "remove", "leave"]  # the machine's firewall of ours (rlinf_firewall_enabled)


class NodeFile(TypedDict):
    path: str
    content: str
    mode: str
    restart: NotRequired[bool]  # a change restarts Ray
    reload: NotRequired[bool]  # a change reloads systemd


class WheelhouseLocks(TypedDict):
    deps: str  # the pinned set with its dependencies
    no_deps: str  # python_env_no_deps_packages; "" when there are none


class PipInstall(TypedDict):
    deps: list[str]
    no_deps: list[str]


class NodePlan(TypedDict):
    """One Ray node: ``rlinf_plan.nodes[name]``, bound as ``rlinf_node`` on its host."""

    name: str
    rank: int  # RLINF_NODE_RANK: 0 for the head, then the workers in inventory order
    role: Literal["head", "worker"]
    address: str  # the SSH address (ansible_host), not Ray's
    machine: str  # nodes sharing a machine (compute + control) share its venv and firewall
    machine_owner: bool  # the first Ray node of its machine: it installs what the machine shares
    installs_venv: bool
    peer_manifests: list[str]  # the manifests of the machine's other Ray nodes: purge keeps what they list
    node_groups: list[str]
    node_group: str
    gpus: int | None
    cuda_visible_devices: list[str] | None
    rlinf_gpus: int | None
    gpu_isolated: bool
    machine_gpu_node: str | None
    accelerator_type: str
    unit: str  # the Ray unit's name
    python: str
    paths: dict[str, str]  # every node path the roles write, sync into, record or delete
    compared_files: list[str]  # ray_node's files: the node read returns their digests (files_as_planned)
    ports: dict[str, int]  # Ray's ports on this node (the head has its GCS and client ports too)
    start_resources: dict[str, float | int]
    resources: dict[str, float | int]
    object_store_memory: int | None
    dashboard: Dashboard
    extra_args: list[str]
    env_vars: dict[str, str]
    secret_env_names: list[str]  # names only: the values never enter the plan
    device: str
    address_rule: AddressRule
    code_dest: str
    firewall: FirewallSettings
    service: Service
    run_as: str
    metrics: NodeMetrics
    ssh_verify_host: bool  # the code pushes check host keys as Ansible's ssh does for this host
    env_config_pythons: NotRequired[dict[str, str]]  # only with RLinf env configs naming interpreters
    # After stage=resolve (the node was read):
    running_python: NotRequired[str]
    ip: NotRequired[str]  # Ray's address, by the address rule
    ip_source: NotRequired[str]
    comm_device: NotRequired[str]  # RLINF_COMM_NET_DEVICES
    deployed: NotRequired[bool]  # the node holds our record
    missing_from_gcs: NotRequired[bool]  # the head's running GCS has no ALIVE node for this worker
    gcs_error: NotRequired[str]  # the head: why its running GCS could not be read ("" when it was, or not asked)
    own_trees: NotRequired[list[OwnedTree]]
    adopt: NotRequired[list[OwnedTree]]
    own_wheelhouse: NotRequired[list[OwnedTree]]
    host_firewall: NotRequired[HostFirewall]
    env: NotRequired[dict[str, str | int]]  # the env file's variables
    ray_args: NotRequired[list[str]]  # `ray start` arguments
    files: NotRequired[list[NodeFile]]  # the node's files, rendered (env file, unit, record, ...)
    files_digest: NotRequired[str]
    venv_install: NotRequired[bool]  # the venv lacks a pinned requirement
    wheelhouse_key: NotRequired[str]
    wheelhouse_locks: NotRequired[WheelhouseLocks]  # on the node; "" where it installs from no lock
    pip_install: NotRequired[PipInstall]  # what follows `pip install` there; [] where nothing is installed
    pushes_wheelhouse: NotRequired[bool]  # the one node per machine and wheelhouse that pushes it
    metrics_files: NotRequired[list[NodeFile]]
    metrics_units: NotRequired[list[MetricsUnit]]
    metrics_leftovers: NotRequired[list[MetricsUnit]]


class ClusterMetrics(TypedDict):
    enabled: bool
    host: str
    prometheus_host: str
    prometheus_port: int
    scrape_interval: int
    missing: NotRequired[list[str]]  # after resolve: Ray nodes not in this run (--limit) Prometheus would lose


class ClusterCheck(TypedDict):
    timeout: int
    poll_interval: int
    expected_totals: dict[str, float | int]


class DiskLimits(TypedDict):
    warn_percent: int
    fail_percent: int
    venv_min_free_mib: int


class ControllerPaths(TypedDict):
    artifacts_dir: str
    state_dir: str
    wheelhouse_dir: str
    token_file: str
    legacy_token_file: str
    code_wheel_dir: str
    report_path: str
    plan_path: str
    metrics_dashboards_dir: str
    vault_token: bool
    adopt_token_from: str  # added by the action, which reads the controller's files
    token_ready: bool
    token_present: bool


class TokenSource(TypedDict):
    source: Literal["vault", "controller", "node", "new", "rotate"]
    read_from: str  # the node whose token the run takes ("" unless source is node)
    read_path: str  # its token file ("" unless source is node)


class ClusterSettings(TypedDict):
    """``rlinf_plan.cluster``: what holds for the whole cluster."""

    head: str
    num_nodes: int
    ray_version: str
    requirements: list[str]
    no_deps_requirements: list[str]
    pip_extra_args: list[str]
    index_url: str
    require_hashes: bool  # python_env_require_hashes
    auth: bool
    overlay: bool
    overlay_dev: str
    firewall: bool
    pin_ports: bool
    metrics: ClusterMetrics
    code_sync: Literal["none", "rsync", "package"]
    src: str
    join_batch: str
    head_wait_timeout: int
    check: ClusterCheck
    disk: DiskLimits
    members: list[str]  # the overlay's members, by name
    controller: ControllerPaths
    # After stage=resolve:
    head_ip: NotRequired[str]
    head_port: NotRequired[int]
    head_address: NotRequired[str]  # ip:port, the port from the head's record
    token: NotRequired[TokenSource]


class Removal(TypedDict):
    node: str
    rank: int
    renumbered: list[dict]  # {name, from, to}: "from" is a Python keyword, so not typed field by field
    explicit: list[str]
    inventory_file: str
    summary: list[str]
    node_plan: NodePlan


class LaunchNames(TypedDict):
    """``rlinf_plan.launch`` (launch.yml only): the run's names on the head."""

    unit: str  # rlinf-launch-<rlinf_launch_name or the UTC time>
    dir: str  # the head's checkout: the driver's working directory
    script: str
    log: str
    record: str  # read by status.yml and the restart guard
    outcome: str  # written by the run's wrapper at its end


class WheelhouseBuild(TypedDict):
    key: str
    dir: str
    args: list[str]
    stamp: str
    locks: WheelhouseLocks  # file names in dir
    python: str
    machine: str
    hosts: list[str]
    complete: bool  # added by the action, which reads the controller's files


class ExpectedNode(TypedDict):
    name: str
    rank: int
    ip: str
    resources: dict[str, float | int]
    temp_dir: NotRequired[str]
    python: str
    comm_device: NotRequired[str]
    env: dict[str, str]
    write_dirs: list[str]


class ClusterPlan(TypedDict):
    """``rlinf_plan``: the whole plan, the same object on every host."""

    version: int  # plan.PLAN_VERSION
    purpose: str  # the playbook that asked: site, status, teardown, purge, launch, remove-node, ...
    order: list[str]  # node names in rank order
    cluster: ClusterSettings
    run: dict[str, object]  # the run's own variables (-e), secrets left out
    nodes: dict[str, NodePlan]
    warnings: list[str]
    config_cluster: dict | None  # the RLinf config's cluster: block, when one is given
    removal: NotRequired[Removal]  # remove-node only
    launch: NotRequired[LaunchNames]  # launch only
    # After stage=resolve:
    wheelhouses: NotRequired[list[WheelhouseBuild]]
    expected_nodes: NotRequired[list[ExpectedNode]]
    gpu_nodes: NotRequired[list[dict]]
    disk_warnings: NotRequired[list[str]]


def _schema_of(tp, defs: dict) -> dict:
    if is_typeddict(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder: a type refers to itself only through this name
            hints = get_type_hints(tp)
            defs[name] = {
                "type": "object",
                "properties": {key: _schema_of(hint, defs) for key, hint in hints.items()},
                "required": sorted(tp.__required_keys__),
                "additionalProperties": False,
            }
            if tp.__doc__ and tp.__doc__ != TypedDict.__doc__:
                defs[name]["description"] = " ".join(tp.__doc__.split())
        return {"$ref": f"#/$defs/{name}"}
    origin, args = get_origin(tp), get_args(tp)
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is type(None):
        return {"type": "null"}
    if tp is object:
        return {}
    if tp is dict or (origin is dict and not args):
        return {"type": "object"}
    if tp is list:
        return {"type": "array"}
    if origin is Literal:
        return {"enum": list(args)}
    if origin is list:
        return {"type": "array", "items": _schema_of(args[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema_of(args[1], defs)}
    if args:  # a union
        return {"anyOf": [_schema_of(arg, defs) for arg in args]}
    raise TypeError(f"no JSON Schema for {tp!r}")


def json_schema() -> dict:
    """The JSON Schema of rlinf_plan (docs/plan.schema.json is this, written by make generate)."""
    defs: dict = {}
    root = _schema_of(ClusterPlan, defs)
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "rlinf.cluster plan (rlinf_plan; rlinf_node is one of its nodes)",
        **root,
        "$defs": dict(sorted(defs.items())),
    }
    defs["ClusterPlan"]["properties"]["version"] = {"const": PLAN_VERSION}
    return schema


if __name__ == "__main__":
    import json

    print(json.dumps(json_schema(), indent=2))
