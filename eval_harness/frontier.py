"""The resume frontier: the dataset position before which every sample has all its epochs recorded.

The runner hands samples out in dataset order, so finished samples form a prefix of the dataset except for
a window around the samples in flight. Tracking that window lets a resume seek straight to the frontier
and know the few records beyond it, instead of reading a million finished samples and records again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from eval_harness.artifacts import record_key
from eval_harness.datasets import Position

START = Position(0, 1, 0)


@dataclass
class _Open:
    position: Position
    pending: set[int]
    recorded: list[int] = field(default_factory=list)


class FrontierTracker:
    """Follows samples from hand-out to their last recorded epoch; reports the frontier and the window."""

    def __init__(self, epochs: int, start: Position = START, taken_before: int = 0, unseen_recorded: int = 0) -> None:
        self._all_epochs = frozenset(range(epochs))
        self._window: OrderedDict[str, _Open] = OrderedDict()
        self.frontier = start
        self.taken_before = taken_before
        self.unseen_recorded = unseen_recorded
        """Records already in the file at the session's start whose samples this session has not reached yet.
        While any is left, ``keys_beyond`` cannot name them all: a resume point made then would forget them, and
        the next session would run them again."""

    def seen(self, sample_id: str, position: Position, recorded: Iterable[int]) -> None:
        """A sample counted toward --limit was reached; ``recorded`` are its epochs already in the file."""
        done = list(recorded)
        self.unseen_recorded -= len(done)
        pending = set(self._all_epochs)
        pending.difference_update(done)
        self._window[sample_id] = _Open(position, pending, done)
        if not pending:  # else the window's front cannot have moved: it was pending before, and still is
            self._advance()

    def recorded(self, sample_id: str, epoch: int) -> None:
        """One epoch of a sample in the window was written."""
        entry = self._window.get(sample_id)
        if entry is not None and epoch in entry.pending:
            entry.pending.discard(epoch)
            entry.recorded.append(epoch)
            if not entry.pending:
                self._advance()

    def keys_beyond(self) -> list[str]:
        """Record keys already written for samples at or after the frontier."""
        return [record_key(sample_id, epoch) for sample_id, entry in self._window.items() for epoch in entry.recorded]

    def _advance(self) -> None:
        while self._window:
            sample_id, entry = next(iter(self._window.items()))
            if entry.pending:
                return
            del self._window[sample_id]
            self.frontier = Position(entry.position.next_offset, entry.position.line + 1, -1)
            self.taken_before += 1


__all__ = ["START", "FrontierTracker"]
