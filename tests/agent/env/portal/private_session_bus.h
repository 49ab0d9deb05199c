#pragma once
// A private D-Bus session bus for the portal tests: a dbus-daemon of their own that starts no
// services on demand. `dbus-daemon --session` would activate whatever the machine has installed
// under /usr/share/dbus-1/services, so on a desktop with xdg-desktop-portal the real portal
// would answer in place of the test's fake (or before it has taken the name).
#include <QByteArray>
#include <QFile>
#include <QProcess>
#include <QString>
#include <QTemporaryDir>

namespace iris::agent::testing {

class PrivateSessionBus {
public:
    PrivateSessionBus() = default;
    ~PrivateSessionBus() {
        m_daemon.kill();
        m_daemon.waitForFinished(kStartMs);
    }
    PrivateSessionBus(const PrivateSessionBus&) = delete;
    PrivateSessionBus& operator=(const PrivateSessionBus&) = delete;

    // False when dbus-daemon is not installed or does not start.
    bool start() {
        if (!m_dir.isValid()) return false;
        const QString config = m_dir.filePath(QStringLiteral("bus.conf"));
        QFile file(config);
        if (!file.open(QIODevice::WriteOnly)) return false;
        // The session bus's policy (anyone may own and call anything), and no service folders.
        file.write(
            QByteArray(
                "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration "
                "1.0//EN\" \"http://www.freedesktop.org/standards/dbus/1.0/"
                "busconfig.dtd\">\n<busconfig>\n  <type>session</type>\n  <listen>unix:dir=") +
            m_dir.path().toUtf8() +
            QByteArray("</listen>\n  <auth>EXTERNAL</auth>\n  <policy context=\"default\">\n"
                       "    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n"
                       "    <allow eavesdrop=\"true\"/>\n    <allow own=\"*\"/>\n"
                       "  </policy>\n</busconfig>\n"));
        file.close();
        m_daemon.start(QStringLiteral("dbus-daemon"),
                       {QStringLiteral("--config-file=") + config, QStringLiteral("--nofork"),
                        QStringLiteral("--print-address=1")});
        if (!m_daemon.waitForStarted(kStartMs) || !m_daemon.waitForReadyRead(kStartMs))
            return false;
        m_address = QString::fromUtf8(m_daemon.readLine()).trimmed();
        return !m_address.isEmpty();
    }

    const QString& address() const { return m_address; }

private:
    static constexpr int kStartMs = 30000;
    QTemporaryDir m_dir;
    QProcess m_daemon;
    QString m_address;
};

}  // namespace iris::agent::testing
