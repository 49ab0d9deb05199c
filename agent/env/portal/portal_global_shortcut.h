#pragma once
// One global shortcut through xdg-desktop-portal's GlobalShortcuts interface: on Wayland no
// client may grab keys for itself, so Iris asks the desktop to bind its stop key and to signal
// when the person presses it, whichever window has the focus. The desktop may show a dialog where
// the person confirms or changes the key, and reports the trigger it chose.
//
// The handshake runs asynchronously on the calling thread's event loop (the GUI must not wait on
// a dialog): GlobalShortcuts.CreateSession -> BindShortcuts ([(id, {description,
// preferred_trigger})]) -> bound(trigger) or failed(why); then activated() at every press. Not
// thread-safe: use it on one thread, whose event loop delivers the portal's signals.
#include <QDBusConnection>
#include <QDBusObjectPath>
#include <QObject>
#include <QString>
#include <QTimer>
#include <QVariantMap>

#include "base/status.h"

namespace iris::agent {

struct GlobalShortcutRequest {
    QString id;                             // the application's name for it ("stop")
    QString description;                    // shown by the desktop ("Stop the Iris agent")
    QString preferredTrigger;               // XDG shortcut syntax ("CTRL+ALT+period")
    int responseTimeoutMs = 5 * 60 * 1000;  // a Response may wait for the person's dialog
};

class PortalGlobalShortcut final : public QObject {
    Q_OBJECT
public:
    enum class State { Idle, Binding, Bound, Failed };

    PortalGlobalShortcut(QDBusConnection bus, GlobalShortcutRequest request,
                         QObject* parent = nullptr);
    ~PortalGlobalShortcut() override;  // closes the session

    // Checks at once that the portal offers GlobalShortcuts (Unavailable: no portal on the bus;
    // Unsupported: a portal without the interface, naming the version needed), then starts the
    // handshake; its end is bound() or failed().
    Status bind();

    State state() const { return m_state; }
    // The trigger the desktop bound ("Ctrl+Alt+."), once Bound; why it failed, once Failed.
    const QString& trigger() const { return m_trigger; }
    const QString& failure() const { return m_failure; }

Q_SIGNALS:
    void bound(const QString& trigger);
    void failed(const QString& why);
    void activated();

private Q_SLOTS:
    void onResponse(uint response, const QVariantMap& results);
    void onActivated(const QDBusObjectPath& session, const QString& shortcutId,
                     qulonglong timestamp, const QVariantMap& options);
    void onTimeout();

private:
    Status call(const QString& method, QList<QVariant> arguments, QVariantMap options);
    void stopWaiting();
    void fail(const QString& why);
    void sessionCreated(const QVariantMap& results);
    void shortcutsBound(const QVariantMap& results);

    QDBusConnection m_bus;
    GlobalShortcutRequest m_request;
    State m_state = State::Idle;
    QString m_waitingPath;  // the Request object whose Response comes next
    QString m_waitingFor;   // its method, for messages
    QString m_session;
    QString m_trigger;
    QString m_failure;
    int m_tokenCounter = 0;
    QTimer* m_timeout = nullptr;
};

}  // namespace iris::agent
