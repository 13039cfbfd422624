# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)
"""The restart policy: which Ray nodes a run restarts and why (before anything is applied, for the
restart guard), whether the drivers attached to the cluster allow it, and whether one node's Ray
restarts once this run applied its changes (roles/ray_node, through the ray_node_restart filter)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# What roles/ray_node passes the rule for its node, each a bool (role is "head" or "worker").
RESTART_FACTS = (
    "was_active",
    "files_restart",
    "venv_satisfied",
    "code_changed",
    "head_started",
    "missing_from_gcs",
    "stopped_first",
)


def ray_node_restart(facts: Mapping) -> bool:
    """Whether this node's Ray (re)starts now that the run applied its changes.

    Ray reads its environment, venv and code only at ``ray start``; a worker must rejoin a head that
    was (re)started in this run (it does not promptly on its own), and one the head's GCS does not list
    has left the cluster. A stopped Ray starts, and so does a worker this run stopped before its head
    restarted (``stopped_first``)."""
    unknown = sorted(set(facts) - {"role", *RESTART_FACTS})
    missing = sorted({"role", *RESTART_FACTS} - set(facts))
    if unknown or missing or facts["role"] not in ("head", "worker"):
        raise ValueError(f"ray_node_restart: unknown {unknown}, missing {missing}, role {facts.get('role')!r}")
    return bool(
        not facts["was_active"]
        or facts["files_restart"]
        or not facts["venv_satisfied"]
        or facts["code_changed"]
        or (facts["role"] == "worker" and facts["head_started"])
        or facts["missing_from_gcs"]
        or facts["stopped_first"]
    )


def restarts(plan: Mapping, states: Mapping[str, Mapping], every: str = "") -> dict[str, list[str]]:
    """Which Ray nodes this run would restart or stop, and why, in rank order.

    ``states`` maps each node of the run to what preflight and the dry write found: ``active``
    (its Ray unit runs), ``files`` (the node's files a write would change, when one of them
    restarts Ray), ``venv`` (what the venv lacks of the pinned set: pip would install), ``code``
    (a new code-sync wheel would be installed). A node whose Ray is not running only starts:
    nothing attached to it can be hurt. A restarted head restarts every running worker (they
    do not rejoin a new head promptly). With ``plan['removal']`` the removed node stops. With
    ``every`` (rebuild.yml's teardown) every running node restarts for that reason.
    """
    head = plan["order"][0]
    found: dict[str, list[str]] = {}
    removal = plan.get("removal") or {}
    if removal:
        found[removal["node"]] = [f"it is removed from the cluster (rank {removal['rank']}): its Ray stops"]
    renumbered = {r["name"]: r for r in removal.get("renumbered", [])}
    for name in plan["order"]:
        state = states.get(name)
        if not state or not state.get("active"):
            continue
        reasons = [every] if every else []
        if name in renumbered:
            reasons.append(f"its rank changes from {renumbered[name]['from']} to {renumbered[name]['to']}")
        if state.get("files"):
            reasons.append("its files change (" + ", ".join(state["files"]) + ")")
        if state.get("venv"):
            reasons.append("its venv changes (" + "; ".join(state["venv"]) + ")")
        if state.get("code"):
            reasons.append("a new code-sync wheel is installed into its venv")
        if reasons:
            found[name] = reasons
    if head in found:
        for name in plan["order"][1:]:
            if (states.get(name) or {}).get("active"):
                found.setdefault(name, []).append("the head restarts (workers rejoin a new head only when restarted)")
    order = list(plan["order"])
    if removal:
        order.insert(removal["rank"], removal["node"])
    return {name: found[name] for name in order if name in found}


def stop_first(plan: Mapping, planned: Mapping[str, Sequence[str]]) -> list[str]:
    """The running workers to stop before the head restarts, in rank order (empty when it does not).

    A worker's raylet whose GCS went away spins a core, and the new GCS's, until it gives up half a
    minute later; the run restarts it after the head anyway. Stopped first, it only starts then."""
    head = plan["order"][0]
    return [name for name in plan["order"][1:] if name in planned] if head in planned else []


def _driver_text(driver: Mapping) -> str:
    if driver.get("kind") == "unreadable":
        return (
            f"possibly a driver: the job table of the Ray head at {driver.get('address')} could not be read "
            f"({driver.get('error')})"
        )
    if driver.get("kind") == "launch":
        parts = [f"unit {driver['unit']}"]
        if driver.get("entry"):
            parts.append(f"running {driver['entry']!r}")
        if driver.get("started_at"):
            parts.append(f"since {driver['started_at']}")
        if driver.get("job_id"):
            parts.append(f"Ray job {driver['job_id']}")
        return "RLinf driver " + driver["unit"] + " (" + ", ".join(parts[1:] or parts) + ")"
    where = f"pid {driver.get('driver_pid')} on {driver.get('driver_ip')}"
    what = f": {driver['command']}" if driver.get("command") else ""
    namespace = f", namespace {driver['namespace']}" if driver.get("namespace") else ""
    return f"Ray job {driver.get('job_id')} (driver {where}{what}{namespace})"


def restart_verdict(planned: Mapping[str, Sequence[str]], drivers: Sequence[Mapping], allow: bool) -> dict:
    """Whether the restarts this run would make may go ahead while ``drivers`` run.

    Returns ``refused`` and ``msg``: the drivers, the nodes that would restart and why, and
    the ways out. Nothing restarts, nothing is refused; no driver, nothing is refused."""
    if not planned:
        return {"refused": False, "msg": "no Ray node restarts in this run"}
    nodes = "; ".join(f"{name}: {', '.join(reasons)}" for name, reasons in planned.items())
    if not drivers:
        return {"refused": False, "msg": f"no RLinf driver runs; restarting Ray on {nodes}"}
    listed = "; ".join(_driver_text(d) for d in drivers)
    if allow:
        return {
            "refused": False,
            "msg": f"rlinf_allow_restart=true: restarting Ray although {listed} runs (it will fail); {nodes}",
        }
    count = len(drivers)
    return {
        "refused": True,
        "msg": (
            f"{'An RLinf driver is' if count == 1 else f'{count} drivers are'} attached to the cluster: {listed}. "
            f"This run would restart Ray on {len(planned)} node{'s' if len(planned) != 1 else ''} and the driver "
            f"would fail: {nodes}. Ray was restarted nowhere and no Ray setting was written. Wait until the "
            "driver ends (status.yml lists it), stop it (systemctl stop UNIT on the head), or re-run with "
            "-e rlinf_allow_restart=true to restart anyway."
        ),
    }
