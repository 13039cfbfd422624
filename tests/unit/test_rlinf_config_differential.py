"""Differential test: our rank/placement grammar against rlinf 0.3.0's own parsers.

rlinf's modules import torch and ray at the top, so the package cannot be imported in
the controller venv. Instead the test reads the wheel's source (the installed ``rlinf``
package, found without importing it, or the wheel named by ``RLINF_WHEEL``), takes
``parse_rank_config`` (rlinf/scheduler/cluster/utils.py) and
``ComponentPlacement._parse_rank_map`` / ``_rank_map_to_process_resources_map``
(rlinf/scheduler/placement/placement.py) out of it with ``ast``, and runs them unchanged.
Install: ``pip install --no-deps -r requirements/test.txt`` (``make venv`` does). Without
the wheel the test fails: a differential test that did not run must not pass.
"""

from __future__ import annotations
import __future__

import ast
import importlib.util
import os
import zipfile
from pathlib import Path
from typing import Optional

import pytest
import yaml

from ansible_collections.rlinf.cluster.plugins.module_utils.rlinf_config import (
    PlacementError,
    RankError,
    parse_placement,
    parse_rank_config,
    process_resources,
)

CORPUS = Path(__file__).parent / "corpus"
UTILS = "rlinf/scheduler/cluster/utils.py"
PLACEMENT = "rlinf/scheduler/placement/placement.py"


def _read_sources() -> dict[str, str] | None:
    wheel = os.environ.get("RLINF_WHEEL")
    if wheel:
        with zipfile.ZipFile(wheel) as zf:
            return {name: zf.read(name).decode() for name in (UTILS, PLACEMENT)}
    spec = importlib.util.find_spec("rlinf")  # locates the package without running it
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations))).parent
    return {name: (root / name).read_text() for name in (UTILS, PLACEMENT)}


def _extract(source: str, path: str, names: list[str], namespace: dict):
    tree = ast.parse(source)
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in names:
            found[node.name] = node
    missing = set(names) - set(found)
    assert not missing, f"{missing} not found in {path}: has rlinf changed?"
    module = ast.Module(body=[found[n] for n in names], type_ignores=[])
    code = compile(module, path, "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True)
    exec(code, namespace)  # rlinf's own code, unchanged
    return [namespace[n] for n in names]


@pytest.fixture(scope="module")
def rlinf():
    sources = _read_sources()
    if sources is None:
        pytest.fail("rlinf 0.3.0 is not installed: pip install --no-deps -r requirements/test.txt")
    namespace: dict = {"Optional": Optional}
    (ref_parse,) = _extract(sources[UTILS], UTILS, ["parse_rank_config"], namespace)
    ref_map, ref_proc = _extract(
        sources[PLACEMENT],
        PLACEMENT,
        ["_parse_rank_map", "_rank_map_to_process_resources_map"],
        namespace,
    )
    return ref_parse, ref_map, ref_proc


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
    ranks, placements = set(), set()
    for case in yaml.safe_load((CORPUS / "rank_expressions.yml").read_text()):
        ranks.add(str(case["expr"]))
    for case in yaml.safe_load((CORPUS / "placements.yml").read_text()):
        placements.add(str(case["placement"]))
    docs = [c.get("cluster") for c in yaml.safe_load((CORPUS / "bad_configs.yml").read_text())]
    docs += [yaml.safe_load(p.read_text()) for p in sorted((CORPUS / "good").glob("*.yaml"))]
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


def test_corpus_has_expressions():
    assert len(RANK_EXPRS) >= 30
    assert len(PLACEMENT_STRS) >= 30


@pytest.mark.parametrize("expr", RANK_EXPRS)
def test_rank_expression_matches_rlinf(rlinf, expr):
    ref_parse, _, _ = rlinf
    for count in AVAILABLE:
        available = None if count is None else list(range(count))
        ours = _outcome(parse_rank_config, expr, available, "node")
        theirs = _outcome(ref_parse, expr, available, "node")
        assert ours[0] == theirs[0], f"{expr!r} with {count} ranks: ours {ours}, rlinf {theirs}"
        if ours[0] == "ok":
            assert ours[1] == theirs[1], f"{expr!r} with {count} ranks"


@pytest.mark.parametrize("text", PLACEMENT_STRS)
def test_placement_matches_rlinf(rlinf, text):
    _, ref_map, ref_proc = rlinf
    for count in [*AVAILABLE[1:], 400]:
        ours = _outcome(parse_placement, text, count)
        theirs = _outcome(ref_map, None, text, _Resolver(count))
        assert ours[0] == theirs[0], f"{text!r} on {count} resources: ours {ours}, rlinf {theirs}"
        if ours[0] == "ok":
            expected = [(list(r), p) for r, p in theirs[1].items()]
            assert [(r, p) for r, p in ours[1]] == expected
            assert process_resources(ours[1]) == ref_proc(None, theirs[1])
