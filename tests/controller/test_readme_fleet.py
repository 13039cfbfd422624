"""The README's "real fleet" example is real: its inventory and RLinf config, written out as the
README shows them, pass validate.yml, which prints exactly the table and block the README shows.
Controller only: validate.yml contacts no host."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.M | re.S)


def readme_blocks() -> list[str]:
    return FENCE.findall((ROOT / "README.md").read_text())


def test_the_readme_fleet_inventory_and_config_validate_as_the_readme_shows(tmp_path):
    files = {}
    for block in readme_blocks():
        first = block.splitlines()[0]
        if first.startswith("# ") and first[2:].endswith((".yml", ".yaml")):
            files[first[2:]] = block
    assert set(files) == {"inventories/mysite/hosts.yml", "inventories/mysite/group_vars/all.yml", "train.yaml"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    command = next(b for b in readme_blocks() if b.startswith("ansible-playbook validate.yml")).split()
    assert command == ["ansible-playbook", "validate.yml", "-i", "inventories/mysite", "-e", "rlinf_config=train.yaml"]
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    run = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), str(ROOT / "validate.yml"), *command[2:]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    shown = next(b for b in readme_blocks() if b.startswith("rank  host"))
    printed = [line.strip() for line in run.stdout.splitlines()]
    for line in shown.splitlines():
        assert line.strip() in printed, f"the README shows {line!r}; validate.yml printed:\n{run.stdout[-3000:]}"
    start = printed.index(shown.splitlines()[0].strip())
    assert printed[start : start + len(shown.splitlines())] == [line.strip() for line in shown.splitlines()]
