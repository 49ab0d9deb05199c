#pragma once
// What every client of xdg-desktop-portal shares: the names it is reached by, the object path its
// Requests get, and the session handle of a CreateSession response.
#include <QDBusConnection>
#include <QDBusObjectPath>
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

}  // namespace iris::agent::portal
