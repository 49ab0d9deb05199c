#include "agent/env/portal/portal_global_shortcut.h"

#include <unistd.h>

#include <QDBusArgument>
#include <QDBusMessage>
#include <QDBusMetaType>
#include <QDBusObjectPath>
#include <QDBusReply>
#include <QDBusVariant>
#include <QTimer>

#include "agent/env/portal/portal_names.h"

namespace {

// One entry of BindShortcuts' a(sa{sv}): the shortcut's id and its properties.
struct PortalShortcut {
    QString id;
    QVariantMap properties;
};

}  // namespace

Q_DECLARE_METATYPE(PortalShortcut)

QDBusArgument& operator<<(QDBusArgument& out, const PortalShortcut& shortcut) {
    out.beginStructure();
    out << shortcut.id << shortcut.properties;
    out.endStructure();
    return out;
}

const QDBusArgument& operator>>(const QDBusArgument& in, PortalShortcut& shortcut) {
    in.beginStructure();
    in >> shortcut.id >> shortcut.properties;
    in.endStructure();
    return in;
}

namespace iris::agent {
namespace {

using portal::kObjectPath;
using portal::kRequest;
using portal::kService;
using portal::kSession;
const QString kGlobalShortcuts = QStringLiteral("org.freedesktop.portal.GlobalShortcuts");

// The shortcuts of a BindShortcuts response.
QList<PortalShortcut> shortcutsOf(const QVariant& value) {
    QList<PortalShortcut> shortcuts;
    if (value.canConvert<QDBusArgument>()) value.value<QDBusArgument>() >> shortcuts;
    return shortcuts;
}

}  // namespace

PortalGlobalShortcut::PortalGlobalShortcut(QDBusConnection bus, GlobalShortcutRequest request,
                                           QObject* parent)
    : QObject(parent), m_bus(std::move(bus)), m_request(std::move(request)) {
    qDBusRegisterMetaType<PortalShortcut>();
    qDBusRegisterMetaType<QList<PortalShortcut>>();
    m_timeout = new QTimer(this);
    m_timeout->setSingleShot(true);
    connect(m_timeout, &QTimer::timeout, this, &PortalGlobalShortcut::onTimeout);
}

PortalGlobalShortcut::~PortalGlobalShortcut() {
    stopWaiting();
    if (!m_session.isEmpty() && m_bus.isConnected()) {
        m_bus.call(
            QDBusMessage::createMethodCall(kService, m_session, kSession, QStringLiteral("Close")));
    }
}

Status PortalGlobalShortcut::bind() {
    if (!m_bus.isConnected())
        return Status::unavailable(
            "no D-Bus session bus: the desktop portal is reached through it");
    QDBusReply<QDBusVariant> version = portal::interfaceVersion(m_bus, kGlobalShortcuts);
    if (portal::noPortalOnBus(version.error())) {
        return Status::unavailable("no xdg-desktop-portal on the session bus");
    }
    if (!version.isValid()) {
        return Status::unsupported(
            "the desktop portal has no GlobalShortcuts interface (xdg-desktop-portal 1.17 with a "
            "backend that implements it, e.g. KDE Plasma 6 or GNOME 48)");
    }
    m_state = State::Binding;
    const QString sessionToken = QStringLiteral("iris%1_shortcuts").arg(::getpid());
    return call(QStringLiteral("CreateSession"), {},
                {{QStringLiteral("session_handle_token"), sessionToken}});
}

// A portal Request: subscribe to its Response on the path the portal will use, then call.
Status PortalGlobalShortcut::call(const QString& method, QList<QVariant> arguments,
                                  QVariantMap options) {
    const QString token = QStringLiteral("iris%1_%2").arg(::getpid()).arg(++m_tokenCounter);
    options.insert(QStringLiteral("handle_token"), token);
    m_waitingPath = portal::requestPath(m_bus, token);
    m_waitingFor = method;
    m_bus.connect(kService, m_waitingPath, kRequest, QStringLiteral("Response"), this,
                  SLOT(onResponse(uint, QVariantMap)));
    QDBusMessage message =
        QDBusMessage::createMethodCall(kService, kObjectPath, kGlobalShortcuts, method);
    arguments.append(options);
    message.setArguments(arguments);
    QDBusReply<QDBusObjectPath> handle = m_bus.call(message);
    if (!handle.isValid()) {
        const QString why = QStringLiteral("GlobalShortcuts.%1: the portal refused the call: %2")
                                .arg(method, handle.error().message());
        fail(why);
        return Status::unavailable(why.toStdString());
    }
    m_timeout->start(m_request.responseTimeoutMs);
    return Status::ok();
}

void PortalGlobalShortcut::stopWaiting() {
    m_timeout->stop();
    if (m_waitingPath.isEmpty()) return;
    m_bus.disconnect(kService, m_waitingPath, kRequest, QStringLiteral("Response"), this,
                     SLOT(onResponse(uint, QVariantMap)));
    m_waitingPath.clear();
}

void PortalGlobalShortcut::fail(const QString& why) {
    stopWaiting();
    m_state = State::Failed;
    m_failure = why;
    Q_EMIT failed(why);
}

void PortalGlobalShortcut::onTimeout() {
    fail(QStringLiteral("GlobalShortcuts.%1: the desktop portal gave no answer within %2 s")
             .arg(m_waitingFor)
             .arg(m_request.responseTimeoutMs / 1000));
}

void PortalGlobalShortcut::onResponse(uint response, const QVariantMap& results) {
    const QString method = m_waitingFor;
    stopWaiting();
    if (response == 1) {
        fail(QStringLiteral("GlobalShortcuts.%1: the person declined the shortcut").arg(method));
    } else if (response != 0) {
        fail(QStringLiteral("GlobalShortcuts.%1: the portal ended the request with response %2")
                 .arg(method)
                 .arg(response));
    } else if (method == QLatin1String("CreateSession")) {
        sessionCreated(results);
    } else {
        shortcutsBound(results);
    }
}

void PortalGlobalShortcut::sessionCreated(const QVariantMap& results) {
    m_session = portal::sessionHandleOf(results.value(QStringLiteral("session_handle")));
    if (m_session.isEmpty()) {
        fail(QStringLiteral("GlobalShortcuts.CreateSession: the response has no session_handle"));
        return;
    }
    m_bus.connect(kService, kObjectPath, kGlobalShortcuts, QStringLiteral("Activated"), this,
                  SLOT(onActivated(QDBusObjectPath, QString, qulonglong, QVariantMap)));
    const PortalShortcut shortcut{
        m_request.id,
        {{QStringLiteral("description"), m_request.description},
         {QStringLiteral("preferred_trigger"), m_request.preferredTrigger}}};
    // No parent window: a Wayland parent needs an exported xdg-foreign handle.
    (void)call(QStringLiteral("BindShortcuts"),
               {QVariant::fromValue(QDBusObjectPath(m_session)),
                QVariant::fromValue(QList<PortalShortcut>{shortcut}), QString()},
               {});
}

void PortalGlobalShortcut::shortcutsBound(const QVariantMap& results) {
    for (const PortalShortcut& shortcut : shortcutsOf(results.value(QStringLiteral("shortcuts")))) {
        if (shortcut.id != m_request.id) continue;
        m_trigger = shortcut.properties.value(QStringLiteral("trigger_description")).toString();
        m_state = State::Bound;
        Q_EMIT bound(m_trigger);
        return;
    }
    fail(QStringLiteral("GlobalShortcuts.BindShortcuts: the desktop bound no shortcut '%1'")
             .arg(m_request.id));
}

void PortalGlobalShortcut::onActivated(const QDBusObjectPath& session, const QString& shortcutId,
                                       qulonglong /*timestamp*/, const QVariantMap& /*options*/) {
    if (m_state == State::Bound && session.path() == m_session && shortcutId == m_request.id)
        Q_EMIT activated();
}

}  // namespace iris::agent
