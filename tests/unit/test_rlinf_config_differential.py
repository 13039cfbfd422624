"""Differential tests: the validator against RLinf's own code, run from RLinf's source.

tests/unit/rlinf_reference.py reads the rlinf 0.3.0 wheel (``requirements/test.txt``; or
``RLINF_WHEEL``, or a checkout such as upstream main with ``RLINF_SRC``), takes the parsers
out of it with ``ast`` and runs them unchanged: ``parse_rank_config``,
``ComponentPlacement._parse_rank_map`` / ``_rank_map_to_process_resources_map`` and the
placement strategies' constructors, ``ClusterConfig.from_dict_cfg`` with every dataclass
it builds (node groups, env configs, robot configs, profiling backends), and
``RobotAutoConfig``. Without RLinf's source the tests fail: a differential test that did
not run must not pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import rlinf_reference
import yaml

from ansible_collections.rlinf.cluster.plugins.module_utils.managed_env_vars import MANAGED_ENV_VARS
from ansible_collections.rlinf.cluster.plugins.module_utils.topology import ACCELERATOR_TYPES, cluster_nodes
from ansible_collections.rlinf.cluster.plugins.plugin_utils.rlinf_config import (
    PROFILE_BACKENDS,
    ROBOT_COUNT_FIELDS,
    ROBOT_FIELDS,
    PlacementError,
    RankError,
    check_cluster,
    parse_placement,
    parse_rank_config,
    process_resources,
)

CORPUS = Path(__file__).parent / "corpus"
# Problems the validator raises on purpose where ClusterConfig accepts (see the case file).
DELIBERATE = ("component_placement: is empty",)


@pytest.fixture(scope="module")
def sources():
    found = rlinf_reference.Sources()
    if not found.found:
        pytest.fail("rlinf 0.3.0 is not installed: pip install --no-deps -r requirements/test.txt")
    return found


@pytest.fixture(scope="module")
def rlinf(sources):
    return rlinf_reference.load(sources)


class _Resolver:
    def __init__(self, count):
        self.hardware_resource_count = count
        self.hardware_types = None


def _walk(value, key=None):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, key)
    else:
        yield key, value


def _corpus_expressions():
    """Every rank expression and placement string written anywhere in the corpus."""
    ranks, placements = set(), {"", ",", " , "}
    for case in yaml.safe_load((CORPUS / "rank_expressions.yml").read_text()):
        ranks.add(str(case["expr"]))
    for case in yaml.safe_load((CORPUS / "placements.yml").read_text()):
        placements.add(str(case["placement"]))
    docs = [c.get("cluster") for c in yaml.safe_load((CORPUS / "bad_configs.yml").read_text())]
    docs += [yaml.safe_load(p.read_text()) for p in sorted((CORPUS / "good").glob("*.yaml"))]
    docs += list(yaml.safe_load((CORPUS / "rlinf_examples.yml").read_text()).values())
    for doc in docs:
        for key, value in _walk(doc or {}):
            if key == "node_ranks" and not isinstance(value, bool):
                ranks.add(str(value))
            skip = ("node_ranks", "label", "node_group", "type", "num_nodes", "robot_ip", "python_interpreter_path")
            if key not in skip and isinstance(value, str | int) and not isinstance(value, bool):
                placements.add(str(value))
    return sorted(ranks), sorted(placements)


RANK_EXPRS, PLACEMENT_STRS = _corpus_expressions()
AVAILABLE = [None, 0, 1, 2, 3, 4, 8, 11, 32]


def _outcome(func, *args):
    try:
        return ("ok", func(*args))
    except (RankError, PlacementError, AssertionError, ValueError, IndexError) as err:
        return ("error", type(err).__name__)


def test_corpus_exercises_every_outcome_of_rlinfs_parsers(rlinf):
    """The corpus reaches each way RLinf's parsers end, so the comparisons below test all of them."""
    rank_outcomes = {
        _outcome(rlinf.parse_rank_config, expr, None if n is None else list(range(n)), "node")[1]
        if _outcome(rlinf.parse_rank_config, expr, None if n is None else list(range(n)), "node")[0] == "error"
        else "ok"
        for expr in RANK_EXPRS
        for n in AVAILABLE
    }
    assert rank_outcomes >= {"ok", "ValueError", "AssertionError"}
    placement_outcomes = {
        (lambda o: o[1] if o[0] == "error" else "ok")(_outcome(rlinf._parse_rank_map, None, text, _Resolver(n)))
        for text in PLACEMENT_STRS
        for n in AVAILABLE[1:]
    }
    assert placement_outcomes >= {"ok", "ValueError", "AssertionError"}
    strategies = {rlinf_reference.placement_error(rlinf, text, 8, False) is None for text in PLACEMENT_STRS}
    assert strategies == {True, False}


