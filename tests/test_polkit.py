# SPDX-License-Identifier: GPL-3.0-or-later
"""Polkit authorisation of the caller, with python-dbusmock's polkitd template."""

import subprocess
import textwrap

from conftest import BUS_NAME, NOBODY, OBJECT_PATH, SYSTEM_PYTHON, ctl, status

PAUSE = "org.partagpu.PartaGPU.Daemon.pause"
SET_LIMITS = "org.partagpu.PartaGPU.Daemon.set-limits"
SET_SHARING = "org.partagpu.PartaGPU.Daemon.set-sharing"
SET_NAME = "org.partagpu.PartaGPU.Daemon.set-name"


def run_as_nobody(bus, script):
    """Runs a dbus-python `script` as uid 65534 on `bus`; returns its stdout words."""
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                           SYSTEM_PYTHON, "-c", textwrap.dedent(script)], env=bus.env(),
                          capture_output=True, text=True, check=True).stdout.split()


def test_an_unauthorised_caller_is_refused_and_nothing_changes(bus, polkit, daemon):
    before = status(bus)
    for args, what in [(["pause"], "pause or resume sharing"),
                       (["limits", "set", "--cpu", "10"], "change the CPU, RAM and GPU limits"),
                       (["sharing", "off"], "turn sharing on or off"),
                       (["rename", "mine"], "rename this machine")]:
        result = ctl(bus, *args, user=NOBODY)
        assert result.returncode == 1, args
        assert result.stderr == f"partagpuctl: not authorized to {what}: polkit denied it\n"
    assert status(bus) == {**before, "resources": status(bus)["resources"]}
    assert [action for _, _, action in polkit.checks()] == [PAUSE, SET_LIMITS, SET_SHARING, SET_NAME]


def test_polkit_is_asked_about_the_calling_connection_not_the_service(bus, polkit, daemon):
    # A client that prints its own unique bus name, then calls Pause as uid 65534.
    script = f"""
        import dbus
        bus = dbus.SystemBus()
        print(bus.get_unique_name(), flush=True)
        sharing = dbus.Interface(bus.get_object("{BUS_NAME}", "{OBJECT_PATH}"),
                                 "org.partagpu.PartaGPU.Daemon.Sharing1")
        try:
            sharing.Pause()
            print("allowed")
        except dbus.DBusException as error:
            print(error.get_dbus_name())
    """
    caller, outcome = run_as_nobody(bus, script)
    assert outcome == "org.partagpu.PartaGPU.Daemon.Error.NotAuthorized"
    daemon_name = bus.name_owner(BUS_NAME)
    [(kind, details, action)] = polkit.checks()
    assert (kind, details, action) == ("system-bus-name", {"name": caller}, PAUSE)
    assert caller != daemon_name


def test_an_allowed_action_goes_through_and_others_stay_refused(bus, polkit, daemon):
    polkit.allow(PAUSE)
    ctl(bus, "pause", user=NOBODY, check=True)
    assert status(bus)["paused"] is True
    ctl(bus, "resume", user=NOBODY, check=True)
    refused = ctl(bus, "limits", "set", "--cpu", "10", user=NOBODY)
    assert refused.returncode == 1 and "polkit denied it" in refused.stderr
    assert status(bus)["limits"]["cpu_percent"] == 50


def test_root_is_let_through_without_asking_polkit(bus, polkit, daemon):
    ctl(bus, "pause", check=True)
    ctl(bus, "limits", "set", "--cpu", "20", check=True)
    assert polkit.checks() == []
    assert status(bus)["limits"]["cpu_percent"] == 20


def test_without_polkit_non_root_callers_are_refused(bus, daemon):
    result = ctl(bus, "pause", user=NOBODY)
    assert result.returncode == 1
    assert result.stderr == ("partagpuctl: not authorized to pause or resume sharing: the authorization "
                             "service (polkit) is not available\n")
    assert status(bus)["paused"] is False


def test_reading_needs_no_authorisation(bus, polkit, daemon):
    assert ctl(bus, "status", "--json", user=NOBODY, check=True).stdout
    assert ctl(bus, "security-log", user=NOBODY, check=True).stdout
    assert polkit.checks() == []


def test_the_bus_policy_lets_only_root_own_the_service_name(bus):
    script = f"""
        import dbus
        try:
            dbus.SystemBus().request_name("{BUS_NAME}")
            print("owned")
        except dbus.DBusException as error:
            print(error.get_dbus_name())
    """
    assert run_as_nobody(bus, script) == ["org.freedesktop.DBus.Error.AccessDenied"]
