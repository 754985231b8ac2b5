"""SSRF defences: every hostile target is refused with a reason; public ones pass."""

from __future__ import annotations

import ipaddress
import logging
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interlock import ConfigError
from interlock.executors.net.ssrf import (
    Allowlist,
    SSRFError,
    check_address,
    check_url,
    embedded,
    parse_numeric_host,
)


class DNS:
    """A resolver the test controls: a fixed table, every lookup recorded."""

    def __init__(self, table: dict[str, list[str]] | None = None) -> None:
        self.table = table or {}
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, f"{host} is not in the test's table")
        return list(self.table[host])


NAMES = {
    "internal.example.test": ["10.1.2.3"],
    "metadata.example.test": ["169.254.169.254"],
    "mixed.example.test": ["93.184.216.34", "192.168.0.10"],
    "mapped.example.test": ["::ffff:127.0.0.1"],
    "nat64.example.test": ["64:ff9b::a00:1"],
    "ula.example.test": ["fd00:ec2::254"],
    "cgnat.example.test": ["100.64.1.1"],
    "zero.example.test": ["0.0.0.0"],
    "garbage.example.test": ["not-an-address"],
}

# (url, reason code, text the message must contain)
HOSTILE = [
    # loopback in every form inet_aton reads
    ("http://127.0.0.1/hook", "loopback", "127.0.0.1 is a loopback address"),
    ("http://2130706433/", "loopback", "127.0.0.1"),
    ("http://0177.0.0.1/", "loopback", "127.0.0.1"),
    ("http://0x7f.0.0.1/", "loopback", "127.0.0.1"),
    ("http://0x7f000001/", "loopback", "127.0.0.1"),
    ("http://017700000001/", "loopback", "127.0.0.1"),
    ("http://127.1/", "loopback", "127.0.0.1"),
    ("http://127.0.0.1./", "loopback", "127.0.0.1"),
    ("http://localhost:8080/", "loopback", "loopback name"),
    ("http://hooks.localhost/", "loopback", "loopback name"),
    ("http://[::1]/", "loopback", "::1 is the loopback address"),
    # IPv6 forms that carry a private IPv4 address
    ("http://[::ffff:127.0.0.1]/", "loopback", "embeds 127.0.0.1 (IPv4-mapped)"),
    ("http://[::ffff:a00:1]/", "private", "embeds 10.0.0.1 (IPv4-mapped)"),
    ("http://[::127.0.0.1]/", "loopback", "embeds 127.0.0.1 (IPv4-compatible)"),
    ("http://[::a9fe:a9fe]/", "link-local", "embeds 169.254.169.254 (IPv4-compatible)"),
    ("http://[::ffff:0:a00:1]/", "private", "embeds 10.0.0.1 (IPv4-translated)"),
    ("http://[2002:7f00:1::]/", "loopback", "embeds 127.0.0.1 (6to4)"),
    ("http://[2002:a9fe:a9fe::1]/", "link-local", "embeds 169.254.169.254 (6to4)"),
    ("http://[2002:c0a8:101::]/", "private", "embeds 192.168.1.1 (6to4)"),
    # Teredo: server 65.54.227.120, client 10.0.0.1 stored XOR'ed as f5ff:fffe
    ("http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/", "private",
     "embeds 10.0.0.1 (Teredo client)"),
    ("http://[2001:0:7f00:1::]/", "loopback", "embeds 127.0.0.1 (Teredo server)"),
    ("http://[64:ff9b::7f00:1]/", "loopback", "embeds 127.0.0.1 (NAT64)"),
    ("http://[64:ff9b::a9fe:a9fe]/", "link-local", "embeds 169.254.169.254 (NAT64)"),
    ("http://[64:ff9b:1::a00:1]/", "private", "embeds 10.0.0.1 (local-use NAT64)"),
    # cloud metadata, CGNAT, private, and addresses no hook lives on
    ("http://169.254.169.254/latest/meta-data/", "link-local", "cloud metadata"),
    ("http://100.64.0.1/", "cgnat", "CGNAT"),
    ("http://100.100.100.200/", "cgnat", "CGNAT"),
    ("http://192.0.0.192/", "ietf-protocol", "IETF protocol"),
    ("http://10.0.0.1/", "private", "private"),
    ("http://172.16.5.4/", "private", "private"),
    ("http://192.168.1.1:8443/", "private", "private"),
    ("http://0.0.0.0/", "unspecified", "unspecified"),
    ("http://0/", "unspecified", "unspecified"),
    ("http://[::]/", "unspecified", "unspecified"),
    ("http://224.0.0.1/", "multicast", "multicast"),
    ("http://255.255.255.255/", "broadcast", "broadcast"),
    ("http://240.0.0.1/", "reserved", "reserved"),
    ("http://192.0.2.10/", "documentation", "documentation"),
    ("http://198.18.0.1/", "benchmarking", "benchmarking"),
    ("http://[fe80::1]/", "link-local", "link-local"),
    ("http://[fc00::1]/", "unique-local", "unique local"),
    ("http://[fec0::1]/", "site-local", "site-local"),
    ("http://[ff02::1]/", "multicast", "multicast"),
    ("http://[2001:db8::1]/", "documentation", "documentation"),
    ("http://[100::1]/", "discard", "discard"),
    ("http://[5f00::1]/", "reserved", "outside global unicast"),
    # names whose answers are private: every address is checked
    ("http://internal.example.test/", "private", "internal.example.test resolves to 10.1.2.3"),
    ("http://metadata.example.test/", "link-local", "resolves to 169.254.169.254"),
    ("https://mixed.example.test/", "private", "resolves to 192.168.0.10"),
    ("http://mapped.example.test/", "loopback", "embeds 127.0.0.1"),
    ("http://nat64.example.test/", "private", "embeds 10.0.0.1 (NAT64)"),
    ("http://ula.example.test/", "unique-local", "fd00:ec2::254"),
    ("http://cgnat.example.test/", "cgnat", "100.64.1.1"),
    ("http://zero.example.test/", "unspecified", "0.0.0.0"),
    ("http://garbage.example.test/", "bad-resolution", "not an address"),
    # credentials and schemes
    ("http://user:secret@hooks.example.com/", "userinfo", "credentials in the URL"),
    ("https://token@hooks.example.com/", "userinfo", "credentials in the URL"),
    ("http://hooks.example.com@127.0.0.1/", "userinfo", "credentials in the URL"),
    ("ftp://hooks.example.com/", "scheme", "'ftp' is not allowed"),
    ("file:///etc/passwd", "scheme", "'file' is not allowed"),
    ("gopher://hooks.example.com:70/", "scheme", "'gopher' is not allowed"),
    ("ws://hooks.example.com/", "scheme", "'ws' is not allowed"),
    ("http:///nohost", "no-host", "no host"),
    # look-alikes that must not parse as something else
    ("http://１２７.０.０.１/", "invalid-url", "not a valid URL"),
    ("http://[0:0:0:0:0:ffff:7f00:1]/", "loopback", "embeds 127.0.0.1 (IPv4-mapped)"),
    ("http://%31%32%37.0.0.1/", "host-chars", "characters no DNS name has"),
]


