"""How one user-facing value is checked: each rule normalises a value or raises ``Bad``.

A rule is a function ``rule(value) -> normalised value``. ``Bad(what, fix)`` says what is
wrong with the value and how to fix it; the schema adds the host and the variable. The rules
know nothing of the inventory: what needs several hosts (unique ports on one machine, one
value for the whole cluster) is the plan's job, what needs a host's state is preflight's.

Controller-only: the plan imports this, no module that runs on a node does.
"""

from __future__ import annotations

import contextlib
import fnmatch
import ipaddress
import math
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from ansible_collections.rlinf.cluster.plugins.module_utils import pip_options

try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version
except ImportError as err:
    # ansible-core requires packaging, so a controller has it; ansible-test's import sanity
    # test loads plugins without it and asks for the guard (its docs' "import" page).
    PACKAGING_IMPORT_ERROR: ImportError | None = err
else:
    PACKAGING_IMPORT_ERROR = None


class Bad(ValueError):
    """A value a rule refuses: ``what`` is wrong with it, ``fix`` says what to write instead."""

    def __init__(self, what: str, fix: str):
        self.what = what
        self.fix = fix
        super().__init__(f"{what}; {fix}")


Rule = Callable[[object], object]

# Directories of the operating system: a path we create, write or may delete is never one of
# these, nor a parent of one (``/`` is the parent of every one).
SYSTEM_DIRS = frozenset(
    {
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/etc/default",
        "/etc/profile.d",
        "/etc/ssh",
        "/etc/sudoers.d",
        "/etc/systemd",
        "/etc/systemd/system",
        "/home",
        "/lib",
        "/lib/systemd",
        "/lib/systemd/system",
        "/lib32",
        "/lib64",
        "/libx32",
        "/lost+found",
        "/media",
        "/mnt",
        "/opt",
        "/proc",
        "/root",
        "/run",
        "/run/systemd",
        "/sbin",
        "/snap",
        "/srv",
        "/sys",
        "/tmp",
        "/usr",
        "/usr/bin",
        "/usr/include",
        "/usr/lib",
        "/usr/lib/systemd",
        "/usr/lib/systemd/system",
        "/usr/lib64",
        "/usr/libexec",
        "/usr/local",
        "/usr/local/bin",
        "/usr/local/lib",
        "/usr/local/sbin",
        "/usr/sbin",
        "/usr/share",
        "/usr/src",
        "/var",
        "/var/backups",
        "/var/cache",
        "/var/lib",
        "/var/local",
        "/var/lock",
        "/var/log",
        "/var/mail",
        "/var/opt",
        "/var/run",
        "/var/spool",
        "/var/tmp",
    }
)
# Files of the operating system a path we write may never be.
SYSTEM_FILES = frozenset(
    {
        "/etc/bash.bashrc",
        "/etc/crontab",
        "/etc/environment",
        "/etc/fstab",
        "/etc/group",
        "/etc/gshadow",
        "/etc/hostname",
        "/etc/hosts",
        "/etc/locale.gen",
        "/etc/login.defs",
        "/etc/machine-id",
        "/etc/nsswitch.conf",
        "/etc/os-release",
        "/etc/passwd",
        "/etc/profile",
        "/etc/resolv.conf",
        "/etc/shadow",
        "/etc/shells",
        "/etc/ssh/ssh_config",
        "/etc/ssh/sshd_config",
        "/etc/sudoers",
        "/etc/sysctl.conf",
    }
)
# One path segment systemd, the shell, PATH and nft all read as plain text: no space, quote,
# backslash, '$', '%' (a systemd specifier), ':' (a PATH separator), ';' or control character.
_SEGMENT = re.compile(r"^[A-Za-z0-9._+@,=-]+$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_UNIT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
# Units of the operating system (and services a host commonly runs) our units never replace.
_OS_UNITS = re.compile(
    r"^(ssh|sshd|systemd|network|networking|NetworkManager|dbus|cron|getty|serial-getty|console|user|init|"
    r"polkit|udev|rsyslog|syslog|journald|logind|resolved|timesyncd|chrony|ntp|nftables|iptables|ip6tables|"
    r"firewalld|ufw|docker|containerd|podman|kubelet|apt|unattended-upgrades|emergency|rescue|multi-user|"
    r"graphical|default|basic|sysinit|local-fs|remote-fs|swap|shutdown|reboot|halt|poweroff)([.@_-].*)?$"
)
_NFT_TABLE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,31}$")
# Tables iptables-nft, firewalld and container engines own.
_FOREIGN_NFT_TABLES = frozenset({"filter", "nat", "mangle", "raw", "security", "firewalld", "docker", "podman"})
_DEVICE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
# A portable system user name (useradd's default NAME_REGEX, 32 characters at most).
_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
# Accounts the operating system or other services own: Ray never shares one (a user name we
# create is ours alone, and purge removes it).
_OS_USERS = frozenset(
    {
        "root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp", "proxy",
        "www-data", "backup", "list", "irc", "gnats", "nobody", "sshd", "messagebus", "polkitd", "_apt",
        "systemd-network", "systemd-resolve", "systemd-timesync", "systemd-coredump", "prometheus",
    }
)  # fmt: skip
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LABEL = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
_EXTRA = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_RESOURCE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:/-]{0,63}$")
_ALREADY_WRITABLE = ("/tmp", "/var/tmp")
_BOOL_TRUE = {"true", "yes", "on", "1"}
_BOOL_FALSE = {"false", "no", "off", "0"}


