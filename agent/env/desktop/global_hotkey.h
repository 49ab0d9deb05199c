#pragma once
// A key chord that reaches Iris while another application has the keyboard focus: the emergency
// stop while the agent drives the real desktop. There the agent activates other windows, so an
// application shortcut of the Iris window would never see the person's keys. The chord is
// grabbed on the root window of an X display (XGrabKey, in every combination of the Caps Lock
// and Num Lock modifiers, so those locks do not disarm it) and reported on a thread of its own.

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "base/status.h"

namespace iris::agent {

class XConnection;

class GlobalHotkey final {
public:
    // `chord` as people write it: modifiers Ctrl, Alt, Shift, Super joined by '+' with one key
    // named as in pyautogui ("Ctrl+Alt+.", "ctrl+shift+f12"); case-insensitive. `display`
    // as in $DISPLAY. `onPressed` runs on the hotkey's own thread, once per press (auto-repeat
    // included): post to your own thread from it. Errors: InvalidArgument naming the part of the
    // chord that is not understood; IoError when the display cannot be opened; Unsupported when
    // another client holds the same grab ("... is taken by another application").
    static Result<std::unique_ptr<GlobalHotkey>> grab(const std::string& display,
                                                      const std::string& chord,
                                                      std::function<void()> onPressed);
    // Releases the grab and joins the thread.
    ~GlobalHotkey();
    GlobalHotkey(const GlobalHotkey&) = delete;
    GlobalHotkey& operator=(const GlobalHotkey&) = delete;

    const std::string& chord() const { return m_chord; }

private:
    GlobalHotkey() = default;
    void run();

    std::unique_ptr<XConnection> m_connection;
    std::string m_chord;
    std::function<void()> m_onPressed;
    unsigned m_keycode = 0;
    unsigned m_modifiers = 0;
    int m_wakeRead = -1;  // a pipe that tells the thread to stop
    int m_wakeWrite = -1;
    std::thread m_thread;
};

}  // namespace iris::agent
