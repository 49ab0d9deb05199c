#include "agent/env/portal/portal_environment.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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
    if (options.monitor < 0 || static_cast<std::size_t>(options.monitor) >= shared.size()) {
        return Status::outOfRange("desktop:portal: monitor " + std::to_string(options.monitor) +
                                  " was asked for, and the person shared " +
                                  std::to_string(shared.size()) +
                                  " monitor(s), numbered from 0 at the left; share more in the "
                                  "dialog or choose another with --env desktop:portal@N");
    }
    env->m_stream = shared[static_cast<std::size_t>(options.monitor)];
    auto fd = env->m_client->openPipeWireRemote();
    if (!fd) return fd.status();
    auto capture = PipeWireCapture::connect(*fd, env->m_stream.nodeId);
    if (!capture) return capture.status();
    env->m_capture = std::move(*capture);
    auto first = env->m_capture->nextFrame(options.firstFrameTimeoutMs);
    if (!first) return first.status().withContext("the shared screen's first frame: ");
    if (env->m_stream.width <= 0) {
        return Status::corrupt("RemoteDesktop.Start: the shared screen has no logical size");
    }
    env->m_pixelsPerUnit = static_cast<double>(first->cols) / env->m_stream.width;
    env->m_input =
        std::make_unique<PortalInput>(*env->m_client, env->m_stream, env->m_pixelsPerUnit);
    return env;
}

std::string PortalEnvironment::describe() const {
    const std::string text = "desktop:portal";
    return m_options.monitor == 0 ? text : text + "@" + std::to_string(m_options.monitor);
}

Result<Observation> PortalEnvironment::observe() {
    IRIS_RETURN_IF_ERROR(m_client->checkSession("observe"));
    // A compositor sends frames on damage only: wait a little for one that shows the last
    // action, else the screen did not change and the newest frame is current.
    Result<cv::Mat> frame = Status::unavailable("no frame");
    if (m_actedSinceObserve) frame = m_capture->nextFrame(m_options.settleMs, m_framesAtLastAction);
    if (!frame) frame = m_capture->nextFrame(0);
    if (!frame) return frame.status();
    m_actedSinceObserve = false;
    Observation observation;
    observation.screenshot = std::move(*frame);
    observation.origin = {m_stream.x * m_pixelsPerUnit, m_stream.y * m_pixelsPerUnit};
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
    m_framesAtLastAction = m_capture->frameSequence();
    m_actedSinceObserve = true;
    result.status = m_input->execute(action);
    return result;
}

}  // namespace iris::agent
