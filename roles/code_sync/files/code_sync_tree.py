#!/usr/bin/env python3
"""Size guard and source digest of an RLinf checkout, run on the controller by
rlinf.cluster.code_sync (a collection role cannot ship its own module).

    code_sync_tree.py ROOT MAX_MB [--digest] [--exclude PATTERN ...]

Prints one JSON object: total_bytes, files, largest, digest (with --digest), and
`problem` (a sentence, or null). Exit 0 when the tree fits, 2 when it is too big or not
a checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# roles/code_sync/files -> the directory holding ansible_collections/
# Not resolve(): the collection is often a symlink to a checkout.
sys.path.insert(0, str(Path(os.path.abspath(__file__)).parents[6]))

from ansible_collections.rlinf.cluster.plugins.module_utils.code_sync import (
    measure_tree,
    size_problem,
    tree_digest,
)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("max_mb", type=float)
    parser.add_argument("--digest", action="store_true")
    parser.add_argument("--exclude", action="append", default=[])
    args = parser.parse_args()
    package_dir = os.path.join(args.root, "rlinf")
    if not os.path.isfile(os.path.join(package_dir, "__init__.py")):
        problem = (
            f"{args.root} is not an RLinf checkout: {package_dir}/__init__.py is missing. Set rlinf_src to "
            "the root of your RLinf clone (the directory holding pyproject.toml and rlinf/)."
        )
        print(json.dumps({"problem": problem}))
        return 2
    result = measure_tree(package_dir)
    result["problem"] = size_problem(result, args.max_mb, package_dir)
    if args.digest and not result["problem"]:
        result["digest"] = tree_digest(args.root, args.exclude)
    print(json.dumps(result))
    return 2 if result["problem"] else 0


if __name__ == "__main__":
    sys.exit(main())
