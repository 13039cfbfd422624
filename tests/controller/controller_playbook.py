"""Run a playbook on the controller alone, as the controller tests do (no lab host)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


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
