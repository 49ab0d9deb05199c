#pragma once
// A client of xdg-desktop-portal's RemoteDesktop and ScreenCast interfaces: how Iris gets the
// screen and the input of a GNOME or KDE Wayland session, where no client may read other
// windows or inject input on its own. The user allows it once in the desktop's consent dialog;
// the restore token the portal hands back is kept so that later sessions start without asking.
//
// The handshake (every step is a portal Request answered by a Response signal):
//   RemoteDesktop.CreateSession -> SelectDevices (keyboard|pointer, persist_mode 2, the kept
//   restore_token) -> ScreenCast.SelectSources (monitors) -> RemoteDesktop.Start (the consent
//   dialog; results: devices, streams, restore_token) -> ScreenCast.OpenPipeWireRemote (a fd).
// Persistence is asked for in SelectDevices only: the portal keeps a remote desktop session's
// screen cast sources together with its devices and refuses persist_mode in SelectSources for
// such a session. Before Start, Clipboard.RequestClipboard where the portal has that interface
// (xdg-desktop-portal 1.18; GNOME 45 and Plasma 6.4 backends): GNOME and KDE drop the keysyms
// their keyboard layout lacks, so text beyond it is pasted instead (offerClipboardText).
//
// Blocking: each call waits for its Response in a local event loop of the calling thread, so a
// worker thread without an event loop of its own can drive it. Not thread-safe: create and use
// a client on one thread, since the portal's signals are delivered to the thread it lives on.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <QByteArray>
#include <QDBusConnection>
#include <QDBusObjectPath>
#include <QEventLoop>
#include <QObject>
#include <QString>
#include <QVariantMap>

#include "base/status.h"

namespace iris::agent {

// Where the restore token lives between sessions. The environment layer knows no application
// paths: the app passes a file in its config folder (FileRestoreTokenStore) or its own store.
class RestoreTokenStore {
public:
    virtual ~RestoreTokenStore() = default;
    virtual std::string load() = 0;  // "" when none is kept
    virtual Status save(const std::string& token) = 0;
};

// The token as the only line of a text file; a missing file means no token.
class FileRestoreTokenStore final : public RestoreTokenStore {
public:
    explicit FileRestoreTokenStore(std::filesystem::path path) : m_path(std::move(path)) {}
    std::string load() override;
    Status save(const std::string& token) override;

private:
    std::filesystem::path m_path;
};

// One monitor the user shared: its PipeWire node and where it sits in the compositor's logical
// coordinate space. Pointer positions on it are in its own logical coordinates (0..width).
struct PortalStream {
    std::uint32_t nodeId = 0;
    int x = 0;
    int y = 0;
    int width = 0;
    int height = 0;
};

// evdev button codes (linux/input-event-codes.h), what NotifyPointerButton takes.
inline constexpr int kEvdevButtonLeft = 0x110;
inline constexpr int kEvdevButtonRight = 0x111;
inline constexpr int kEvdevButtonMiddle = 0x112;

enum class ScrollAxis : std::uint32_t { Vertical = 0, Horizontal = 1 };

struct PortalClientOptions {
    // How long a Response may take. Start waits for the user in the consent dialog, so the
    // default is generous.
    int responseTimeoutMs = 5 * 60 * 1000;
    // Asked for in SelectDevices: 1 keyboard, 2 pointer.
    std::uint32_t deviceTypes = 1 | 2;
    // Ask for the clipboard (RequestClipboard) where the portal offers it.
    bool clipboard = true;
    // How long waitForClipboardRequest waits for the focused application to ask for the text.
    int pasteWaitMs = 2000;
};

class PortalClient final : public QObject {
    Q_OBJECT
public:
    // `tokens` may be null (nothing kept: every session asks). It must outlive the client.
    PortalClient(QDBusConnection bus, RestoreTokenStore* tokens, PortalClientOptions options = {});
    ~PortalClient() override;  // closes the session

