#include "agent/env/desktop/desktop_environment.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <type_traits>

#include "agent/env/desktop/child_process.h"
#include "agent/env/desktop/desktop_actions.h"
#include "agent/env/desktop/x_connection.h"
#include "agent/env/desktop/x_input.h"
#include "agent/env/desktop/xvfb_display.h"

namespace iris::agent {
namespace {

constexpr int kDragSteps = 10;

unsigned xButton(MouseButton button) {
    switch (button) {
        case MouseButton::Left:
            return 1;
        case MouseButton::Middle:
            return 2;
        case MouseButton::Right:
            return 3;
    }
    return 1;
}

}  // namespace

Result<std::unique_ptr<DesktopEnvironment>> DesktopEnvironment::create(
    const DesktopOptions& options) {
    if (!(options.observationScale > 0.0 && options.observationScale <= 1.0)) {
        return Status::invalidArgument("DesktopOptions.observationScale must be in (0, 1], not " +
                                       std::to_string(options.observationScale));
    }
    if (options.monitor && *options.monitor < 0) {
        return Status::invalidArgument("DesktopOptions.monitor must be >= 0, not " +
                                       std::to_string(*options.monitor));
    }
    std::unique_ptr<DesktopEnvironment> environment(new DesktopEnvironment(options));
    IRIS_RETURN_IF_ERROR(environment->connect());
    IRIS_RETURN_IF_ERROR(environment->startCommand());
    return environment;
}

DesktopEnvironment::DesktopEnvironment(DesktopOptions options) : m_options(std::move(options)) {}

DesktopEnvironment::~DesktopEnvironment() {
    if (m_input) (void)m_input->releaseAll();
    m_command.reset();
    disconnect();
    m_private.reset();
}

Status DesktopEnvironment::connect() {
    if (m_options.privateDisplay) {
        XvfbOptions xvfb;
        xvfb.width = m_options.width;
        xvfb.height = m_options.height;
        xvfb.monitors = m_options.monitors;
        xvfb.windowManager = m_options.windowManager;
        Result<std::unique_ptr<XvfbDisplay>> started = XvfbDisplay::start(xvfb);
        if (!started) return started.status();
        m_private = std::move(*started);
        m_displayName = m_private->name();
    } else {
        m_displayName = m_options.display;
        if (m_displayName.empty()) {
            const char* fromEnvironment = std::getenv("DISPLAY");
            if (fromEnvironment == nullptr || *fromEnvironment == '\0') {
                return Status::invalidArgument(
                    "desktop: $DISPLAY is not set; name a display or use a private one");
            }
            m_displayName = fromEnvironment;
        }
    }
    Result<std::unique_ptr<XConnection>> connection = XConnection::open(m_displayName);
    if (!connection) return connection.status();
    m_connection = std::move(*connection);
    Result<XInput> input = XInput::create(*m_connection);
    if (!input) return input.status();
    m_input = std::make_unique<XInput>(std::move(*input));

    m_monitors = m_connection->monitors();
    if (m_options.monitor) {
        auto index = static_cast<std::size_t>(*m_options.monitor);
        if (index >= m_monitors.size()) {
            return Status::outOfRange("desktop: monitor " + std::to_string(index) +
                                      " does not exist; display " + m_displayName + " has " +
                                      std::to_string(m_monitors.size()) + " monitor(s)");
        }
        m_area = m_monitors[index];
    } else {
        m_area = m_connection->screen();
    }
    return Status::ok();
}

void DesktopEnvironment::disconnect() {
    m_input.reset();
    m_connection.reset();
}

Status DesktopEnvironment::startCommand() {
    if (m_options.startCommand.empty()) return Status::ok();
    SpawnOptions spawn;
    spawn.argv = m_options.startCommand;
    spawn.environment = {"DISPLAY=" + m_displayName};
    Result<std::unique_ptr<ChildProcess>> started = ChildProcess::spawn(spawn);
    if (!started) return started.status().withContext("desktop: start command: ");
    m_command = std::move(*started);
    m_lastAction = std::chrono::steady_clock::now();
    return Status::ok();
}

Status DesktopEnvironment::reset() {
    // Held keys and buttons are released on the old connection if it still works; a fresh
    // connection then also recovers from a lost one and picks up a changed monitor layout.
    if (m_input) (void)m_input->releaseAll();
    m_command.reset();
    disconnect();
    m_private.reset();
    IRIS_RETURN_IF_ERROR(connect());
    return startCommand();
}

Status DesktopEnvironment::checkDisplay() {
    if (!m_connection) return Status::ioError("desktop: not connected (a reset failed)");
    // A private server that died is named as such, not reported as a lost connection.
    if (m_private && !m_private->running()) {
        disconnect();
        return Status::ioError("desktop: the private X server " + m_displayName +
                               " has exited; reset() starts a new one");
    }
    return Status::ok();
}

Result<Observation> DesktopEnvironment::observe() {
    IRIS_RETURN_IF_ERROR(checkDisplay());
    auto settled = m_lastAction + m_options.settleTime;
    auto now = std::chrono::steady_clock::now();
    if (now < settled) std::this_thread::sleep_for(settled - now);

    Result<cv::Mat> captured = m_connection->capture(m_area);
    if (!captured) return captured.status();
    Observation observation;
    observation.capturedAtMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count();
    observation.screenshot =
        shrinkForObservation(std::move(*captured), m_area, m_options.observationScale);
    observation.devicePixelRatio = 1.0 / m_options.observationScale;
    observation.origin = {static_cast<double>(m_area.x), static_cast<double>(m_area.y)};
    observation.title = m_connection->activeWindowTitle();
    return observation;
}

Result<Point> DesktopEnvironment::toDevice(Point point, const char* what) {
    return observationToDevice(point, m_area, m_options.observationScale, what);
}

Status DesktopEnvironment::pointerTo(const std::optional<Point>& point, const char* what) {
    if (!point) return Status::ok();
    Result<Point> device = toDevice(*point, what);
    if (!device) return device.status();
    return m_input->moveTo(static_cast<int>(device->x), static_cast<int>(device->y));
}

Status DesktopEnvironment::click(unsigned button, int count) {
    for (int i = 0; i < count; ++i) {
        IRIS_RETURN_IF_ERROR(m_input->button(button, true));
        IRIS_RETURN_IF_ERROR(m_input->button(button, false));
    }
    return Status::ok();
}

Status DesktopEnvironment::scroll(const Scroll& scroll) {
    IRIS_RETURN_IF_ERROR(checkScroll(scroll));
    IRIS_RETURN_IF_ERROR(pointerTo(scroll.at, "scroll"));
    // X wheel buttons: 4 up, 5 down, 6 left, 7 right. Positive dy scrolls towards the end.
    unsigned vertical = scroll.dy > 0 ? 5 : 4;
    unsigned horizontal = scroll.dx > 0 ? 7 : 6;
    for (int i = 0; i < std::abs(scroll.dy); ++i)
        IRIS_RETURN_IF_ERROR(click(vertical, 1));
    for (int i = 0; i < std::abs(scroll.dx); ++i)
        IRIS_RETURN_IF_ERROR(click(horizontal, 1));
    return Status::ok();
}

Status DesktopEnvironment::drag(const Drag& drag) {
    Result<Point> to = toDevice(drag.to, "drag");
    if (!to) return to.status();
    IRIS_RETURN_IF_ERROR(pointerTo(drag.from, "drag"));
    Window root = 0;
    Window child = 0;
    int startX = 0;
    int startY = 0;
    int windowX = 0;
    int windowY = 0;
    unsigned mask = 0;
    XQueryPointer(m_connection->display(), m_connection->root(), &root, &child, &startX, &startY,
                  &windowX, &windowY, &mask);
    IRIS_RETURN_IF_ERROR(m_connection->sync("drag: reading the pointer"));
    unsigned button = xButton(drag.button);
    IRIS_RETURN_IF_ERROR(m_input->button(button, true));
    // Intermediate motion: toolkits start a drag only after the pointer has moved while pressed.
    Status status;
    for (int step = 1; step <= kDragSteps && status.isOk(); ++step) {
        double t = static_cast<double>(step) / kDragSteps;
        status = m_input->moveTo(static_cast<int>(std::lround(startX + (to->x - startX) * t)),
                                 static_cast<int>(std::lround(startY + (to->y - startY) * t)));
    }
    Status released = m_input->button(button, false);
    return status.isOk() ? released : status;
}

Status DesktopEnvironment::run(const Action& action) {
    if (std::optional<Status> common = runCommonDesktopAction(action)) return *common;
    return std::visit(
        [this](const auto& a) -> Status {
            using T = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<T, Click>) {
                IRIS_RETURN_IF_ERROR(checkClick(a));
                IRIS_RETURN_IF_ERROR(pointerTo(a.at, "click"));
                return click(xButton(a.button), a.count);
            } else if constexpr (std::is_same_v<T, MoveTo>) {
                return pointerTo(a.to, "move");
            } else if constexpr (std::is_same_v<T, MouseDown>) {
                return m_input->button(xButton(a.button), true);
            } else if constexpr (std::is_same_v<T, MouseUp>) {
                return m_input->button(xButton(a.button), false);
            } else if constexpr (std::is_same_v<T, Drag>) {
                return drag(a);
            } else if constexpr (std::is_same_v<T, Scroll>) {
                return scroll(a);
            } else if constexpr (std::is_same_v<T, TypeText>) {
                return m_input->typeText(a.text);
            } else if constexpr (std::is_same_v<T, PressKeys>) {
                return m_input->pressKeys(a.keys);
            } else if constexpr (std::is_same_v<T, KeyDown>) {
                return m_input->keyDown(a.key);
            } else if constexpr (std::is_same_v<T, KeyUp>) {
                return m_input->keyUp(a.key);
            } else {
                return Status::internal("desktop: an action runCommonDesktopAction should answer");
            }
        },
        action);
}

ActionResult DesktopEnvironment::execute(const Action& action) {
    ActionResult result;
    result.status = checkDisplay();
    if (!result.status.isOk()) return result;
    result.status = run(action);
    m_lastAction = std::chrono::steady_clock::now();
    return result;
}

std::string DesktopEnvironment::describe() const {
    std::string name = m_displayName;
    if (!name.empty() && name.front() == ':') name.erase(0, 1);
    return "desktop:" + name + (m_private ? " (private)" : "");
}

}  // namespace iris::agent
