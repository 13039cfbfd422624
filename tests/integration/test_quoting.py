"""Values quoted for systemd are read back by systemd as they were written (a real unit on a lab host)."""

from __future__ import annotations

import json

import pytest
from lab_helpers import ssh

from ansible_collections.rlinf.cluster.plugins.module_utils.render import systemd_line

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("cluster")]

UNIT = "rlinf-quoting-test"
WORDS = [
    "plain",
    "with space",
    "100%",
    "%h",
    "$HOME",
    "${PATH}",
    'double"quote',
    "single'quote",
    "back\\slash",
    "trailing\\",
    ";",
    "semi;colon",
    '--resources={"franka":1}',
    "",
]
DUMP = "import json, sys; open('/run/rlinf-quoting.json', 'w').write(json.dumps(sys.argv[1:]))"


def test_systemd_reads_every_quoted_word_back_unchanged(hosts):
    address = next(iter(hosts.values()))
    unit = (
        "[Service]\nType=oneshot\n"
        f"Environment={systemd_line(['QUOTED=a b%c'])}\n"
        f"ExecStart={systemd_line(['/usr/bin/python3', '-c', DUMP, *WORDS])}\n"
        "ExecStartPost=/bin/sh -c 'printenv QUOTED > /run/rlinf-quoting.env'\n"
    )
    try:
        ssh(address, f"cat > /etc/systemd/system/{UNIT}.service && systemctl daemon-reload", stdin=unit)
        ssh(address, f"systemctl start {UNIT}.service")
        seen = json.loads(ssh(address, "cat /run/rlinf-quoting.json").stdout)
        assert seen == WORDS
        assert ssh(address, "cat /run/rlinf-quoting.env").stdout == "a b%c\n"
    finally:
        ssh(
            address,
            f"rm -f /etc/systemd/system/{UNIT}.service /run/rlinf-quoting.json /run/rlinf-quoting.env;"
            " systemctl daemon-reload",
            check=False,
        )