@pytest.mark.parametrize("expr", RANK_EXPRS)
def test_rank_expression_matches_rlinf(rlinf, expr):
    for count in AVAILABLE:
        available = None if count is None else list(range(count))
        ours = _outcome(parse_rank_config, expr, available, "node")
        theirs = _outcome(rlinf.parse_rank_config, expr, available, "node")
        assert ours[0] == theirs[0], f"{expr!r} with {count} ranks: ours {ours}, rlinf {theirs}"
        if ours[0] == "ok":
            assert ours[1] == theirs[1], f"{expr!r} with {count} ranks"


@pytest.mark.parametrize("text", PLACEMENT_STRS)
def test_placement_matches_rlinf(rlinf, text):
    for count in [*AVAILABLE[1:], 400]:
        ours = _outcome(parse_placement, text, count)
        theirs = _outcome(rlinf._parse_rank_map, None, text, _Resolver(count))
        assert ours[0] == theirs[0], f"{text!r} on {count} resources: ours {ours}, rlinf {theirs}"
        if ours[0] == "ok":
            expected = [(list(r), p) for r, p in theirs[1].items()]
            assert [(r, p) for r, p in ours[1]] == expected
            assert process_resources(ours[1]) == rlinf._rank_map_to_process_resources_map(None, theirs[1])


@pytest.mark.parametrize("text", PLACEMENT_STRS)
@pytest.mark.parametrize("node_mode", [False, True])
def test_placement_refused_like_rlinfs_component_placement(rlinf, text, node_mode):
    """Issue 15 item 7: what RLinf's ComponentPlacement refuses ('' included), ours refuses, and no more.

    Eight CPU-only nodes (node placement) or one node with eight GPUs (resource placement).
    """
    if node_mode:
        nodes = cluster_nodes({"ray_head": ["h"], "ray_workers": [f"w{i}" for i in range(7)]}, {})
    else:
        nodes = cluster_nodes({"ray_head": ["h"]}, {"h": {"rlinf_gpus_per_node": 8}})
    for node in nodes:
        node["rlinf_gpus"] = 0 if node_mode else 8
    ours = check_cluster({"num_nodes": len(nodes), "component_placement": {"actor": text}}, nodes)["problems"]
    theirs = rlinf_reference.placement_error(rlinf, text, 8, node_mode)
    assert bool(ours) == bool(theirs), f"{text!r}: ours {ours}, rlinf {theirs}"


