#pragma once
// The agent's X11 desktop: screenshots with XGetImage, input with XTest, on an existing display
// or on a private Xvfb it starts itself. Not thread-safe (see Environment).
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/env/desktop/monitor.h"
#include "agent/environment.h"

namespace iris::agent {

class ChildProcess;
class XConnection;
class XInput;
class XvfbDisplay;

struct DesktopOptions {
    // The X display (":0"); empty: $DISPLAY. Ignored when privateDisplay is set.
    std::string display;
    // Start a private Xvfb of `monitors` monitors of width x height, side by side.
    bool privateDisplay = false;
    int width = 1920;
    int height = 1080;
    int monitors = 1;
    bool windowManager = false;  // on the private display, when one is installed (see XvfbOptions)
    // Observe and act on one monitor (0 = leftmost); nullopt: the whole screen.
    std::optional<int> monitor;
    // Screenshot size / device size, in (0, 1]: 0.5 on a 4K screen gives the model 1920x1080
    // images and a device pixel ratio of 2.
    double observationScale = 1.0;
    // Started on creation and restarted by reset(), with $DISPLAY set; no shell.
    std::vector<std::string> startCommand;
    // observe() waits until this long after the last action, for the screen to catch up.
    std::chrono::milliseconds settleTime{250};
};

class DesktopEnvironment final : public Environment {
public:
    // Opens (or starts) the display and runs the start command.
    static Result<std::unique_ptr<DesktopEnvironment>> create(const DesktopOptions& options);
    ~DesktopEnvironment() override;
    DesktopEnvironment(const DesktopEnvironment&) = delete;
    DesktopEnvironment& operator=(const DesktopEnvironment&) = delete;

    // Releases held keys and buttons, stops the start command, reconnects (a private display is
    // replaced by a fresh one), then starts the command again.
    Status reset() override;
    Result<Observation> observe() override;
    // Pointer and keyboard actions; Wait sleeps; Done and Fail do nothing. Navigate and file
    // actions are Unsupported. Coordinates outside the observed area are InvalidArgument.
    ActionResult execute(const Action& action) override;
    std::string describe() const override;  // "desktop:0", "desktop:37 (private)"

    const std::string& displayName() const { return m_displayName; }  // ":37"
    const std::vector<Monitor>& monitors() const { return m_monitors; }
    // The device-pixel rectangle that observations show.
    const Monitor& observedArea() const { return m_area; }

private:
    explicit DesktopEnvironment(DesktopOptions options);
    Status connect();
    Status checkDisplay();
    Status startCommand();
    void disconnect();
    Result<Point> toDevice(Point point, const char* what);
    Status pointerTo(const std::optional<Point>& point, const char* what);
    Status click(unsigned button, int count);
    Status scroll(const Scroll& scroll);
    Status drag(const Drag& drag);
    Status run(const Action& action);

    DesktopOptions m_options;
    std::unique_ptr<XvfbDisplay> m_private;
    std::unique_ptr<XConnection> m_connection;
    std::unique_ptr<XInput> m_input;
    std::unique_ptr<ChildProcess> m_command;
    std::string m_displayName;
    std::vector<Monitor> m_monitors;
    Monitor m_area;
    std::chrono::steady_clock::time_point m_lastAction{};
};

}  // namespace iris::agent
