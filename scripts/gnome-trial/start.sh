#!/usr/bin/env bash
# Starts a headless GNOME Shell with its portals in a private runtime folder, for trying Iris's
# portal path (--env desktop:portal) on a real GNOME without a display or a GPU. See README.md.
#
#   scripts/gnome-trial/start.sh [WxH ...]     one virtual monitor per size (default 1280x800)
#
# Prints the environment to export for iris and the helpers. Stop everything with
# `scripts/gnome-trial/start.sh stop`.
set -euo pipefail

readonly RUNTIME=/tmp/iris-gnome
if [[ "${1:-}" == stop ]]; then
    pkill -f "gnome-shell --wayland --headless" || true
    pkill -f "$RUNTIME" || true
    pkill -f xdg-desktop-portal || true
    pkill -x wireplumber || true
    pkill -x pipewire || true
    exit 0
fi
for tool in gnome-shell pipewire wireplumber dbus-daemon unshare; do
    command -v "$tool" >/dev/null || {
        echo "missing $tool: apt-get install gnome-shell xdg-desktop-portal-gnome wireplumber pipewire-bin python3-dbus" >&2
        exit 1
    }
done
monitors=()
for size in "${@:-1280x800}"; do monitors+=(--virtual-monitor "$size"); done

mkdir -p "$RUNTIME" && chmod 700 "$RUNTIME"
export XDG_RUNTIME_DIR=$RUNTIME
export DBUS_SESSION_BUS_ADDRESS=unix:path=$RUNTIME/bus
# GNOME Shell also wants a system bus (logind, UPower...); an empty private one is enough.
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$RUNTIME/system-bus
dbus-daemon --session --address="$DBUS_SESSION_BUS_ADDRESS" --fork >/dev/null
dbus-daemon --config-file=/usr/share/dbus-1/session.conf --address="$DBUS_SYSTEM_BUS_ADDRESS" \
    --fork >/dev/null
pipewire >"$RUNTIME/pipewire.log" 2>&1 &
sleep 1
wireplumber >"$RUNTIME/wireplumber.log" 2>&1 &
# Without logind, GNOME Shell must not see /run/systemd/seats (it would ask logind for the
# session): a mount namespace hides it from the shell alone.
unshare -m sh -c "mount -t tmpfs none /run/systemd 2>/dev/null; exec gnome-shell --wayland \
    --headless --no-x11 ${monitors[*]}" >"$RUNTIME/gnome-shell.log" 2>&1 &
for _ in $(seq 1 100); do
    [[ -S "$RUNTIME/wayland-0" ]] && break
    sleep 0.1
done
[[ -S "$RUNTIME/wayland-0" ]] || { echo "gnome-shell did not start; see $RUNTIME/gnome-shell.log" >&2; exit 1; }
# The portals are started on demand by the session bus, with this environment.
gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
    --method org.freedesktop.DBus.UpdateActivationEnvironment \
    "{'XDG_CURRENT_DESKTOP': 'GNOME', 'WAYLAND_DISPLAY': 'wayland-0', \
      'XDG_RUNTIME_DIR': '$RUNTIME', 'DBUS_SYSTEM_BUS_ADDRESS': '$DBUS_SYSTEM_BUS_ADDRESS'}" \
    >/dev/null
cat <<EXPORTS
export XDG_RUNTIME_DIR=$RUNTIME WAYLAND_DISPLAY=wayland-0 XDG_SESSION_TYPE=wayland
export XDG_CURRENT_DESKTOP=GNOME DBUS_SESSION_BUS_ADDRESS=$DBUS_SESSION_BUS_ADDRESS
EXPORTS