def describe(value: object) -> str:
    """A value as the operator wrote it, shortened for a message."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _reject_control(text: str, what: str) -> None:
    if _CONTROL.search(text):
        raise Bad(f"holds a control character (newline, tab...) in {what}", "write it on one line, without them")


# Scalars ------------------------------------------------------------------------------


def boolean(value):
    """true/false, or a word Ansible reads as one (yes/no, on/off, 1/0), as -e passes them."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, str)):
        text = str(value).strip().lower()
        if text in _BOOL_TRUE:
            return True
        if text in _BOOL_FALSE:
            return False
    raise Bad("is not a boolean", "write true or false")


def integer(low: int | None = None, high: int | None = None, unit: str = "") -> Rule:
    def rule(value):
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise Bad("is not a whole number", f"write a whole number{_range_text(low, high)}")
        try:
            number = int(str(value).strip()) if not isinstance(value, (int, float)) else int(value)
        except ValueError:
            raise Bad("is not a whole number", f"write a whole number{_range_text(low, high)}") from None
        if (low is not None and number < low) or (high is not None and number > high):
            span = _range_text(low, high).strip().removeprefix("in ")
            raise Bad(f"is outside {span}", f"write a number{_range_text(low, high)}{unit}")
        return number

    return rule


def number(low: float | None = None, above: float | None = None) -> Rule:
    def rule(value):
        if isinstance(value, bool):
            raise Bad("is not a number", "write a number")
        try:
            result = float(str(value).strip()) if not isinstance(value, (int, float)) else float(value)
        except ValueError:
            raise Bad("is not a number", "write a number") from None
        if not math.isfinite(result):
            raise Bad("is not a finite number", "write a number")
        if low is not None and result < low:
            raise Bad(f"is below {low:g}", f"write a number >= {low:g}")
        if above is not None and result <= above:
            raise Bad(f"is not above {above:g}", f"write a number > {above:g}")
        return int(result) if result.is_integer() and not isinstance(value, float) else result

    return rule


def _range_text(low, high) -> str:
    if low is not None and high is not None:
        return f" in {low}..{high}"
    if low is not None:
        return f" >= {low}"
    if high is not None:
        return f" <= {high}"
    return ""


port = integer(1, 65535)
# Ports `ray start` pins (and the firewall guards) stay out of the privileged range.
pinned_port = integer(1024, 65535)


def optional(rule: Rule) -> Rule:
    """None (or an empty string) stays None; anything else goes through ``rule``."""

    def checked(value):
        if value is None or (isinstance(value, str) and value.strip() == ""):
            return None
        return rule(value)

    return checked


def choice(*choices: str) -> Rule:
    def rule(value):
        text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else None
        if text not in choices:
            raise Bad("is not one of the choices", "write one of " + ", ".join(choices))
        return text

    return rule


