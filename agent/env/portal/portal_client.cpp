#include "agent/env/portal/portal_client.h"

#include <cerrno>
#include <fstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QDBusArgument>
#include <QDBusError>
#include <QDBusMessage>
#include <QDBusObjectPath>
#include <QDBusReply>
#include <QDBusUnixFileDescriptor>
#include <QEventLoop>
#include <QTimer>

#include "agent/env/portal/portal_names.h"

namespace iris::agent {
namespace {

using portal::kObjectPath;
using portal::kRequest;
using portal::kService;
using portal::kSession;
const QString kRemoteDesktop = QStringLiteral("org.freedesktop.portal.RemoteDesktop");
const QString kScreenCast = QStringLiteral("org.freedesktop.portal.ScreenCast");
const QString kClipboard = QStringLiteral("org.freedesktop.portal.Clipboard");
// What the offered text is served as: the Wayland name, the plain one, and the X11 one that
// XWayland applications ask for through the compositor.
const QStringList kTextMimeTypes{QStringLiteral("text/plain;charset=utf-8"),
                                 QStringLiteral("text/plain"), QStringLiteral("UTF8_STRING")};

// restore_token and persist_mode in SelectDevices came with RemoteDesktop version 2
// (xdg-desktop-portal 1.18); version 1 (1.16 in Debian 12, GNOME 43) shares without them, and
// asks every session.
constexpr uint kRemembersConsentVersion = 2;
constexpr uint kPersistUntilRevoked = 2;
constexpr uint kSourceMonitor = 1;

std::string text(const QString& s) {
    return s.toStdString();
}

// A struct of two ints, as the portal sends "position" and "size" ((ii)).
std::optional<std::pair<int, int>> intPair(const QVariant& value) {
    if (!value.canConvert<QDBusArgument>()) return std::nullopt;
    const auto argument = value.value<QDBusArgument>();
    int first = 0;
    int second = 0;
    argument.beginStructure();
    argument >> first >> second;
    argument.endStructure();
    return std::pair{first, second};
}

}  // namespace

std::string FileRestoreTokenStore::load() {
    std::ifstream in(m_path);
    std::string token;
    std::getline(in, token);
    return token;
}

Status FileRestoreTokenStore::save(const std::string& token) {
    std::error_code error;
    std::filesystem::create_directories(m_path.parent_path(), error);
    // The token lets Iris control the desktop without asking: readable by the user alone.
    // fchmod too: a file that existed keeps its old mode through open().
    const int fd = ::open(m_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const std::string line = token + "\n";
    const bool written = fd >= 0 && ::fchmod(fd, 0600) == 0 &&
                         ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    if (fd >= 0) ::close(fd);
    if (!written)
        return Status::ioError(m_path.string() + ": cannot write the portal restore token");
    return Status::ok();
}

PortalClient::PortalClient(QDBusConnection bus, RestoreTokenStore* tokens,
                           PortalClientOptions options)
    : m_bus(std::move(bus)), m_tokens(tokens), m_options(options) {}

PortalClient::~PortalClient() {
    close();
}

QString PortalClient::nextToken() {
    return QStringLiteral("iris%1_%2").arg(::getpid()).arg(++m_tokenCounter);
}

Status PortalClient::checkPortal() {
    if (!m_bus.isConnected()) {
        return Status::unavailable(
            "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS): the desktop portal is reached "
            "through it; run Iris inside your desktop session");
    }
    QDBusReply<QDBusVariant> version = portal::interfaceVersion(m_bus, kRemoteDesktop);
    if (portal::noPortalOnBus(version.error())) {
        return Status::unavailable(
            "xdg-desktop-portal is not running on the session bus (no " + text(kService) +
            "): install xdg-desktop-portal and your desktop's backend (xdg-desktop-portal-gnome "
            "or xdg-desktop-portal-kde) and log in again; on sway or Hyprland use the wlroots "
            "path (--env desktop:wayland)");
    }
    if (!version.isValid()) {
        return Status::unsupported(
            "the desktop portal has no RemoteDesktop interface (" +
            text(version.error().message()) +
            "): the portal backend of this desktop cannot share input; GNOME needs "
            "xdg-desktop-portal-gnome, KDE xdg-desktop-portal-kde");
    }
    m_remoteDesktopVersion = version.value().variant().toUInt();
    if (m_remoteDesktopVersion < 1) {
        return Status::unsupported("the desktop portal's RemoteDesktop interface reports version " +
                                   std::to_string(m_remoteDesktopVersion) +
                                   "; Iris needs version 1 or later");
    }
    return Status::ok();
}

bool PortalClient::remembersConsent() const {
    return m_remoteDesktopVersion >= kRemembersConsentVersion;
}

Status PortalClient::start() {
    IRIS_RETURN_IF_ERROR(checkPortal());
    QVariantMap sessionOptions{{QStringLiteral("session_handle_token"), nextToken()}};
    auto created = request(kRemoteDesktop, QStringLiteral("CreateSession"), {}, sessionOptions);
    if (!created) return created.status();
    m_session = portal::sessionHandleOf(created->results.value(QStringLiteral("session_handle")));
    if (m_session.isEmpty()) {
        return Status::corrupt("RemoteDesktop.CreateSession: the response has no session_handle");
    }
    m_bus.connect(kService, m_session, kSession, QStringLiteral("Closed"), this,
                  SLOT(onSessionClosed(QVariantMap)));
    const QDBusObjectPath session(m_session);

    QVariantMap devices{{QStringLiteral("types"), m_options.deviceTypes}};
    if (remembersConsent()) {
        devices.insert(QStringLiteral("persist_mode"), kPersistUntilRevoked);
        std::string kept = m_tokens != nullptr ? m_tokens->load() : std::string();
        if (!kept.empty())
            devices.insert(QStringLiteral("restore_token"), QString::fromStdString(kept));
    }
    IRIS_RETURN_IF_ERROR(request(kRemoteDesktop, QStringLiteral("SelectDevices"),
                                 {QVariant::fromValue(session)}, devices)
                             .status());

    QVariantMap sources{{QStringLiteral("types"), kSourceMonitor},
                        {QStringLiteral("multiple"), true}};
    IRIS_RETURN_IF_ERROR(request(kScreenCast, QStringLiteral("SelectSources"),
                                 {QVariant::fromValue(session)}, sources)
                             .status());

    if (m_options.clipboard) requestClipboard();

    // No parent window: Iris's window is not necessarily open (the CLI), and a Wayland parent
    // needs an exported xdg-foreign handle.
    auto started = request(kRemoteDesktop, QStringLiteral("Start"),
                           {QVariant::fromValue(session), QString()}, {});
    if (!started) return started.status();
    return readStartResults(started->results);
}

void PortalClient::requestClipboard() {
    // A plain method, not a Request. Portals before 1.18, and backends without a clipboard,
    // refuse it; typing then goes by keysyms alone.
    QDBusMessage call = QDBusMessage::createMethodCall(kService, kObjectPath, kClipboard,
                                                       QStringLiteral("RequestClipboard"));
    call.setArguments({QVariant::fromValue(QDBusObjectPath(m_session)), QVariantMap()});
    m_clipboardRequested = m_bus.call(call).type() == QDBusMessage::ReplyMessage;
}

Status PortalClient::readStartResults(const QVariantMap& results) {
    m_devices = results.value(QStringLiteral("devices")).toUInt();
    m_clipboardEnabled =
        m_clipboardRequested && results.value(QStringLiteral("clipboard_enabled")).toBool();
    if (m_clipboardEnabled) {
        m_bus.connect(kService, kObjectPath, kClipboard, QStringLiteral("SelectionTransfer"), this,
                      SLOT(onSelectionTransfer(QDBusObjectPath, QString, uint)));
    }
    m_streams.clear();
    const QVariant streams = results.value(QStringLiteral("streams"));
    if (streams.canConvert<QDBusArgument>()) {
        const auto argument = streams.value<QDBusArgument>();
        argument.beginArray();
        while (!argument.atEnd()) {
            PortalStream stream;
            QVariantMap properties;
            argument.beginStructure();
            argument >> stream.nodeId >> properties;
            argument.endStructure();
            if (auto position = intPair(properties.value(QStringLiteral("position")))) {
                std::tie(stream.x, stream.y) = *position;
            }
            if (auto size = intPair(properties.value(QStringLiteral("size")))) {
                std::tie(stream.width, stream.height) = *size;
            }
            m_streams.push_back(stream);
        }
        argument.endArray();
    }
    if (m_streams.empty()) {
        return Status::unavailable(
            "RemoteDesktop.Start: the user shared no screen (the response has no streams); run "
            "again and choose a monitor in the dialog");
    }
    if ((m_devices & m_options.deviceTypes) != m_options.deviceTypes) {
        return Status::unavailable("RemoteDesktop.Start: the user allowed devices " +
                                   std::to_string(m_devices) + " of the " +
                                   std::to_string(m_options.deviceTypes) +
                                   " asked for (1 keyboard, 2 pointer); run again and allow "
                                   "both keyboard and pointer");
    }
    const QString token = results.value(QStringLiteral("restore_token")).toString();
    if (m_tokens != nullptr && !token.isEmpty()) {
        IRIS_RETURN_IF_ERROR(m_tokens->save(token.toStdString()));
    }
    return Status::ok();
}

Result<PortalClient::Response> PortalClient::request(const QString& interface,
                                                     const QString& method,
                                                     QList<QVariant> arguments,
                                                     QVariantMap options) {
    // Subscribe to the Response on the path the portal will use before calling, so that a
    // quick answer is not missed.
    const QString token = nextToken();
    options.insert(QStringLiteral("handle_token"), token);
    QString path = portal::requestPath(m_bus, token);
    m_bus.connect(kService, path, kRequest, QStringLiteral("Response"), this,
                  SLOT(onResponse(uint, QVariantMap)));
    m_response.reset();

    QDBusMessage call = QDBusMessage::createMethodCall(kService, kObjectPath, interface, method);
    arguments.append(options);
    call.setArguments(arguments);
    QDBusReply<QDBusObjectPath> handle = m_bus.call(call);
    if (!handle.isValid()) {
        m_bus.disconnect(kService, path, kRequest, QStringLiteral("Response"), this,
                         SLOT(onResponse(uint, QVariantMap)));
        return Status::unavailable(
            text(interface) + "." + text(method) +
            ": the portal refused the call: " + text(handle.error().message()));
    }
    if (handle.value().path() != path) {
        // Portals before 0.9 chose their own path; follow it.
        m_bus.disconnect(kService, path, kRequest, QStringLiteral("Response"), this,
                         SLOT(onResponse(uint, QVariantMap)));
        path = handle.value().path();
        m_bus.connect(kService, path, kRequest, QStringLiteral("Response"), this,
                      SLOT(onResponse(uint, QVariantMap)));
    }
    auto response = waitForResponse(path, method);
    m_bus.disconnect(kService, path, kRequest, QStringLiteral("Response"), this,
                     SLOT(onResponse(uint, QVariantMap)));
    if (!response) return response.status();
    IRIS_RETURN_IF_ERROR(checkResponse(*response, interface + QLatin1Char('.') + method));
    return response;
}

Result<PortalClient::Response> PortalClient::waitForResponse(const QString& requestPath,
                                                             const QString& method) {
    if (!m_response && !m_closedByDesktop) waitForSignal(m_options.responseTimeoutMs);
    if (m_response) return *m_response;
    if (m_closedByDesktop) return sessionUsable(method.toUtf8().constData());
    // Nobody answered: tell the portal to close the dialog.
    m_bus.call(
        QDBusMessage::createMethodCall(kService, requestPath, kRequest, QStringLiteral("Close")));
    return Status::unavailable(text(method) + ": the desktop portal gave no answer within " +
                               std::to_string(m_options.responseTimeoutMs / 1000) +
                               " s (is its consent dialog still open?)");
}

void PortalClient::waitForSignal(int timeoutMs) {
    QEventLoop loop;
    QTimer timeout;
    timeout.setSingleShot(true);
    QObject::connect(&timeout, &QTimer::timeout, &loop, &QEventLoop::quit);
    m_waiting = &loop;
    timeout.start(timeoutMs);
    loop.exec();
    m_waiting = nullptr;
}

Status PortalClient::checkResponse(const Response& response, const QString& method) {
    switch (response.code) {
        case 0:
            return Status::ok();
        case 1:
            return Status::cancelled(
                text(method) +
                ": the user refused to share the screen and input in the desktop's dialog "
                "(response 1); run again and choose Share/Allow to let Iris see and control the "
                "desktop");
        default:
            return Status::unavailable(
                text(method) + ": the desktop portal ended the request with response " +
                std::to_string(response.code) +
                " (an error in the portal or its backend; see `journalctl --user -u "
                "xdg-desktop-portal`)");
    }
}

void PortalClient::onResponse(uint response, const QVariantMap& results) {
    m_response = Response{response, results};
    if (m_waiting != nullptr) m_waiting->quit();
}

void PortalClient::onSessionClosed(const QVariantMap& /*details*/) {
    m_closedByDesktop = true;
    if (m_waiting != nullptr) m_waiting->quit();
}

Status PortalClient::sessionUsable(const char* step) const {
    if (m_closedByDesktop) {
        return Status::unavailable(
            std::string(step) +
            ": the desktop closed the remote desktop session (the user stopped sharing, or the "
            "compositor ended it); start a new session to go on");
    }
    if (m_session.isEmpty()) {
        return Status::internal(std::string(step) + ": the portal session is not started");
    }
    return Status::ok();
}

Status PortalClient::checkSession(const char* step) {
    // Signals arrive as events: deliver a pending Closed before deciding.
    QCoreApplication::sendPostedEvents();
    QEventLoop(nullptr).processEvents(QEventLoop::ExcludeUserInputEvents);
    return sessionUsable(step);
}

Status PortalClient::notify(const char* method, QList<QVariant> arguments) {
    IRIS_RETURN_IF_ERROR(checkSession(method));
    QDBusMessage call = QDBusMessage::createMethodCall(kService, kObjectPath, kRemoteDesktop,
                                                       QString::fromLatin1(method));
    arguments.prepend(QVariantMap());
    arguments.prepend(QVariant::fromValue(QDBusObjectPath(m_session)));
    call.setArguments(arguments);
    QDBusMessage reply = m_bus.call(call);
    if (reply.type() == QDBusMessage::ErrorMessage) {
        IRIS_RETURN_IF_ERROR(checkSession(method));
        return Status::unavailable(std::string("RemoteDesktop.") + method +
                                   ": the portal refused: " + text(reply.errorMessage()));
    }
    return Status::ok();
}

Result<int> PortalClient::openPipeWireRemote() {
    IRIS_RETURN_IF_ERROR(sessionUsable("OpenPipeWireRemote"));
    QDBusMessage call = QDBusMessage::createMethodCall(kService, kObjectPath, kScreenCast,
                                                       QStringLiteral("OpenPipeWireRemote"));
    call.setArguments({QVariant::fromValue(QDBusObjectPath(m_session)), QVariantMap()});
    QDBusReply<QDBusUnixFileDescriptor> reply = m_bus.call(call);
    if (!reply.isValid() || !reply.value().isValid()) {
        return Status::unavailable("ScreenCast.OpenPipeWireRemote: no PipeWire connection: " +
                                   text(reply.error().message()));
    }
    int fd = ::dup(reply.value().fileDescriptor());  // the reply's copy closes with it
    if (fd < 0) return Status::ioError("ScreenCast.OpenPipeWireRemote: dup failed");
    return fd;
}

Status PortalClient::pointerMotionAbsolute(std::uint32_t streamNodeId, double x, double y) {
    return notify("NotifyPointerMotionAbsolute", {streamNodeId, x, y});
}

Status PortalClient::pointerButton(int evdevButton, bool pressed) {
    return notify("NotifyPointerButton", {evdevButton, uint(pressed ? 1 : 0)});
}

Status PortalClient::pointerAxisDiscrete(ScrollAxis axis, int steps) {
    return notify("NotifyPointerAxisDiscrete", {static_cast<uint>(axis), steps});
}

Status PortalClient::keyboardKeysym(std::uint32_t keysym, bool pressed) {
    return notify("NotifyKeyboardKeysym", {static_cast<int>(keysym), uint(pressed ? 1 : 0)});
}

Status PortalClient::offerClipboardText(const std::string& content) {
    IRIS_RETURN_IF_ERROR(checkSession("Clipboard.SetSelection"));
    if (!m_clipboardEnabled) {
        return Status::unsupported(
            "Clipboard.SetSelection: the desktop did not share its clipboard with this session "
            "(xdg-desktop-portal 1.18 with a GNOME 45 or Plasma 6.4 backend, or later, does)");
    }
    QDBusMessage call = QDBusMessage::createMethodCall(kService, kObjectPath, kClipboard,
                                                       QStringLiteral("SetSelection"));
    call.setArguments({QVariant::fromValue(QDBusObjectPath(m_session)),
                       QVariantMap{{QStringLiteral("mime_types"), kTextMimeTypes}}});
    QDBusMessage reply = m_bus.call(call);
    if (reply.type() == QDBusMessage::ErrorMessage) {
        return Status::unavailable("Clipboard.SetSelection: the portal refused: " +
                                   text(reply.errorMessage()));
    }
    m_clipboardText = QByteArray::fromStdString(content);
    m_clipboardServed.reset();
    return Status::ok();
}

Status PortalClient::waitForClipboardRequest() {
    if (!m_clipboardText) return Status::internal("paste: no text was offered");
    if (!m_clipboardServed && !m_closedByDesktop) waitForSignal(m_options.pasteWaitMs);
    const std::optional<bool> served = m_clipboardServed;
    m_clipboardText->fill('\0');  // may be a password: not left in memory longer than needed
    m_clipboardText.reset();
    m_clipboardServed.reset();
    IRIS_RETURN_IF_ERROR(sessionUsable("paste"));
    if (!served) {
        return Status::unavailable(
            "paste: the text was put on the clipboard and the paste key pressed, and no "
            "application asked for it within " +
            std::to_string(m_options.pasteWaitMs) +
            " ms (is a text field focused? terminals paste with ctrl+shift+v)");
    }
    if (!*served) return Status::ioError("paste: the text could not be handed to the desktop");
    return Status::ok();
}

void PortalClient::onSelectionTransfer(const QDBusObjectPath& session, const QString& mimeType,
                                       uint serial) {
    if (session.path() != m_session) return;
    // Only the one request a paste waits for gets the text; anything later (another paste by
    // someone else) is refused.
    const bool serve = m_clipboardText && !m_clipboardServed && kTextMimeTypes.contains(mimeType);
    const bool written = serve && writeClipboardText(session, serial);
    QDBusMessage done = QDBusMessage::createMethodCall(kService, kObjectPath, kClipboard,
                                                       QStringLiteral("SelectionWriteDone"));
    done.setArguments({QVariant::fromValue(session), serial, written});
    m_bus.call(done);
    if (!serve) return;
    m_clipboardServed = written;
    if (m_waiting != nullptr) m_waiting->quit();
}

bool PortalClient::writeClipboardText(const QDBusObjectPath& session, uint serial) {
    QDBusMessage call = QDBusMessage::createMethodCall(kService, kObjectPath, kClipboard,
                                                       QStringLiteral("SelectionWrite"));
    call.setArguments({QVariant::fromValue(session), serial});
    // The reply's descriptor closes with it, at the end of this function: the reader sees the
    // end of the text before SelectionWriteDone.
    QDBusReply<QDBusUnixFileDescriptor> reply = m_bus.call(call);
    if (!reply.isValid() || !reply.value().isValid()) return false;
    const int fd = reply.value().fileDescriptor();
    const QByteArray& data = *m_clipboardText;
    for (qsizetype done = 0; done < data.size();) {
        const ssize_t n = ::write(fd, data.constData() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += n;
    }
    return true;
}

void PortalClient::close() {
    if (m_session.isEmpty()) return;
    if (!m_closedByDesktop && m_bus.isConnected()) {
        m_bus.call(
            QDBusMessage::createMethodCall(kService, m_session, kSession, QStringLiteral("Close")));
    }
    m_bus.disconnect(kService, m_session, kSession, QStringLiteral("Closed"), this,
                     SLOT(onSessionClosed(QVariantMap)));
    if (m_clipboardEnabled) {
        m_bus.disconnect(kService, kObjectPath, kClipboard, QStringLiteral("SelectionTransfer"),
                         this, SLOT(onSelectionTransfer(QDBusObjectPath, QString, uint)));
        m_clipboardEnabled = false;
    }
    m_session.clear();
}

}  // namespace iris::agent
