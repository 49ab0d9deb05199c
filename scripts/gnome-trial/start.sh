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

source "$(dirname "$0")/../desktop-trial-session.sh"
start_session
# Without logind, GNOME Shell must not see /run/systemd/seats (it would ask logind for the
# session): a mount namespace hides it from the shell alone.
unshare -m sh -c "mount -t tmpfs none /run/systemd 2>/dev/null; exec gnome-shell --wayland \
    --headless --no-x11 ${monitors[*]}" >"$RUNTIME/gnome-shell.log" 2>&1 &
await_compositor gnome-shell
finish_session GNOME
