# The private session the headless desktop trials (scripts/gnome-trial, scripts/kde-trial) run
# in, sourced by their start.sh: a runtime folder, a session bus and an empty system bus of its
# own, PipeWire and WirePlumber; then the compositor's socket awaited, the portals' activation
# environment set, and the exports for iris and the helpers printed.

# start_session: the folder $RUNTIME (the caller's), both buses and the media services;
# exports XDG_RUNTIME_DIR and the bus addresses for what the caller starts next.
start_session() {
    mkdir -p "$RUNTIME" && chmod 700 "$RUNTIME"
    export XDG_RUNTIME_DIR=$RUNTIME
    export DBUS_SESSION_BUS_ADDRESS=unix:path=$RUNTIME/bus
    # The desktops also want a system bus (logind, UPower...); an empty private one is enough.
    export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$RUNTIME/system-bus
    dbus-daemon --session --address="$DBUS_SESSION_BUS_ADDRESS" --fork >/dev/null
    dbus-daemon --config-file=/usr/share/dbus-1/session.conf \
        --address="$DBUS_SYSTEM_BUS_ADDRESS" --fork >/dev/null
    pipewire >"$RUNTIME/pipewire.log" 2>&1 &
    sleep 1
    wireplumber >"$RUNTIME/wireplumber.log" 2>&1 &
}

# await_compositor NAME: waits up to 10 s for $RUNTIME/wayland-0; fails naming NAME's log.
await_compositor() {
    for _ in $(seq 1 100); do
        [[ -S "$RUNTIME/wayland-0" ]] && return 0
        sleep 0.1
    done
    echo "$1 did not start; see $RUNTIME/$1.log" >&2
    exit 1
}

# finish_session DESKTOP [EXTRA]: the portals are started on demand by the session bus, with
# this environment (EXTRA: more "'NAME': 'VALUE', " entries); prints the exports.
finish_session() {
    gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
        --method org.freedesktop.DBus.UpdateActivationEnvironment \
        "{'XDG_CURRENT_DESKTOP': '$1', 'WAYLAND_DISPLAY': 'wayland-0', ${2:-} \
          'XDG_RUNTIME_DIR': '$RUNTIME', 'DBUS_SYSTEM_BUS_ADDRESS': '$DBUS_SYSTEM_BUS_ADDRESS'}" \
        >/dev/null
    cat <<EXPORTS
export XDG_RUNTIME_DIR=$RUNTIME WAYLAND_DISPLAY=wayland-0 XDG_SESSION_TYPE=wayland
export XDG_CURRENT_DESKTOP=$1 DBUS_SESSION_BUS_ADDRESS=$DBUS_SESSION_BUS_ADDRESS
EXPORTS
}