    // The whole handshake up to Start. Fails with a message that says what is missing (the
    // portal service, its RemoteDesktop interface), that the user refused (Cancelled), or which
    // step the portal failed.
    Status start();

    // Whether the portal keeps the person's consent between sessions (RemoteDesktop version 2,
    // xdg-desktop-portal 1.18 and later: a restore token); with version 1 every start() asks.
    // Known once start() has read the version.
    bool remembersConsent() const;
    std::uint32_t remoteDesktopVersion() const { return m_remoteDesktopVersion; }

    const std::vector<PortalStream>& streams() const { return m_streams; }
    std::uint32_t devices() const { return m_devices; }  // granted device types
    const QString& sessionHandle() const { return m_session; }

    // ScreenCast.OpenPipeWireRemote: a PipeWire connection that sees the shared streams. The
    // caller owns the returned file descriptor.
    Result<int> openPipeWireRemote();

    // Input. Positions are in the stream's logical coordinates.
    Status pointerMotionAbsolute(std::uint32_t streamNodeId, double x, double y);
    Status pointerButton(int evdevButton, bool pressed);
    Status pointerAxisDiscrete(ScrollAxis axis, int steps);
    Status keyboardKeysym(std::uint32_t keysym, bool pressed);

    // Whether Start granted the clipboard (the portal has the Clipboard interface, and its
    // backend enabled it for the session: the result clipboard_enabled).
    bool clipboardEnabled() const { return m_clipboardEnabled; }
    // Pasting, in two steps around the paste key the caller presses: the session takes the
    // clipboard with `content` (UTF-8, as text/plain), then the next request for it, and only
    // that one, is served. Later requests are refused, so that a typed password is not pasted
    // again by anything else; what the clipboard held before is gone.
    Status offerClipboardText(const std::string& content);
    // Waits up to pasteWaitMs for that request: Unavailable when no application asked for the
    // text (no text field has the focus, or it pastes with another key). Forgets the text.
    Status waitForClipboardRequest();

    // Ok while the session runs; after the desktop closed it, an Unavailable error that names
    // `step` and says to start a new session. Delivers a pending Closed signal first.
    Status checkSession(const char* step);

    // Session.Close; idempotent.
    void close();

private Q_SLOTS:
    void onResponse(uint response, const QVariantMap& results);
    void onSessionClosed(const QVariantMap& details);
    void onSelectionTransfer(const QDBusObjectPath& session, const QString& mimeType, uint serial);

private:
    struct Response {
        uint code = 2;
        QVariantMap results;
    };

    Status checkPortal();
    Result<Response> request(const QString& interface, const QString& method,
                             QList<QVariant> arguments, QVariantMap options);
    Result<Response> waitForResponse(const QString& requestPath, const QString& method);
    // Runs a local event loop until a slot quits it (m_waiting: a Response, Closed, the
    // clipboard request) or `timeoutMs` pass.
    void waitForSignal(int timeoutMs);
    Status checkResponse(const Response& response, const QString& method);
    Status readStartResults(const QVariantMap& results);
    void requestClipboard();
    bool writeClipboardText(const QDBusObjectPath& session, uint serial);
    Status notify(const char* method, QList<QVariant> arguments);
    Status sessionUsable(const char* step) const;
    QString nextToken();

    QDBusConnection m_bus;
    RestoreTokenStore* m_tokens;
    PortalClientOptions m_options;
    int m_tokenCounter = 0;
    QString m_session;
    bool m_closedByDesktop = false;
    std::optional<Response> m_response;
    QEventLoop* m_waiting = nullptr;  // waitForSignal's loop, quit by the signals
    std::vector<PortalStream> m_streams;
    std::uint32_t m_devices = 0;
    std::uint32_t m_remoteDesktopVersion = 0;
    bool m_clipboardRequested = false;
    bool m_clipboardEnabled = false;
    // The offered text until its one request is served (or the wait ends); then empty.
    std::optional<QByteArray> m_clipboardText;
    std::optional<bool> m_clipboardServed;  // set by the request: whether the text was written
};

}  // namespace iris::agent
