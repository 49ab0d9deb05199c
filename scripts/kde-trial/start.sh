#!/usr/bin/env bash
# Starts a headless KWin (Plasma's compositor) with the KDE portal in a private runtime folder, for
# trying Iris's portal path (--env desktop:portal) on KDE without a display or a GPU. See README.md.
#
#   scripts/kde-trial/start.sh [WxH]     one virtual output (default 1280x800)
#
# Prints the environment to export for iris and the helpers. Stop everything with
# `scripts/kde-trial/start.sh stop`.
set -euo pipefail

readonly RUNTIME=/tmp/iris-kde
readonly HERE=$(cd "$(dirname "$0")" && pwd)
if [[ "${1:-}" == stop ]]; then
    pkill -f "$RUNTIME/kwin_wayland" || true
    pkill -f xdg-desktop-portal || true
    pkill -x wireplumber || true
    pkill -x pipewire || true
    pkill -f "dbus-daemon.*$RUNTIME" || true
    exit 0
fi
for tool in kwin_wayland pipewire wireplumber dbus-daemon wayland-scanner cc; do
    command -v "$tool" >/dev/null || {
        echo "missing $tool: apt-get install kwin-wayland xdg-desktop-portal-kde qtwayland5 wireplumber pipewire-bin plasma-wayland-protocols libwayland-dev gcc python3-dbus python3-pil" >&2
        exit 1
    }
done
size=${1:-1280x800}

source "$HERE/../desktop-trial-session.sh"
start_session

# Debian installs kwin_wayland with file capabilities (CAP_SYS_NICE), which a container may refuse
# to grant on exec; a plain copy runs everywhere.
cp /usr/bin/kwin_wayland "$RUNTIME/kwin_wayland"
# The fake-input protocol (kde_input) and the ScreenShot2 D-Bus API (kde_shot.py) are offered
# only to programs a desktop file authorises; these variables lift that check for the trial.
KWIN_WAYLAND_NO_PERMISSION_CHECKS=1 KWIN_SCREENSHOT_NO_PERMISSION_CHECKS=1 \
QT_LOGGING_RULES="kwin_screencast.debug=true" QT_QPA_PLATFORM=offscreen \
    "$RUNTIME/kwin_wayland" --virtual --width "${size%x*}" --height "${size#*x}" \
    --no-lockscreen --no-global-shortcuts --no-kactivities --socket wayland-0 \
    >"$RUNTIME/kwin.log" 2>&1 &
await_compositor kwin

# The person's hands: a fake-input client built from Plasma's protocol description.
protocol=/usr/share/plasma-wayland-protocols/fake-input.xml
wayland-scanner client-header "$protocol" "$RUNTIME/fake-input-client-protocol.h"
wayland-scanner private-code "$protocol" "$RUNTIME/fake-input-protocol.c"
cc -O1 -I"$RUNTIME" -o "$RUNTIME/kde_input" "$HERE/kde_input.c" "$RUNTIME/fake-input-protocol.c" \
    -lwayland-client

# The KDE portal's dialogs are Qt 5 windows on this compositor.
finish_session KDE "'QT_QPA_PLATFORM': 'wayland',"
