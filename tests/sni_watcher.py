# SPDX-License-Identifier: GPL-3.0-or-later
"""A minimal StatusNotifierWatcher, what a tray host (KDE, the AppIndicator extension) runs,
for tests/test_app_tray.py: `python3 sni_watcher.py` on the session bus of
DBUS_SESSION_BUS_ADDRESS owns org.kde.StatusNotifierWatcher and prints one JSON line per
registered item ({"service": bus name, "path": object path}). It exits on SIGTERM.

Only what a StatusNotifierItem needs of a watcher is here: RegisterStatusNotifierItem (a bus
name or an object path, as the specification allows), RegisterStatusNotifierHost, the three
properties, and the registered/unregistered signals.
"""

import json
import signal
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

WATCHER = "org.kde.StatusNotifierWatcher"
PATH = "/StatusNotifierWatcher"
PROPERTIES = "org.freedesktop.DBus.Properties"


class Watcher(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, PATH)
        self.bus = bus
        self.items = []
        bus.add_signal_receiver(self.name_owner_changed, "NameOwnerChanged", "org.freedesktop.DBus")

    @dbus.service.method(WATCHER, in_signature="s", out_signature="", sender_keyword="sender")
    def RegisterStatusNotifierItem(self, service, sender=None):
        service, path = (sender, service) if service.startswith("/") else (service, "/StatusNotifierItem")
        item = f"{service}{path}"
        if item not in self.items:
            self.items.append(item)
        print(json.dumps({"service": str(service), "path": str(path), "sender": str(sender)}), flush=True)
        self.StatusNotifierItemRegistered(item)

    @dbus.service.method(WATCHER, in_signature="s", out_signature="")
    def RegisterStatusNotifierHost(self, _service):
        pass

    @dbus.service.signal(WATCHER, signature="s")
    def StatusNotifierItemRegistered(self, item):
        pass

    @dbus.service.signal(WATCHER, signature="s")
    def StatusNotifierItemUnregistered(self, item):
        pass

    def name_owner_changed(self, name, _old, new):
        if new:
            return
        for item in [item for item in self.items if item.startswith(f"{name}/")]:
            self.items.remove(item)
            self.StatusNotifierItemUnregistered(item)

    def properties(self):
        return {"RegisteredStatusNotifierItems": dbus.Array(self.items, signature="s"),
                "IsStatusNotifierHostRegistered": dbus.Boolean(True), "ProtocolVersion": dbus.Int32(0)}

    @dbus.service.method(PROPERTIES, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        if interface != WATCHER or name not in self.properties():
            raise dbus.exceptions.DBusException(f"no property {interface}.{name}",
                                                name="org.freedesktop.DBus.Error.UnknownProperty")
        return self.properties()[name]

    @dbus.service.method(PROPERTIES, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return self.properties() if interface == WATCHER else {}


def main():
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    watcher = Watcher(bus)
    name = dbus.service.BusName(WATCHER, bus, do_not_queue=True)
    loop = GLib.MainLoop()
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, loop.quit)
    print(json.dumps({"watching": WATCHER}), flush=True)
    loop.run()
    del name, watcher


if __name__ == "__main__":
    sys.exit(main())
