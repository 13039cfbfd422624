"""site.yml lists one tag per phase (--list-tags, controller only), and the plan and the node
read run under any tag (they are tagged always too)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PHASES = {"validate", "preflight", "overlay", "firewall", "python", "env", "code", "ray", "check"}


def test_site_lists_every_phase_and_always_plans_first():
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "site.yml", "-i", "inventories/sample", "--list-tags"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    plays = re.findall(r"play #\d+ \(([^)]*)\): (.*?)\tTAGS: \[(.*?)\]", proc.stdout)
    listed_anywhere = re.findall(r"TAGS: \[(.*?)\]", proc.stdout)  # play tags and task tags
    tags = {tag.strip() for listed in listed_anywhere for tag in listed.split(",")}
    assert tags >= PHASES, sorted(PHASES - tags)
    first, second = ({t.strip() for t in listed.split(",")} for _h, _n, listed in plays[:2])
    assert first == {"always", "validate"} and second == {"always", "preflight"}, plays[:2]
