#pragma once
// One Xlib connection with X errors captured per connection and returned as Status (Xlib's
// default error handler would exit the process). Internal to agent/env/desktop.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "agent/env/desktop/monitor.h"
#include "agent/env/desktop/x11.h"
#include "base/status.h"

namespace iris::agent {

// The first X error seen since the last check; filled in by Xlib's error hook.
struct XErrorSlot {
    bool connectionLost = false;  // stays set: the connection is unusable from then on
    bool set = false;
    int errorCode = 0;
    int majorCode = 0;
    int minorCode = 0;
    unsigned long resource = 0;
};

class XConnection final {
public:
    // `name` as in $DISPLAY (":3"); the caller decides what an empty name means.
    static Result<std::unique_ptr<XConnection>> open(const std::string& name);
    ~XConnection();
    XConnection(const XConnection&) = delete;
    XConnection& operator=(const XConnection&) = delete;

    Display* display() const { return m_display; }
    Window root() const { return m_root; }
    const std::string& name() const { return m_name; }

    // Waits until the server has processed every request, then reports the first X error since
    // the last sync (if any) as "<what>: X error BadValue (...) in request 132.2", or IoError
    // once the connection to the server is lost (Xlib would otherwise exit the process).
    Status sync(std::string_view what);
    // Drops errors of best-effort requests (a window that vanished while its title was read).
    void discardErrors();

    // The root window's size.
    Monitor screen() const;
    // RandR 1.5 monitors, left to right; the whole screen when RandR reports none.
    std::vector<Monitor> monitors();

    // The rectangle (device pixels, inside the screen) as 8-bit BGR. TrueColor visuals only.
    Result<cv::Mat> capture(const Monitor& area);

    // The title of the active window (_NET_ACTIVE_WINDOW, else the input focus): UTF-8, or empty.
    std::string activeWindowTitle();

private:
    XConnection(Display* display, std::string name);
    std::string windowTitle(Window window);

    Display* m_display;
    std::string m_name;
    Window m_root;
    std::unique_ptr<XErrorSlot> m_errors;
};

}  // namespace iris::agent
