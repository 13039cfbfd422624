"""The value rules of plugins/plugin_utils/rules.py: what each refuses, and what it normalises."""

from __future__ import annotations

import re

import pytest

from ansible_collections.rlinf.cluster.plugins.plugin_utils import rules as r
from ansible_collections.rlinf.cluster.plugins.plugin_utils.schema import MANAGED_RAY_FLAGS


def refused(rule, value) -> str:
    with pytest.raises(r.Bad) as err:
        rule(value)
    return err.value.what


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("/", "parent of the system directory"),
        ("/usr", "directory of the operating system"),
        ("/opt", "directory of the operating system"),
        ("/etc/systemd/system", "directory of the operating system"),
        ("/etc/passwd", "file of the operating system"),
        ("/etc/shadow", "file of the operating system"),
        ("venv", "not an absolute path"),
        ("/opt/rlinf/venv/../../../usr", "'.' or '..'"),
        ("/opt/rlinf/./venv", "'.' or '..'"),
        ("/opt/rlinf//venv", "double '/'"),
        ("/opt/rlinf/venv/", "trailing"),
        ("/opt/my venv", "read differently"),
        ("/opt/rlinf/$HOME", "read differently"),
        ("/opt/rlinf/50%", "read differently"),
        ("/opt/rlinf/a:b", "read differently"),
        ("/tmp/x;touch /tmp/y", "read differently"),
        ("/opt/rlinf/venv\nExecStartPre=/bin/true", "control character"),
        ("", "empty"),
    ],
)
def test_node_paths_a_system_reader_would_misread_or_that_are_system_paths_are_refused(value, why):
    assert why in refused(r.node_path, value)


@pytest.mark.parametrize("value", ["/opt/rlinf/venv", "/etc/rlinf/rlinf.env", "/srv/rlinf-ckpt", "/data/a_b-c.d+e@f"])
def test_plain_node_paths_pass_unchanged(value):
    assert r.node_path(value) == value


@pytest.mark.parametrize("value", ["ssh", "sshd", "systemd-journald", "networking", "NetworkManager", "dbus", "cron"])
def test_unit_names_of_the_operating_system_are_refused(value):
    assert "operating system" in refused(r.unit_name, value)


@pytest.mark.parametrize("value", ["rlinf-ray.service", "rlinf ray", "-x", "a/b", "rlinf@1"])
def test_malformed_unit_names_are_refused(value):
    refused(r.unit_name, value)


def test_our_unit_names_pass():
    assert r.unit_name("rlinf-ray") == "rlinf-ray"
    assert r.unit_name("rlinf-ray-b") == "rlinf-ray-b"


@pytest.mark.parametrize("value", ["rlinf; flush ruleset", "filter", "nat", "9lives", "a b", "x" * 40])
def test_nft_tables_that_would_inject_or_are_foreign_are_refused(value):
    refused(r.nft_table, value)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("numpy==2.2.6\n--extra-index-url http://x", "newline or a pip option"),
        ("--index-url=http://x", "newline or a pip option"),
        ("numpy -i http://x", "newline or a pip option"),
        ("numpy", "not pinned"),
        ("numpy>=2", "not pinned"),
        ("numpy==2.*", "not pinned"),
        ("evil @ http://203.0.113.9/evil.whl", "URL"),
        ("not a requirement!", "not a pip requirement"),
    ],
)
def test_requirements_must_be_one_exact_pin(value, why):
    assert why in refused(r.requirement, value)


def test_a_pinned_requirement_with_extras_passes_normalised():
    assert r.requirement(" ray[default]==2.60.0 ") == "ray[default]==2.60.0"


@pytest.mark.parametrize("value", ["it's", "a\\b", "a\nb", "a\rb", "a\x00b"])
def test_env_values_systemd_and_the_shell_read_differently_are_refused(value):
    refused(r.env_value, value)


def test_env_values_become_text():
    assert r.env_value(True) == "1"
    assert r.env_value(3) == "3"
    assert r.env_value("/data/hf cache") == "/data/hf cache"


@pytest.mark.parametrize(
    ("rule", "value", "why"),
    [
        (r.ipv4(), "127.0.0.1", "loopback"),
        (r.ipv4(), "0.0.0.0", "unspecified"),
        (r.ipv4(), "999.1.1.1", "not an IPv4"),
        (r.ipv4(), "fe80::1", "IPv6"),
        (r.ipv4(), "224.0.0.1", "multicast"),
    ],
)
def test_addresses_other_nodes_cannot_reach_are_refused(rule, value, why):
    assert why in refused(rule, value)


