#!/usr/bin/env python3
"""Mutation testing of the decision code (make mutate): does a unit test fail when the logic changes?

A small stdlib-``ast`` mutator, no third-party tool. For each source file below it finds the
mutation sites in order (see ``Sites``), and for each site writes the mutated file into a
throw-away copy of the checkout (never the tracked file) and runs the unit test files that cover
that source (``COVER``) with ``pytest -x``, under ``nice``, with a timeout. A mutant is killed
when a test fails, survives when every test passes, and times out when the run exceeds the
timeout (counted as killed: the change was noticed, as a hang).

Survivors that cannot be killed because the mutant behaves exactly as the original are listed
in CONTRIBUTING.md ("Mutation testing", one line each: ``- `ID`: why``); this script reads them
from there and reports them as equivalent instead of survived. The run fails below 95% of
non-equivalent mutants killed.

The cap: a file's sites are sampled deterministically (a site is kept when a hash of its ID,
which names the function, the operator and the source it changes, not its line, falls in the
file's share ``SHARE``), so an unrelated edit elsewhere does not change which sites run. The
output says how many sites each file has and how many ran.

    .venv/bin/python tests/mutate.py [--list] [--file static.py] [--all] [--jobs N]
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

# Imported once here so that each forked child pays only for our own modules and the tests.
import ansible.module_utils.basic  # noqa: F401
import packaging.requirements
import packaging.version  # noqa: F401
import pytest

ROOT = Path(__file__).resolve().parent.parent
MU = "plugins/module_utils/"
PU = "plugins/plugin_utils/"
# The plan is a package of modules (plugins/plugin_utils/plan/), one per step; the unit tests of
# the plan cover each of them. __init__.py only re-exports.
PLAN = PU + "plan/"
PLAN_MODULES = ("static.py", "purposes.py", "resolution.py", "outputs.py", "common.py")

PLAN_TESTS = [
    "test_plan.py",
    "test_plan_day2.py",
    "test_firewall_rules.py",
    "test_metrics_plan.py",
    "test_host_firewall.py",
    "test_disk.py",
    "test_auth_token.py",
    "test_controller_paths.py",
    "test_never_adopt.py",
    "test_node_path_roots.py",
    "test_pip_options.py",
    "test_secret_env.py",
    "test_ray_unit_sandbox.py",
    "test_plan_contract.py",
    "test_plan_types.py",
    "test_disk_venv_install.py",
    "test_plan_boundaries.py",
    "test_plan_sentences.py",
    "test_removal_plan.py",
]

# Each source file and the unit test files that cover it, the likeliest killers first (pytest -x
# stops at the first failure, so a killed mutant costs only the tests before it).
COVER: dict[str, list[str]] = {
    **{PLAN + name: PLAN_TESTS for name in PLAN_MODULES},
    PU + "rules.py": [
        "test_rules.py",
        "test_plan.py",
        "test_controller_paths.py",
        "test_node_path_roots.py",
        "test_pip_options.py",
        "test_rules_boundaries.py",
    ],
    MU + "firewall.py": ["test_firewall_rules.py", "test_host_firewall.py", "test_metrics_plan.py", "test_plan.py"],
    MU + "render.py": ["test_render.py", "test_ray_unit_sandbox.py", "test_plan.py"],
    MU + "ray_cluster_state.py": ["test_ray_cluster_state.py", "test_ray_cluster_state_edges.py"],
    MU + "expected_nodes.py": ["test_expected_nodes.py", "test_ray_cluster_state.py", "test_readiness_logic.py"],
    MU + "ray_driver.py": ["test_ray_driver.py"],
    MU + "restarts.py": ["test_ray_node_restart.py", "test_plan_day2.py", "test_restart_guard.py"],
    MU + "node_files.py": ["test_node_files.py", "test_owned_files.py", "test_node_state.py"],
    "plugins/modules/owned_files.py": ["test_owned_files.py", "test_node_files.py"],
}

# The share of each file's sites that runs (1.0: all), so that the whole run stays near ten
# minutes on one core. The plan's modules and rules.py are the large ones.
SHARE: dict[str, float] = {**{PLAN + name: 0.4 for name in PLAN_MODULES}, PU + "rules.py": 0.4}

SWAP_CMP = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
DROPPED_CALLS = {"append", "extend", "add", "update", "insert", "setdefault"}


class Site:
    """One mutation: the node it replaces (by its source span) and the text that replaces it."""

    def __init__(self, func: str, kind: str, node: ast.AST, new: str, old: str):
        self.func, self.kind, self.node, self.new, self.old = func, kind, node, new, old
        self.line = node.lineno
        self.id = ""  # set once every site of the file is known (occurrence numbers)


class Sites(ast.NodeVisitor):
    """The sites of one module, in source order.

    Operators: a comparison flipped (< <=, > >=, == !=, in / not in, is / is not), and/or swapped,
    a ``not`` dropped, True/False flipped, an integer constant +1, a returned value replaced by
    None, a ``raise`` dropped, an append/extend/add/update/insert/setdefault call dropped.
    Not mutated: docstrings and other strings, type annotations, ``__all__``/imports, and the
    DOCUMENTATION/EXAMPLES/RETURN strings of a module."""

    def __init__(self, source: str):
        self.source = source
        self.sites: list[Site] = []
        self.scope: list[str] = []

    def _add(self, kind: str, node: ast.AST, new: str) -> None:
        old = ast.get_source_segment(self.source, node) or ast.unparse(node)
        self.sites.append(Site(".".join(self.scope) or "<module>", kind, node, new, old))

    def _scoped(self, node):
        self.scope.append(node.name)
        for stmt in node.body:
            self.visit(stmt)
        for dec in getattr(node, "decorator_list", []):
            self.visit(dec)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.visit(node.value)

    def visit_arg(self, node):  # annotations
        return

    def visit_Compare(self, node):
        for i, op in enumerate(node.ops):
            if type(op) in SWAP_CMP:
                new = copy.deepcopy(node)
                new.ops[i] = SWAP_CMP[type(op)]()
                self._add(f"{type(op).__name__}->{SWAP_CMP[type(op)].__name__}", node, f"({ast.unparse(new)})")
        self.generic_visit(node)

    def visit_BoolOp(self, node):
        new = copy.deepcopy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        self._add(f"{type(node.op).__name__}->{type(new.op).__name__}", node, f"({ast.unparse(new)})")
        self.generic_visit(node)

    def visit_UnaryOp(self, node):
        if isinstance(node.op, ast.Not):
            self._add("drop-not", node, f"({ast.unparse(node.operand)})")
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, bool):
            self._add(f"{node.value}->{not node.value}", node, repr(not node.value))
        elif isinstance(node.value, int):
            self._add("int+1", node, f"({node.value + 1})")

    def visit_JoinedStr(self, node):  # f-strings: messages, not logic
        return

    def visit_Expr(self, node):
        value = node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return  # a docstring
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in DROPPED_CALLS:
            self._add(f"drop-{value.func.attr}", node, "pass")
        self.generic_visit(node)

    def visit_Return(self, node):
        if node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            self._add("return-None", node, "return None")
        self.generic_visit(node)

    def visit_Raise(self, node):
        self._add("drop-raise", node, "pass")
        self.generic_visit(node)

    def visit_Assign(self, node):
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if any(n in ("DOCUMENTATION", "EXAMPLES", "RETURN", "__all__") for n in names):
            return
        self.generic_visit(node)

    def visit_Import(self, node):
        return

    visit_ImportFrom = visit_Import


def sites_of(path: Path) -> list[Site]:
    source = path.read_text()
    finder = Sites(source)
    finder.visit(ast.parse(source))
    seen: dict[str, int] = {}
    for site in finder.sites:
        old = re.sub(r"\s+", " ", site.old)
        old = old if len(old) <= 60 else old[:57] + "..."
        base = f"{path.name}::{site.func}::{site.kind}::{old}"
        seen[base] = seen.get(base, 0) + 1
        site.id = base if seen[base] == 1 else f"{base}#{seen[base]}"
    return finder.sites


def mutated(source: str, site: Site) -> str:
    """The source with the site's span replaced by its new text (everything else as it was)."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode()))
    data = source.encode()
    start = offsets[site.node.lineno - 1] + site.node.col_offset
    end = offsets[site.node.end_lineno - 1] + site.node.end_col_offset
    out = (data[:start] + site.new.encode() + data[end:]).decode()
    ast.parse(out)  # a mutant always compiles
    return out


