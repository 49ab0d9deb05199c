#!/usr/bin/python3
"""Plays the person in front of the headless GNOME Shell of start.sh: screenshots, and pointer
and keyboard input through Mutter's own RemoteDesktop D-Bus API (what gnome-remote-desktop
uses; it needs no consent), so that the portal's consent dialog can be answered.

    gnome_input.py shot FILE.png                   the whole desktop, every monitor
    gnome_input.py [--monitor Meta-0] ACTION...    move X Y | click [BUTTON] | key KEYSYM_HEX
    e.g. gnome_input.py move 829 488 click move 852 288 click

X and Y are pixels of that monitor. Needs python3-dbus.
"""
import sys
import time

import dbus

BUTTON_LEFT = 0x110


def screenshot(bus, path):
    # GNOME Shell lets a few callers take screenshots; owning org.gnome.Screenshot is one.
    bus.request_name("org.gnome.Screenshot")
    shell = bus.get_object("org.gnome.Shell.Screenshot", "/org/gnome/Shell/Screenshot")
    ok, written = shell.Screenshot(False, False, path,
                                   dbus_interface="org.gnome.Shell.Screenshot")
    if not ok:
        sys.exit(f"GNOME Shell did not write {path}")
    print(written)


def input_session(bus, monitor):
    remote = dbus.Interface(
        bus.get_object("org.gnome.Mutter.RemoteDesktop", "/org/gnome/Mutter/RemoteDesktop"),
        "org.gnome.Mutter.RemoteDesktop")
    path = remote.CreateSession()
    session_object = bus.get_object("org.gnome.Mutter.RemoteDesktop", path)
    session_id = dbus.Interface(session_object, "org.freedesktop.DBus.Properties").Get(
        "org.gnome.Mutter.RemoteDesktop.Session", "SessionId")
    # Absolute pointer motion is relative to a screen cast stream of the monitor.
    cast = dbus.Interface(
        bus.get_object("org.gnome.Mutter.ScreenCast", "/org/gnome/Mutter/ScreenCast"),
        "org.gnome.Mutter.ScreenCast")
    cast_path = cast.CreateSession({"remote-desktop-session-id": session_id})
    cast_session = dbus.Interface(bus.get_object("org.gnome.Mutter.ScreenCast", cast_path),
                                  "org.gnome.Mutter.ScreenCast.Session")
    stream = cast_session.RecordMonitor(monitor, {})
    session = dbus.Interface(session_object, "org.gnome.Mutter.RemoteDesktop.Session")
    session.Start()
    return session, stream


def main(argv):
    bus = dbus.SessionBus()
    if argv[:1] == ["shot"] and len(argv) == 2:
        screenshot(bus, argv[1])
        return
    monitor = "Meta-0"
    if argv[:1] == ["--monitor"]:
        monitor, argv = argv[1], argv[2:]
    session, stream = input_session(bus, monitor)
    words = list(argv)
    while words:
        action = words.pop(0)
        if action == "move":
            session.NotifyPointerMotionAbsolute(stream, float(words.pop(0)), float(words.pop(0)))
        elif action == "click":
            button = int(words.pop(0), 0) if words and words[0].startswith("0x") else BUTTON_LEFT
            session.NotifyPointerButton(button, True)
            session.NotifyPointerButton(button, False)
        elif action == "key":
            keysym = int(words.pop(0), 16)
            session.NotifyKeyboardKeysym(keysym, True)
            session.NotifyKeyboardKeysym(keysym, False)
        else:
            sys.exit(f"unknown action {action!r}; see --help")
        # The shell handles each event before the next (a click right after a motion in a new
        # session can otherwise land before the pointer has arrived).
        time.sleep(0.2)
    session.Stop()


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
    else:
        main(sys.argv[1:])
