#include "agent/env/portal/portal_environment.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <opencv2/imgproc.hpp>

namespace iris::agent {
namespace {

constexpr double kMaxWaitSeconds = 600;  // as the other desktops

std::int64_t nowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

Result<std::unique_ptr<PortalEnvironment>> PortalEnvironment::open(
    QDBusConnection bus, RestoreTokenStore* tokens, PortalEnvironmentOptions options) {
    std::unique_ptr<PortalEnvironment> env(new PortalEnvironment);
    env->m_options = options;
    env->m_client = std::make_unique<PortalClient>(std::move(bus), tokens, options.client);
    IRIS_RETURN_IF_ERROR(env->m_client->start());
    std::vector<PortalStream> shared = env->m_client->streams();  // start() checked: not empty
    std::stable_sort(shared.begin(), shared.end(),
                     [](const PortalStream& a, const PortalStream& b) {
                         return std::pair{a.x, a.y} < std::pair{b.x, b.y};
                     });
    if (options.monitor) {
        const int monitor = *options.monitor;
        if (monitor < 0 || static_cast<std::size_t>(monitor) >= shared.size()) {
            return Status::outOfRange("desktop:portal: monitor " + std::to_string(monitor) +
                                      " was asked for, and the person shared " +
                                      std::to_string(shared.size()) +
                                      " monitor(s), numbered from 0 at the left; share more in "
                                      "the dialog or choose another with --env desktop:portal@N");
        }
        shared = {shared[static_cast<std::size_t>(monitor)]};
    }
    std::vector<cv::Size> firstFrames;
    for (const PortalStream& stream : shared) {
        if (stream.width <= 0 || stream.height <= 0) {
            return Status::corrupt("RemoteDesktop.Start: shared screen " +
                                   std::to_string(stream.nodeId) + " has no logical size");
        }
        // One PipeWire connection per stream: each capture owns and closes its descriptor.
        auto fd = env->m_client->openPipeWireRemote();
        if (!fd) return fd.status();
        auto capture = PipeWireCapture::connect(*fd, stream.nodeId);
        if (!capture) return capture.status();
        auto first = (*capture)->nextFrame(options.firstFrameTimeoutMs);
        if (!first) {
            Status status = first.status().withContext("the first frame of shared screen " +
                                                       std::to_string(stream.nodeId) + ": ");
            if ((*capture)->failed()) return status;
            // Linked, and no picture: the compositor records a screen only when it finishes a
            // frame of it, and some never do (KWin 5.27 on its headless virtual backend).
            return Status::unavailable(
                status.message() +
                "; the desktop accepted the screen cast and sent no picture: its compositor does "
                "not record this screen (KWin 5.27 on a headless virtual output never does)");
        }
        firstFrames.push_back(first->size());
        env->m_screens.push_back({stream, std::move(*capture), {}});
    }
    env->placeScreens(firstFrames);
    std::vector<PortalScreen> screens;
    for (const Screen& screen : env->m_screens)
        screens.push_back({screen.stream, screen.place});
    env->m_input = std::make_unique<PortalInput>(*env->m_client, std::move(screens));
    return env;
}

void PortalEnvironment::placeScreens(const std::vector<cv::Size>& firstFrames) {
    // Frame pixels per logical pixel of each monitor; the picture takes the densest.
    double density = 0;
    int left = std::numeric_limits<int>::max(), top = left;
    int right = std::numeric_limits<int>::min(), bottom = right;
    for (std::size_t i = 0; i < m_screens.size(); ++i) {
        const PortalStream& stream = m_screens[i].stream;
        density = std::max(density, static_cast<double>(firstFrames[i].width) / stream.width);
        left = std::min(left, stream.x);
        top = std::min(top, stream.y);
        right = std::max(right, stream.x + stream.width);
        bottom = std::max(bottom, stream.y + stream.height);
    }
    m_origin = {left * density, top * density};
    if (m_screens.size() == 1) {
        m_area = {0, 0, firstFrames.front().width, firstFrames.front().height};
        m_screens.front().place = m_area;
        return;
    }
    auto device = [density](int logical, int origin) {
        return static_cast<int>(std::lround((logical - origin) * density));
    };
    m_area = {0, 0, device(right, left), device(bottom, top)};
    for (Screen& screen : m_screens) {
        const PortalStream& stream = screen.stream;
        const int x = device(stream.x, left);
        const int y = device(stream.y, top);
        screen.place = {x, y, device(stream.x + stream.width, left) - x,
                        device(stream.y + stream.height, top) - y};
    }
}

std::string PortalEnvironment::describe() const {
    std::string text = "desktop:portal";
    if (m_options.monitor) return text + "@" + std::to_string(*m_options.monitor);
    if (m_screens.size() > 1) text += ", " + std::to_string(m_screens.size()) + " monitors";
    return text;
}

Result<Observation> PortalEnvironment::observe() {
    IRIS_RETURN_IF_ERROR(m_client->checkSession("observe"));
    // Compositors send frames on damage only: after the wait, each stream's newest frame is
    // the screen as it is.
    std::this_thread::sleep_until(m_lastAction + std::chrono::milliseconds(m_options.settleMs));
    Observation observation;
    if (m_screens.size() == 1) {
        Result<cv::Mat> frame = m_screens.front().capture->nextFrame(0);
        if (!frame) return frame.status();
        observation.screenshot = std::move(*frame);
    } else {
        observation.screenshot = cv::Mat(m_area.height, m_area.width, CV_8UC3, cv::Scalar::all(0));
        for (const Screen& screen : m_screens) {
            Result<cv::Mat> frame = screen.capture->nextFrame(0);
            if (!frame) {
                return frame.status().withContext("shared screen " +
                                                  std::to_string(screen.stream.nodeId) + ": ");
            }
            const Monitor& place = screen.place;
            cv::Mat target =
                observation.screenshot(cv::Rect(place.x, place.y, place.width, place.height));
            if (frame->size() == target.size()) {
                frame->copyTo(target);
            } else {
                // Pixel duplication keeps a less dense monitor's text as sharp as it shows it.
                cv::resize(*frame, target, target.size(), 0, 0, cv::INTER_NEAREST_EXACT);
            }
        }
    }
    observation.origin = m_origin;
    observation.capturedAtMs = nowMs();
    return observation;
}

ActionResult PortalEnvironment::execute(const Action& action) {
    ActionResult result;
    if (const auto* wait = std::get_if<Wait>(&action)) {
        if (!(wait->seconds >= 0 && wait->seconds <= kMaxWaitSeconds)) {
            result.status = Status::invalidArgument("wait: seconds must be in [0, 600], not " +
                                                    std::to_string(wait->seconds));
        } else {
            std::this_thread::sleep_for(std::chrono::duration<double>(wait->seconds));
        }
        return result;
    }
    if (endsEpisode(action)) return result;  // Done and Fail: nothing to do on the screen
    result.status = m_input->execute(action);
    m_lastAction = std::chrono::steady_clock::now();
    return result;
}

}  // namespace iris::agent