CASES = yaml.safe_load((CORPUS / "rlinf_cluster_config_cases.yml").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_cluster_config_cases_match_rlinf(rlinf, case):
    theirs = rlinf_reference.cluster_config_error(rlinf, case["cluster"])
    if "error" in case:
        assert theirs is not None and case["error"] in theirs, theirs
    else:
        assert theirs is None, theirs
    ours = [p for p in check_cluster(case["cluster"])["problems"] if not any(d in p for d in DELIBERATE)]
    assert bool(ours) == bool(theirs), f"ours {ours}, rlinf {theirs}"


EXAMPLES = yaml.safe_load((CORPUS / "rlinf_examples.yml").read_text())


def test_every_rlinf_example_gets_rlinfs_verdict(rlinf):
    """Issue 15 item 3: over every cluster: block in RLinf's repository, refused iff RLinf refuses."""
    mismatches, refused = [], 0
    for path, cluster in EXAMPLES.items():
        theirs = rlinf_reference.cluster_config_error(rlinf, cluster)
        ours = check_cluster(cluster, None, path)["problems"]
        refused += bool(theirs)
        if bool(ours) != bool(theirs):
            mismatches.append((path, ours, theirs))
    assert mismatches == []
    assert refused == 28  # placeholder robot IPs, and one hardware node_rank outside its group


def test_robot_fields_and_identifiers_match_rlinf(rlinf, sources):
    registry = rlinf.NodeHardwareConfig._hardware_config_registry
    assert set(registry) == set(ROBOT_FIELDS)
    kinds = {str: "str", int: "int", bool: "bool", list: "list"}
    for hw_type, cls in registry.items():
        hints = __import__("typing").get_type_hints(cls)
        theirs = {}
        for f in rlinf.dataclasses.fields(cls):
            if f.name == "node_rank":
                continue
            hint = rlinf.RobotAutoConfig._unwrap_optional(hints[f.name])
            theirs[f.name] = kinds[__import__("typing").get_origin(hint) or hint]
        assert theirs == ROBOT_FIELDS[hw_type], hw_type
    assert rlinf_reference.robot_count_fields(sources) == ROBOT_COUNT_FIELDS


ROBOT_CASES = yaml.safe_load((CORPUS / "robot_env_cases.yml").read_text())
ROBOT_ENV_NAMES = sorted({f.upper() for fields in ROBOT_FIELDS.values() for f in fields})


@pytest.mark.parametrize("case", ROBOT_CASES, ids=[c["name"] for c in ROBOT_CASES])
def test_robots_from_env_match_rlinf(rlinf, monkeypatch, case):
    """Issue 15 item 2: RobotAutoConfig, run on the case's env, finds as many robots as we count."""
    for name in ROBOT_ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    for name, value in case["env"].items():
        monkeypatch.setenv(name, str(value))
    cls = rlinf.NodeHardwareConfig._hardware_config_registry[case["type"]]
    configs = [cls(**c) for c in case["configs"]]
    count_fields = ROBOT_COUNT_FIELDS[case["type"]]
    try:
        if count_fields:
            found = rlinf.RobotAutoConfig.resolve(configs, config_cls=cls, node_rank=0, count_fields=count_fields)
        else:
            found = rlinf.RobotAutoConfig.resolve(configs) if configs else []
        theirs = len(found)
    except ValueError as err:
        theirs = f"error: {err}"
    if "error" in case:
        assert isinstance(theirs, str) and case["error"] in theirs, theirs
    else:
        assert theirs == case["robots"]


def test_profile_backends_match_rlinf(rlinf):
    register = rlinf.AcceleratorManager.profile_backend_register
    assert set(register) == set(PROFILE_BACKENDS)
    for backend, cls in register.items():
        assert set(PROFILE_BACKENDS[backend][0]) == {f.name for f in rlinf.dataclasses.fields(cls)}, backend


def test_accelerator_types_match_rlinf(rlinf, sources):
    """Issue 15 item 8: every accelerator RLinf supports is known, with the variable RLinf writes."""
    theirs = {t.value for t in rlinf.AcceleratorType} - {"NO_ACCEL"}
    assert theirs <= set(ACCELERATOR_TYPES)
    assert set(ACCELERATOR_TYPES) - theirs <= {"KUNLUN_XPU"}  # main only; 0.3.0 lacks it
    for accel, var in rlinf_reference.accelerator_env_vars(sources).items():
        assert ACCELERATOR_TYPES[accel][2] == var, accel


def test_variables_rlinfs_driver_sets_are_managed(sources):
    """Issue 15 item 5: an RLINF_* variable the driver assigns itself may not be frozen into a node's env."""
    for name in rlinf_reference.driver_set_env_vars(sources):
        assert name in MANAGED_ENV_VARS
