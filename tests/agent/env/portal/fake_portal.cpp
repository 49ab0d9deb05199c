// A stand-in for xdg-desktop-portal on a private session bus, for portal_client_test.cpp. It
// owns org.freedesktop.portal.Desktop and answers the RemoteDesktop, ScreenCast and
// GlobalShortcuts calls the way the portal documents them: a request object path, then a
// Response signal on it. BindShortcuts binds each shortcut to its preferred trigger. It
// counts consent dialogs, issues restore tokens and honours them, and records every input call
// as a line of text. The test steers it through org.iris.test.FakePortal on the same object:
//   SetRefuse(b)                the next Start answers response 1 (the user said no)
//   SetRemoteDesktopVersion(u)  0: no RemoteDesktop interface at all; 1: no restore tokens
//                               (SelectDevices refuses persist_mode and restore_token)
//   SetGlobalShortcutsVersion(u) 0: no GlobalShortcuts interface
//   SetRefuseShortcuts(b)       BindShortcuts answers response 1 (the person declined)
//   ActivateShortcut(s)         the person pressed that shortcut (GlobalShortcuts.Activated)
//   LastBoundShortcuts() -> s   "id: description (preferred_trigger)" of the last BindShortcuts
//   SetStreamNode(u, i, i)      the PipeWire node Start hands out (a test producer's) and its
//                               logical width and height; the monitor is at (0, 0)
//   AddStream(u, i, i, i, i)    one more shared monitor: node, logical x, y, width, height
//                               (Start lists the streams in the order they were added)
//   CloseSession()              the desktop ends the session (Session.Closed)
//   SetClipboardVersion(u)      0: no Clipboard interface (RequestClipboard fails)
//   SetPasteTarget(b)           false: ctrl+v reaches nothing that asks for the clipboard
//   RequestPaste()              another application asks for the session's clipboard now
// Clipboard: RequestClipboard before Start makes Start answer clipboard_enabled. After
// SetSelection, a ctrl+v keysym chord is a paste: the fake signals SelectionTransfer, hands a
// pipe's end to SelectionWrite, and at SelectionWriteDone records "Pasted <text>" (or
// "SelectionWriteDone <serial> false").
//   DialogCount() -> u, Calls() -> as, LastSelectDevices() -> a{sv}
// OpenPipeWireRemote connects to the PipeWire socket named by IRIS_FAKE_PIPEWIRE_SOCKET, as the
// portal hands out its own connection to the compositor's PipeWire; without it, a pipe's end.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QDBusArgument>
#include <QDBusConnection>
#include <QDBusMessage>
#include <QDBusMetaType>
#include <QDBusObjectPath>
#include <QDBusUnixFileDescriptor>
#include <QDBusVariant>
#include <QDBusVirtualObject>
#include <QStringList>

namespace {

// One entry of Start's "streams" (a(ua{sv})) and its (ii) position and size.
struct IntPair {
    int first = 0;
    int second = 0;
};
struct Stream {
    uint nodeId = 0;
    QVariantMap properties;
};
// One entry of BindShortcuts' a(sa{sv}).
struct Shortcut {
    QString id;
    QVariantMap properties;
};

}  // namespace

Q_DECLARE_METATYPE(IntPair)
Q_DECLARE_METATYPE(Stream)
Q_DECLARE_METATYPE(Shortcut)

QDBusArgument& operator<<(QDBusArgument& out, const Shortcut& s) {
    out.beginStructure();
    out << s.id << s.properties;
    out.endStructure();
    return out;
}
const QDBusArgument& operator>>(const QDBusArgument& in, Shortcut& s) {
    in.beginStructure();
    in >> s.id >> s.properties;
    in.endStructure();
    return in;
}

QDBusArgument& operator<<(QDBusArgument& out, const IntPair& p) {
    out.beginStructure();
    out << p.first << p.second;
    out.endStructure();
    return out;
}
const QDBusArgument& operator>>(const QDBusArgument& in, IntPair& p) {
    in.beginStructure();
    in >> p.first >> p.second;
    in.endStructure();
    return in;
}
QDBusArgument& operator<<(QDBusArgument& out, const Stream& s) {
    out.beginStructure();
    out << s.nodeId << s.properties;
    out.endStructure();
    return out;
}
const QDBusArgument& operator>>(const QDBusArgument& in, Stream& s) {
    in.beginStructure();
    in >> s.nodeId >> s.properties;
    in.endStructure();
    return in;
}