def text(pattern: re.Pattern | None = None, empty: bool = True, max_len: int = 4096, hint: str = "") -> Rule:
    def rule(value):
        if value is None:
            value = ""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise Bad(f"is a {type(value).__name__}, not a string", "write a plain string")
        result = str(value)
        _reject_control(result, "a string")
        if result == "":
            if empty:
                return ""
            raise Bad("is empty", hint or "set a value")
        if len(result) > max_len:
            raise Bad(f"is longer than {max_len} characters", "shorten it")
        if pattern is not None and not pattern.match(result):
            raise Bad("does not have the allowed form", hint or f"match {pattern.pattern}")
        return result

    return rule


def secret(min_len: int) -> Rule:
    """A secret: long enough, printable, one line. Messages never show it."""

    def rule(value):
        if value is None or value == "":
            return ""
        if not isinstance(value, str):
            raise Bad("is not a string", "store a random string (ansible-vault encrypt_string)")
        if _CONTROL.search(value) or value != value.strip() or " " in value:
            raise Bad("holds spaces or control characters", "use a random string of letters and digits")
        if len(value) < min_len:
            raise Bad(f"is shorter than {min_len} characters", f"use a random string of at least {min_len} characters")
        return value

    return rule


def version_at_least(minimum: str, what: str) -> Rule:
    def rule(value):
        if not isinstance(value, str) or not re.match(r"^[0-9]+\.[0-9]+\.[0-9]+$", value.strip()):
            raise Bad("is not an X.Y.Z version string", f'quote it, e.g. "{minimum}" or later')
        if Version(value.strip()) < Version(minimum):
            raise Bad(f"is older than {minimum} ({what})", f"set {minimum} or later")
        return value.strip()

    return rule


def scalar(value):
    """A TOML/YAML scalar: a boolean, a number or a one-line string."""
    if isinstance(value, (bool, int, float)):
        return value
    return text()(value)


def url(value):
    result = text()(value)
    if result == "":
        return ""
    if not re.match(r"^https?://[^\s'\"\\]+$", result):
        raise Bad("is not an http(s) URL", "write e.g. https://mirror.example/simple")
    return result


# Names --------------------------------------------------------------------------------


def unit_name(value):
    """A systemd unit of ours (without .service): never one the operating system uses."""
    result = text(empty=False)(value)
    if result.endswith(".service"):
        raise Bad("ends in .service", "write the unit name without the suffix")
    if not _UNIT.match(result):
        raise Bad(
            "is not a plain unit name",
            "use letters, digits, '_', '.', '-' (starting with a letter or digit), e.g. rlinf-ray",
        )
    if _OS_UNITS.match(result):
        raise Bad(
            "is the name of a unit the operating system or a common service uses", "choose a name such as rlinf-ray"
        )
    return result


def system_user(value):
    """Empty, or the name of a system user of ours (created by the role, never an OS account)."""
    result = text()(value)
    if not result:
        return result
    if result == "root":
        raise Bad("is root", "leave it empty to run Ray as root (in the sandbox), or name a user of its own, e.g. ray")
    if not _USER.match(result):
        raise Bad(
            "is not a portable user name",
            "use 1-32 of lower-case letters, digits, '_', '-', starting with a letter or '_', e.g. ray",
        )
    if result in _OS_USERS or result.startswith("systemd-"):
        raise Bad("is an account the operating system or another service uses", "name a user of its own, e.g. ray")
    return result


def nft_table(value):
    result = text(empty=False)(value)
    if not _NFT_TABLE.match(result):
        raise Bad("is not a plain nftables table name", "use letters, digits and '_' (up to 32), e.g. rlinf")
    if result.lower() in _FOREIGN_NFT_TABLES:
        raise Bad("is a table iptables, firewalld or a container engine owns", "choose a table of its own, e.g. rlinf")
    return result


def device(value):
    result = text()(value)
    if result and not _DEVICE.match(result):
        raise Bad("is not a network device name", "write the NIC's name as `ip link` shows it, e.g. eth1")
    return result


def label(value):
    result = text(empty=False)(value)
    if not _LABEL.match(result):
        raise Bad("is not a plain label", "use letters, digits, '_', '.', '-'")
    return result


def interpreter(value):
    """A Python interpreter: a command name on PATH (python3, python3.11) or an absolute path."""
    result = text(empty=False)(value)
    if result.startswith("/"):
        return node_path(result)
    if not re.match(r"^python[0-9.]*$", result):
        raise Bad("is neither an absolute path nor a python command name", "write e.g. python3 or /usr/bin/python3.11")
    return result


