"""Tables that fit the terminal: free-text columns wrap at word boundaries (their
continuation lines stay in the column), the least useful columns go first when
even that does not fit, and ``--wide`` prints every column in full on one line."""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Sequence
from typing import NamedTuple

_GAP = "  "
_MIN_WRAP = 16  # a wrapped column narrower than this reads as a word per line


def width() -> int | None:
    """The width to fit: ``$COLUMNS`` if set, else the terminal's; None (no limit)
    when the output goes to a pipe or file, so scripts and grep see whole lines."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size((80, 24)).columns


class Layout(NamedTuple):
    keep: list[int]
    """The columns shown."""
    sized: list[int]
    """Each column's width."""
    wrapping: set[int]
    """The columns that wrap."""
    limit: int | None
    """The width fitted (None: no limit, lines print whole)."""


def render(headers: Sequence[str], rows: Sequence[Sequence[str]], *,
           wrap: Sequence[str] = (), drop: Sequence[str] = (), wide: bool = False,
           columns: int | None = None) -> str:
    """The rows under ``headers``, fitted to ``columns`` (default: the terminal).

    ``wrap`` names the columns that may wrap (at spaces; a word longer than its
    column is the only thing ever split), ``drop`` the columns that may go, first
    first, when the others do not fit even wrapped."""
    keep, sized, wrapping, _limit = fit(headers, rows, wrap=wrap, drop=drop, wide=wide,
                                        columns=columns)
    return _lines(headers, rows, keep, sized, wrapping)


def more_rows(headers: Sequence[str], rows: Sequence[Sequence[str]], layout: Layout, *,
              header: bool = False) -> str:
    """``rows`` laid out with ``layout`` (a followed log, whose header was printed
    once): the same columns and widths, any cell too long for its column wrapping
    in it. ``header``: the header line first."""
    text = _lines(headers, rows, layout.keep, layout.sized,
                  set(layout.keep) if layout.limit is not None else set())
    return text if header else text.partition("\n")[2]


def fit(headers: Sequence[str], rows: Sequence[Sequence[str]], *,
        wrap: Sequence[str] = (), drop: Sequence[str] = (), wide: bool = False,
        columns: int | None = None, fill: bool = False) -> Layout:
    """The layout :func:`render` prints ``rows`` with. ``fill``: the last wrapping
    column takes what room is left (rows to come may be longer than these)."""
    keep = list(range(len(headers)))
    natural = [max([len(headers[i]), *(len(r[i]) for r in rows)]) for i in keep]
    if wide:
        return Layout(keep, natural, set(), None)
    limit = columns if columns is not None else width()
    if limit is None:
        return Layout(keep, natural, set(), None)
    if fill:
        growing = [i for i in keep if headers[i] in wrap]
        if growing:
            natural[growing[-1]] = max(natural[growing[-1]], limit - sum(
                natural[i] for i in keep if i != growing[-1]) - len(_GAP) * (len(keep) - 1))
    wrapping = {i for i in keep if headers[i] in wrap}

    # A wrapped column is at least as wide as its longest word, so no word is split
    # unless a single word is wider than the room left.
    floor = {i: min(natural[i], max([_MIN_WRAP, *(len(w) for r in rows for w in r[i].split())]))
             for i in wrapping}

    def needed(cols: list[int]) -> int:
        return sum(floor[i] if i in wrapping else natural[i]
                   for i in cols) + len(_GAP) * (len(cols) - 1)

    if sum(natural[i] for i in keep) + len(_GAP) * (len(keep) - 1) <= limit:
        return Layout(keep, natural, set(), limit)
    empty = [i for i in keep if all(r[i] in ("", "-") for r in rows)]
    dropping = list(dict.fromkeys(empty + [headers.index(h) for h in drop if h in headers]))
    while needed(keep) > limit and dropping:
        keep.remove(dropping.pop(0))
    for i in sorted(wrapping & set(keep), key=lambda i: -floor[i]):
        # Still too wide: a very long word (a path) is split rather than the table.
        floor[i] = max(_MIN_WRAP, floor[i] - max(needed(keep) - limit, 0))
    flexible = sorted((i for i in keep if i in wrapping), key=lambda i: natural[i] - floor[i])
    sized = list(natural)
    room = limit - needed(keep)  # what is left once every wrapped column has its floor
    for n, i in enumerate(flexible):
        extra = min(natural[i] - floor[i], max(room, 0) // (len(flexible) - n))
        sized[i] = floor[i] + extra
        room -= extra
    return Layout(keep, sized, wrapping, limit)


def _lines(headers: Sequence[str], rows: Sequence[Sequence[str]], keep: list[int],
           sized: list[int], wrapping: set[int]) -> str:
    out = [_GAP.join(headers[i].ljust(sized[i]) for i in keep).rstrip()]
    for row in rows:
        cells = [textwrap.wrap(row[i], sized[i], break_on_hyphens=False) or [""]
                 if i in wrapping and len(row[i]) > sized[i] else [row[i]] for i in keep]
        for n in range(max(len(c) for c in cells)):
            out.append(_GAP.join((c[n] if n < len(c) else "").ljust(sized[i])
                                 for c, i in zip(cells, keep, strict=True)).rstrip())
    return "\n".join(out)
