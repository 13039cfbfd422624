"""Give ansible-test its pip bootstrap without ci-files.testing.ansible.com.

``ansible-test sanity --venv`` creates each test's virtualenv without pip and fills it by
running ``get-pip.py``, which it downloads from ci-files.testing.ansible.com into
``~/.ansible/test/cache/get_pip_<version>.py`` unless that file is already there (the path
its own error message names for a manual download). This writes that file: the pip wheel of
the same version, fetched from PyPI by the controller's pip, and a script doing with it what
get-pip.py does (``pip install --upgrade --force-reinstall`` the packages it is given).
Every other requirement ansible-test installs comes from PyPI as usual.
"""

import os
import subprocess
import sys
import types

from ansible_test._internal.python_requirements import get_venv_packages

SCRIPT = """\
# Written by tests/sanity/offline_pip_bootstrap.py: get-pip.py for ansible-test, from {wheel}.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), {wheel!r}))

from pip._internal.cli.main import main  # noqa: E402

# get-pip.py's own options: it installs setuptools and wheel unless told not to; this never does.
args = [arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]
sys.exit(main(["install", "--quiet", "--upgrade", "--force-reinstall"] + args))
"""


def main() -> None:
    python = types.SimpleNamespace(version=f"{sys.version_info[0]}.{sys.version_info[1]}")
    version = get_venv_packages(python)["pip"]
    cache = os.path.expanduser("~/.ansible/test/cache")
    script = os.path.join(cache, f"get_pip_{version.replace('.', '_')}.py")
    wheel = f"pip-{version}-py3-none-any.whl"
    if os.path.exists(script) and os.path.exists(os.path.join(cache, wheel)):
        return
    os.makedirs(cache, exist_ok=True)
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"),
            *("--no-deps", "--only-binary", ":all:", "--dest", cache, f"pip=={version}"),
        ],
        check=True,
    )
    with open(f"{script}.tmp", "w", encoding="utf-8") as out:
        out.write(SCRIPT.format(wheel=wheel))
    os.replace(f"{script}.tmp", script)
    print(f"ansible-test's pip {version} bootstrap: {script}")


if __name__ == "__main__":
    main()
