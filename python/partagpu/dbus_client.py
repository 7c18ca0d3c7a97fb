# SPDX-License-Identifier: GPL-3.0-or-later
"""A client of partagpud on the system D-Bus, with jeepney (pure Python).

Reading the fleet uses only ``org.freedesktop.DBus.Properties.Get``/``GetAll`` (no polkit
authorisation); jobs use the methods of ``Jobs1`` through :meth:`ServiceClient.call`, whose
errors named ``org.partagpu.PartaGPU.Daemon.Error.*`` become the exceptions of
:func:`partagpu.errors.from_bus_error`. The bus address is ``$DBUS_SYSTEM_BUS_ADDRESS`` when set (tests and
containers point it at a private bus), else the standard system bus socket. Every failure
becomes a :class:`ServiceUnavailableError` or a :class:`ServiceError` with one sentence.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from jeepney import (DBusAddress, DBusErrorResponse, HeaderFields, Message, MessageType, Properties,
                     new_method_call)
from jeepney.auth import AuthenticationError
from jeepney.bus import get_connectable_addresses
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import DBusConnection, DBusConnectionBase, Proxy, prep_socket
from jeepney.io.common import MessageFilters

from partagpu.errors import ServiceError, ServiceUnavailableError, from_bus_error

SERVICE_NAME = "org.partagpu.PartaGPU.Daemon"
OBJECT_PATH = "/org/partagpu/PartaGPU/Daemon"
FLEET_INTERFACE = f"{SERVICE_NAME}.Fleet1"
ROOM_INTERFACE = f"{SERVICE_NAME}.Room1"
JOBS_INTERFACE = f"{SERVICE_NAME}.Jobs1"
SYSTEM_BUS_ENV = "DBUS_SYSTEM_BUS_ADDRESS"
DEFAULT_SYSTEM_BUS = "unix:path=/var/run/dbus/system_bus_socket"

# The bus answers these when nobody owns the name (and it cannot be activated).
_NOT_RUNNING_ERRORS = {"org.freedesktop.DBus.Error.ServiceUnknown",
                       "org.freedesktop.DBus.Error.NameHasNoOwner"}
# A partagpud that predates an interface or property answers these.
_TOO_OLD_ERRORS = {"org.freedesktop.DBus.Error.UnknownInterface",
                   "org.freedesktop.DBus.Error.UnknownProperty",
                   "org.freedesktop.DBus.Error.UnknownMethod",
                   "org.freedesktop.DBus.Error.UnknownObject",
                   "org.freedesktop.DBus.Error.InvalidArgs"}


class _DeadlineConnection(DBusConnection):
    """jeepney's DBusConnection waits for the bus's reply to Hello without a limit; this
    one bounds it by the caller's timeout, otherwise it is DBusConnection as jeepney 0.9.0
    (pinned) builds it. ``enable_fds`` must match the socket's authentication (prep_socket)."""

    def __init__(self, sock: socket.socket, hello_timeout: float, enable_fds: bool = False) -> None:
        DBusConnectionBase.__init__(self, sock, enable_fds=enable_fds)
        self._filters = MessageFilters()
        self.bus_proxy = Proxy(message_bus, self, timeout=hello_timeout)
        self.unique_name = self.bus_proxy.Hello()[0]


