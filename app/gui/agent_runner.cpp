#include "app/gui/agent_runner.h"

#include <atomic>
#include <chrono>
#include <utility>

#include <QByteArray>
#include <QCoreApplication>
#include <QEventLoop>
#include <QMetaObject>
#include <QThread>

#include "agent/env/browser/gui_thread_environment.h"
#include "agent/recording/session_recorder.h"
#include "agent/recording/session_store.h"

namespace iris::app {
namespace {

QString qs(const std::string& text) {
    return QString::fromStdString(text);
}

// Forwards to the real client and keeps the last answer's token counts for the step's view.
// Used only on the worker thread, apart from cancel() (thread-safe in every client).
class MeteredClient final : public agent::ModelClient {
public:
    explicit MeteredClient(agent::ModelClient& inner) : m_inner(inner) {}

    Result<agent::ChatResponse> complete(const agent::ChatRequest& request,
                                         const agent::TextStream& onText) override {
        last = {};
        Result<agent::ChatResponse> response = m_inner.complete(request, onText);
        if (response) last = *response;
        return response;
    }
    void cancel() override { m_inner.cancel(); }
    std::string describe() const override { return m_inner.describe(); }
    std::optional<inference::ImageSize> imageSizeFor(int width, int height) const override {
        return m_inner.imageSizeFor(width, height);
    }
    std::vector<std::string> endpointsUsed() const override { return m_inner.endpointsUsed(); }

