# SPDX-License-Identifier: GPL-3.0-or-later
"""Prints, as JSON lines, the accessibility tree of one application, as a screen reader sees
it over AT-SPI: role, name, description, states and (for sliders) value of every object.

    atspi_dump.py APP_NAME [--focused]

Run with the session bus whose org.a11y.Bus the app uses (tests/app_support.py's
`accessibility_bus`). With --focused, prints only the object that has the keyboard focus.
Its own process, because libatspi binds to one accessibility bus for the process's life.
"""

import json
import sys

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi  # noqa: E402

# Deeper than any page of the app; stops a cycle from running forever.
MAX_DEPTH = 60


def describe(node):
    states = node.get_state_set()
    entry = {"role": node.get_role_name(), "name": node.get_name() or "", "description": node.get_description() or "",
             "focusable": states.contains(Atspi.StateType.FOCUSABLE),
             "focused": states.contains(Atspi.StateType.FOCUSED),
             "showing": states.contains(Atspi.StateType.SHOWING)}
    if "Value" in node.get_interfaces():
        entry["value"] = Atspi.Value.get_current_value(node)
    return entry


def walk(node, path=()):
    """Each object, with `path`: the names of the objects above it (for messages)."""
    if node is None or len(path) > MAX_DEPTH:
        return
    entry = describe(node)
    yield dict(entry, path=" > ".join(path))
    for index in range(node.get_child_count()):
        yield from walk(node.get_child_at_index(index), (*path, entry["name"] or entry["role"]))


def main(argv):
    name, focused_only = argv[0], "--focused" in argv
    desktop = Atspi.get_desktop(0)
    apps = [desktop.get_child_at_index(i) for i in range(desktop.get_child_count())]
    app = next((a for a in apps if a is not None and a.get_name() == name), None)
    if app is None:
        print(f"no application {name!r} on the accessibility bus: {[a.get_name() for a in apps if a]}", file=sys.stderr)
        return 1
    for entry in walk(app):
        if not focused_only or entry["focused"]:
            print(json.dumps(entry))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
