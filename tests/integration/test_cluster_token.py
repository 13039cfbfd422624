"""The cluster is the source of truth for its own token: a controller without its state dir (an
AWX job's fresh execution environment) takes the token the nodes hold instead of minting one, so
site.yml, in check mode or not, changes nothing and restarts no node; the token is kept in the new
state dir; only -e ray_auth_rotate=true gives the cluster a new one. The token is compared by
digest, never printed."""

from __future__ import annotations

import shutil
import stat
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml
from lab_helpers import CONTROLLER_TOKEN, run_playbook, ssh, token_digest, wait_for_alive, write_inventory

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

NODE_TOKEN = "/etc/rlinf/ray-auth-token"
UNIT = "rlinf-ray"


def on_every_node(hosts, command) -> dict[str, str]:
    with ThreadPoolExecutor(max_workers=len(hosts)) as pool:
        out = pool.map(lambda address: ssh(address, command).stdout.strip(), hosts.values())
    return dict(zip(hosts, out, strict=True))


def node_digests(hosts) -> dict[str, str]:
    return {name: out.split()[0] for name, out in on_every_node(hosts, f"sha256sum {NODE_TOKEN}").items()}


def started(hosts) -> dict[str, str]:
    return on_every_node(hosts, f"systemctl show -p ActiveEnterTimestampMonotonic --value {UNIT}")


def stateless_inventory(tmp_path):
    """A copy of the lab inventory with a real, empty state dir of its own (not the lab's .rlinf)."""
    inventory = write_inventory(tmp_path, lambda groups: None)
    (inventory / ".rlinf").unlink()
    state, artifacts = tmp_path / "fresh-state", tmp_path / "fresh-artifacts"
    group_vars = inventory / "group_vars" / "all.yml"
    data = yaml.safe_load(group_vars.read_text()) or {}
    # artifacts/ too: its secrets/ is where earlier releases kept a token, adopted when present.
    data.update(rlinf_state_dir=str(state), rlinf_artifacts_dir=str(artifacts))
    group_vars.write_text(yaml.safe_dump(data, sort_keys=False))
    return inventory, state / "secrets" / "ray-auth-token"


def recap_changed(run) -> dict[str, int]:
    return {host: count for host, count in run.changed().items() if count}


def test_a_controller_without_state_takes_the_nodes_token_and_restarts_nothing(tmp_path, hosts):
    head = next(iter(hosts.values()))
    token = node_digests(hosts)
    assert len(set(token.values())) == 1, "the lab's nodes hold one token"
    ids = {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()}
    since = started(hosts)
    inventory, kept = stateless_inventory(tmp_path)

    dry = run_playbook("site.yml", tmp_path, inventory=inventory, events=True, cmdline="--check --diff")
    assert dry.rc == 0, dry.stdout[-3000:]
    assert recap_changed(dry) == {}, dry.stdout[-3000:]
    assert not kept.exists(), "check mode wrote the controller's token"

    run = run_playbook("site.yml", tmp_path, inventory=inventory, events=True)
    assert run.rc == 0, run.stdout[-3000:]
    assert recap_changed(run) == {}, run.stdout[-3000:]
    assert set(run.stats.get("ok", {})) >= set(hosts), run.stats
    assert token_digest(kept) == next(iter(token.values()))
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert node_digests(hosts) == token
    assert started(hosts) == since, "the Ray unit restarted"
    assert {ip: n["node_id"] for ip, n in wait_for_alive(head, len(hosts)).items()} == ids
    # Nowhere but the kept file: not in the output, ansible-runner's events, or the reports.
    value = kept.read_bytes().strip()
    assert value not in (dry.stdout + run.stdout).encode(), "the token was printed"
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and p != kept and value in p.read_bytes()]
    assert not leaked, f"the token is in {leaked}"


def test_ray_auth_rotate_gives_every_node_a_new_token(tmp_path, hosts):
    head = next(iter(hosts.values()))
    before = node_digests(hosts)
    lab_token = token_digest(CONTROLLER_TOKEN)
    assert set(before.values()) == {lab_token}
    inventory, kept = stateless_inventory(tmp_path)
    try:
        run = run_playbook("site.yml", tmp_path, inventory=inventory, extravars={"ray_auth_rotate": True})
        assert run.rc == 0, run.stdout[-3000:]
        after = node_digests(hosts)
        assert len(set(after.values())) == 1 and set(after.values()) != {lab_token}, "no new token on every node"
        assert token_digest(kept) == next(iter(after.values()))
        wait_for_alive(head, len(hosts))
        # Without the flag, the next run keeps the rotated token: nothing changes.
        again = run_playbook("site.yml", tmp_path, inventory=inventory)
        assert again.rc == 0 and recap_changed(again) == {}, again.stdout[-3000:]
    finally:
        # Back to the lab's token: its own inventory's state dir holds it, so site.yml puts it back.
        restore = run_playbook("site.yml", tmp_path)
        assert restore.rc == 0, restore.stdout[-3000:]
        assert set(node_digests(hosts).values()) == {lab_token}
        wait_for_alive(head, len(hosts))
        shutil.rmtree(kept.parent, ignore_errors=True)
