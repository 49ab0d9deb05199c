#!/usr/bin/python3
"""A screenshot of the headless KWin of start.sh, through KWin's own ScreenShot2 D-Bus API (start.sh
sets KWIN_SCREENSHOT_NO_PERMISSION_CHECKS=1, so any caller may use it), to see where the portal's
consent dialog is.

    kde_shot.py FILE.png

Needs python3-dbus and python3-pil.
"""
import os
import sys

import dbus
from PIL import Image


def main(path):
    bus = dbus.SessionBus()
    shot = dbus.Interface(bus.get_object("org.kde.KWin.ScreenShot2", "/org/kde/KWin/ScreenShot2"),
                          "org.kde.KWin.ScreenShot2")
    read, write = os.pipe()
    meta = shot.CaptureWorkspace({"include-cursor": True}, dbus.types.UnixFd(write))
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 20):
        data += chunk
    width, height, stride = int(meta["width"]), int(meta["height"]), int(meta["stride"])
    # QImage's 32-bit formats (RGB32, ARGB32 and their premultiplied forms) are B, G, R, A bytes.
    image = Image.frombuffer("RGBA", (width, height), data, "raw", "BGRA", stride, 1)
    image.convert("RGB").save(path)
    print(f"{path}: {width}x{height} (QImage format {int(meta['format'])})")


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
    else:
        main(sys.argv[1])
