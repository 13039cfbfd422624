"""Free space on Ray's temp dir, judged on a real nearly-full filesystem: a 64 MiB tmpfs on one
worker, named as that worker's ray_temp_dir in a copy of the lab inventory. status.yml warns
at 12.5% free and fails at 3% free naming the node and the path, and site.yml's preflight
refuses the node before anything changes (in check mode, so a missed refusal changes nothing).

Ray keeps running on its own temp dir: status judges the directory the inventory names and
Ray's node table does not depend on it (one Ray node per machine), so no restart is needed to
point the check at the small filesystem, and the lab is left as it was (nothing to re-deploy)
once the tmpfs is gone.
"""

from __future__ import annotations

import pytest
from lab_helpers import run_playbook, run_status, ssh, write_inventory

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

SMALL = "/tmp/rlinf-ray-small"
FILLER = f"{SMALL}/filler"


def small_temp_dir_on(worker):
    def mutate(groups):
        groups["ray_workers"]["hosts"][worker]["ray_temp_dir"] = SMALL

    return mutate


def fill(address, mib):
    ssh(address, f"rm -f {FILLER}; head -c {mib}M /dev/zero > {FILLER}; sync")


def test_a_nearly_full_temp_dir_warns_then_fails_naming_the_node_and_path(tmp_path, hosts):
    worker = list(hosts)[-1]
    address = hosts[worker]
    inventory = write_inventory(tmp_path, small_temp_dir_on(worker))
    ssh(address, f"mkdir -p {SMALL} && mount -t tmpfs -o size=64m rlinf-disk-test {SMALL}")
    try:
        fill(address, 56)  # 8 of 64 MiB free: 12.5%, between the fail (5) and warn (20) levels
        run, report = run_status(tmp_path, inventory=inventory)
        assert run.rc == 0 and report["ok"], report["problems"]
        node = next(n for n in report["nodes"] if n["name"] == worker)
        assert node["disk"]["temp_dir"]["mount"] == SMALL and node["disk"]["temp_dir"]["total"] == 64 * 1024**2
        assert [w for w in report["warnings"] if w.startswith(f"{worker}: Ray's temp dir {SMALL} has 12.5% free")]
        printed = " ".join(run.stdout.split())  # the callback wraps and quotes long lines
        assert f"- warning: {worker}: Ray''s temp dir {SMALL} has 12.5% free" in printed, run.stdout[-2000:]

        fill(address, 62)  # 2 MiB free: 3.1%, below 5
        run, report = run_status(tmp_path, inventory=inventory)
        assert run.rc != 0 and not report["ok"]
        failed = [p for p in report["problems"] if p.startswith(f"{worker}: Ray's temp dir {SMALL} has only 3.1% free")]
        assert failed and f"{SMALL}/session_*" in failed[0] and "ray_temp_dir" in failed[0], report["problems"]
        assert report["summary"].endswith("but 1 disk problem"), report["summary"]

        site = run_playbook("site.yml", tmp_path, inventory=inventory, cmdline="--check")
        assert site.rc != 0
        assert f"host '{worker}'" in site.stdout and f"Ray's temp dir {SMALL} has only 3.1% free" in site.stdout
    finally:
        ssh(address, f"rm -f {FILLER}; umount {SMALL}; rmdir {SMALL}", check=False)
    assert ssh(address, f"ls -d {SMALL}", check=False).returncode != 0