def test_the_table_is_big_enough() -> None:
    assert len(HOSTILE) >= 30
    assert len({url for url, *_ in HOSTILE}) == len(HOSTILE)


@pytest.mark.parametrize(("url", "reason", "text"), HOSTILE)
async def test_hostile_target_is_refused_with_its_reason(url: str, reason: str,
                                                         text: str) -> None:
    dns = DNS(NAMES)
    with pytest.raises(SSRFError) as info:
        await check_url(url, resolver=dns)
    assert info.value.reason == reason, str(info.value)
    assert text in str(info.value)
    assert info.value.retryable is False
    # Literal addresses never reach the resolver.
    if info.value.address and info.value.host == info.value.address:
        assert dns.calls == []


PUBLIC = [
    ("http://93.184.216.34/", None, ["93.184.216.34"]),
    ("https://hooks.example.com/v1", {"hooks.example.com": ["93.184.216.34",
                                                           "2606:2800:220:1::1"]},
     ["93.184.216.34", "2606:2800:220:1::1"]),
    ("http://[2002:5db8:d822::1]/", None, ["2002:5db8:d822::1"]),  # 6to4 of a public v4
    ("http://[64:ff9b::5db8:d822]/", None, ["64:ff9b::5db8:d822"]),  # NAT64 of a public v4
    ("http://[::ffff:93.184.216.34]/", None, ["::ffff:5db8:d822"]),
    ("http://1572395042/", None, ["93.184.216.34"]),  # decimal form of a public address
]


@pytest.mark.parametrize(("url", "table", "expected"), PUBLIC)
async def test_public_targets_pass(url: str, table: dict[str, list[str]] | None,
                                   expected: list[str]) -> None:
    assert await check_url(url, resolver=DNS(table or {})) == expected


