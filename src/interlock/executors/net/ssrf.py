"""Which network addresses an HTTP hook may reach, and why a target is refused.

docs/http-hooks.md, What an HTTP hook may reach: http and https only, no credentials in URLs, every
resolved address checked, addresses that embed IPv4 unwrapped and their inner
address checked too, and private targets only through an explicit, logged
allowlist.

The tables below are written from the IANA special-purpose address registries
instead of trusting ``ipaddress.is_global``: on Python 3.11 that property calls
``::7f00:1`` (IPv4-compatible), ``2002:7f00:1::`` (6to4), ``64:ff9b::7f00:1``
(NAT64) and ``::ffff:0:7f00:1`` (SIIT) global, although each one leads to
127.0.0.1.

Numeric host names are read the way ``inet_aton`` (and so ``getaddrinfo``)
reads them: ``2130706433``, ``0177.0.0.1``, ``0x7f.0.0.1`` and ``127.1`` are
all 127.0.0.1, and are refused as such before any resolver sees them.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from interlock.engine.errors import ConfigError, FailureMode, HookFailure
from interlock.engine.logs import logger

log = logger("interlock.executors.net")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Awaitable[list[str]]]
"""An async function from (host, port) to the host's addresses, as strings."""


class SSRFError(HookFailure):
    """A target an HTTP hook may not reach. Never retryable: the answer will not change."""

    mode = FailureMode.CRASH
    retryable = False

    def __init__(self, message: str, *, reason: str, host: str = "",
                 address: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        """A short code: scheme, userinfo, loopback, private, link-local, ..."""
        self.host = host
        self.address = address
        """The address that was refused, when there was one."""


class _Rule(NamedTuple):
    network: IPNetwork
    reason: str
    label: str
    allowlistable: bool


def _rules(*rows: tuple[str, str, str, bool]) -> tuple[_Rule, ...]:
    return tuple(_Rule(ipaddress.ip_network(n), r, lbl, a) for n, r, lbl, a in rows)


# First match wins, so narrower networks come before the ones that contain
# them. `allowlistable=False` marks addresses no hook can live on: they stay
# refused whatever the allowlist says.
_V4 = _rules(
    ("0.0.0.0/32", "unspecified", "the unspecified address", False),
    ("0.0.0.0/8", "this-network", "'this network'", False),
    ("10.0.0.0/8", "private", "a private address", True),
    ("100.64.0.0/10", "cgnat", "shared address space (CGNAT)", True),
    ("127.0.0.0/8", "loopback", "a loopback address", True),
    ("169.254.0.0/16", "link-local", "link-local (cloud metadata lives here)", True),
    ("172.16.0.0/12", "private", "a private address", True),
    ("192.0.0.0/24", "ietf-protocol", "an IETF protocol assignment", True),
    ("192.0.2.0/24", "documentation", "a documentation address (TEST-NET-1)", True),
    ("192.88.99.0/24", "reserved", "the deprecated 6to4 relay anycast", True),
    ("192.168.0.0/16", "private", "a private address", True),
    ("198.18.0.0/15", "benchmarking", "a benchmarking address", True),
    ("198.51.100.0/24", "documentation", "a documentation address (TEST-NET-2)", True),
    ("203.0.113.0/24", "documentation", "a documentation address (TEST-NET-3)", True),
    ("224.0.0.0/4", "multicast", "a multicast address", False),
    ("255.255.255.255/32", "broadcast", "the broadcast address", False),
    ("240.0.0.0/4", "reserved", "a reserved address", True),
)

_V6 = _rules(
    ("::/128", "unspecified", "the unspecified address", False),
    ("::1/128", "loopback", "the loopback address", True),
    ("::ffff:0:0:0/96", "ipv4-translated", "an IPv4-translated (SIIT) address", True),
    ("::/96", "ipv4-compatible", "a deprecated IPv4-compatible address", True),
    ("::/8", "reserved", "a reserved address", True),
    ("64:ff9b:1::/48", "nat64-local", "a local-use NAT64 address", True),
    ("100::/64", "discard", "a discard-only address", True),
    ("2001:db8::/32", "documentation", "a documentation address", True),
    ("2001::/23", "ietf-protocol", "an IETF protocol assignment", True),
    ("3fff::/20", "documentation", "a documentation address", True),
    ("fc00::/7", "unique-local", "a unique local address (ULA)", True),
    ("fe80::/10", "link-local", "a link-local address", True),
    ("fec0::/10", "site-local", "a deprecated site-local address", True),
    ("ff00::/8", "multicast", "a multicast address", False),
)
_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")

# Prefixes that only carry an IPv4 address: they are as reachable as the
# address inside them, so they are judged by it (see `embedded`).
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_TEREDO = ipaddress.IPv6Network("2001::/32")
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
_TRANSPARENT = (_MAPPED, _NAT64, _TEREDO, _SIX_TO_FOUR)

# Addresses that carry an IPv4 address, with how to get it out. The kernel
# sends IPv4-mapped traffic to the inner address itself; the others reach it
# through a relay or translator, which is just as bad when the inner address
# is private.
_CARRIERS: tuple[tuple[IPNetwork, str], ...] = (
    (_MAPPED, "IPv4-mapped"),
    (ipaddress.IPv6Network("::ffff:0:0:0/96"), "IPv4-translated"),
    (ipaddress.IPv6Network("::/96"), "IPv4-compatible"),
    (_NAT64, "NAT64"),
    (ipaddress.IPv6Network("64:ff9b:1::/48"), "local-use NAT64"),
)
_LOW32 = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why one address may not be reached."""

    address: IPAddress
    reason: str
    label: str
    network: IPNetwork
    allowlistable: bool

    def describe(self) -> str:
        return f"{self.address} is {self.label} ({self.network})"


def classify(address: IPAddress) -> Refusal | None:
    """The rule that refuses this one address, ignoring what it embeds (see `check`)."""
    if address.version == 4:
        rules = _V4
    else:
        address = _unscoped(address)
        if any(address in net for net in _TRANSPARENT):
            return None
        rules = _V6
    for rule in rules:
        if address in rule.network:
            return Refusal(address, rule.reason, rule.label, rule.network, rule.allowlistable)
    if address.version == 6 and address not in _GLOBAL_UNICAST:
        return Refusal(address, "reserved", "outside global unicast", _GLOBAL_UNICAST, True)
    return None


def embedded(address: IPAddress) -> list[tuple[ipaddress.IPv4Address, str]]:
    """The IPv4 addresses an IPv6 address carries, each with the mechanism's name."""
    if address.version == 4:
        return []
    address = _unscoped(address)
    assert isinstance(address, ipaddress.IPv6Address)
    if address in _SIX_TO_FOUR:
        inner = address.sixtofour
        return [] if inner is None else [(inner, "6to4")]
    if address in _TEREDO:
        pair = address.teredo
        if pair is None:
            return []
        server, client = pair  # the stdlib has already undone the client's XOR
        return [(server, "Teredo server"), (client, "Teredo client")]
    value = int(address)
    for net, how in _CARRIERS:
        if address in net and address not in (ipaddress.IPv6Address(0),
                                               ipaddress.IPv6Address(1)):
            return [(ipaddress.IPv4Address(value & _LOW32), how)]
    return []


def _unscoped(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        return ipaddress.IPv6Address(str(address).split("%", 1)[0])
    return address


# inet_aton accepts 1 to 4 parts, each decimal, octal (leading 0) or hex
# (0x); the last part fills the bytes that are left.
_PART = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")


def parse_numeric_host(host: str) -> IPAddress | None:
    """Read a host as an address literal the way the C resolver would, or None.

    Besides dotted quads and IPv6 this accepts ``2130706433``, ``0177.0.0.1``,
    ``0x7f.0.0.1`` and ``127.1``; a trailing dot is ignored (as WHATWG URL
    parsers do), so ``127.0.0.1.`` is caught as well.
    """
    text = host.strip("[]")
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text.replace("%25", "%", 1))
        except ValueError:
            return None
    parts = text.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if not 1 <= len(parts) <= 4 or not all(_PART.fullmatch(p) for p in parts):
        return None
    values = []
    for p in parts:
        if p[:2].lower() == "0x":
            values.append(int(p[2:] or "0", 16))
        elif len(p) > 1 and p[0] == "0":
            values.append(int(p, 8))
        else:
            values.append(int(p))
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        return None
    number = last
    for i, v in enumerate(head):
        number |= v << (8 * (3 - i))
    return ipaddress.IPv4Address(number)


@dataclass(frozen=True, slots=True)
class Allowlist:
    """Private targets an operator named on purpose: host names and networks.

    A host entry lets that name resolve to loopback, private, CGNAT and
    unique-local addresses (never link-local, where cloud metadata lives: that
    takes a network entry). A network entry lets any address inside it through.
    Unspecified, multicast and broadcast addresses are refused whatever the
    list says. Every use is logged on the ``interlock.executors.net`` logger.
    """

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()
    entries: tuple[str, ...] = field(default=())

    @classmethod
    def parse(cls, entries: Iterable[str], *, where: str = "allow_private") -> Allowlist:
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        kept: list[str] = []
        for raw in entries:
            entry = str(raw).strip().lower().rstrip(".")
            if not entry:
                raise ConfigError("empty allowlist entry", field=where,
                                  fix="remove it, or name a host or a CIDR network")
            kept.append(entry)
            if "://" not in entry and ("/" in entry or parse_numeric_host(entry) is not None):
                networks.append(_parse_network(entry, where))
            elif re.fullmatch(r"[a-z0-9_]([a-z0-9_\-]*[a-z0-9_])?(\.[a-z0-9_\-]+)*", entry):
                hosts.add(entry)
            else:
                raise ConfigError(f"allowlist entry {raw!r} is neither a host name nor a "
                                  "network", field=where,
                                  fix="write a host name (hooks.internal) or a CIDR "
                                      "(10.0.0.0/8)")
        return cls(frozenset(hosts), tuple(networks), tuple(kept))

    def __bool__(self) -> bool:
        return bool(self.hosts or self.networks)

    def admits(self, host: str, refusal: Refusal) -> str | None:
        """The entry that lets this refused address through, if any."""
        if not refusal.allowlistable:
            return None
        addr = refusal.address
        for net in self.networks:
            if addr.version == net.version and addr in net:
                return str(net)
        if (_norm_host(host) in self.hosts
                and refusal.reason in ("loopback", "private", "cgnat", "unique-local")):
            return _norm_host(host)
        return None


def _parse_network(entry: str, where: str) -> IPNetwork:
    text = entry
    literal = parse_numeric_host(text)
    if literal is not None:
        text = str(literal)
    try:
        net = ipaddress.ip_network(text, strict=True)
    except ValueError as exc:
        raise ConfigError(f"allowlist entry {entry!r} is not a valid network: {exc}",
                          field=where, fix="write a CIDR such as 10.0.0.0/8 or fd00::/8"
                          ) from None
    if net.prefixlen == 0:
        raise ConfigError(f"allowlist entry {entry!r} allows every address", field=where,
                          fix="name the private networks your hooks live on")
    return net


def _norm_host(host: str) -> str:
    return host.lower().rstrip(".")


def check_address(host: str, address: IPAddress, allowlist: Allowlist = Allowlist()) -> None:
    """Refuse ``address`` (one of ``host``'s) unless it and everything it embeds may be reached."""
    # Inner addresses first: "embeds 127.0.0.1" says more than "is deprecated".
    layers: list[tuple[IPAddress, str | None]] = [*embedded(address), (address, None)]
    for addr, how in layers:
        refusal = classify(addr)
        if refusal is None:
            continue
        entry = allowlist.admits(host, refusal)
        if entry is not None:
            log.info("http hook target %s -> %s admitted by allowlist entry %r (%s)",
                     host, address, entry, refusal.reason)
            continue
        if how is None:
            text = refusal.describe()
        else:
            text = f"{address} embeds {addr} ({how}), and {refusal.describe()}"
        named = "" if _norm_host(host) == _norm_host(str(address)) else f"{host} resolves to "
        fix = ("" if not refusal.allowlistable
               else "; if this target is yours, add it to the hook's allow_private")
        raise SSRFError(f"refused target: {named}{text}{fix}", reason=refusal.reason,
                        host=host, address=str(address))


async def default_resolver(host: str, port: int) -> list[str]:
    """Resolve with the system resolver (getaddrinfo), keeping its order."""
    import anyio

    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: dict[str, None] = {}
    for *_rest, sockaddr in infos:
        seen.setdefault(str(sockaddr[0]), None)
    return list(seen)


@dataclass(frozen=True, slots=True)
class Target:
    """A URL that passed the static checks: scheme, credentials, host."""

    url: str
    scheme: str
    host: str
    port: int
    literal: IPAddress | None
    """The address when the host is written as one (in any inet_aton form)."""


_DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST_CHARS = re.compile(r"[a-z0-9_\-.]+")


def parse_url(url: str, *, allowlist: Allowlist = Allowlist()) -> Target:
    """Check what can be checked without DNS, or raise SSRFError naming why."""
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        # httpx refuses some numeric forms (0177.0.0.1) outright; name what
        # they are anyway, since that is the clearer message.
        host = urllib.parse.urlsplit(str(url)).hostname or ""
        literal = parse_numeric_host(host)
        if literal is not None:
            check_address(host, literal, allowlist)
        raise SSRFError(f"refused target {url!r}: not a valid URL ({exc})",
                        reason="invalid-url", host=host) from None
    scheme = parsed.scheme
    if scheme not in _DEFAULT_PORTS:
        raise SSRFError(f"refused target {url!r}: scheme {scheme or '(none)'!r} is not "
                        "allowed; use http or https", reason="scheme")
    if parsed.userinfo:
        raise SSRFError("refused target: credentials in the URL are not allowed; put them "
                        "in headers_from_env (a header filled from an environment variable)",
                        reason="userinfo", host=parsed.host)
    host = parsed.host
    if not host:
        raise SSRFError(f"refused target {url!r}: the URL has no host", reason="no-host")
    port = parsed.port or _DEFAULT_PORTS[scheme]
    literal = parse_numeric_host(host)
    if literal is not None:
        check_address(host, literal, allowlist)
        if literal.version == 4 and str(literal) != host:
            log.info("http hook host %r read as %s", host, literal)
        return Target(url, scheme, host, port, literal)
    name = _norm_host(host)
    if not _HOST_CHARS.fullmatch(name):
        raise SSRFError(f"refused target: host {host!r} has characters no DNS name has",
                        reason="host-chars", host=host)
    if (name == "localhost" or name.endswith(".localhost")) and name not in allowlist.hosts:
        raise SSRFError(f"refused target: {host} is a loopback name (RFC 6761); if this "
                        "target is yours, add it to the hook's allow_private",
                        reason="loopback", host=host)
    return Target(url, scheme, host, port, None)


async def resolve_checked(host: str, port: int, *, allowlist: Allowlist = Allowlist(),
                          resolver: Resolver | None = None) -> list[str]:
    """The host's addresses, every one of them checked; refuse if any is refused.

    Refusing the whole name when one record is bad (rather than skipping that
    record) is what defeats a DNS answer that mixes a public and a private
    address.
    """
    literal = parse_numeric_host(host)
    if literal is not None:
        check_address(host, literal, allowlist)
        return [str(literal)]
    try:
        found = await (resolver or default_resolver)(host, port)
    except OSError as exc:
        raise HookFailure(f"could not resolve {host}: {exc}", retryable=True) from None
    if not found:
        raise HookFailure(f"could not resolve {host}: no addresses", retryable=True)
    out: list[str] = []
    for text in found:
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            raise SSRFError(f"refused target: resolver returned {text!r} for {host}, which "
                            "is not an address", reason="bad-resolution", host=host) from None
        check_address(host, address, allowlist)
        out.append(text)
    return out


async def check_url(url: str, *, allow_private: Sequence[str] | Allowlist = (),
                    resolver: Resolver | None = None) -> list[str]:
    """Check a URL completely, DNS included; return the addresses it may reach.

    Raises SSRFError naming the reason. This answers "may this URL be used";
    the HTTP executor does not rely on it alone, since DNS may answer
    differently a moment later: its transport checks again at connect time
    and connects to the address it checked.
    """
    allowlist = (allow_private if isinstance(allow_private, Allowlist)
                 else Allowlist.parse(allow_private))
    target = parse_url(url, allowlist=allowlist)
    return await resolve_checked(target.host, target.port, allowlist=allowlist,
                                 resolver=resolver)