class ServiceClient:
    """One connection to the system bus, used to read partagpud's properties and call it.

    ``timeout`` bounds the connection, authentication and every property read together, so
    a hung bus or service cannot block the caller longer; :meth:`call` takes a limit of its
    own (a Submit may wait for a member). ``enable_fds`` lets replies carry unix file
    descriptors (``Jobs1.OpenArtifact``). Use it as a context manager.
    """

    def __init__(self, timeout: float = 5.0, enable_fds: bool = False) -> None:
        self._timeout = timeout
        self._enable_fds = enable_fds
        self._deadline = time.monotonic() + timeout
        from_env = os.environ.get(SYSTEM_BUS_ENV, "")
        self._address = from_env or DEFAULT_SYSTEM_BUS
        # Names the variable in messages, since a stale one is a common cause of trouble.
        self._bus = (f"the system bus at {self._address} (from {SYSTEM_BUS_ENV})" if from_env
                     else "the system bus")
        self._connection = self._connect()

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._connection.close()

    def get(self, interface: str, name: str) -> tuple[str, Any]:
        """One property as (D-Bus signature, value)."""
        target = DBusAddress(OBJECT_PATH, bus_name=SERVICE_NAME, interface=interface)
        (value,) = self._call(Properties(target).get(name), f"{_short(interface)}.{name}")
        return value

    def get_all(self, interface: str) -> dict[str, tuple[str, Any]]:
        """Every property of an interface: name → (D-Bus signature, value)."""
        target = DBusAddress(OBJECT_PATH, bus_name=SERVICE_NAME, interface=interface)
        (values,) = self._call(Properties(target).get_all(), f"the {_short(interface)} properties")
        return values

    def call(self, interface: str, member: str, signature: str = "", body: tuple[Any, ...] = (),
             timeout: float = 30.0) -> tuple[Any, ...]:
        """Calls ``member`` of ``interface`` on partagpud and returns the reply's body; waits
        at most ``timeout`` seconds. A ``...Daemon.Error.*`` reply raises the matching
        exception of :mod:`partagpu.errors`, with the service's sentence as its message."""
        target = DBusAddress(OBJECT_PATH, bus_name=SERVICE_NAME, interface=interface)
        message = new_method_call(target, member, signature or None, body)
        return self._call(message, f"{_short(interface)}.{member}", timeout=timeout, mapped=True)

    def service_running(self) -> bool:
        """Whether partagpud owns its name on this bus now (it is not bus-activated)."""
        (owned,) = self._call(message_bus.NameHasOwner(SERVICE_NAME), "NameHasOwner")
        return bool(owned)

    def _remaining(self) -> float:
        return max(self._deadline - time.monotonic(), 0.0)

    def _connect(self) -> DBusConnection:
        try:
            sock = prep_socket(_socket_address(self._address), enable_fds=self._enable_fds,
                               timeout=self._remaining())
            try:
                return _DeadlineConnection(sock, hello_timeout=self._remaining(),
                                           enable_fds=self._enable_fds)
            except BaseException:
                sock.close()
                raise
        except TimeoutError:
            raise ServiceUnavailableError(
                f"{_capital(self._bus)} did not answer within {self._timeout:g} s") from None
        except (OSError, ValueError, AuthenticationError, DBusErrorResponse) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise ServiceUnavailableError(f"cannot connect to {self._bus}: {reason}") from None

    def _call(self, message: Message, what: str, timeout: float | None = None,
              mapped: bool = False) -> tuple[Any, ...]:
        limit = self._remaining() if timeout is None else timeout
        try:
            reply = self._connection.send_and_get_reply(message, timeout=limit)
        except TimeoutError:
            shown = self._timeout if timeout is None else timeout
            raise ServiceUnavailableError(
                f"partagpud did not answer within {shown:g} s on {self._bus}") from None
        except OSError as error:
            raise ServiceUnavailableError(
                f"the connection to {self._bus} broke: {error.strerror or error}") from None
        if reply.header.message_type is not MessageType.error:
            return reply.body
        name = reply.header.fields.get(HeaderFields.error_name, "")
        detail = reply.body[0] if reply.body and isinstance(reply.body[0], str) else ""
        if name in _NOT_RUNNING_ERRORS:
            raise ServiceUnavailableError(
                f"partagpud is not running on this machine: no {SERVICE_NAME} on {self._bus}")
        if name in _TOO_OLD_ERRORS:
            raise ServiceError(f"partagpud on this machine does not offer {what}, it may be "
                               f"older than this package ({name}: {detail})")
        if mapped:
            raise from_bus_error(name, detail)
        raise ServiceError(f"partagpud refused to give {what} ({name}: {detail})")


def local_service_running(timeout: float = 2.0) -> bool:
    """Whether partagpud runs here: False without a system bus, or when nobody owns its
    name, so a caller can choose another way (``partagpu.remote``) before sending anything."""
    try:
        with ServiceClient(timeout) as client:
            return client.service_running()
    except (ServiceUnavailableError, ServiceError):
        return False


def _socket_address(address: str) -> str:
    """The socket path of the first ``unix:`` address in a D-Bus address list."""
    try:
        return next(get_connectable_addresses(address))
    except ValueError:  # no "transport:" or a part without "="
        raise ValueError(f"{address!r} is not a D-Bus address") from None
    except RuntimeError:  # jeepney speaks only unix: (tcp:, launchd:, … are refused)
        raise ValueError("only unix: addresses are supported") from None


def _short(interface: str) -> str:
    """``Fleet1`` for ``org.partagpu.PartaGPU.Daemon.Fleet1``."""
    return interface.rpartition(".")[2]


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
