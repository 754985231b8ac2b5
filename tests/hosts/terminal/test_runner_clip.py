"""`interlock run -v` shows each tool result on one line, cut at a word and
marked when it is long (a blocked call's reason must not end mid-word unsaid)."""

from __future__ import annotations

from interlock.hosts.terminal.runner import _clip


def test_a_short_result_is_shown_whole() -> None:
    assert _clip("blocked: no rm here") == "blocked: no rm here"


def test_a_long_result_is_cut_at_a_word_and_says_so() -> None:
    text = "refused because " + "the policy forbids it " * 20
    shown = _clip(text)
    assert len(shown) < len(text)
    assert shown.endswith(f" … ({len(text)} characters)")
    kept = shown.split(" … ")[0]
    assert text.startswith(kept)
    assert text[len(kept)] == " "  # the cut fell between words
