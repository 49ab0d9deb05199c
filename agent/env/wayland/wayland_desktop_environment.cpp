#include "agent/env/wayland/wayland_desktop_environment.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <thread>
#include <type_traits>

#include <opencv2/imgproc.hpp>

#include "agent/env/desktop/child_process.h"
#include "agent/env/desktop/desktop_actions.h"
#include "agent/env/wayland/sway_compositor.h"
#include "agent/env/wayland/wayland_connection.h"
#include "agent/env/wayland/wayland_input.h"

namespace iris::agent {
namespace {

constexpr int kDragSteps = 10;
constexpr std::chrono::milliseconds kOutputsTimeout{10000};
constexpr std::chrono::milliseconds kExistingOutputsTimeout{2000};

}  // namespace

Result<std::unique_ptr<WaylandDesktopEnvironment>> WaylandDesktopEnvironment::create(
    const WaylandDesktopOptions& options) {
    if (!(options.observationScale > 0.0 && options.observationScale <= 1.0)) {
        return Status::invalidArgument(
            "WaylandDesktopOptions.observationScale must be in (0, 1], not " +
            std::to_string(options.observationScale));
    }
    if ((options.output && *options.output < 0) || options.outputs < 1) {
        return Status::invalidArgument(
            "WaylandDesktopOptions: output must be >= 0 and outputs >= 1");
    }
    std::unique_ptr<WaylandDesktopEnvironment> environment(new WaylandDesktopEnvironment(options));
    IRIS_RETURN_IF_ERROR(environment->connect());
    IRIS_RETURN_IF_ERROR(environment->startCommand());
    return environment;
}

WaylandDesktopEnvironment::WaylandDesktopEnvironment(WaylandDesktopOptions options)
    : m_options(std::move(options)) {}

WaylandDesktopEnvironment::~WaylandDesktopEnvironment() {
    if (m_input) (void)m_input->releaseAll();
    m_command.reset();
    disconnect();
    m_private.reset();
}

Status WaylandDesktopEnvironment::connect() {
    m_lost.clear();
    std::size_t wantedOutputs = static_cast<std::size_t>(m_options.output.value_or(0)) + 1;
    if (m_options.privateCompositor) {
        SwayOptions sway;
        sway.outputs.assign(
            static_cast<std::size_t>(m_options.outputs),
            SwayOutputOptions{m_options.width, m_options.height, m_options.scale, 0});
        Result<std::unique_ptr<SwayCompositor>> started = SwayCompositor::start(sway);
        if (!started) return started.status();
        m_private = std::move(*started);
        m_displayName = m_private->socketPath();
        wantedOutputs = std::max(wantedOutputs, static_cast<std::size_t>(m_options.outputs));
    } else {
        m_displayName = m_options.display;
    }
    Result<std::unique_ptr<WaylandConnection>> connection = WaylandConnection::open(m_displayName);
    if (!connection) return connection.status();
    m_connection = std::move(*connection);
    m_displayName = m_connection->name();
    IRIS_RETURN_IF_ERROR(m_connection->requireScreenCopy());
    // A compositor just started announces its outputs after it opens its socket.
    (void)m_connection->waitForOutputs(wantedOutputs,
                                       m_private ? kOutputsTimeout : kExistingOutputsTimeout);

    std::vector<const WaylandOutput*> outputs = m_connection->outputs();
    if (m_options.output) {
        auto index = static_cast<std::size_t>(*m_options.output);
        if (index >= outputs.size()) {
            return Status::outOfRange("desktop: output " + std::to_string(index) +
                                      " does not exist; the Wayland compositor at " +
                                      m_displayName + " has " + std::to_string(outputs.size()) +
                                      " output(s)");
        }
        outputs = {outputs[index]};
    } else if (outputs.empty()) {
        return Status::unavailable("desktop: the Wayland compositor at " + m_displayName +
                                   " has no output to observe");
    }
    m_outputGlobals.clear();
    m_outputName.clear();
    for (const WaylandOutput* output : outputs) {
        m_outputGlobals.push_back(output->globalName);
        m_outputName += (m_outputName.empty() ? "" : "+") + output->name;
    }
    IRIS_RETURN_IF_ERROR(placeOutputs(outputs));
    // One output: a pointer bound to it, moved in its pixels. The whole desktop: an unbound
    // pointer, which the compositor moves over the bounding box of its layout.
    Result<std::unique_ptr<WaylandInput>> input = WaylandInput::create(
        *m_connection, observesWholeDesktop() ? nullptr : outputs.front()->output);
    if (!input) return input.status();
    m_input = std::move(*input);
    return Status::ok();
}

Status WaylandDesktopEnvironment::placeOutputs(const std::vector<const WaylandOutput*>& outputs) {
    if (outputs.size() == 1) {
        m_area = {0, 0, outputs.front()->pixelWidth(), outputs.front()->pixelHeight()};
        m_transform = outputs.front()->transform;
        m_places = {m_area};
        return Status::ok();
    }
    // The bounding box of the layout, in logical pixels, and the density of the densest output.
    int left = std::numeric_limits<int>::max(), top = left;
    int right = std::numeric_limits<int>::min(), bottom = right;
    double density = 0;
    for (const WaylandOutput* output : outputs) {
        if (output->logicalWidth <= 0 || output->logicalHeight <= 0) {
            return Status::unsupported(
                "desktop: the Wayland compositor at " + m_displayName +
                " does not say where output " + output->name +
                " is in its layout (no zxdg_output_manager_v1), so Iris cannot show its " +
                std::to_string(outputs.size()) +
                " outputs as one desktop; choose one with --env desktop:wayland@N");
        }
        left = std::min(left, output->logicalX);
        top = std::min(top, output->logicalY);
        right = std::max(right, output->logicalX + output->logicalWidth);
        bottom = std::max(bottom, output->logicalY + output->logicalHeight);
        density = std::max(density, static_cast<double>(output->pixelWidth()) /
                                        static_cast<double>(output->logicalWidth));
    }
    auto device = [density](int logical, int origin) {
        return static_cast<int>(std::lround((logical - origin) * density));
    };
    m_area = {0, 0, device(right, left), device(bottom, top)};
    m_transform = 0;  // the layout is already turned as its user sees it
    m_places.clear();
    for (const WaylandOutput* output : outputs) {
        const int x = device(output->logicalX, left);
        const int y = device(output->logicalY, top);
        m_places.push_back({x, y, device(output->logicalX + output->logicalWidth, left) - x,
                            device(output->logicalY + output->logicalHeight, top) - y});
    }
    return Status::ok();
}

void WaylandDesktopEnvironment::disconnect() {
    m_input.reset();
    m_connection.reset();
}

Status WaylandDesktopEnvironment::startCommand() {
    if (m_options.startCommand.empty()) return Status::ok();
    SpawnOptions spawn;
    spawn.argv = m_options.startCommand;
    spawn.environment = m_private ? m_private->clientEnvironment()
                                  : std::vector<std::string>{"WAYLAND_DISPLAY=" + m_displayName};
    Result<std::unique_ptr<ChildProcess>> started = ChildProcess::spawn(spawn);
    if (!started) return started.status().withContext("desktop: start command: ");
    m_command = std::move(*started);
    m_lastAction = std::chrono::steady_clock::now();
    return Status::ok();
}

Status WaylandDesktopEnvironment::reset() {
    if (m_input) (void)m_input->releaseAll();
    m_command.reset();
    disconnect();
    m_private.reset();
    IRIS_RETURN_IF_ERROR(connect());
    return startCommand();
}

Result<std::vector<const WaylandOutput*>> WaylandDesktopEnvironment::currentOutputs(
    const char* what) {
    if (!m_connection) {
        return Status::ioError(m_lost.empty() ? "desktop: not connected (a reset failed)" : m_lost);
    }
    if (m_private && !m_private->running()) {
        // Every later step says the same, not merely that the connection is gone.
        m_lost = "desktop: the private sway at " + m_displayName +
                 " has exited; reset() starts a new one";
        disconnect();
        return Status::ioError(m_lost);
    }
    // Picks up removed outputs and changed modes or places before the step uses them.
    IRIS_RETURN_IF_ERROR(m_connection->roundtrip(what));
    std::vector<const WaylandOutput*> outputs;
    for (std::uint32_t global : m_outputGlobals) {
        const WaylandOutput* output = m_connection->outputByGlobal(global);
        if (output == nullptr || output->gone) {
            const std::string name = output == nullptr ? m_outputName : output->name;
            return Status::ioError("desktop: output " + name +
                                   " is gone (unplugged or disabled); reset() picks the outputs "
                                   "again");
        }
        outputs.push_back(output);
    }
    if (observesWholeDesktop()) {
        // The unbound pointer moves over the whole layout, so an output plugged in since would
        // shift every click: stop rather than click elsewhere than the model chose.
        for (const WaylandOutput* output : m_connection->outputs()) {
            if (std::find(m_outputGlobals.begin(), m_outputGlobals.end(), output->globalName) ==
                m_outputGlobals.end()) {
                return Status::ioError("desktop: output " + output->name +
                                       " was plugged in; reset() shows the desktop with it");
            }
        }
    }
    IRIS_RETURN_IF_ERROR(placeOutputs(outputs));
    return outputs;
}

Result<cv::Mat> WaylandDesktopEnvironment::captureDesktop(
    const std::vector<const WaylandOutput*>& outputs) {
    if (outputs.size() == 1) return m_connection->capture(*outputs.front());
    cv::Mat desktop(m_area.height, m_area.width, CV_8UC3, cv::Scalar::all(0));
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        Result<cv::Mat> captured = m_connection->capture(*outputs[i]);
        if (!captured) return captured.status();
        const Monitor& place = m_places[i];
        cv::Mat target = desktop(cv::Rect(place.x, place.y, place.width, place.height));
        if (captured->size() == target.size()) {
            captured->copyTo(target);
        } else {
            // Pixel duplication keeps a less dense output's edges and text as sharp as it shows
            // them (INTER_NEAREST_EXACT: the pixel under each target pixel's centre).
            cv::resize(*captured, target, target.size(), 0, 0, cv::INTER_NEAREST_EXACT);
        }
    }
    return desktop;
}