def host_address(value):
    """An IPv4 address or a DNS name (where SSH or a peer reaches a host)."""
    result = text()(value)
    if result == "":
        return ""
    with contextlib.suppress(ValueError):
        return str(ipaddress.ip_address(result))
    if not _HOSTNAME.match(result):
        raise Bad("is neither an IP address nor a host name", "write e.g. 203.0.113.10 or bootstrap.example.org")
    return result


def ipv4(loopback: bool = False, unspecified: bool = False) -> Rule:
    """An IPv4 address; loopback and 0.0.0.0 only where a rule allows them (a bind address)."""

    def rule(value):
        result = text()(value)
        if result == "":
            return ""
        try:
            address = ipaddress.ip_address(result)
        except ValueError:
            raise Bad("is not an IPv4 address", "write e.g. 10.0.0.5") from None
        if address.version != 4:
            raise Bad("is IPv6", "Ray binds IPv4 node addresses: write an IPv4 address")
        if address.is_loopback and not loopback:
            raise Bad(
                "is a loopback address other nodes cannot reach", "write the address other nodes reach this host on"
            )
        if address.is_unspecified and not unspecified:
            raise Bad("is the unspecified address", "write the host's own address")
        if address.is_multicast:
            raise Bad("is a multicast address", "write the host's own address")
        return str(address)

    return rule


def ipv4_network(value):
    result = text(empty=False)(value)
    try:
        network = ipaddress.ip_network(result, strict=True)
    except ValueError as err:
        raise Bad(f"is not a network in CIDR form ({err})", "write e.g. 10.144.0.0/24") from None
    if network.version != 4:
        raise Bad("is IPv6", "write an IPv4 network such as 10.144.0.0/24")
    return str(network)


def ipv4_source(value):
    """An IPv4 address or network a firewall rule allows."""
    result = text(empty=False)(value)
    try:
        network = ipaddress.ip_network(result, strict=False)
    except ValueError:
        raise Bad("is not an IPv4 address or network", "write e.g. 192.0.2.7 or 192.0.2.0/24") from None
    if network.version != 4:
        raise Bad("is IPv6", "Ray binds IPv4 node addresses: list IPv4 only")
    return str(network.network_address) if network.prefixlen == 32 else str(network)


# Paths --------------------------------------------------------------------------------


def _system_clash(path: str) -> str | None:
    if path in SYSTEM_FILES:
        return "is a file of the operating system"
    if path in SYSTEM_DIRS:
        return "is a directory of the operating system"
    prefix = path.rstrip("/") + "/"
    for system in SYSTEM_DIRS:
        if system.startswith(prefix):
            return f"is a parent of the system directory {system}"
    return None


def normal_path(path: str) -> str:
    """``path`` without '.', '..', '//' or a trailing '/' (POSIX keeps a leading '//': not here)."""
    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


def node_path(value):
    """An absolute, normalised path on a node that systemd, the shell and PATH read as-is,
    never a directory or file of the operating system nor a parent of one."""
    result = text(empty=False, hint="write an absolute path such as /opt/rlinf/venv")(value)
    if not result.startswith("/"):
        raise Bad("is not an absolute path", "write an absolute path such as /opt/rlinf/venv")
    segments = result[1:].split("/")
    if result != "/" and (result.endswith("/") or "" in segments or any(s in (".", "..") for s in segments)):
        raise Bad(
            "is not normalised (a '.' or '..' segment, a trailing or double '/')",
            f"write the path it stands for, {normal_path(result)}, if that is what you mean",
        )
    if result != "/" and not all(_SEGMENT.match(segment) for segment in segments):
        # The '%' below is a character the message names, not a format.
        raise Bad(  # pylint: disable=raising-format-tuple
            "has a character systemd or the shell would read differently (space, quote, '$', '%', ':', ';' ...)",
            "use letters, digits and . _ - + @ , = only",
        )
    clash = _system_clash(result)
    if clash:
        raise Bad(clash, "use a directory of its own, e.g. below /opt/rlinf or /etc/rlinf")
    return result


def writable_path(value):
    """One item of ray_node_writable_paths, alone: a node path outside /tmp and /var/tmp (Ray
    writes there already). ``ray_writable`` judges it with the host's other paths."""
    result = node_path(value)
    clash = [r for r in _ALREADY_WRITABLE if result == r or result.startswith(r + "/")]
    if clash:
        raise Bad(f"is under {clash[0]}", "Ray may write there already: leave it out")
    return result


