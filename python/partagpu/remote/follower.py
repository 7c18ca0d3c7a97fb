# SPDX-License-Identifier: GPL-3.0-or-later
"""Following a job on a member over PGR/1 (§7.6), in a background thread, as partagpud's
own submitter does (``jobs/remote.rs``): REQUEST follow from the bytes held, then LOG
records into a :class:`LogBuffer` and a RESPONSE per state change, until the RESPONSE
``done: true``. A cancel asked meanwhile goes on the same connection (the member answers it
with the state change, not a RESPONSE of its own).

A connection that breaks is dialled again (after a growing pause when it broke within 5 s)
and followed from the bytes held; after 120 s without reaching the member the job is given
up as ``lost``. The member never pings on a job connection, so after 30 s of silence this
end pings, and 45 s more of silence count as a broken connection. Every method is safe to
call from any thread.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from typing import Any

from partagpu.errors import PartaGPUError, ServiceError, WrongCodeError
from partagpu.pgr.errors import ConnectionClosedError, DeadlineError, PgrError
from partagpu.pgr.records import RecordType
from partagpu.pgr.session import Session
from partagpu.remote.log_buffer import LogBuffer
from partagpu.remote.wire import (ANSWER_TIMEOUT_S, keep_alive, parse_log, parse_reply,
                                  send_request)

GIVE_UP_AFTER_S = 120.0
POLL_S = 0.2  # how soon a cancel or a stop is acted on
PING_AFTER_S = 30.0
DEAD_AFTER_S = 45.0
CANCEL_WAIT_S = 5.0
BROKE_QUICKLY_S = 5.0  # a connection that broke sooner is dialled again only after a pause
TERMINAL_STATES = frozenset({"succeeded", "failed", "cancelled", "preempted", "lost"})


class _Refused(Exception):
    """The member will not follow the job (it no longer knows it): no point dialling again."""


class Follower:
    """Keeps the last record and the output of job ``handle``; ``dial`` opens a job
    connection to the member that coordinates it, ``member`` names it in messages."""

    def __init__(self, handle: str, record: dict[str, Any], dial: Callable[[], Session],
                 member: str) -> None:
        self.handle = handle
        self._dial, self._member = dial, member
        self._lock = threading.Lock()
        self._log = LogBuffer()
        self._record = copy.deepcopy(record)
        self._done = False
        self._cancel_asked = threading.Event()
        self._cancel_sent = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what the Job reads --------------------------------------------------------------
    def record(self) -> dict[str, Any]:
        self.start()
        with self._lock:
            return copy.deepcopy(self._record)

    def read(self, offset: int, limit: int) -> tuple[bytes, int, bool]:
        """Output from the reader's ``offset``; complete once the job ended and all was read."""
        self.start()
        with self._lock:
            data, following = self._log.read(offset, limit)
            return data, following, self._done and following >= self._log.end

    def cancel(self) -> None:
        """Asks the member to stop the job; waits a little until the request is sent."""
        if self._is_done():
            return
        self._cancel_asked.set()
        self.start()
        self._cancel_sent.wait(CANCEL_WAIT_S)

    # -- the thread ----------------------------------------------------------------------
    def start(self, session: Session | None = None) -> None:
        """Follows in the background (on ``session`` if given) unless done or already so."""
        with self._lock:
            running = self._thread is not None and self._thread.is_alive()
            if self._done or running:
                if session is not None:
                    session.close()
                return
            self._stopping.clear()
            self._thread = threading.Thread(target=self._run, args=(session,), daemon=True,
                                            name=f"partagpu follow {self.handle[:24]}")
            self._thread.start()

    def stop(self, wait: float = 2.0) -> None:
        """Stops following (the next read starts again, unless the job is done)."""
        self._stopping.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(wait)

    def _is_done(self) -> bool:
        with self._lock:
            return self._done

    def _run(self, session: Session | None) -> None:
        last_contact, retry = time.monotonic(), 1.0
        while not self._stopping.is_set():
            if session is None:
                try:
                    session = self._dial()
                except WrongCodeError:
                    return self._give_up(f"{self._member} no longer accepts the room code "
                                         "(it was probably changed)")
                except PartaGPUError:
                    if time.monotonic() - last_contact > GIVE_UP_AFTER_S:
                        return self._give_up(f"{self._member} could not be reached for "
                                             f"{GIVE_UP_AFTER_S:.0f} s")
                    self._stopping.wait(retry)
                    retry = min(retry * 2, 10.0)
                    continue
            finished, opened = False, time.monotonic()
            try:
                finished = self._follow_on(session)
            except _Refused as refusal:
                session.close()
                return self._give_up(f"{self._member} no longer follows this job: {refusal}")
            except (PgrError, ServiceError, OSError):
                pass  # the connection broke or the member misbehaved: dial again
            except Exception as error:  # a bug here must not leave a reader waiting forever
                session.close()
                return self._give_up(f"following the job failed: {error!r}")
            session.close("done" if finished else "")
            session = None
            if finished:
                return
            last_contact = time.monotonic()
            if last_contact - opened < BROKE_QUICKLY_S:  # a member that keeps failing at once
                self._stopping.wait(retry)
                retry = min(retry * 2, 10.0)
            else:
                retry = 1.0

    def _follow_on(self, session: Session) -> bool:
        """One connection's worth of following; True once the job ended and all was sent."""
        with self._lock:
            held = self._log.held
        send_request(session, {"op": "follow", "job": self.handle, "offset": held})
        cancel_sent, quiet_since, pinged = False, time.monotonic(), False
        while not self._stopping.is_set():
            if self._cancel_asked.is_set() and not cancel_sent:
                send_request(session, {"op": "cancel", "job": self.handle})
                cancel_sent = True
                self._cancel_sent.set()
            if not session.wait_for_record(POLL_S):
                quiet = time.monotonic() - quiet_since
                if not pinged and quiet >= PING_AFTER_S:
                    session.send(RecordType.PING)
                    pinged = True
                elif pinged and quiet >= PING_AFTER_S + DEAD_AFTER_S:
                    raise DeadlineError("record from the member")
                continue
            record_type, body = session.recv(ANSWER_TIMEOUT_S)
            quiet_since, pinged = time.monotonic(), False
            if record_type is RecordType.LOG:
                offset, payload = parse_log(body)
                with self._lock:
                    self._log.add(offset, payload)
            elif record_type is RecordType.RESPONSE:
                if self._take_reply(body):
                    return True
            elif record_type is RecordType.CLOSE:
                raise ConnectionClosedError("followed job", body.decode("utf-8", "replace"))
            elif not keep_alive(session, record_type):
                raise ServiceError(f"the member sent {record_type.name} while following a job")
        return False

    def _take_reply(self, body: bytes) -> bool:
        reply = parse_reply(body)
        if not reply.ok or reply.record is None:
            raise _Refused(reply.error or "no reason given")
        if reply.record.get("job") != self.handle:
            raise ServiceError("the member answered about another job than the one followed")
        with self._lock:
            self._record = reply.record
            self._done = reply.done
        return reply.done

    def _give_up(self, reason: str) -> None:
        with self._lock:
            if self._record.get("state") not in TERMINAL_STATES:
                ended_ms = time.time_ns() // 1_000_000
                self._record.update(state="lost", reason=reason, ended_ms=ended_ms)
            self._log.note(f"\n[partagpu: {reason}]\n")
            self._done = True
