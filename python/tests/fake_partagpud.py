# SPDX-License-Identifier: GPL-3.0-or-later
"""A private ``dbus-daemon`` and a fake partagpud on it, for the D-Bus client tests.

The fake owns ``org.partagpu.PartaGPU.Daemon`` and answers
``org.freedesktop.DBus.Properties.Get``/``GetAll`` on ``/org/partagpu/PartaGPU/Daemon`` from
a table ``{interface: {property: (signature, value)}}``, over a real bus, so the client's
messages, the bus's routing and jeepney's (de)serialisation are all exercised.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jeepney import HeaderFields, Message, MessageType, new_error, new_method_return
from jeepney.bus_messages import DBusNameFlags, message_bus
from jeepney.bus import get_connectable_addresses
from jeepney.io.blocking import Proxy, prep_socket

# jeepney's own connection waits for ever on a bus that does not answer Hello; this one
# gives up, so a broken test bus fails the test instead of hanging it.
from partagpu.dbus_client import _DeadlineConnection

SERVICE_NAME = "org.partagpu.PartaGPU.Daemon"
OBJECT_PATH = "/org/partagpu/PartaGPU/Daemon"
FLEET = f"{SERVICE_NAME}.Fleet1"
ROOM = f"{SERVICE_NAME}.Room1"
PROPERTIES = "org.freedesktop.DBus.Properties"

DBUS_DAEMON = shutil.which("dbus-daemon")

# Anyone may own any name, send and receive anything: the bus only routes the test's messages.
# (Without the receive rule this dbus-daemon holds back even its own reply to Hello.)
_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"""


@contextlib.contextmanager
def short_tmp_dir() -> Iterator[Path]:
    """A fresh folder under /tmp: unix socket paths must stay under 108 bytes, which
    pytest's tmp_path (named after the test) does not guarantee."""
    with tempfile.TemporaryDirectory(prefix="partagpu-") as folder:
        yield Path(folder)


@contextlib.contextmanager
def private_bus() -> Iterator[str]:
    """Runs a dbus-daemon of its own and yields its address."""
    assert DBUS_DAEMON is not None
    with short_tmp_dir() as folder:
        config = folder / "bus.conf"
        config.write_text(_BUS_CONFIG.format(socket=folder / "bus"), encoding="utf-8")
        process = subprocess.Popen(
            [DBUS_DAEMON, f"--config-file={config}", "--nofork", "--print-address"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            address = process.stdout.readline().strip()  # printed once it listens
            if not address:
                raise RuntimeError(f"dbus-daemon did not start: {process.stderr.read()}")
            yield address
        finally:
            process.terminate()
            process.wait(10)


class FakePartagpud:
    """Owns the service name on ``address`` and answers property reads in a thread."""

    def __init__(self, address: str, properties: dict[str, dict[str, tuple[str, Any]]]) -> None:
        self.properties = properties
        self.calls: list[tuple[str, tuple[Any, ...]]] = []  # (member, body), in order
        self._stop = threading.Event()
        sock = prep_socket(next(get_connectable_addresses(address)), timeout=5)
        self._connection = _DeadlineConnection(sock, hello_timeout=5)
        (owned,) = Proxy(message_bus, self._connection, timeout=5).RequestName(
            SERVICE_NAME, DBusNameFlags.do_not_queue)
        if owned != 1:  # DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER
            raise RuntimeError(f"could not own {SERVICE_NAME} (RequestName answered {owned})")
        self._thread = threading.Thread(target=self._serve, name="fake-partagpud", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._connection.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                message = self._connection.receive(timeout=0.05)
            except TimeoutError:
                continue
            if message.header.message_type is MessageType.method_call:
                self._connection.send(self._answer(message))

    def _answer(self, call: Message) -> Message:
        fields = call.header.fields
        member = fields.get(HeaderFields.member)
        self.calls.append((member, tuple(call.body)))
        if fields.get(HeaderFields.path) != OBJECT_PATH:
            return new_error(call, "org.freedesktop.DBus.Error.UnknownObject", "s",
                             (f"no object {fields.get(HeaderFields.path)}",))
        if fields.get(HeaderFields.interface) != PROPERTIES or member not in ("Get", "GetAll"):
            return new_error(call, "org.freedesktop.DBus.Error.UnknownMethod", "s",
                             (f"no method {member}",))
        interface = call.body[0]
        if interface not in self.properties:
            return new_error(call, "org.freedesktop.DBus.Error.UnknownInterface", "s",
                             (f"no interface {interface}",))
        values = self.properties[interface]
        if member == "GetAll":
            return new_method_return(call, "a{sv}", (values,))
        name = call.body[1]
        if name not in values:
            return new_error(call, "org.freedesktop.DBus.Error.UnknownProperty", "s",
                             (f"no property {name}",))
        return new_method_return(call, "v", (values[name],))


@contextlib.contextmanager
def fake_partagpud(address: str, properties: dict[str, dict[str, tuple[str, Any]]]):
    service = FakePartagpud(address, properties)
    try:
        yield service
    finally:
        service.close()