def test_a_bind_address_may_be_loopback_or_unspecified():
    rule = r.ipv4(loopback=True, unspecified=True)
    assert rule("127.0.0.1") == "127.0.0.1"
    assert rule("0.0.0.0") == "0.0.0.0"


@pytest.mark.parametrize(("rule", "value"), [(r.port, 0), (r.port, 65536), (r.port, "abc"), (r.port, True)])
def test_ports_outside_the_range_or_not_numbers_are_refused(rule, value):
    refused(rule, value)


def test_pinned_ports_stay_out_of_the_privileged_range():
    assert "1024..65535" in refused(r.pinned_port, 80)
    assert r.pinned_port("6380") == 6380


@pytest.mark.parametrize(("value", "expected"), [(True, True), ("yes", True), ("False", False), ("0", False)])
def test_booleans_accept_what_ansible_reads_as_one(value, expected):
    assert r.boolean(value) is expected


@pytest.mark.parametrize("value", ["ture", "on please", 2, None])
def test_other_booleans_are_refused(value):
    refused(r.boolean, value)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("--node-ip-address=1.2.3.4", "manages"),
        ("--head", "manages"),
        ("-v", "not one `ray start` option"),
        ("--log-style=pretty\n--head", "control character"),
    ],
)
def test_ray_arguments_the_plan_sets_or_that_are_not_one_option_are_refused(value, why):
    assert why in refused(r.ray_argument(MANAGED_RAY_FLAGS), value)


def test_containers_name_the_item_that_is_wrong():
    what = refused(r.list_of(r.requirement, "requirements"), ["numpy==1.0", "numpy"])
    assert what.startswith("item 2 ('numpy')")
    assert "not a mapping" in refused(r.mapping_of(r.env_name, r.env_value), "X=1")
    assert "not a list" in refused(r.list_of(r.requirement), "numpy==1.0")


def test_secrets_need_length_and_no_spaces():
    assert "shorter than 32" in refused(r.secret(32), "x" * 31)
    assert "spaces" in refused(r.secret(12), "a secret with spaces")
    assert r.secret(32)("") == ""


def test_the_ray_pin_must_be_a_new_enough_version_string():
    rule = r.version_at_least("2.47.0", "RLinf")
    assert "older than 2.47.0" in refused(rule, "2.46.0")
    assert "X.Y.Z" in refused(rule, 2.6)
    assert rule("2.60.0") == "2.60.0"


# What the mutation run (tests/mutate.py) found untested: the scalar rules' boundaries.


def test_a_value_is_shown_whole_up_to_80_characters():
    assert r.describe("x" * 78) == repr("x" * 78)  # 80 with its quotes
    assert r.describe("x" * 79) == repr("x" * 79)[:77] + "..."


@pytest.mark.parametrize(
    ("value", "what"),
    [
        (True, "is not a number"),
        ("many", "is not a number"),
        ([1], "is not a number"),
        ("nan", "is not a finite number"),
        (float("inf"), "is not a finite number"),
        ("-inf", "is not a finite number"),
        (-0.5, "is below 0"),
        (0, "is not above 0"),
    ],
)
def test_number_refuses_what_is_not_a_finite_number_in_range(value, what):
    rule = r.number(low=0) if what == "is below 0" else r.number(above=0)
    assert refused(rule, value) == what


@pytest.mark.parametrize(("value", "kept"), [("2", 2), (" 1.5 ", 1.5), (2.0, 2.0), (3, 3), (0, 0)])
def test_number_keeps_whole_numbers_whole_and_its_low_end(value, kept):
    result = r.number(low=0)(value)
    assert result == kept and type(result) is type(kept)


def fix_of(rule, value) -> str:
    with pytest.raises(r.Bad) as err:
        rule(value)
    return err.value.fix


def test_number_keeps_a_float_a_float_and_its_open_low_end():
    assert r.number(above=0)(0.25) == 0.25
    assert refused(r.number(above=1), 1) == "is not above 1" and r.number(above=1)(1.01) == 1.01
    assert type(r.number()(2.0)) is float and type(r.number()("2.0")) is int