# Where the roles write, sync into, record or delete (rlinf_node_path_roots) --------------

# The default roots: our prefixes, and Ray's temp dirs under /tmp. A '*' ends the last segment.
NODE_PATH_ROOTS = ("/opt/rlinf", "/etc/rlinf", "/var/lib/rlinf*", "/var/log/rlinf*", "/tmp/ray*", "/tmp/rlinf*")
# The shell snippet of ours: a file with a name of ours, directly in /etc/profile.d.
PROFILE_SCRIPTS = "/etc/profile.d/rlinf*.sh"
# Top-level trees of the operating system: no path of ours and no path Ray may write is in one.
_SYSTEM_TREES = ("bin", "boot", "dev", "lost+found", "proc", "run", "sbin", "snap", "sys", "usr")
# Directories whose entries belong to one program or package each: only entries named rlinf...
# are ours (a writable crontab, unit directory or sudoers file is a root shell).
_SHARED_DIRS = ("/etc", "/opt", "/var/lib", "/var/log", "/var/opt", "/var/local")
# Under /var, what is neither shared as above nor /var/tmp is the system's (spool, cache, mail...).
_VAR_FREE = ("tmp",)


def under_roots(path: str, roots: Sequence[str]) -> bool:
    """``path`` is a root or below one; a root ending in '*' matches any rest of its last segment."""
    return any(
        path.startswith(root[:-1]) if root.endswith("*") else path == root or path.startswith(root + "/")
        for root in roots
    )


def home_clash(path: str) -> str | None:
    """A home directory itself, or a dotfile or dot-directory of one (.ssh, .bashrc, .config)."""
    parts = path[1:].split("/")
    if parts[0] == "root":
        home, rest = "/root", parts[1:]
    elif parts[0] == "home" and len(parts) >= 2:
        home, rest = "/home/" + parts[1], parts[2:]
    else:
        return None
    if not rest:
        return f"is the home directory {home}"
    if rest[0].startswith("."):
        return f"is under {home}/{rest[0]}, a dotfile of a home directory (shell start-up, SSH keys)"
    return None


def system_clash(path: str) -> str | None:
    """Why ``path`` is the system's or another program's, or None."""
    parts = path[1:].split("/")
    if parts[0] in _SYSTEM_TREES or parts[0].startswith("lib"):
        return f"is under /{parts[0]}, which the operating system owns"
    if parts[0] == "var" and len(parts) > 1 and parts[1] not in _VAR_FREE and "/var/" + parts[1] not in _SHARED_DIRS:
        return f"is under /var/{parts[1]}, which the operating system or a package owns"
    for shared in _SHARED_DIRS:
        if path.startswith(shared + "/"):
            entry = path[len(shared) + 1 :].split("/", 1)[0]
            if not entry.startswith("rlinf"):
                return f"is under {shared}/{entry}, which another program owns"
    return None


def node_path_root(value):
    """One of rlinf_node_path_roots: a directory of ours, never the system's nor a home's; a '*'
    may end its last segment (/var/lib/rlinf* holds /var/lib/rlinf-ray)."""
    result = text(empty=False, hint="write an absolute path such as /opt/rlinf")(value)
    stem = result[:-1] if result.endswith("*") else result
    if "*" in stem or (stem != result and stem.endswith("/")):
        raise Bad("has a '*' other than after a name at its end", "write e.g. /var/lib/rlinf* or /data/rlinf")
    node_path(stem)
    clash = system_clash(stem) or home_clash(stem)
    if clash:
        raise Bad(clash, "name a directory of your own, e.g. /data/rlinf")
    return result


def _roots_text(roots: Sequence[str]) -> str:
    return ", ".join(roots) if roots else "(none)"


def owned_path(path: str, roots: Sequence[str]) -> str:
    """A path a role writes, syncs into with --delete, records as ours or may delete: under one
    of the roots (rlinf_node_path_roots), never the system's or a home's."""
    clash = system_clash(path) or home_clash(path)
    if clash:
        raise Bad(clash, "move it under one of rlinf_node_path_roots (" + _roots_text(roots) + ")")
    if not under_roots(path, roots):
        raise Bad(
            f"is not under one of rlinf_node_path_roots ({_roots_text(roots)})",
            "move it under one of them, or add a directory of its own to rlinf_node_path_roots",
        )
    return path