namespace {

const QString kRoot = QStringLiteral("/org/freedesktop/portal/desktop");

QString senderPart(const QString& sender) {
    return sender.mid(1).replace(QLatin1Char('.'), QLatin1Char('_'));
}

class FakePortal : public QDBusVirtualObject {
public:
    explicit FakePortal(QDBusConnection bus) : m_bus(std::move(bus)) {}

    QString introspect(const QString&) const override { return {}; }

    bool handleMessage(const QDBusMessage& message, const QDBusConnection&) override {
        const QString interface = message.interface();
        const QString member = message.member();
        if (interface == QLatin1String("org.freedesktop.DBus.Properties")) return property(message);
        if (interface == QLatin1String("org.iris.test.FakePortal")) return control(message);
        if (interface == QLatin1String("org.freedesktop.portal.Session") && member == "Close") {
            m_sessionOpen = false;
            m_calls << QStringLiteral("Session.Close");
            return reply(message, {});
        }
        if (interface == QLatin1String("org.freedesktop.portal.RemoteDesktop") &&
            m_remoteDesktopVersion == 0) {
            return error(message, "org.freedesktop.DBus.Error.UnknownMethod", "no RemoteDesktop");
        }
        if (interface == QLatin1String("org.freedesktop.portal.GlobalShortcuts") &&
            m_globalShortcutsVersion == 0) {
            return error(message, "org.freedesktop.DBus.Error.UnknownMethod", "no GlobalShortcuts");
        }
        if (interface == QLatin1String("org.freedesktop.portal.Clipboard"))
            return clipboard(message);
        if (member == QLatin1String("BindShortcuts")) return bindShortcuts(message);
        if (member.startsWith(QLatin1String("Notify"))) return input(message);
        if (member == QLatin1String("CreateSession")) return createSession(message);
        if (member == QLatin1String("SelectDevices")) {
            m_selectDevices = options(message, 1);
            // Version 1 knows only `types` (strictly: a real portal may ignore the others).
            if (m_remoteDesktopVersion < 2 && (m_selectDevices.contains("persist_mode") ||
                                               m_selectDevices.contains("restore_token"))) {
                return error(message, "org.freedesktop.portal.Error.InvalidArgument",
                             "SelectDevices: option not supported by RemoteDesktop version 1");
            }
            return answer(message, 0, {});
        }
        if (member == QLatin1String("SelectSources")) {
            m_calls << QStringLiteral("SelectSources types=%1")
                           .arg(options(message, 1).value("types").toUInt());
            return answer(message, 0, {});
        }
        if (member == QLatin1String("Start")) return start(message);
        if (member == QLatin1String("OpenPipeWireRemote")) return openPipeWireRemote(message);
        return error(message, "org.freedesktop.DBus.Error.UnknownMethod", member);
    }

private:
    bool reply(const QDBusMessage& message, const QList<QVariant>& arguments) {
        m_bus.send(message.createReply(arguments));
        return true;
    }
    bool error(const QDBusMessage& message, const char* name, const QString& text) {
        m_bus.send(message.createErrorReply(QString::fromLatin1(name), text));
        return true;
    }

    static QVariantMap options(const QDBusMessage& message, int index) {
        return qdbus_cast<QVariantMap>(message.arguments().value(index));
    }

    // The portal's Request pattern: reply with the request path, then signal Response on it.
    bool answer(const QDBusMessage& message, uint response, const QVariantMap& results) {
        const int optionsIndex = static_cast<int>(message.arguments().size()) - 1;
        const QString token = options(message, optionsIndex).value("handle_token").toString();
        const QString path = kRoot + "/request/" + senderPart(message.service()) + "/" + token;
        reply(message, {QVariant::fromValue(QDBusObjectPath(path))});
        QDBusMessage signal = QDBusMessage::createTargetedSignal(
            message.service(), path, "org.freedesktop.portal.Request", "Response");
        signal << response << results;
        m_bus.send(signal);
        return true;
    }