async def test_every_address_of_a_name_is_checked_not_just_the_first() -> None:
    dns = DNS({"a.example.test": ["93.184.216.34", "93.184.216.35", "127.0.0.1"]})
    with pytest.raises(SSRFError, match=r"resolves to 127\.0\.0\.1"):
        await check_url("http://a.example.test/", resolver=dns)


async def test_unresolvable_name_is_a_retryable_failure_not_a_pass() -> None:
    from interlock import HookFailure

    with pytest.raises(HookFailure) as info:
        await check_url("http://nowhere.example.test/", resolver=DNS())
    assert not isinstance(info.value, SSRFError)
    assert info.value.retryable


# --- the allowlist -----------------------------------------------------------


async def test_host_entry_admits_private_answers_and_logs_each_use(
        caplog: pytest.LogCaptureFixture) -> None:
    dns = DNS({"hooks.internal": ["10.0.0.5"]})
    with caplog.at_level(logging.INFO, logger="interlock.executors.net"):
        assert await check_url("http://hooks.internal/", allow_private=["hooks.internal"],
                               resolver=dns) == ["10.0.0.5"]
        await check_url("http://hooks.internal/", allow_private=["hooks.internal"],
                        resolver=dns)
    uses = [r for r in caplog.records if "admitted by allowlist entry" in r.getMessage()]
    assert len(uses) == 2
    assert "hooks.internal -> 10.0.0.5" in uses[0].getMessage()


async def test_host_entry_admits_only_that_host() -> None:
    dns = DNS({"hooks.internal": ["10.0.0.5"], "other.internal": ["10.0.0.5"]})
    with pytest.raises(SSRFError, match="private"):
        await check_url("http://other.internal/", allow_private=["hooks.internal"],
                        resolver=dns)


async def test_host_entry_never_admits_link_local_metadata() -> None:
    dns = DNS({"hooks.internal": ["169.254.169.254"]})
    with pytest.raises(SSRFError, match="link-local"):
        await check_url("http://hooks.internal/", allow_private=["hooks.internal"],
                        resolver=dns)
    # ...unless the operator names that network itself.
    assert await check_url("http://hooks.internal/", allow_private=["169.254.169.254/32"],
                           resolver=dns) == ["169.254.169.254"]


async def test_network_entry_admits_addresses_inside_it_in_any_form() -> None:
    allow = ["10.0.0.0/8"]
    assert await check_url("http://10.2.3.4/", allow_private=allow) == ["10.2.3.4"]
    assert await check_url("http://[::ffff:10.2.3.4]/", allow_private=allow)
    with pytest.raises(SSRFError, match=r"172\.16\.0\.1"):
        await check_url("http://172.16.0.1/", allow_private=allow)


async def test_unspecified_multicast_and_broadcast_are_never_admitted() -> None:
    for url, allow in [("http://0.0.0.0/", ["0.0.0.0/8"]),
                       ("http://224.0.0.1/", ["224.0.0.0/4"]),
                       ("http://255.255.255.255/", ["255.255.255.255/32"]),
                       ("http://[::]/", ["::/128"])]:
        with pytest.raises(SSRFError) as info:
            await check_url(url, allow_private=allow)
        assert "allow_private" not in str(info.value)  # no advice that cannot work


@pytest.mark.parametrize(("entries", "text"), [
    (["0.0.0.0/0"], "allows every address"),
    (["::/0"], "allows every address"),
    (["10.0.0.1/8"], "not a valid network"),
    (["http://hooks.internal"], "neither a host name nor a network"),
    ([""], "empty allowlist entry"),
])
def test_bad_allowlist_entries_are_config_errors(entries: list[str], text: str) -> None:
    with pytest.raises(ConfigError, match=text) as info:
        Allowlist.parse(entries)
    assert info.value.field == "allow_private"


def test_allowlist_accepts_bare_addresses_and_numeric_forms() -> None:
    allow = Allowlist.parse(["127.0.0.1", "0x0a000001", "Hooks.Internal."])
    assert ipaddress.ip_network("127.0.0.1/32") in allow.networks
    assert ipaddress.ip_network("10.0.0.1/32") in allow.networks
    assert "hooks.internal" in allow.hosts


# --- address reading ---------------------------------------------------------