def profile_script(path: str, roots: Sequence[str]) -> str:
    """The login-shell snippet: a file named rlinf*.sh directly in /etc/profile.d, or under the roots."""
    directory, name = path.rsplit("/", 1)
    if directory == "/etc/profile.d" and fnmatch.fnmatchcase(name, "rlinf*.sh"):
        return path
    try:
        return owned_path(path, roots)
    except Bad as err:
        raise Bad(err.what, f"write {PROFILE_SCRIPTS} (e.g. /etc/profile.d/rlinf.sh), or {err.fix}") from None


def ray_writable(path: str, ours: Sequence[str]) -> str:
    """A directory the Ray unit may write (ray_temp_dir, the checkout, ray_node_writable_paths),
    the one sandbox rule: user data anywhere but the system, a home directory itself or its
    dotfiles, /etc/rlinf, and the paths of ours root runs or reads (``ours``: the venv, the
    wheelhouse, EasyTier's tree...), inside or above them. Whoever holds the Ray token writes
    where Ray writes: a writable venv, unit directory or crontab is root on the node."""
    fix = "a path Ray may write lets whoever holds the Ray token change it: choose a data directory of its own"
    if path == "/etc" or path.startswith("/etc/"):
        raise Bad("is under /etc", fix)
    clash = system_clash(path) or home_clash(path)
    if clash:
        raise Bad(clash, fix)
    for own in ours:
        if path == own or path.startswith(own + "/"):
            raise Bad(f"is {'' if path == own else 'inside '}{own}, which root runs or reads", fix)
        if own.startswith(path + "/"):
            raise Bad(f"holds {own}, which root runs or reads", fix)
    return path


def optional_node_path(value):
    if value is None or (isinstance(value, str) and value.strip() == ""):
        return ""
    return node_path(value)


def controller_path(value):
    """A path on the controller (absolute or relative to where ansible-playbook runs), normalised
    ('.', '//' and a trailing '/' dropped); a '..' segment is refused, since what it resolves to
    depends on symlinks the plan cannot see."""
    result = text(empty=False, hint="write a path")(value)
    if result.strip() != result:
        raise Bad("has leading or trailing spaces", "write the path without them")
    normal = normal_path(result)
    if ".." in result.split("/"):
        shown = normal if normal.startswith("/") else "an absolute path"
        raise Bad("has a '..' segment", f"write the path it stands for ({shown}), without '..'")
    if normal.startswith("/") and (normal in SYSTEM_DIRS or normal in SYSTEM_FILES or normal == "/"):
        raise Bad("is a directory or file of the operating system", "use a directory of its own")
    return normal


def optional_controller_path(value):
    if value is None or (isinstance(value, str) and value.strip() == ""):
        return ""
    return controller_path(value)


# An SSH key's file name (ssh-keygen's defaults, and their public halves).
_SSH_KEY = re.compile(r"^id_(rsa|dsa|ecdsa|ed25519)(_sk)?(\.pub)?$")


def controller_token_file(value):
    """Empty, or the controller's copy of the Ray token: a controller path, never an SSH key's (a
    key in ~/.ssh named by mistake would be shipped to every node as the token)."""
    result = optional_controller_path(value)
    if not result:
        return result
    segments = result.split("/")
    if ".ssh" in segments[:-1] or _SSH_KEY.match(segments[-1]):
        raise Bad(
            "is an SSH key's path (in a .ssh directory, or named like id_ed25519), which the run would copy to "
            "every node as the Ray token",
            "leave it empty (the state directory's secrets/ray-auth-token) or name a file that holds only the token",
        )
    return result


# Containers ---------------------------------------------------------------------------


def list_of(rule: Rule, what: str = "items") -> Rule:
    def checked(value):
        if value is None:
            return []
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
            raise Bad(f"is a {type(value).__name__}, not a list", f"write a YAML list of {what}, e.g. [a, b]")
        result = []
        for index, item in enumerate(value):
            try:
                result.append(rule(item))
            except Bad as err:
                raise Bad(f"item {index + 1} ({describe(item)}) {err.what}", err.fix) from None
        return result

    return checked


