// Plays the person in front of the headless KWin of start.sh: pointer and keyboard input through
// KWin's fake-input Wayland protocol (what the KDE portal's RemoteDesktop itself uses; KWin offers
// it to this client because start.sh lifts its permission check), to answer a consent dialog or
// check by hand that the desktop takes input. Built by start.sh with wayland-scanner:
//
//   kde_input ACTION...      move X Y | click [BUTTON] | key EVDEV_CODE
//   e.g. kde_input move 640 420 click key 28
//
// X and Y are logical pixels of the desktop; BUTTON and EVDEV_CODE are linux/input-event-codes.h
// numbers (left button 272, Enter 28).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wayland-client.h>

#include "fake-input-client-protocol.h"

static struct org_kde_kwin_fake_input* fake;

static void global(void* data, struct wl_registry* registry, uint32_t name, const char* interface,
                   uint32_t version) {
    (void)data;
    if (strcmp(interface, org_kde_kwin_fake_input_interface.name) == 0 && version >= 4)
        fake = wl_registry_bind(registry, name, &org_kde_kwin_fake_input_interface, 4);
}

static void global_remove(void* data, struct wl_registry* registry, uint32_t name) {
    (void)data, (void)registry, (void)name;
}

static const struct wl_registry_listener registry_listener = {global, global_remove};

int main(int argc, char** argv) {
    struct wl_display* display = wl_display_connect(NULL);
    if (display == NULL) {
        fprintf(stderr, "kde_input: no Wayland display (WAYLAND_DISPLAY, XDG_RUNTIME_DIR)\n");
        return 1;
    }
    struct wl_registry* registry = wl_display_get_registry(display);
    wl_registry_add_listener(registry, &registry_listener, NULL);
    wl_display_roundtrip(display);
    if (fake == NULL) {
        fprintf(stderr, "kde_input: the compositor offers no org_kde_kwin_fake_input v4\n");
        return 1;
    }
    org_kde_kwin_fake_input_authenticate(fake, "kde_input", "Iris's KDE trial");
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "move") == 0 && i + 2 < argc) {
            org_kde_kwin_fake_input_pointer_motion_absolute(
                fake, wl_fixed_from_double(atof(argv[i + 1])),
                wl_fixed_from_double(atof(argv[i + 2])));
            i += 2;
        } else if (strcmp(argv[i], "click") == 0) {
            uint32_t button = 272;
            if (i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9')
                button = (uint32_t)atoi(argv[++i]);
            org_kde_kwin_fake_input_button(fake, button, WL_POINTER_BUTTON_STATE_PRESSED);
            org_kde_kwin_fake_input_button(fake, button, WL_POINTER_BUTTON_STATE_RELEASED);
        } else if (strcmp(argv[i], "key") == 0 && i + 1 < argc) {
            uint32_t key = (uint32_t)atoi(argv[++i]);
            org_kde_kwin_fake_input_keyboard_key(fake, key, WL_KEYBOARD_KEY_STATE_PRESSED);
            org_kde_kwin_fake_input_keyboard_key(fake, key, WL_KEYBOARD_KEY_STATE_RELEASED);
        } else {
            fprintf(stderr, "kde_input: unknown or incomplete action '%s'\n", argv[i]);
            return 2;
        }
        // KWin handles each event before the next (a click right after a motion can otherwise
        // land before the pointer has arrived).
        wl_display_roundtrip(display);
        usleep(200 * 1000);
    }
    wl_display_disconnect(display);
    return 0;
}
