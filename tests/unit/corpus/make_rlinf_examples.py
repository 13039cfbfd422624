"""Regenerate rlinf_examples.yml from an RLinf checkout: every YAML file with a top-level cluster block.

    .venv/bin/python tests/unit/corpus/make_rlinf_examples.py /path/to/RLinf COMMIT

Each file is read with the validator's own loader (safe, duplicate keys rejected); the
``cluster:`` mapping is stored as data under the file's path. The RLinf files are Apache-2.0.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parents[3] / "collections"))
from ansible_collections.rlinf.cluster.plugins.plugin_utils.rlinf_config import load_config_text


class _Dumper(yaml.SafeDumper):
    """Lists indented under their key, as yamllint (ansible-lint) wants."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def main(root: str, commit: str) -> None:
    base = Path(root)
    configs = {}
    for path in sorted(base.rglob("*")):
        if path.suffix not in (".yaml", ".yml") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"^\s*cluster:", text, re.M):
            configs[str(path.relative_to(base))] = load_config_text(text, str(path))
    header = (
        "---\n"
        f"# Every cluster: block in RLinf's repository (RLinf/RLinf {commit},\n"
        f"# Apache-2.0), one per YAML file that has one: {len(configs)} files. Data for\n"
        "# tests/unit/test_rlinf_config_examples.py; regenerate with\n"
        "# tests/unit/corpus/make_rlinf_examples.py.\n"
    )
    out = Path(__file__).parent / "rlinf_examples.yml"
    out.write_text(header + yaml.dump(configs, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=100))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
