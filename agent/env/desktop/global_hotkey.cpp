#include "agent/env/desktop/global_hotkey.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <vector>

#include <poll.h>
#include <unistd.h>

#include "agent/env/desktop/key_names.h"
#include "agent/env/desktop/x_connection.h"
#include "base/strings.h"

// Last: Xlib's macros (None, Status, ...) break the headers above.
#include "agent/env/desktop/x11.h"

namespace iris::agent {

namespace {

struct ParsedChord {
    unsigned modifiers = 0;
    KeySymbol keysym = 0;
};

Result<ParsedChord> parseChord(const std::string& chord) {
    ParsedChord parsed;
    std::string_view rest = chord;
    std::vector<std::string_view> parts;
    for (std::size_t plus; !rest.empty();) {
        // "ctrl++" names the plus key: a '+' right after a separator is the key itself.
        plus = rest.find('+', 1);
        parts.push_back(rest.substr(0, plus));
        if (plus == std::string_view::npos) break;
        rest.remove_prefix(plus + 1);
    }
    if (parts.empty()) return Status::invalidArgument("empty hotkey chord");
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        const std::string name = asciiLower(parts[i]);
        if (name == "ctrl" || name == "control") {
            parsed.modifiers |= ControlMask;
        } else if (name == "alt") {
            parsed.modifiers |= Mod1Mask;
        } else if (name == "shift") {
            parsed.modifiers |= ShiftMask;
        } else if (name == "super" || name == "win" || name == "meta") {
            parsed.modifiers |= Mod4Mask;
        } else {
            return Status::invalidArgument("hotkey '" + chord + "': '" + std::string(parts[i]) +
                                           "' is not a modifier (Ctrl, Alt, Shift, Super)");
        }
    }
    const std::string_view key = parts.back();
    // A single letter names its key whatever its case: "Ctrl+Alt+S" is not Ctrl+Alt+Shift+s.
    parsed.keysym = keysymForKeyName(key.size() == 1 ? asciiLower(key) : std::string(key));
    if (parsed.keysym == 0)
        return Status::invalidArgument("hotkey '" + chord + "': unknown key '" + std::string(key) +
                                       "'");
    return parsed;
}

// The modifier bit Num Lock sets on this server (usually Mod2), or 0 when no key carries it.
unsigned numLockMask(Display* display) {
    const KeyCode numLock = XKeysymToKeycode(display, XK_Num_Lock);
    if (numLock == 0) return 0;
    XModifierKeymap* map = XGetModifierMapping(display);
    if (map == nullptr) return 0;
    unsigned mask = 0;
    for (int modifier = 0; modifier < 8 && mask == 0; ++modifier) {
        for (int k = 0; k < map->max_keypermod; ++k) {
            if (map->modifiermap[modifier * map->max_keypermod + k] == numLock) {
                mask = 1u << modifier;
                break;
            }
        }
    }
    XFreeModifiermap(map);
    return mask;
}

// The lock modifiers a grab must also cover so that Caps Lock or Num Lock do not disarm it.
std::vector<unsigned> lockCombinations(Display* display) {
    const unsigned numLock = numLockMask(display);
    std::vector<unsigned> combinations = {0, LockMask};
    if (numLock != 0) {
        combinations.push_back(numLock);
        combinations.push_back(numLock | LockMask);
    }
    return combinations;
}

}  // namespace

Result<std::unique_ptr<GlobalHotkey>> GlobalHotkey::grab(const std::string& display,
                                                         const std::string& chord,
                                                         std::function<void()> onPressed) {
    Result<ParsedChord> parsed = parseChord(chord);
    if (!parsed) return parsed.status();
    Result<std::unique_ptr<XConnection>> connection = XConnection::open(display);
    if (!connection) return connection.status();

    std::unique_ptr<GlobalHotkey> hotkey(new GlobalHotkey());
    hotkey->m_connection = std::move(*connection);
    hotkey->m_chord = chord;
    hotkey->m_onPressed = std::move(onPressed);
    hotkey->m_modifiers = parsed->modifiers;
    Display* x = hotkey->m_connection->display();
    hotkey->m_keycode = XKeysymToKeycode(x, parsed->keysym);
    if (hotkey->m_keycode == 0) {
        return Status::invalidArgument("hotkey '" + chord +
                                       "': the key has no keycode on display " + display);
    }
    hotkey->m_connection->discardErrors();
    const Window root = hotkey->m_connection->root();
    for (unsigned locks : lockCombinations(x)) {
        XGrabKey(x, int(hotkey->m_keycode), hotkey->m_modifiers | locks, root, False, GrabModeAsync,
                 GrabModeAsync);
    }
    if (Status grabbed = hotkey->m_connection->sync("grabbing " + chord); !grabbed.isOk()) {
        // BadAccess: another client (a desktop shortcut, another Iris) holds this chord.
        if (grabbed.message().find("BadAccess") != std::string::npos) {
            return Status::unsupported("hotkey " + chord + " on display " + display +
                                       " is taken by another application");
        }
        return grabbed;
    }
    int pipeEnds[2];
    if (::pipe(pipeEnds) != 0) return Status::ioError("hotkey: cannot create a pipe");
    hotkey->m_wakeRead = pipeEnds[0];
    hotkey->m_wakeWrite = pipeEnds[1];
    hotkey->m_thread = std::thread([raw = hotkey.get()] { raw->run(); });
    return hotkey;
}

GlobalHotkey::~GlobalHotkey() {
    if (m_thread.joinable()) {
        const char stop = 0;
        [[maybe_unused]] const ssize_t written = ::write(m_wakeWrite, &stop, 1);
        m_thread.join();
    }
    if (m_connection) {
        Display* x = m_connection->display();
        for (unsigned locks : lockCombinations(x))
            XUngrabKey(x, int(m_keycode), m_modifiers | locks, m_connection->root());
        m_connection->discardErrors();  // best effort: the server may be gone
    }
    if (m_wakeRead >= 0) ::close(m_wakeRead);
    if (m_wakeWrite >= 0) ::close(m_wakeWrite);
}

void GlobalHotkey::run() {
    Display* x = m_connection->display();
    const unsigned relevant = ControlMask | Mod1Mask | ShiftMask | Mod4Mask;
    for (;;) {
        // Events Xlib already read off the socket would not wake poll(): drain them first.
        while (XPending(x) > 0) {
            XEvent event;
            XNextEvent(x, &event);
            if (event.type == KeyPress && event.xkey.keycode == m_keycode &&
                (event.xkey.state & relevant) == m_modifiers) {
                m_onPressed();
            }
        }
        pollfd fds[2] = {{ConnectionNumber(x), POLLIN, 0}, {m_wakeRead, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) continue;  // EINTR
        if (fds[1].revents != 0) return;
        if ((fds[0].revents & (POLLHUP | POLLERR)) != 0) return;  // the server went away
        // Reads what arrived; a lost server ends the thread (it cannot come back).
        if (m_connection->sync("hotkey").code() == StatusCode::IoError) return;
    }
}

}  // namespace iris::agent