@pytest.mark.parametrize(
    ("rule", "value", "what", "fix"),
    [
        (r.integer(1, 10), 0, "is outside 1..10", "write a number in 1..10"),
        (r.integer(1, 10), 11, "is outside 1..10", "write a number in 1..10"),
        (r.integer(low=5), 4, "is outside >= 5", "write a number >= 5"),
        (r.integer(high=5), 6, "is outside <= 5", "write a number <= 5"),
        (r.integer(high=5, unit=" (MiB)"), 6, "is outside <= 5", "write a number <= 5 (MiB)"),
        (r.integer(), "x", "is not a whole number", "write a whole number"),
        (r.integer(), 1.5, "is not a whole number", "write a whole number"),
        (r.integer(), True, "is not a whole number", "write a whole number"),
    ],
)
def test_integer_names_its_range_in_the_refusal(rule, value, what, fix):
    assert (refused(rule, value), fix_of(rule, value)) == (what, fix)


@pytest.mark.parametrize(("value", "kept"), [(1, 1), (10, 10), ("7", 7), (" 3 ", 3), (4.0, 4)])
def test_integer_keeps_both_ends_of_its_range(value, kept):
    assert r.integer(1, 10)(value) == kept


def test_choice_reads_words_and_numbers_not_booleans():
    rule = r.choice("none", "rsync", "1")
    assert rule(" rsync ") == "rsync" and rule(1) == "1"
    assert refused(rule, True) == "is not one of the choices"
    assert refused(rule, "scp") == "is not one of the choices"
    assert fix_of(rule, "scp") == "write one of none, rsync, 1"
    assert refused(rule, ["rsync"]) == "is not one of the choices"


def test_text_refuses_other_types_and_long_or_misshapen_values():
    rule = r.text(re.compile(r"^[a-z]+$"), empty=False, max_len=5, hint="write lowercase letters")
    assert rule("abcde") == "abcde"
    assert r.text()(5) == "5" and r.text()(None) == ""
    assert refused(rule, True) == "is a bool, not a string"
    assert refused(rule, ["a"]) == "is a list, not a string"
    assert refused(rule, "abcdef") == "is longer than 5 characters"
    assert (refused(rule, "ab1"), fix_of(rule, "ab1")) == ("does not have the allowed form", "write lowercase letters")
    assert (refused(rule, ""), fix_of(rule, "")) == ("is empty", "write lowercase letters")
    assert fix_of(r.text(re.compile(r"^a$")), "b") == "match ^a$"
    assert fix_of(r.text(empty=False), "") == "set a value"


@pytest.mark.parametrize(
    ("rule", "value", "kept"),
    [
        (r.url, "https://mirror.example/simple", "https://mirror.example/simple"),
        (r.url, "", ""),
        (r.unit_name, "rlinf-ray-b", "rlinf-ray-b"),
        (r.system_user, "ray", "ray"),
        (r.system_user, "", ""),
        (r.nft_table, "rlinf", "rlinf"),
        (r.device, "eth1", "eth1"),
        (r.device, "", ""),
        (r.label, "train.a-1", "train.a-1"),
        (r.interpreter, "python3.11", "python3.11"),
        (r.interpreter, "/usr/local/bin/python3.11", "/usr/local/bin/python3.11"),
        (r.host_address, "203.0.113.10", "203.0.113.10"),
        (r.host_address, "bootstrap.example.org", "bootstrap.example.org"),
        (r.host_address, "", ""),
        (r.boolean, "Yes", True),
        (r.boolean, 0, False),
        (r.optional(r.integer()), " ", None),
        (r.optional(r.integer()), "3", 3),
        (r.scalar, 1.5, 1.5),
        (r.scalar, "a b", "a b"),
    ],
)
def test_a_good_value_is_kept_normalised(rule, value, kept):
    result = rule(value)
    assert result == kept and type(result) is type(kept)


