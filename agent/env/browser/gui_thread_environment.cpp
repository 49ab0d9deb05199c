#include "agent/env/browser/gui_thread_environment.h"

#include <utility>

#include <QMetaObject>
#include <QObject>
#include <QThread>

namespace iris::agent {

GuiThreadEnvironment::GuiThreadEnvironment(std::unique_ptr<Environment> inner, QObject* anchor)
    : m_inner(std::move(inner)), m_anchor(anchor) {}

GuiThreadEnvironment::~GuiThreadEnvironment() {
    // Qt objects inside the environment must die on their own thread. When that thread's
    // anchor is already gone the environment is leaked: deleting it here would be undefined.
    if (!m_inner) return;
    Environment* inner = m_inner.release();
    (void)runOnGuiThread([inner] { delete inner; });
}

Status GuiThreadEnvironment::runOnGuiThread(const std::function<void()>& work) const {
    QObject* anchor = m_anchor.data();
    if (anchor == nullptr) {
        return Status::cancelled("the environment's Qt thread anchor no longer exists");
    }
    if (QThread::currentThread() == anchor->thread()) {
        work();
        return {};
    }
    const bool queued = QMetaObject::invokeMethod(anchor, work, Qt::BlockingQueuedConnection);
    if (!queued) return Status::cancelled("could not reach the environment's Qt thread");
    return {};
}

Status GuiThreadEnvironment::reset() {
    Status result = Status::internal("reset did not run");
    IRIS_RETURN_IF_ERROR(runOnGuiThread([&] { result = m_inner->reset(); }));
    return result;
}

Result<Observation> GuiThreadEnvironment::observe() {
    Result<Observation> result = Status::internal("observe did not run");
    IRIS_RETURN_IF_ERROR(runOnGuiThread([&] { result = m_inner->observe(); }));
    return result;
}

ActionResult GuiThreadEnvironment::execute(const Action& action) {
    ActionResult result;
    result.status = Status::internal("execute did not run");
    const Status reached = runOnGuiThread([&] { result = m_inner->execute(action); });
    if (!reached.isOk()) result.status = reached;
    return result;
}

Status GuiThreadEnvironment::reload() {
    Status result = Status::internal("reload did not run");
    IRIS_RETURN_IF_ERROR(runOnGuiThread([&] { result = m_inner->reload(); }));
    return result;
}

std::string GuiThreadEnvironment::describe() const {
    std::string result;
    if (!runOnGuiThread([&] { result = m_inner->describe(); }).isOk()) return "unreachable";
    return result;
}

}  // namespace iris::agent
