# SPDX-License-Identifier: GPL-3.0-or-later
""":func:`discover` (the machines of the room) and :func:`read_fleet` (everything
``python -m partagpu peers`` shows), read from the local partagpud over the system D-Bus.

Both open a connection, read and close it: nothing is kept between calls, and importing this
module touches no bus.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partagpu.dbus_client import FLEET_INTERFACE, ROOM_INTERFACE, ServiceClient
from partagpu.errors import ServiceError
from partagpu.peers import Peer


@dataclass(frozen=True)
class Room:
    """The room this machine is in: 32 hex digits and the creator's label (maybe empty)."""

    room_id: str
    label: str


@dataclass(frozen=True)
class UnverifiedAnnouncement:
    """A machine announcing this room that is not a verified member (yet), and why."""

    address: str
    problem: str


@dataclass(frozen=True)
class OtherRoom:
    """Another room announced on the network (its label may be empty)."""

    label: str
    machines: int


@dataclass(frozen=True)
class NetworkInterface:
    """An interface discovery uses now, e.g. ``eth0`` with ``10.0.0.5/24``."""

    name: str
    address: str


@dataclass(frozen=True)
class Fleet:
    """What partagpud knows about the room, read in one go."""

    room: Room | None
    members: tuple[Peer, ...]
    unverified: tuple[UnverifiedAnnouncement, ...]
    other_rooms: tuple[OtherRoom, ...]
    interfaces: tuple[NetworkInterface, ...]

    def to_json(self) -> dict[str, Any]:
        """The document ``python -m partagpu peers --json`` prints (the same shape as
        ``partagpuctl peers --json``)."""
        return {
            "room": None if self.room is None else {"room_id": self.room.room_id,
                                                    "label": self.room.label},
            "members": [member.to_json() for member in self.members],
            "unverified": [{"address": u.address, "problem": u.problem} for u in self.unverified],
            "other_rooms": [{"label": r.label, "machines": r.machines} for r in self.other_rooms],
            "interfaces": [{"name": i.name, "address": i.address} for i in self.interfaces],
        }


def discover(timeout: float = 5.0) -> list[Peer]:
    """The machines of the room: this one first, then every verified member, online or not.

    ``timeout`` (seconds) bounds the whole exchange with the bus. Raises
    :class:`ServiceUnavailableError` when there is no system bus or partagpud is not running,
    :class:`ServiceError` when partagpud answers something this package does not understand.
    """
    with ServiceClient(timeout) as client:
        return _members(client.get(FLEET_INTERFACE, "Members"))


def read_fleet(timeout: float = 5.0) -> Fleet:
    """The room, its members, unverified announcements, other rooms and the interfaces
    discovery uses; ``timeout`` and errors as :func:`discover`."""
    with ServiceClient(timeout) as client:
        fleet = client.get_all(FLEET_INTERFACE)
        room = client.get_all(ROOM_INTERFACE)
    # GetAll of a service older than a property simply lacks it: read that as empty.
    empty = {"Members": ("aa{sv}", []), "Unverified": ("a(ss)", []),
             "OtherRooms": ("a(su)", []), "Interfaces": ("a(ss)", [])}
    fleet = {**empty, **fleet}
    joined = _typed("Joined", room.get("Joined", ("b", False)), "b")
    return Fleet(
        room=Room(room_id=_typed("RoomId", room.get("RoomId", ("s", "")), "s"),
                  label=_typed("Label", room.get("Label", ("s", "")), "s")) if joined else None,
        members=tuple(_members(fleet["Members"])),
        unverified=tuple(UnverifiedAnnouncement(address, problem) for address, problem
                         in _typed("Unverified", fleet["Unverified"], "a(ss)")),
        other_rooms=tuple(OtherRoom(label, machines) for label, machines
                          in _typed("OtherRooms", fleet["OtherRooms"], "a(su)")),
        interfaces=tuple(NetworkInterface(name, address) for name, address
                         in _typed("Interfaces", fleet["Interfaces"], "a(ss)")),
    )


def _members(value: tuple[str, Any]) -> list[Peer]:
    peers = [Peer.from_dbus(entry) for entry in _typed("Members", value, "aa{sv}")]
    # The contract puts this machine first; keep that promise even if a service does not.
    return sorted(peers, key=lambda peer: not peer.local)


def _typed(name: str, value: tuple[str, Any], signature: str) -> Any:
    """The value of a property variant, after checking its D-Bus type."""
    actual, content = value
    if actual != signature:
        raise ServiceError(f"partagpud sent the property {name} as D-Bus type {actual!r}, "
                           f"expected {signature!r}")
    return content