Result<Observation> WaylandDesktopEnvironment::observe() {
    auto settled = m_lastAction + m_options.settleTime;
    auto now = std::chrono::steady_clock::now();
    if (now < settled) std::this_thread::sleep_for(settled - now);
    Result<std::vector<const WaylandOutput*>> outputs = currentOutputs("desktop: observing");
    if (!outputs) return outputs.status();
    Result<cv::Mat> captured = captureDesktop(*outputs);
    if (!captured) return captured.status();

    Observation observation;
    observation.capturedAtMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count();
    observation.screenshot =
        shrinkForObservation(std::move(*captured), m_area, m_options.observationScale);
    observation.devicePixelRatio = 1.0 / m_options.observationScale;
    // The focused window's, as the X11 desktop reports it; events up to the copy's are handled.
    observation.title = m_connection->activeWindowTitle();
    return observation;
}

Result<Point> WaylandDesktopEnvironment::toDevice(Point point, const char* what) const {
    return observationToDevice(point, m_area, m_options.observationScale, what);
}

Status WaylandDesktopEnvironment::moveTo(Point device) {
    m_pointer = device;
    return m_input->moveTo(static_cast<int>(device.x), static_cast<int>(device.y), m_area.width,
                           m_area.height, m_transform);
}

Status WaylandDesktopEnvironment::pointerTo(const std::optional<Point>& point, const char* what) {
    if (!point) return Status::ok();
    Result<Point> device = toDevice(*point, what);
    if (!device) return device.status();
    return moveTo(*device);
}