@pytest.mark.parametrize(
    ("rule", "value", "what"),
    [
        (r.url, "ftp://mirror.example/simple", "is not an http(s) URL"),
        (r.unit_name, "rlinf-ray.service", "ends in .service"),
        (r.unit_name, "-ray", "is not a plain unit name"),
        (r.unit_name, "", "is empty"),
        (r.system_user, "root", "is root"),
        (r.system_user, "Ray", "is not a portable user name"),
        (r.system_user, "systemd-ray", "is an account the operating system or another service uses"),
        (r.system_user, "nobody", "is an account the operating system or another service uses"),
        (r.nft_table, "1rlinf", "is not a plain nftables table name"),
        (r.nft_table, "Filter", "is a table iptables, firewalld or a container engine owns"),
        (r.device, "eth 1", "is not a network device name"),
        (r.device, "a" * 16, "is not a network device name"),
        (r.label, "a b", "is not a plain label"),
        (r.label, "", "is empty"),
        (r.interpreter, "py3", "is neither an absolute path nor a python command name"),
        (r.interpreter, "/usr/bin/../python3", "is not normalised (a '.' or '..' segment"),
        (r.host_address, "bad_host!", "is neither an IP address nor a host name"),
        (r.boolean, "maybe", "is not a boolean"),
        (r.boolean, 2, "is not a boolean"),
        (r.boolean, None, "is not a boolean"),
    ],
)
def test_a_bad_value_is_refused_saying_what_is_wrong(rule, value, what):
    assert what in refused(rule, value)


@pytest.mark.parametrize(
    ("rule", "value", "kept"),
    [
        (r.ipv4_network, "10.144.0.0/24", "10.144.0.0/24"),
        (r.ipv4_source, "192.0.2.7/32", "192.0.2.7"),
        (r.ipv4_source, "192.0.2.7/24", "192.0.2.0/24"),
        (r.ipv4(), "10.0.0.5", "10.0.0.5"),
        (r.ipv4(), "", ""),
        (r.ipv4(loopback=True), "127.0.0.1", "127.0.0.1"),
        (r.ipv4(unspecified=True), "0.0.0.0", "0.0.0.0"),
        (r.writable_path, "/srv/data", "/srv/data"),
        (r.writable_path, "/tmpdata", "/tmpdata"),
    ],
)
def test_an_address_network_or_path_is_kept_normalised(rule, value, kept):
    assert rule(value) == kept


@pytest.mark.parametrize(
    ("rule", "value", "what"),
    [
        (r.ipv4_network, "10.144.0.1/24", "is not a network in CIDR form (10.144.0.1/24 has host bits set)"),
        (r.ipv4_network, "fd00::/64", "is IPv6"),
        (r.ipv4_network, "", "is empty"),
        (r.ipv4_source, "nowhere", "is not an IPv4 address or network"),
        (r.ipv4_source, "fd00::1", "is IPv6"),
        (r.ipv4(), "10.0.0", "is not an IPv4 address"),
        (r.ipv4(), "fd00::1", "is IPv6"),
        (r.ipv4(), "127.0.0.1", "is a loopback address other nodes cannot reach"),
        (r.ipv4(), "0.0.0.0", "is the unspecified address"),
        (r.ipv4(), "224.0.0.1", "is a multicast address"),
        (r.writable_path, "/tmp/ray-data", "is under /tmp"),
        (r.writable_path, "/var/tmp/ray", "is under /var/tmp"),
    ],
)
def test_a_bad_address_network_or_path_is_refused_saying_why(rule, value, what):
    assert refused(rule, value) == what


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/usr/local/rlinf", "is under /usr, which the operating system owns"),
        ("/lib64/rlinf", "is under /lib64, which the operating system owns"),
        ("/var/spool/rlinf", "is under /var/spool, which the operating system or a package owns"),
        ("/var/lib/docker/rlinf", "is under /var/lib/docker, which another program owns"),
        ("/etc/ssh/rlinf", "is under /etc/ssh, which another program owns"),
        ("/var/lib/rlinf-ray/x", None),
        ("/var/tmp/rlinf", None),
        ("/var", None),  # /var itself is in the operating system's directory list (node_path)
        ("/data/rlinf", None),
    ],
)
def test_system_clash_names_the_owner_of_a_tree(path, why):
    assert r.system_clash(path) == why


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/root", "is the home directory /root"),
        ("/home/ops", "is the home directory /home/ops"),
        ("/home/ops/.ssh/x", "is under /home/ops/.ssh, a dotfile of a home directory (shell start-up, SSH keys)"),
        ("/home/ops/rlinf", None),
        ("/home", None),
        ("/srv/home", None),
    ],
)
def test_home_clash_names_a_home_or_its_dotfiles(path, why):
    assert r.home_clash(path) == why


