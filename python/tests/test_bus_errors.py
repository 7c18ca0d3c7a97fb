# SPDX-License-Identifier: GPL-3.0-or-later
"""discover() when the system bus cannot be reached: a missing socket, an address jeepney
cannot use, and sockets that never answer (the timeout must hold)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest

import partagpu
from fake_partagpud import short_tmp_dir
from partagpu import ServiceUnavailableError

ENV = "DBUS_SYSTEM_BUS_ADDRESS"


def unreachable(monkeypatch, address: str, timeout: float = 5.0) -> str:
    """The message of the ServiceUnavailableError discover() raises for ``address``."""
    monkeypatch.setenv(ENV, address)
    with pytest.raises(ServiceUnavailableError) as raised:
        partagpu.discover(timeout=timeout)
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_no_socket_at_the_address(monkeypatch):
    with short_tmp_dir() as folder:
        address = f"unix:path={folder}/no-bus-here"
        assert unreachable(monkeypatch, address) == (
            f"cannot connect to the system bus at {address} (from {ENV}): No such file or directory")


def test_nobody_listening_on_the_socket(monkeypatch):
    with short_tmp_dir() as folder, socket.socket(socket.AF_UNIX) as stale:
        stale.bind(str(folder / "bus"))  # bound, never listening: a bus that died
        message = unreachable(monkeypatch, f"unix:path={folder}/bus")
    assert message.endswith("(from DBUS_SYSTEM_BUS_ADDRESS): Connection refused")


@pytest.mark.parametrize("address, reason", [
    ("tcp:host=127.0.0.1,port=1", "only unix: addresses are supported"),
    ("not a bus address", "'not a bus address' is not a D-Bus address"),
    ("unix:path", "'unix:path' is not a D-Bus address"),
])
def test_addresses_jeepney_cannot_use(monkeypatch, address, reason):
    assert unreachable(monkeypatch, address) == (
        f"cannot connect to the system bus at {address} (from {ENV}): {reason}")


def test_a_socket_that_never_answers(monkeypatch):
    # Connected through the listen backlog, never accepted: authentication gets no answer.
    with short_tmp_dir() as folder, socket.socket(socket.AF_UNIX) as silent:
        silent.bind(str(folder / "bus"))
        silent.listen(4)
        started = time.monotonic()
        message = unreachable(monkeypatch, f"unix:path={folder}/bus", timeout=0.5)
        elapsed = time.monotonic() - started
    assert message == (f"The system bus at unix:path={folder}/bus (from {ENV}) did not answer "
                       "within 0.5 s")
    assert 0.4 < elapsed < 3


@contextlib.contextmanager
def bus_that_authenticates_then_hangs(path: str):
    """Says OK to the SASL exchange, then never replies to Hello: jeepney alone would
    wait for ever here."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(1)
    stop = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            received = b""
            while b"AUTH" not in received or not received.endswith(b"\r\n"):
                received += connection.recv(1024)
            connection.sendall(b"OK 0123456789abcdef0123456789abcdef\r\n")
            stop.wait(10)  # reads nothing more: BEGIN and Hello stay unanswered

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def test_a_bus_that_never_says_hello_back(monkeypatch):
    with short_tmp_dir() as folder, bus_that_authenticates_then_hangs(str(folder / "bus")):
        started = time.monotonic()
        message = unreachable(monkeypatch, f"unix:path={folder}/bus", timeout=0.5)
        elapsed = time.monotonic() - started
    assert message.endswith("did not answer within 0.5 s")
    assert 0.4 < elapsed < 3


def test_without_the_variable_the_message_does_not_name_it(monkeypatch):
    import partagpu.dbus_client

    monkeypatch.delenv(ENV, raising=False)
    with short_tmp_dir() as folder:
        # Stands for the standard socket, which may or may not exist on the test machine.
        monkeypatch.setattr(partagpu.dbus_client, "DEFAULT_SYSTEM_BUS", f"unix:path={folder}/none")
        with pytest.raises(ServiceUnavailableError) as raised:
            partagpu.discover()
    assert str(raised.value) == "cannot connect to the system bus: No such file or directory"