def mapping_of(key_rule: Rule, value_rule: Rule, what: str = "entries") -> Rule:
    def checked(value):
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise Bad(
                f"is a {type(value).__name__}, not a mapping", f"write a YAML mapping of {what}, e.g. {{KEY: value}}"
            )
        result = {}
        for key, item in value.items():
            try:
                checked_key = key_rule(key)
            except Bad as err:
                raise Bad(f"key {describe(key)} {err.what}", err.fix) from None
            try:
                result[checked_key] = value_rule(item)
            except Bad as err:
                raise Bad(f"the value of {checked_key} {err.what}", err.fix) from None
        return result

    return checked


def any_mapping(value):
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise Bad(f"is a {type(value).__name__}, not a mapping", "write a YAML mapping")
    return value


def env_name(value):
    if not isinstance(value, str) or not ENV_NAME.match(value):
        raise Bad("is not an environment variable name", "use letters, digits and '_', not starting with a digit")
    if value == "RLINF_CODE_WORKING_DIR":
        # RLinf's driver reads it (rlinf/scheduler/cluster/cluster.py ClusterEnvVar.CODE_WORKING_DIR);
        # launch.yml sets it only with rlinf_code_sync=ray, to the head's checkout it syncs from.
        raise Bad(
            "makes RLinf's driver ship a checkout's rlinf/ to every node, and launch.yml sets it itself "
            "from rlinf_code_sync",
            "use rlinf_code_sync: ray (and rlinf_code_dest for the head's checkout) instead",
        )
    return value


def env_value(value):
    """A value systemd's EnvironmentFile and a POSIX shell read the same way, single-quoted (the env
    files, env_file.render_env) or shell-quoted (launch.yml's script): '$', a backtick, '%', '#' or
    a space inside the quotes stay as written; a quote, backslash or control character do not."""
    if value is None or isinstance(value, (Mapping, list, tuple)):
        raise Bad(f"is a {type(value).__name__}", "write a string or a number")
    result = ("1" if value else "0") if isinstance(value, bool) else str(value)
    if re.search(r"['\\]", result) or _CONTROL.search(result):
        raise Bad(
            "holds a quote, backslash or control character, which systemd and the shell read differently",
            "use a plain value",
        )
    return result


def resource_name(value):
    if not isinstance(value, str) or not _RESOURCE.match(value):
        raise Bad("is not a Ray resource name", "use letters, digits and _ . : / - (not starting with a digit)")
    return value


def requirement(value):
    """One pip requirement, pinned exactly, with no option, URL or marker trickery."""
    if not isinstance(value, str):
        raise Bad(f"is a {type(value).__name__}, not a requirement", "write e.g. numpy==2.2.6")
    result = value.strip()
    if _CONTROL.search(value) or result.startswith("-") or " -" in result or "\t" in result:
        raise Bad(
            "holds a newline or a pip option",
            "write one requirement per item (name==version); set python_env_index_url for a mirror",
        )
    try:
        parsed = Requirement(result)
    except InvalidRequirement as err:
        raise Bad(f"is not a pip requirement ({err})", "write e.g. numpy==2.2.6") from None
    if parsed.url:
        raise Bad("points at a URL", "write name==version; the wheelhouse or python_env_index_url provides it")
    pins = [spec for spec in parsed.specifier if spec.operator in ("==", "===") and "*" not in spec.version]
    if len(pins) != 1 or len(parsed.specifier) != 1:
        raise Bad("is not pinned to one exact version", "write name==version, e.g. numpy==2.2.6")
    try:
        Version(pins[0].version)
    except InvalidVersion:
        raise Bad("pins an invalid version", "write name==version, e.g. numpy==2.2.6") from None
    return str(parsed)


def extra_name(value):
    if not isinstance(value, str) or not _EXTRA.match(value):
        raise Bad("is not a package extra", "write e.g. default")
    return value


def ray_argument(managed: Mapping[str, str]) -> Rule:
    """One `ray start` argument, ``--flag`` or ``--flag=value``; flags the plan sets are refused."""

    def rule(value):
        result = text(empty=False)(value)
        if not re.match(r"^--[a-z][a-z0-9-]*(=.*)?$", result):
            raise Bad("is not one `ray start` option (--flag or --flag=value)", "write one option per list item")
        flag = result.split("=", 1)[0]
        if flag in managed:
            raise Bad(f"sets {flag}, which rlinf-ansible manages", f"use {managed[flag]} instead")
        return result

    return rule