@pytest.mark.parametrize(
    ("rule", "value", "kept"),
    [
        (r.optional_node_path, " ", ""),
        (r.optional_node_path, None, ""),
        (r.optional_node_path, "/opt/rlinf/x", "/opt/rlinf/x"),
        (r.optional_controller_path, None, ""),
        (r.optional_controller_path, "./state//", "state"),
        (r.list_of(r.integer()), None, []),
        (r.list_of(r.integer()), ["1", 2], [1, 2]),
        (r.mapping_of(r.env_name, r.env_value), None, {}),
        (r.mapping_of(r.env_name, r.env_value), {"A_1": True, "B": 3}, {"A_1": "1", "B": "3"}),
        (r.any_mapping, None, {}),
        (r.resource_name, "accel:a/b-1.0", "accel:a/b-1.0"),
        (r.requirement, " numpy==2.2.6 ", "numpy==2.2.6"),
    ],
)
def test_a_container_or_an_empty_value_is_kept_normalised(rule, value, kept):
    result = rule(value)
    assert result == kept and type(result) is type(kept)


@pytest.mark.parametrize(
    ("rule", "value", "what"),
    [
        (r.list_of(r.integer(), "ports"), "1,2", "is a str, not a list"),
        (r.list_of(r.integer()), [1, "x"], "item 2 ('x') is not a whole number"),
        (r.mapping_of(r.env_name, r.env_value), ["A"], "is a list, not a mapping"),
        (r.mapping_of(r.env_name, r.env_value), {"1A": "x"}, "key '1A' is not an environment variable name"),
        (r.mapping_of(r.env_name, r.env_value), {"A": "it's"}, "the value of A holds a quote, backslash or control"),
        (r.mapping_of(r.env_name, r.env_value), {"A": "a\\b"}, "the value of A holds a quote, backslash or control"),
        (r.mapping_of(r.env_name, r.env_value), {"A": None}, "the value of A is a NoneType"),
        (r.mapping_of(r.env_name, r.env_value), {"A": [1]}, "the value of A is a list"),
        (r.any_mapping, [1], "is a list, not a mapping"),
        (r.env_name, 5, "is not an environment variable name"),
        (r.env_name, "A-B", "is not an environment variable name"),
        (r.resource_name, 5, "is not a Ray resource name"),
        (r.resource_name, "1GPU", "is not a Ray resource name"),
        (r.requirement, 5, "is a int, not a requirement"),
        (r.requirement, "numpy==2.2.6 --hash=x", "holds a newline or a pip option"),
        (r.requirement, "numpy>=2", "is not pinned to one exact version"),
        (r.requirement, "numpy==2.*", "is not pinned to one exact version"),
        (r.requirement, "numpy==2.2.6,<3", "is not pinned to one exact version"),
    ],
)
def test_a_bad_container_or_item_is_refused_naming_the_item(rule, value, what):
    assert refused(rule, value).startswith(what)


def test_a_ray_start_argument_is_one_unmanaged_option():
    rule = r.ray_argument({"--port": "ray_port"})
    assert rule("--log-style=record") == "--log-style=record" and rule("--block") == "--block"
    assert refused(rule, "") == "is empty"
    assert refused(rule, "-v") == "is not one `ray start` option (--flag or --flag=value)"
    assert (refused(rule, "--port=7000"), fix_of(rule, "--port=7000")) == (
        "sets --port, which rlinf-ansible manages",
        "use ray_port instead",
    )


@pytest.mark.parametrize(("value", "kept"), [(1, 1), ("3", 3), (" 1% ", "1%"), ("100%", "100%")])
def test_a_join_batch_is_a_count_from_1_or_a_percentage_1_to_100(value, kept):
    assert r.join_batch(value) == kept


@pytest.mark.parametrize(
    ("value", "what"),
    [(0, "is outside >= 1"), ("0%", "is not a percentage in 1..100"), ("101%", "is not a percentage in 1..100")],
)
def test_a_join_batch_out_of_range_is_refused(value, what):
    assert refused(r.join_batch, value) == what


# Inside the single quotes of the env files (and launch.yml's shell quoting) '$', a backtick, '%',
# '#' and double quotes stay as written: issue 25 asks that they are not refused.
@pytest.mark.parametrize("value", ["$HOME", "costs $5", "`id`", "$(id)", "${X}", '"q"', "100% #x", "a b"])
def test_an_env_value_with_a_dollar_or_backtick_is_kept_as_written(value):
    assert r.env_value(value) == value
