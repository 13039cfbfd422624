#!/usr/bin/env python3
"""Look for the EasyTier network secret anywhere on this host but its 0600 config.

    secret_scan.py CONFIG SHA256

Reads the secret from CONFIG itself (so the secret never travels on a command line or
through the environment of this check), checks it hashes to SHA256, then searches every
process's cmdline and environ, `ps` output, the journal and every regular file outside
/proc, /sys and /dev. Prints a JSON report; exit 0 only when the secret is found nowhere
else and CONFIG is a root-owned 0600 file.
"""

import hashlib
import json
import os
import stat
import subprocess
import sys
import tomllib

SKIP_DIRS = {"/proc", "/sys", "/dev"}
MAX_FILE = 256 * 1024 * 1024


def main() -> int:
    config, expected = sys.argv[1], sys.argv[2]
    st = os.stat(config)
    with open(config, "rb") as handle:
        secret = tomllib.load(handle)["network_identity"]["network_secret"]
    needle = secret.encode()
    report = {
        "config_mode": oct(stat.S_IMODE(st.st_mode)),
        "config_owner_uid": st.st_uid,
        "secret_matches_inventory": hashlib.sha256(needle).hexdigest() == expected,
        "found": [],
    }
    me = str(os.getpid())
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or pid == me:
            continue
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as handle:
                    if needle in handle.read():
                        report["found"].append(f"/proc/{pid}/{part}")
            except OSError:
                pass
    for name, argv in (("ps", ["ps", "auxwwe"]), ("journal", ["journalctl", "--no-pager", "-o", "cat"])):
        out = subprocess.run(argv, capture_output=True, check=False).stdout
        if needle in out:
            report["found"].append(name)
    real_config = os.path.realpath(config)
    files = 0
    for root, dirs, names in os.walk("/", topdown=True):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in SKIP_DIRS]
        for name in names:
            path = os.path.join(root, name)
            try:
                info = os.lstat(path)
                if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE or path == real_config:
                    continue
                with open(path, "rb") as handle:
                    files += 1
                    if needle in handle.read():
                        report["found"].append(path)
            except OSError:
                pass
    report["files_scanned"] = files
    print(json.dumps(report))
    ok = (
        not report["found"]
        and report["secret_matches_inventory"]
        and report["config_mode"] == "0o600"
        and st.st_uid == 0
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