def test_embedded_unwraps_each_mechanism() -> None:
    cases = {
        "::ffff:10.0.0.1": [("10.0.0.1", "IPv4-mapped")],
        "::10.0.0.1": [("10.0.0.1", "IPv4-compatible")],
        "2002:a00:1::5": [("10.0.0.1", "6to4")],
        "64:ff9b::a00:1": [("10.0.0.1", "NAT64")],
        "64:ff9b:1::a00:1": [("10.0.0.1", "local-use NAT64")],
        "2001:0:4136:e378:8000:63bf:f5ff:fffe": [("65.54.227.120", "Teredo server"),
                                                 ("10.0.0.1", "Teredo client")],
        "2606:2800:220:1::1": [],
        "::1": [],
    }
    for text, expected in cases.items():
        got = [(str(a), how) for a, how in embedded(ipaddress.ip_address(text))]
        assert got == expected, text


def test_scoped_link_local_is_refused() -> None:
    with pytest.raises(SSRFError, match="link-local"):
        check_address("x", ipaddress.ip_address("fe80::1%eth0"))


@st.composite
def _numeric_forms(draw: st.DrawFn) -> str:
    """An IPv4 address written in 1 to 4 parts, each decimal, octal or hex."""
    value = draw(st.integers(0, 2**32 - 1))
    nparts = draw(st.integers(1, 4))
    octets = value.to_bytes(4, "big")
    parts = list(octets[: nparts - 1])
    parts.append(int.from_bytes(octets[nparts - 1:], "big"))
    out = []
    for p in parts:
        style = draw(st.sampled_from(["dec", "oct", "hex", "HEX"]))
        out.append({"dec": str(p), "oct": "0" + format(p, "o"), "hex": hex(p),
                    "HEX": "0X" + format(p, "X")}[style])
    return ".".join(out)


@given(_numeric_forms())
def test_numeric_hosts_read_exactly_as_inet_aton_reads_them(host: str) -> None:
    expected = ipaddress.IPv4Address(socket.inet_aton(host))
    assert parse_numeric_host(host) == expected


@given(st.text(alphabet="0123456789abcdefxX.", max_size=20))
def test_numeric_host_never_misses_what_inet_aton_accepts(host: str) -> None:
    try:
        expected = ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return
    assert parse_numeric_host(host) == expected


def test_names_are_not_numbers() -> None:
    for host in ["hooks.example.com", "0x7f.example.com", "127.0.0.1.nip.io", "08.0.0.1",
                 "256.0.0.1", "1.2.3.4.5", "1e3"]:
        assert parse_numeric_host(host) is None, host


def _refused(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    try:
        check_address("h", address)
    except SSRFError:
        return True
    return False


@given(st.ip_addresses(v=4))
def test_wrapping_an_ipv4_address_never_changes_the_verdict(v4: ipaddress.IPv4Address) -> None:
    n = int(v4)
    wrapped = {
        "mapped": ipaddress.IPv6Address((0xFFFF << 32) | n),
        "6to4": ipaddress.IPv6Address((0x2002 << 112) | (n << 80) | 1),
        "nat64": ipaddress.IPv6Address((0x64FF9B << 96) | n),
        # Teredo with a public server (65.54.227.120); the client is XOR'ed.
        "teredo": ipaddress.IPv6Address((0x20010000 << 96) | (0x4136E378 << 64)
                                        | (n ^ 0xFFFFFFFF)),
    }
    for how, v6 in wrapped.items():
        assert _refused(v6) == _refused(v4), (how, str(v6))
    # Deprecated or local-use carriers are refused whatever they carry.
    assert _refused(ipaddress.IPv6Address(n)) or n <= 1
    assert _refused(ipaddress.IPv6Address((0x64FF9B0001 << 80) | n))


@given(st.ip_addresses(v=4))
def test_everything_the_stdlib_calls_non_global_is_refused_v4(
        v4: ipaddress.IPv4Address) -> None:
    if not v4.is_global:
        assert _refused(v4)


_CARRIER_PREFIXES = [ipaddress.ip_network(n) for n in
                     ("::ffff:0:0/96", "2001::/32", "2002::/16", "64:ff9b::/96")]


@given(st.ip_addresses(v=6))
def test_everything_the_stdlib_calls_non_global_is_refused_v6(
        v6: ipaddress.IPv6Address) -> None:
    # Carriers are judged by what they carry (the test above), not by prefix.
    if not v6.is_global and not any(v6 in net for net in _CARRIER_PREFIXES):
        assert _refused(v6)