    static int connectPipeWire(const char* socketPath) {
        int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, socketPath, sizeof(address.sun_path) - 1);
        if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
            return fd;
        }
        if (fd >= 0) ::close(fd);
        return -1;
    }

    bool openPipeWireRemote(const QDBusMessage& message) {
        int fds[2] = {-1, -1};
        if (const char* socketPath = std::getenv("IRIS_FAKE_PIPEWIRE_SOCKET")) {
            fds[0] = connectPipeWire(socketPath);
        } else if (::pipe(fds) != 0) {
            fds[0] = -1;
        }
        if (fds[0] < 0) return error(message, "org.freedesktop.portal.Error.Failed", "no PipeWire");
        QDBusUnixFileDescriptor fd(fds[0]);  // dups it
        ::close(fds[0]);
        if (fds[1] >= 0) ::close(fds[1]);
        return reply(message, {QVariant::fromValue(fd)});
    }

    bool property(const QDBusMessage& message) {
        const QString interface = message.arguments().value(0).toString();
        const QString name = message.arguments().value(1).toString();
        if (interface == QLatin1String("org.freedesktop.portal.RemoteDesktop") &&
            m_remoteDesktopVersion > 0 && name == QLatin1String("version")) {
            return reply(message, {QVariant::fromValue(QDBusVariant(m_remoteDesktopVersion))});
        }
        if (interface == QLatin1String("org.freedesktop.portal.GlobalShortcuts") &&
            m_globalShortcutsVersion > 0 && name == QLatin1String("version")) {
            return reply(message, {QVariant::fromValue(QDBusVariant(m_globalShortcutsVersion))});
        }
        return error(message, "org.freedesktop.DBus.Error.InvalidArgs",
                     "No such interface or property: " + interface + "." + name);
    }

    bool createSession(const QDBusMessage& message) {
        const QString token = options(message, 0).value("session_handle_token").toString();
        m_session = kRoot + "/session/" + senderPart(message.service()) + "/" + token;
        m_sessionOpen = true;
        m_started = m_clipboardRequested = m_selectionOwned = false;
        m_client = message.service();
        return answer(message, 0, {{"session_handle", m_session}});
    }

    bool start(const QDBusMessage& message) {
        const QString offered = m_selectDevices.value("restore_token").toString();
        const bool restored = !offered.isEmpty() && m_issuedTokens.contains(offered);
        if (!restored) ++m_dialogs;  // the user sees the consent dialog
        if (!restored && m_refuse) return answer(message, 1, {});
        Stream stream{m_streamNode, {}};
        stream.properties.insert("position", QVariant::fromValue(IntPair{0, 0}));
        stream.properties.insert("size", QVariant::fromValue(IntPair{m_width, m_height}));
        QList<Stream> streams{stream};
        streams += m_moreStreams;
        QVariantMap results{{"devices", uint(m_selectDevices.value("types").toUInt())},
                            {"streams", QVariant::fromValue(streams)}};
        if (m_clipboardRequested) results.insert("clipboard_enabled", true);
        m_started = true;
        if (m_selectDevices.value("persist_mode").toUInt() == 2) {
            // A fresh token each time, as the portal does; the old one stays valid here.
            const QString token = QStringLiteral("fake-token-%1").arg(m_issuedTokens.size() + 1);
            m_issuedTokens << token;
            results.insert("restore_token", token);
        }
        return answer(message, 0, results);
    }

    // Binds every shortcut to its preferred trigger, as a desktop whose person accepts them.
    bool bindShortcuts(const QDBusMessage& message) {
        if (m_refuseShortcuts) return answer(message, 1, {});
        QList<Shortcut> shortcuts;
        message.arguments().value(1).value<QDBusArgument>() >> shortcuts;
        QStringList described;
        for (Shortcut& shortcut : shortcuts) {
            const QString trigger = shortcut.properties.value("preferred_trigger").toString();
            described << shortcut.id + ": " + shortcut.properties.value("description").toString() +
                             " (" + trigger + ")";
            shortcut.properties = {{"description", shortcut.properties.value("description")},
                                   {"trigger_description", trigger}};
        }
        m_boundShortcuts = described.join(QStringLiteral("; "));
        return answer(message, 0, {{"shortcuts", QVariant::fromValue(shortcuts)}});
    }

    bool input(const QDBusMessage& message) {
        const QList<QVariant> a = message.arguments();
        if (!m_sessionOpen || a.value(0).value<QDBusObjectPath>().path() != m_session) {
            return error(message, "org.freedesktop.portal.Error.Failed", "Invalid session");
        }
        QStringList values;
        for (int i = 2; i < a.size(); ++i)
            values << a[i].toString();
        m_calls << message.member() + " " + values.join(QLatin1Char(' '));
        if (message.member() == QLatin1String("NotifyKeyboardKeysym")) {
            const int sym = a.value(2).toInt();
            const bool pressed = a.value(3).toUInt() == 1;
            if (sym == 0xffe3 || sym == 0xffe4) m_controlDown = pressed;  // Control_L, Control_R
            if (sym == 'v' && pressed && m_controlDown && m_selectionOwned && m_pasteTarget) {
                requestTransfer();
            }
        }
        return reply(message, {});
    }

    void requestTransfer() {
        QDBusMessage transfer = QDBusMessage::createTargetedSignal(
            m_client, kRoot, "org.freedesktop.portal.Clipboard", "SelectionTransfer");
        transfer << QVariant::fromValue(QDBusObjectPath(m_session))
                 << QStringLiteral("text/plain;charset=utf-8") << ++m_serial;
        m_bus.send(transfer);
    }

    bool clipboard(const QDBusMessage& message) {
        const QString member = message.member();
        const QList<QVariant> a = message.arguments();
        if (m_clipboardVersion == 0) {
            return error(message, "org.freedesktop.DBus.Error.UnknownMethod", "no Clipboard");
        }
        if (a.value(0).value<QDBusObjectPath>().path() != m_session) {
            return error(message, "org.freedesktop.portal.Error.Failed", "Invalid session");
        }
        if (member == QLatin1String("RequestClipboard")) {
            if (m_started) {
                return error(message, "org.freedesktop.portal.Error.Failed",
                             "Clipboard can only be requested before the session starts");
            }
            m_clipboardRequested = true;
            m_calls << member;
            return reply(message, {});
        }
        if (!m_clipboardRequested || !m_started) {
            return error(message, "org.freedesktop.portal.Error.NotAllowed",
                         "Clipboard not enabled");
        }
        if (member == QLatin1String("SetSelection")) {
            m_selectionOwned = true;
            m_calls << member + " " +
                           qdbus_cast<QVariantMap>(a.value(1))
                               .value("mime_types")
                               .toStringList()
                               .join(QLatin1Char(','));
            return reply(message, {});
        }
        if (member == QLatin1String("SelectionWrite")) {
            int fds[2] = {-1, -1};
            if (a.value(1).toUInt() != m_serial || ::pipe2(fds, O_CLOEXEC) != 0) {
                return error(message, "org.freedesktop.portal.Error.Failed", "no such transfer");
            }
            if (m_pasteRead >= 0) ::close(m_pasteRead);
            m_pasteRead = fds[0];
            QDBusUnixFileDescriptor fd(fds[1]);  // dups it: the reply's copy is the only one left
            ::close(fds[1]);
            return reply(message, {QVariant::fromValue(fd)});
        }
        if (member == QLatin1String("SelectionWriteDone")) {
            const bool success = a.value(2).toBool();
            QByteArray text;
            if (success && m_pasteRead >= 0) {
                char buffer[4096];
                ::fcntl(m_pasteRead, F_SETFL, O_NONBLOCK);
                for (ssize_t n; (n = ::read(m_pasteRead, buffer, sizeof buffer)) > 0;)
                    text.append(buffer, n);
            }
            if (m_pasteRead >= 0) ::close(m_pasteRead);
            m_pasteRead = -1;
            m_calls
                << (success
                        ? "Pasted " + QString::fromUtf8(text)
                        : QStringLiteral("SelectionWriteDone %1 false").arg(a.value(1).toUInt()));
            return reply(message, {});
        }
        return error(message, "org.freedesktop.DBus.Error.UnknownMethod", member);
    }

    bool control(const QDBusMessage& message) {
        const QString member = message.member();
        const QVariant first = message.arguments().value(0);
        if (member == QLatin1String("SetRefuse")) m_refuse = first.toBool();
        if (member == QLatin1String("SetRemoteDesktopVersion"))
            m_remoteDesktopVersion = first.toUInt();
        if (member == QLatin1String("SetGlobalShortcutsVersion"))
            m_globalShortcutsVersion = first.toUInt();
        if (member == QLatin1String("SetRefuseShortcuts")) m_refuseShortcuts = first.toBool();
        if (member == QLatin1String("LastBoundShortcuts"))
            return reply(message, {m_boundShortcuts});
        if (member == QLatin1String("ActivateShortcut")) {
            QDBusMessage activated = QDBusMessage::createTargetedSignal(
                m_client, kRoot, "org.freedesktop.portal.GlobalShortcuts", "Activated");
            activated << QVariant::fromValue(QDBusObjectPath(m_session)) << first.toString()
                      << qulonglong(1) << QVariantMap();
            m_bus.send(activated);
        }
        if (member == QLatin1String("SetStreamNode")) {
            m_streamNode = first.toUInt();
            m_width = message.arguments().value(1).toInt();
            m_height = message.arguments().value(2).toInt();
        }
        if (member == QLatin1String("AddStream")) {
            const QList<QVariant> a = message.arguments();
            Stream more{first.toUInt(), {}};
            more.properties.insert(
                "position", QVariant::fromValue(IntPair{a.value(1).toInt(), a.value(2).toInt()}));
            more.properties.insert(
                "size", QVariant::fromValue(IntPair{a.value(3).toInt(), a.value(4).toInt()}));
            m_moreStreams << more;
        }
        if (member == QLatin1String("SetClipboardVersion")) m_clipboardVersion = first.toUInt();
        if (member == QLatin1String("SetPasteTarget")) m_pasteTarget = first.toBool();
        if (member == QLatin1String("RequestPaste")) requestTransfer();
        if (member == QLatin1String("DialogCount")) return reply(message, {m_dialogs});
        if (member == QLatin1String("Calls")) return reply(message, {m_calls});
        if (member == QLatin1String("LastSelectDevices")) return reply(message, {m_selectDevices});
        if (member == QLatin1String("CloseSession")) {
            m_sessionOpen = false;
            QDBusMessage closed = QDBusMessage::createTargetedSignal(
                m_client, m_session, "org.freedesktop.portal.Session", "Closed");
            closed << QVariantMap();
            m_bus.send(closed);
        }
        return reply(message, {});
    }

    QDBusConnection m_bus;
    uint m_remoteDesktopVersion = 2;
    uint m_globalShortcutsVersion = 1;
    bool m_refuseShortcuts = false;
    QString m_boundShortcuts;
    uint m_streamNode = 42;  // the one monitor's PipeWire node and logical size
    int m_width = 1280;
    int m_height = 800;
    QList<Stream> m_moreStreams;  // AddStream's, after the first
    bool m_refuse = false;
    uint m_dialogs = 0;
    QStringList m_calls;
    QStringList m_issuedTokens;
    QVariantMap m_selectDevices;
    QString m_session;
    QString m_client;
    bool m_sessionOpen = false;
    bool m_started = false;
    uint m_clipboardVersion = 1;
    bool m_clipboardRequested = false;
    bool m_selectionOwned = false;
    bool m_pasteTarget = true;
    bool m_controlDown = false;
    uint m_serial = 0;
    int m_pasteRead = -1;  // the read end of the transfer under way
};

}  // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    qDBusRegisterMetaType<IntPair>();
    qDBusRegisterMetaType<Stream>();
    qDBusRegisterMetaType<QList<Stream>>();
    qDBusRegisterMetaType<Shortcut>();
    qDBusRegisterMetaType<QList<Shortcut>>();
    QDBusConnection bus = QDBusConnection::sessionBus();
    FakePortal portal(bus);
    if (!bus.registerVirtualObject(kRoot, &portal, QDBusConnection::SubPath) ||
        !bus.registerService(QStringLiteral("org.freedesktop.portal.Desktop"))) {
        std::fprintf(stderr, "fake_portal: cannot own org.freedesktop.portal.Desktop: %s\n",
                     qPrintable(bus.lastError().message()));
        return 1;
    }
    return QCoreApplication::exec();
}
