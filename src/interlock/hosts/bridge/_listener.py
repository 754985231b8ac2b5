"""Who serves a plain-HTTP connection to loopback (docs/fleet.md, Remote bridges).

Any local user can bind a free loopback port, and would receive the machine's
token and the hook input. So before a request goes out on plain HTTP, the
bridge (and the forwarder) reads the uid that owns the server end of the
connection, as the Unix socket's peer-uid check does for the local server,
and goes on only when it is this user's or root's:

- by ``sock_diag`` netlink (Linux): one exact lookup of the connection, well
  under a millisecond;
- else from ``/proc/net/tcp`` and ``tcp6`` (the kernel writes the whole table,
  about 2 ms here);
- else (no ``/proc``: macOS, BSD) it cannot tell, and refuses.

In ``/proc/net/tcp`` a connection still being accepted is listed with its
listener's uid; ``sock_diag`` lists it under uid 0, so only an established
connection's answer is taken from there.
"""

from __future__ import annotations

import os
import socket
import sys

from interlock.hosts.bridge._errors import BridgeError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TRUSTED_LISTENERS = (0,)
"""Besides this user: root, whose services (a system proxy) no local user can pose as."""

_MAPPED = b"\0" * 10 + b"\xff\xff"


def check_listener(sock: socket.socket, url: str) -> None:
    """BridgeError unless this user (or root) owns the server end of ``sock``."""
    ours = _endpoint(sock.getsockname())
    theirs = _endpoint(sock.getpeername())
    uid = _diag_uid(ours, theirs)
    if uid is None:
        uid = _proc_uid(ours, theirs)
    if uid is None:
        raise BridgeError(f"cannot tell who listens at {url} (plain http is checked on "
                          "Linux only); use https:// with --ca or --pin")
    if uid != os.geteuid() and uid not in TRUSTED_LISTENERS:
        raise BridgeError(f"{url} is served by uid {uid}, not you (uid {os.geteuid()}) nor "
                          "root, so another user may be listening; nothing was sent (use "
                          "https:// with --ca or --pin)")


def _endpoint(address: Any) -> tuple[bytes, int]:
    """(address bytes, port) of a socket address, an IPv4-mapped IPv6 one as IPv4."""
    host, port = address[0], address[1]
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    raw = socket.inet_pton(family, host.partition("%")[0])
    return (raw[12:] if raw[:12] == _MAPPED else raw), port


def _diag_uid(ours: tuple[bytes, int], theirs: tuple[bytes, int]) -> int | None:
    """The owner of the socket at ``theirs`` connected to ``ours``, asked of the
    kernel by ``SOCK_DIAG_BY_FAMILY`` (linux/inet_diag.h); None when it cannot say."""
    family = socket.AF_INET if len(theirs[0]) == 4 else socket.AF_INET6
    # struct inet_diag_req_v2 {family, protocol, ext, pad, states;
    #   struct inet_diag_sockid {sport, dport (big-endian), src[16], dst[16], if,
    #   cookie[2]}}, the cookie "none" (~0, ~0) for a lookup by address.
    sockid = (theirs[1].to_bytes(2, "big") + ours[1].to_bytes(2, "big")
              + theirs[0].ljust(16, b"\0") + ours[0].ljust(16, b"\0")
              + b"\0" * 4 + b"\xff" * 8)
    req = bytes([family, socket.IPPROTO_TCP, 0, 0]) + b"\xff" * 4 + sockid
    # struct nlmsghdr {len, type = SOCK_DIAG_BY_FAMILY (20), flags = NLM_F_REQUEST, seq, pid}
    order = sys.byteorder
    head = ((16 + len(req)).to_bytes(4, order) + (20).to_bytes(2, order)
            + (1).to_bytes(2, order) + (1).to_bytes(4, order) + b"\0" * 4)
    try:
        nl = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4)  # NETLINK_SOCK_DIAG
    except (AttributeError, OSError):
        return None
    try:
        nl.settimeout(1.0)
        nl.sendto(head + req, (0, 0))
        answer = nl.recv(8192)
    except OSError:
        return None
    finally:
        nl.close()
    # nlmsghdr (16), then struct inet_diag_msg {family, state, timer, retrans (4),
    # sockid (48), expires, rqueue, wqueue, uid, inode}: the uid at 16 + 64.
    if len(answer) < 84 or int.from_bytes(answer[4:6], order) != 20:
        return None  # NLMSG_ERROR: not found, or not supported here
    if answer[17] != _ESTABLISHED:
        # A connection not yet accepted (a listener with TCP_DEFER_ACCEPT keeps it a
        # request socket until data arrives) is listed with uid 0, not its
        # listener's: /proc/net/tcp decides then.
        return None
    return int.from_bytes(answer[80:84], order)


_ESTABLISHED = 1
"""TCP_ESTABLISHED in inet_diag_msg.idiag_state."""


def _proc_uid(ours: tuple[bytes, int], theirs: tuple[bytes, int]) -> int | None:
    ports = f":{theirs[1]:04X} "  # this pair of ports, before parsing any address
    ports_tail = f":{ours[1]:04X} "
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as fh:
                rows = fh.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for row in rows:
            if ports not in row or ports_tail not in row:
                continue
            fields = row.split()
            if (len(fields) > 7 and _proc_endpoint(fields[1]) == theirs
                    and _proc_endpoint(fields[2]) == ours):
                return int(fields[7])
    return None


def _proc_endpoint(field: str) -> tuple[bytes, int]:
    """A ``/proc/net/tcp*`` address (``0100007F:1F90``: 32-bit words in host order)."""
    hexaddr, _, hexport = field.partition(":")
    raw = b"".join(int(hexaddr[i:i + 8], 16).to_bytes(4, sys.byteorder)
                   for i in range(0, len(hexaddr), 8))
    return (raw[12:] if raw[:12] == _MAPPED else raw), int(hexport, 16)
