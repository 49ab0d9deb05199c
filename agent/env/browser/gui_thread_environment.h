#pragma once
// Drives an Environment that must run on a Qt thread (BrowserEnvironment) from another thread:
// every call is carried out on the thread of an anchor QObject and the caller waits for it.
// The anchor's thread must be running its event loop and must not itself wait for the caller
// (joining the worker from the GUI thread while it is inside a call would deadlock).
#include <functional>
#include <memory>
#include <string>

#include <QPointer>

#include "agent/environment.h"

class QObject;

namespace iris::agent {

class GuiThreadEnvironment final : public Environment {
public:
    // `inner` was created on `anchor`'s thread and is destroyed there too.
    GuiThreadEnvironment(std::unique_ptr<Environment> inner, QObject* anchor);
    ~GuiThreadEnvironment() override;
    GuiThreadEnvironment(const GuiThreadEnvironment&) = delete;
    GuiThreadEnvironment& operator=(const GuiThreadEnvironment&) = delete;

    Status reset() override;
    Result<Observation> observe() override;
    ActionResult execute(const Action& action) override;
    Status reload() override;
    std::string describe() const override;

    // Runs `work` on the anchor's thread (directly when already there) and waits for it. Use it
    // for calls beyond the Environment interface: evaluateJavaScript, reload, screenshots.
    // Cancelled when the anchor is gone.
    Status runOnGuiThread(const std::function<void()>& work) const;

    Environment& inner() { return *m_inner; }

private:
    std::unique_ptr<Environment> m_inner;
    QPointer<QObject> m_anchor;
};

}  // namespace iris::agent