class PipUse(NamedTuple):
    """One pip command a role runs with a user's argument list: what to write instead of an
    index option or a package."""

    command: str
    mirror: str
    packages: str


PIP_INSTALL = PipUse(
    "install",
    "set python_env_index_url for a mirror",
    "list packages in python_env_extra_packages (name==version)",
)
PIP_DOWNLOAD = PipUse(
    "download",
    "configure a mirror in the controller's pip configuration (pip.conf or PIP_INDEX_URL), which this download "
    "uses like the wheelhouse's",
    "the role downloads easytier_pypi_package==easytier_pypi_version; set those instead",
)
PIP_WHEEL = PipUse(
    "wheel",
    "configure a mirror in the controller's pip configuration (pip.conf or PIP_INDEX_URL)",
    "the role builds exactly the checkout in rlinf_src; remove the item",
)
# pip's options (its first long spelling) a user's list may not hold, and why: another index
# (a package source we do not check), another place to install or write as root, another set
# of packages, or a run that installs nothing and succeeds.
_PIP_LOOKS = ("--index-url", "--extra-index-url", "--find-links", "--no-index", "--trusted-host")
_PIP_WRITES = ("--target", "--prefix", "--root", "--user", "--src", "--python", "--report", "--log", "--dest")
_PIP_WRITES_WHEEL = ("--wheel-dir",)
_PIP_WHAT = ("--requirement", "--constraint", "--editable")
_PIP_NOTHING = ("--help", "--version", "--dry-run")
# Set by the EasyTier role from each node's platform (wheelhouse.pip_download_args).
_PIP_PLATFORM = ("--platform", "--python-version", "--implementation", "--abi", "--only-binary", "--no-binary")


def _pip_refusal(use: PipUse, option: str) -> tuple[str, str] | None:
    if option in _PIP_LOOKS:
        return "changes where pip looks for packages", use.mirror
    if option in _PIP_WRITES + _PIP_WRITES_WHEEL:
        return "changes where pip installs or writes files", "remove it; rlinf-ansible chooses where pip writes"
    if option in _PIP_WHAT:
        return "changes which packages pip takes", use.packages
    if option in _PIP_NOTHING:
        return "makes pip do nothing and succeed", "remove it"
    if use.command == "download" and option in _PIP_PLATFORM:
        return "is set by rlinf-ansible from each node's platform", "remove it"
    return None


def pip_arguments(use: PipUse) -> Rule:
    """A list of arguments for ``pip <use.command>``, judged as pip reads it (pip_options.py):
    unique prefixes of long options, clustered short options, ``--opt value`` in two items.
    Returns the list with abbreviated options written in full, so every pip reads the same."""
    items_rule = list_of(text(empty=False), "pip arguments")

    def rule(value):
        items = items_rule(value)
        try:
            parsed = pip_options.read(use.command, items)
        except pip_options.Unreadable as err:
            raise Bad(
                f"item {err.item} ({describe(err.written)}) {err.what}",
                f"write each option in full, as `pip {use.command} --help` lists it",
            ) from None
        for arg in parsed:
            where = f"item {arg.item} ({describe(items[arg.item - 1])})"
            if arg.option is None:
                raise Bad(f"{where} is a package or path for pip to {use.command}", use.packages)
            refusal = _pip_refusal(use, arg.option)
            if refusal is None:
                continue
            read_as = "" if arg.written == arg.option else f"is {arg.option} to pip, which "
            raise Bad(f"{where} {read_as}{refusal[0]}", refusal[1])
        result = list(items)
        for arg in parsed:
            if arg.option and arg.written.startswith("--") and arg.written != arg.option:
                item = result[arg.item - 1]
                if pip_options.long_option(use.command, arg.written)[1] != [arg.written]:
                    result[arg.item - 1] = arg.option + item[len(arg.written) :]
        return result

    return rule


def join_batch(value):
    """Ansible's `serial`: a count or a percentage."""
    if isinstance(value, str) and re.match(r"^\s*[0-9]{1,3}%\s*$", value):
        percent = int(value.strip()[:-1])
        if 1 <= percent <= 100:
            return value.strip()
        raise Bad("is not a percentage in 1..100", "write e.g. 100% or 20%")
    return integer(1)(value)
