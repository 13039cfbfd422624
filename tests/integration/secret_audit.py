"""Where a secret ended up: files (with their modes), process lists and the journal of a lab
node, files and processes on the controller. Used by the secrets audit and the EasyTier drill.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from lab_helpers import ssh

# Every place on a node the project or Ray writes to (the venvs, Ray's session logs under
# /tmp, the units, the env file, EasyTier's config), and where a leak would land.
NODE_TREES = "/etc /opt /tmp /var/tmp /var/log /var/lib /root /home /run /srv"
# The secret comes on stdin into a 0600 temporary file (left out of the results), so it is
# in no command line; grep reads its pattern from that file.
NODE_AUDIT = f"""
umask 077; P=$(mktemp); trap 'rm -f "$P"' EXIT; cat > "$P"
test -s "$P" || {{ echo "NO SECRET GIVEN"; exit 3; }}
grep -rlaF -D skip -f "$P" {NODE_TREES} 2>/dev/null | grep -vxF "$P" |
  while read -r f; do echo "FILE $(stat -c %a "$f") $f"; done
grep -laF -f "$P" /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | sed 's/^/PROC /'
echo "JOURNAL $(journalctl --no-pager -o cat | grep -caF -f "$P")"
"""


def node_audit(address: str, secret: str) -> dict:
    """{"files": {path: mode}, "processes": [...], "journal": count} for ``secret`` on a node."""
    lines = ssh(address, NODE_AUDIT, stdin=secret).stdout.splitlines()
    files = {}
    for line in lines:
        if line.startswith("FILE "):
            _, mode, path = line.split(" ", 2)
            files[path] = mode
    journal = [int(line.split()[1]) for line in lines if line.startswith("JOURNAL ")]
    return {
        "files": files,
        "processes": [line[len("PROC ") :] for line in lines if line.startswith("PROC ")],
        "journal": journal[0] if journal else None,
    }


def node_leaks(name: str, audit: dict) -> dict:
    """What an audit found outside 0600 files, by place."""
    leaks = {}
    loose = {path: mode for path, mode in audit["files"].items() if mode != "600"}
    if loose:
        leaks[f"{name} files not 0600"] = loose
    if audit["processes"]:
        leaks[f"{name} processes"] = audit["processes"]
    if audit["journal"] != 0:
        leaks[f"{name} journal"] = audit["journal"]
    return leaks


def controller_files_holding(secret: bytes, *trees: Path) -> dict[str, str]:
    """Path -> octal mode of every regular file under ``trees`` that contains ``secret``."""
    found = {}
    for tree in trees:
        for dirpath, _, files in os.walk(tree):
            for name in files:
                path = Path(dirpath) / name
                if path.is_symlink() or not path.is_file():
                    continue
                if secret in path.read_bytes():
                    found[str(path)] = oct(stat.S_IMODE(path.stat().st_mode))[2:]
    return found


def controller_processes_holding(secret: bytes) -> list[str]:
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        for part in ("cmdline", "environ"):
            try:
                if secret in (proc / part).read_bytes():
                    found.append(f"{proc}/{part}")
            except OSError:  # gone, or not ours to read
                continue
    return found