    agent::ChatResponse last;

private:
    agent::ModelClient& m_inner;
};

StepView viewOf(const agent::StepReport& report, const agent::ChatResponse& response) {
    StepView view;
    view.index = report.index;
    view.thought = qs(report.thought);
    view.answer = qs(report.answer);
    for (const agent::Action& action : report.actions)
        view.actions.push_back(qs(agent::describe(action)));
    for (const std::string& problem : report.problems)
        view.problems.push_back(qs(problem));
    view.score = report.score;
    view.verdict = qs(report.verdict);
    view.timings = report.timings;
    view.promptTokens = response.promptTokens;
    view.completionTokens = response.completionTokens;
    const double generationMs = response.latencyMs - response.timeToFirstTokenMs;
    if (response.completionTokens > 0 && generationMs > 0)
        view.tokensPerSecond = response.completionTokens * 1000.0 / generationMs;
    if (report.screenshot && !report.screenshot->bytes.empty()) {
        const std::vector<std::uint8_t>& bytes = report.screenshot->bytes;
        const QImage image = QImage::fromData(QByteArray::fromRawData(
            reinterpret_cast<const char*>(bytes.data()), static_cast<qsizetype>(bytes.size())));
        if (!image.isNull()) {
            view.screenSize = image.size();
            view.screenshot = image;
            view.thumbnail =
                image.width() > AgentRunner::kThumbnailWidth
                    ? image.scaledToWidth(AgentRunner::kThumbnailWidth, Qt::SmoothTransformation)
                    : image;
        }
    }
    return view;
}

}  // namespace

double StepView::totalMs() const {
    return timings.captureMs + timings.encodeMs + timings.modelMs + timings.parseMs +
           timings.executeMs + timings.recordMs;
}

RunRequest RunRequest::fromPlan(const SessionPlan& plan, PreparedSession prepared,
                                std::unique_ptr<agent::ModelClient> client) {
    RunRequest request;
    request.session.instruction = plan.loop.instruction;
    request.session.model = plan.clientDescription;
    request.session.config =
        sessionConfig(plan, prepared.workspace ? &*prepared.workspace : nullptr);
    request.environment = std::move(prepared.environment);
    request.workspace = std::move(prepared.workspace);
    request.safety = std::move(prepared.safety);
    request.client = std::move(client);
    request.loop = plan.loop;
    request.database = plan.database;
    return request;
}

// What the GUI thread and the worker share: stop and pause requests that may come before the
// loop exists, and the loop once it does.
struct AgentRunner::Shared {
    std::mutex mutex;
    agent::AgentLoop* loop = nullptr;
    bool stop = false;
    bool paused = false;
};

AgentRunner::AgentRunner(QObject* parent) : QObject(parent) {
    qRegisterMetaType<StepView>();
    qRegisterMetaType<RunOutcome>();
}

AgentRunner::~AgentRunner() {
    m_closing = true;
    if (!m_thread.joinable()) return;
    stop();
    // The worker may be waiting for this thread (an environment call, a consent question), so
    // keep serving events rather than block in join(); m_closing answers consent with "no".
    while (m_running) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        if (m_running) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

agent::Environment* AgentRunner::environment() {
    return m_environment ? &m_environment->inner() : nullptr;
}

bool AgentRunner::start(RunRequest request) {
    if (m_running || !request.environment || !request.client) return false;
    if (m_thread.joinable()) m_thread.join();  // a finished worker whose end is still queued
    m_environment =
        std::make_unique<agent::GuiThreadEnvironment>(std::move(request.environment), this);
    m_workspace = std::move(request.workspace);
    m_client = std::move(request.client);
    m_request = std::move(request);
    m_shared = std::make_shared<Shared>();
    m_running = true;
    m_thread = std::thread([this, shared = m_shared] { work(shared); });
    return true;
}

void AgentRunner::stop() {
    if (!m_shared) return;
    std::lock_guard lock(m_shared->mutex);
    m_shared->stop = true;
    if (m_shared->loop) m_shared->loop->requestStop();
}

void AgentRunner::setPaused(bool paused) {
    if (!m_shared) return;
    std::lock_guard lock(m_shared->mutex);
    m_shared->paused = paused;
    if (m_shared->loop) m_shared->loop->setPaused(paused);
}

void AgentRunner::post(std::function<void()> onGuiThread) {
    // Queued with `this` as context: runs on the GUI thread, in posting order.
    QMetaObject::invokeMethod(this, std::move(onGuiThread), Qt::QueuedConnection);
}

void AgentRunner::endRun() {
    if (m_thread.joinable()) m_thread.join();
    m_running = false;
}

void AgentRunner::work(std::shared_ptr<Shared> shared) {
    // Runs on the worker. Members other than the request, client, workspace and environment
    // belong to the GUI thread and are reached only through post().
    auto fail = [this](QString message) {
        post([this, message] {
            endRun();
            if (!m_closing) Q_EMIT failed(message);
        });
    };

    Result<agent::SessionStore> store = agent::SessionStore::open(m_request.database);
    if (!store) return fail(qs(store.status().message()));

    agent::SessionInfo info = m_request.session;
    if (info.instruction.empty()) info.instruction = m_request.loop.instruction;
    if (info.environment.empty()) info.environment = m_environment->describe();
    if (info.model.empty()) info.model = m_client->describe();
    if (info.actionFormat.empty())
        info.actionFormat = std::string(agent::actionFormatName(m_request.loop.format));
    Result<std::int64_t> session = store->createSession(info);
    if (!session) return fail(qs(session.status().message()));
    const qint64 sessionId = *session;
    post([this, sessionId] {
        if (!m_closing) Q_EMIT started(sessionId);
    });

    agent::SessionRecorder recorder(*store, *session);
    MeteredClient client(*m_client);
    agent::AgentLoop loop(*m_environment, client, agent::SafetyPolicy(m_request.safety),
                          m_workspace ? &*m_workspace : nullptr, &recorder, m_request.loop);
    loop.setTextStream([this](std::string_view delta) {
        QString text = QString::fromUtf8(delta.data(), static_cast<qsizetype>(delta.size()));
        post([this, text = std::move(text)] {
            if (!m_closing) Q_EMIT textStreamed(text);
        });
        return true;
    });
    loop.setConsentAsker([this](const agent::Action& action, const std::string& reason) {
        bool allowed = false;
        const QString what = qs(agent::describe(action));
        const QString why = qs(reason);
        QMetaObject::invokeMethod(
            this,
            [&] {
                if (!m_closing && m_askConsent) allowed = m_askConsent(what, why);
            },
            Qt::BlockingQueuedConnection);
        return allowed;
    });
    {
        std::lock_guard lock(shared->mutex);
        shared->loop = &loop;
        loop.setPaused(shared->paused);
        if (shared->stop) loop.requestStop();
    }
    const agent::LoopResult result = loop.run([&](const agent::StepReport& report) {
        post([this, view = viewOf(report, client.last)] {
            if (!m_closing) Q_EMIT stepFinished(view);
        });
    });
    {
        std::lock_guard lock(shared->mutex);
        shared->loop = nullptr;
    }

    RunOutcome outcome;
    outcome.sessionId = sessionId;
    outcome.end = qs(std::string(agent::loopEndName(result.end)));
    outcome.message = qs(result.message);
    outcome.score = result.score;
    outcome.steps = result.steps;
    if (Status finished = store->finishSession(*session, sessionStatusOf(result.end), result.score);
        !finished.isOk()) {
        outcome.recordingError = qs(finished.message());
    }
    post([this, outcome] {
        endRun();
        if (!m_closing) Q_EMIT finished(outcome);
    });
}

}  // namespace iris::app
