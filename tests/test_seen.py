"""SeenStrings: the compact record of ids met so far that validation finds duplicates with."""

from __future__ import annotations

import random

from eval_harness.seen import SeenStrings


def test_reports_the_first_place_of_a_repeated_string_across_table_growth() -> None:
    rng = random.Random(7)
    seen, reference = SeenStrings(), {}
    # 20,000 insertions grow the table from 1,024 slots several times; a third of them are repeats
    for where in range(1, 20_001):
        text = f"id-{rng.randrange(14_000)}" if rng.random() < 0.9 else rng.choice(["", "é", "\ud800", "a\x00b"])
        expected = reference.setdefault(text, where)
        assert seen.first(text, where) == (expected if expected != where else None)
    assert len(seen) == len(reference)


def test_strings_differing_only_slightly_are_distinct() -> None:
    seen = SeenStrings()
    for where, text in enumerate(["a", "A", "a ", " a", "a\n", "á", "a\u0301"], start=1):
        assert seen.first(text, where) is None
    assert seen.first("a\u0301", 99) == 7
