#pragma once
// What every client of xdg-desktop-portal shares: the names it is reached by, the object path its
// Requests get, and the session handle of a CreateSession response.
#include <QDBusConnection>
#include <QDBusError>
#include <QDBusMessage>
#include <QDBusObjectPath>
#include <QDBusReply>
#include <QDBusVariant>
#include <QString>
#include <QVariant>

namespace iris::agent::portal {

inline const QString kService = QStringLiteral("org.freedesktop.portal.Desktop");
inline const QString kObjectPath = QStringLiteral("/org/freedesktop/portal/desktop");
inline const QString kRequest = QStringLiteral("org.freedesktop.portal.Request");
inline const QString kSession = QStringLiteral("org.freedesktop.portal.Session");

// The Request object a call with `handle_token` `token` gets: the portal names it after the
// caller's unique bus name (":1.42" -> "1_42").
inline QString requestPath(const QDBusConnection& bus, const QString& token) {
    const QString sender = bus.baseService().mid(1).replace(QLatin1Char('.'), QLatin1Char('_'));
    return kObjectPath + QStringLiteral("/request/") + sender + QLatin1Char('/') + token;
}

// CreateSession's "session_handle": a string by the documentation; some portal versions send an
// object path. Empty when missing.
inline QString sessionHandleOf(const QVariant& handle) {
    return handle.metaType() == QMetaType::fromType<QDBusObjectPath>()
               ? handle.value<QDBusObjectPath>().path()
               : handle.toString();
}

// The portal's `version` property of `interface`. Asking also starts a portal the bus activates
// on demand.
inline QDBusReply<QDBusVariant> interfaceVersion(const QDBusConnection& bus,
                                                 const QString& interface) {
    QDBusMessage get = QDBusMessage::createMethodCall(
        kService, kObjectPath, QStringLiteral("org.freedesktop.DBus.Properties"),
        QStringLiteral("Get"));
    get << interface << QStringLiteral("version");
    return bus.call(get);
}

// True when `error` says that no portal owns kService on the bus.
inline bool noPortalOnBus(const QDBusError& error) {
    return error.type() == QDBusError::ServiceUnknown ||
           error.name() == QLatin1String("org.freedesktop.DBus.Error.NameHasNoOwner");
}

}  // namespace iris::agent::portal
