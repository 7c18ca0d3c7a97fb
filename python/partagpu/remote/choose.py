# SPDX-License-Identifier: GPL-3.0-or-later
"""Which room, epoch and members to dial, from what mDNS announced (PGR/1 §2.7, §10).

One code is tried against one room only: with several rooms visible the user must name
theirs (``room=``, its label or id), since a guess at a room that is not the user's spends
one of its guesses and raises an alert there. Of one room seen under two epochs (a rotation
in progress), the members announcing the newest are dialled.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence

from partagpu.errors import RoomNotFoundError
from partagpu.pgr.mdns import Announcement

DEFAULT_PORT = 7655
_ROOM_ID = re.compile(r"[0-9a-fA-F]{32}")


@dataclasses.dataclass(frozen=True)
class Member:
    """A machine to dial; ``node_id`` once a connection proved who answers there."""

    host: str
    port: int
    node_id: str | None = None

    def __str__(self) -> str:
        return f"the member at {self.host}:{self.port}"


@dataclasses.dataclass(frozen=True)
class RoomTarget:
    """The room chosen: id (32 lowercase hex), epoch, label ("" if none), members to try."""

    room_id: str
    epoch: int
    label: str
    members: tuple[Member, ...]

    def __str__(self) -> str:
        return f"room {self.label!r}" if self.label else f"room {self.room_id}"


def is_room_id(text: str) -> bool:
    return bool(_ROOM_ID.fullmatch(text))


def _listing(rooms: dict[str, list[Announcement]]) -> str:
    shown = [f"{_label(group)!r} ({room_id[:8]}…)" if _label(group) else f"{room_id} (no label)"
             for room_id, group in rooms.items()]
    return ", ".join(shown) or "none"


def _label(group: Sequence[Announcement]) -> str:
    newest = max(a.epoch for a in group)
    return next((a.label for a in group if a.epoch == newest and a.label), "")


def _pick(rooms: dict[str, list[Announcement]], wanted: str | None) -> str:
    if wanted is None:
        if len(rooms) == 1:
            return next(iter(rooms))
        if not rooms:
            raise RoomNotFoundError(
                "no PartaGPU room is announced on this network (mDNS): give peer= a member's "
                "address (and room= its id with epoch= if mDNS does not reach it)")
        raise RoomNotFoundError(
            f"{len(rooms)} rooms are announced here ({_listing(rooms)}): choose yours with "
            "room= (its label or id); the code is never tried against several rooms")
    if is_room_id(wanted):
        if wanted.lower() in rooms:
            return wanted.lower()
        raise RoomNotFoundError(f"no room with id {wanted.lower()} is announced here; "
                                f"visible: {_listing(rooms)}")
    named = [room_id for room_id, group in rooms.items()
             if any(a.label.casefold() == wanted.casefold() for a in group)]
    if len(named) == 1:
        return named[0]
    if not named:
        raise RoomNotFoundError(f"no room labelled {wanted!r} is announced here; "
                                f"visible: {_listing(rooms)}")
    raise RoomNotFoundError(f"{len(named)} rooms are labelled {wanted!r} ({', '.join(named)}): "
                            "give room= the id of yours")


def choose_room(announcements: Iterable[Announcement], *, room: str | None = None,
                peer: tuple[str, int | None] | None = None, peer_addresses: Iterable[str] = (),
                epoch: int | None = None) -> RoomTarget:
    """The room to join and the members to try, in order. ``peer`` (host, port or None) is
    then the only member dialled, and the room is the one it announces (``peer_addresses``:
    the host's IPv4 addresses); ``epoch`` overrides the newest one announced."""
    rooms: dict[str, list[Announcement]] = {}
    for announcement in announcements:
        rooms.setdefault(announcement.room_id, []).append(announcement)
    if peer is not None:
        near = set(peer_addresses)
        rooms = {room_id: group for room_id, group in rooms.items()
                 if any(near.intersection(a.addresses) for a in group)}
        if not rooms:
            raise RoomNotFoundError(
                f"{peer[0]} announces no PartaGPU room here (mDNS): give room= the room's id "
                "and epoch= its epoch as well (partagpuctl room show prints them on a member)")
    room_id = _pick(rooms, room)
    group = rooms[room_id]
    chosen_epoch = max(a.epoch for a in group) if epoch is None else epoch
    if peer is not None:  # the machine the user named, and no other
        port = next((a.port for a in group if set(peer_addresses) & set(a.addresses)),
                    DEFAULT_PORT)
        members = [Member(peer[0], peer[1] or port)]
    else:
        members = [Member(address, a.port) for a in group
                   if a.epoch == chosen_epoch or epoch is not None for address in a.addresses]
    return RoomTarget(room_id, chosen_epoch, _label(group), tuple(dict.fromkeys(members)))
