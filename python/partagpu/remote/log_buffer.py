# SPDX-License-Identifier: GPL-3.0-or-later
"""A followed job's output as it arrives in LOG records (PGR/1 §7.6), for a reader that
takes it at its own pace.

LOG offsets are the member's. After a reconnection the member resends from the number of
bytes held, so bytes already held are skipped; a LOG beyond them leaves a marked gap, as
partagpud's own submitter does (``jobs/remote.rs``). The reader sees a stream of its own
(offsets that count markers too). Bytes it has read are dropped; unread ones are capped, the
oldest giving way with a marker, so a reader that never reads cannot exhaust memory.
"""

from __future__ import annotations

MAX_UNREAD_BYTES = 64 << 20


class LogBuffer:
    """Not thread-safe: the follower holds a lock around it."""

    def __init__(self, max_unread: int = MAX_UNREAD_BYTES) -> None:
        self._data = bytearray()
        self._base = 0  # the reader's offset of _data[0]
        self._dropped = 0  # unread bytes given up since the reader last read
        self._held = 0  # the member's offset just past the bytes received
        self._max_unread = max_unread

    @property
    def held(self) -> int:
        """Bytes of the member's log held: the offset to follow from after a reconnection."""
        return self._held

    @property
    def end(self) -> int:
        """The reader's offset just past the last byte received."""
        return self._base + len(self._data)

    def add(self, offset: int, payload: bytes) -> None:
        """One LOG record's payload, at the member's ``offset``."""
        if offset > self._held:
            self._append(f"\n[partagpu: {offset - self._held} bytes of output lost in transit]\n"
                         .encode())
            self._held = offset
        skip = min(self._held - offset, len(payload))
        self._append(payload[skip:])
        self._held += len(payload) - skip

    def note(self, text: str) -> None:
        """A line of this package's own, in the stream (a job given up, for example)."""
        self._append(text.encode())

    def read(self, offset: int, limit: int) -> tuple[bytes, int]:
        """Up to ``limit`` bytes from the reader's ``offset`` and the offset after them;
        what comes before ``offset`` is dropped for good."""
        start = min(max(offset - self._base, 0), len(self._data))
        del self._data[:start]
        self._base += start
        prefix = b""
        if self._dropped:
            prefix = (f"[partagpu: {self._dropped} bytes of output dropped, not read in time]\n"
                      .encode())
            self._dropped = 0
        chunk = bytes(self._data[:limit])
        return prefix + chunk, self._base + len(chunk)

    def _append(self, data: bytes) -> None:
        self._data += data
        over = len(self._data) - self._max_unread
        if over > 0:
            del self._data[:over]
            self._base += over
            self._dropped += over