def kept(rel: str, site: Site) -> bool:
    share = SHARE.get(rel, 1.0)
    if share >= 1.0:
        return True
    return int(hashlib.sha256(site.id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < share


def equivalents() -> dict[str, str]:
    """The IDs CONTRIBUTING.md lists as equivalent mutants, with the reason given."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    section = (
        text.split("### Equivalent mutants", 1)[-1].split("\n## ", 1)[0] if "### Equivalent mutants" in text else ""
    )
    return dict(re.findall(r"^- `([^`]+)`: (.+)$", section, flags=re.M))


def copy_checkout(dest: Path) -> None:
    skip = {".git", ".venv", ".lab", "artifacts", "collections", "__pycache__", ".ruff_cache", ".pytest_cache"}
    shutil.copytree(ROOT, dest, ignore=lambda d, names: [n for n in names if n in skip], symlinks=True)
    (dest / "collections/ansible_collections/rlinf").mkdir(parents=True)
    (dest / "collections/ansible_collections/rlinf/cluster").symlink_to(dest)


def run_tests(work: Path, tests: list[str], timeout: float) -> str:
    """Run the tests in a forked child of this process: pytest and the third-party libraries are
    imported once here (never our own modules, which each child imports fresh from ``work``)."""
    args = ["-x", "-q", "-p", "no:cacheprovider", "--no-header", "-o", "addopts=", *[f"tests/unit/{t}" for t in tests]]
    pid = os.fork()
    if pid == 0:  # the child: its own process group, silent, exits with pytest's code
        try:
            os.setpgid(0, 0)
            os.chdir(work)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            code = pytest.main(args)
        except BaseException:
            code = 3
        os._exit(int(code))
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.02)
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return "survived"
    if code == 1:
        return "killed"
    return "error"  # collection or import error: the mutant broke the module (counted as killed)


def write(target: Path, text: str, stamp: int) -> None:
    """Write a mutant with an mtime of its own: a .pyc is reused only when mtime and size match."""
    target.write_text(text)
    os.utime(target, (stamp, stamp))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the sites that would run and exit")
    parser.add_argument("--file", action="append", help="only these source files (basename, e.g. static.py)")
    parser.add_argument("--all", action="store_true", help="every site, no sampling (slow: plan/ and rules.py)")
    parser.add_argument("--verbose", "-v", action="store_true", help="print every mutant's outcome")
    args = parser.parse_args()

    files = [f for f in COVER if not args.file or Path(f).name in args.file]
    equiv = equivalents()
    plan: list[tuple[str, list[Site], int]] = []
    for rel in files:
        every = sites_of(ROOT / rel)
        chosen = every if args.all else [s for s in every if kept(rel, s)]
        plan.append((rel, chosen, len(every)))
    if args.list:
        for rel, chosen, total in plan:
            print(f"# {rel}: {len(chosen)} of {total} sites")
            for s in chosen:
                print(f"{s.line:5} {s.id}  ->  {s.new}")
        return 0

    if os.nice(0) < 15:
        os.nice(15 - os.nice(0))
    os.environ["ANSIBLE_CONFIG"] = "ansible.cfg"
    started = time.monotonic()
    rows, survivors, listed_found = [], [], set()
    with tempfile.TemporaryDirectory(prefix="rlinf-mutate-") as tmp:
        work = Path(tmp) / "checkout"
        copy_checkout(work)
        for rel, chosen, total in plan:
            target = work / rel
            original = target.read_text()
            tests = COVER[rel]
            t0 = time.monotonic()
            if run_tests(work, tests, 300) != "survived":
                print(f"{rel}: its tests fail without a mutation; fix them first", file=sys.stderr)
                return 2
            timeout = max(10.0, 4 * (time.monotonic() - t0))
            counts = {"killed": 0, "survived": 0, "equivalent": 0, "timeout": 0}
            stamp = int(target.stat().st_mtime)
            try:
                for site in chosen:
                    stamp += 1
                    write(target, mutated(original, site), stamp)
                    outcome = run_tests(work, tests, timeout)
                    if outcome == "error":
                        outcome = "killed"
                    if outcome == "survived" and site.id in equiv:
                        outcome = "equivalent"
                        listed_found.add(site.id)
                    counts[outcome] += 1
                    if outcome == "survived":
                        survivors.append((rel, site))
                    if args.verbose or outcome == "survived":
                        print(f"  {outcome:10} {rel}:{site.line} {site.id}  ->  {site.new}", flush=True)
            finally:
                write(target, original, stamp + 1)
            rows.append((rel, total, len(chosen), counts))
            print(f"{rel}: {len(chosen)} mutants in {time.monotonic() - t0:.0f}s, {counts}", flush=True)
    elapsed = time.monotonic() - started

    head = f"{'file':44} {'sites':>5} {'ran':>5} {'killed':>6} {'survived':>8} {'equiv':>5} {'timeout':>7}"
    print("\n" + head + "\n" + "-" * len(head))
    tot = {"killed": 0, "survived": 0, "equivalent": 0, "timeout": 0, "ran": 0}
    for rel, total, ran, c in rows:
        print(f"{rel:44} {total:5} {ran:5} {c['killed']:6} {c['survived']:8} {c['equivalent']:5} {c['timeout']:7}")
        tot["ran"] += ran
        for k in c:
            tot[k] += c[k]
    detected = tot["killed"] + tot["timeout"]
    scored = tot["ran"] - tot["equivalent"]
    pct = 100.0 * detected / scored if scored else 100.0
    sampled = ", ".join(f"{Path(f).name} {int(s * 100)}%" for f, s in SHARE.items() if not args.all)
    print(
        f"\n{tot['ran']} mutants in {elapsed:.0f}s; {detected} of {scored} non-equivalent killed ({pct:.1f}%, "
        f"timeouts count as killed); {tot['equivalent']} equivalent (CONTRIBUTING.md)."
    )
    if sampled:
        print(f"Sampled by a hash of each site's ID: {sampled} of their sites (--all runs every site).")
    stale = sorted(set(equiv) - listed_found - {s.id for _, c, _ in plan for s in c})
    if stale and not args.file and args.all:
        print("Listed as equivalent but no longer a site: " + "; ".join(stale))
    if pct < 95.0:
        print(f"FAIL: {pct:.1f}% < 95% of non-equivalent mutants killed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