Status WaylandDesktopEnvironment::click(MouseButton button, int count) {
    for (int i = 0; i < count; ++i) {
        IRIS_RETURN_IF_ERROR(m_input->button(button, true));
        IRIS_RETURN_IF_ERROR(m_input->button(button, false));
    }
    return Status::ok();
}

Status WaylandDesktopEnvironment::drag(const Drag& drag) {
    Result<Point> to = toDevice(drag.to, "drag");
    if (!to) return to.status();
    IRIS_RETURN_IF_ERROR(pointerTo(drag.from, "drag"));
    const Point from = m_pointer;
    IRIS_RETURN_IF_ERROR(m_input->button(drag.button, true));
    // Intermediate motion: toolkits start a drag only after the pointer has moved while pressed.
    Status status;
    for (int step = 1; step <= kDragSteps && status.isOk(); ++step) {
        double t = static_cast<double>(step) / kDragSteps;
        status = moveTo(
            {std::round(from.x + (to->x - from.x) * t), std::round(from.y + (to->y - from.y) * t)});
    }
    Status released = m_input->button(drag.button, false);
    return status.isOk() ? released : status;
}

Status WaylandDesktopEnvironment::run(const Action& action) {
    if (std::optional<Status> common = runCommonDesktopAction(action)) return *common;
    return std::visit(
        [this](const auto& a) -> Status {
            using T = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<T, Click>) {
                IRIS_RETURN_IF_ERROR(checkClick(a));
                IRIS_RETURN_IF_ERROR(pointerTo(a.at, "click"));
                return click(a.button, a.count);
            } else if constexpr (std::is_same_v<T, MoveTo>) {
                return pointerTo(a.to, "move");
            } else if constexpr (std::is_same_v<T, MouseDown> || std::is_same_v<T, MouseUp>) {
                return m_input->button(a.button, std::is_same_v<T, MouseDown>);
            } else if constexpr (std::is_same_v<T, Drag>) {
                return drag(a);
            } else if constexpr (std::is_same_v<T, Scroll>) {
                IRIS_RETURN_IF_ERROR(checkScroll(a));
                IRIS_RETURN_IF_ERROR(pointerTo(a.at, "scroll"));
                return m_input->scroll(a.dx, a.dy);
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

ActionResult WaylandDesktopEnvironment::execute(const Action& action) {
    ActionResult result;
    Result<std::vector<const WaylandOutput*>> outputs = currentOutputs("desktop: acting");
    if (!outputs) {
        result.status = outputs.status();
        return result;
    }
    result.status = run(action);
    m_lastAction = std::chrono::steady_clock::now();
    return result;
}

std::string WaylandDesktopEnvironment::describe() const {
    std::string socket = std::filesystem::path(m_displayName).filename().string();
    std::string capture;
    if (m_connection) {
        capture = m_connection->captureProtocol() == CaptureProtocol::ExtImageCopyCapture
                      ? ", capture ext-image-copy-capture"
                      : ", capture wlr-screencopy";
    }
    return "desktop:wayland " + socket + " " + m_outputName + (m_private ? " (private)" : "") +
           capture;
}

}  // namespace iris::agent
