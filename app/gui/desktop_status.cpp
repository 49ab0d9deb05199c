#include "app/gui/desktop_status.h"

#include <cstdlib>

#include <QDBusConnection>
#include <QGuiApplication>
#include <QMetaObject>

#include "agent/env/desktop/global_hotkey.h"
#include "agent/env/portal/portal_global_shortcut.h"

namespace iris::app {
namespace {

using Protocol = EnvironmentSpec::Protocol;
using StopKey = DesktopStatusFacts::StopKey;

// Works on the whole desktop, unlike Ctrl+. which needs an Iris window to have the focus.
constexpr const char* kChord = "Ctrl+Alt+.";
// The same chord in the XDG shortcut syntax the GlobalShortcuts portal takes.
constexpr const char* kPortalTrigger = "CTRL+ALT+period";

QString pathText(Protocol path) {
    switch (path) {
        case Protocol::X11:
            return QStringLiteral("X11 (capture XGetImage, input XTest)");
        case Protocol::Wayland:
            return QStringLiteral(
                "Wayland, wlroots (capture ext-image-copy-capture or wlr-screencopy, input "
                "virtual pointer and keyboard)");
        case Protocol::Portal:
            return QStringLiteral(
                "Wayland through xdg-desktop-portal (capture ScreenCast over PipeWire, input "
                "RemoteDesktop)");
        case Protocol::Automatic:
            break;
    }
    return QStringLiteral("none (no X11 or Wayland session; browser sessions only)");
}

QString stopKeyText(const DesktopStatusFacts& facts) {
    const QString detail = QString::fromStdString(facts.detail);
    switch (facts.stopKey) {
        case StopKey::Grabbed:
            return QStringLiteral("global stop key %1 (an X11 grab)").arg(detail);
        case StopKey::PortalBound:
            return QStringLiteral("global stop key %1 (GlobalShortcuts portal)").arg(detail);
        case StopKey::PortalPending:
            return QStringLiteral(
                       "global stop key %1: waiting for the desktop to confirm it "
                       "(GlobalShortcuts portal)")
                .arg(detail);
        case StopKey::Unavailable:
            break;
    }
    return QStringLiteral("no global stop key: %1; Ctrl+. stops the agent from an Iris window")
        .arg(detail);
}

}  // namespace

QString desktopStatusText(const DesktopStatusFacts& facts) {
    return QStringLiteral("Desktop: ") + pathText(facts.path) + QStringLiteral(" \u00b7 ") +
           stopKeyText(facts);
}

GlobalStopKey::GlobalStopKey(QLabel* status, std::function<void()> onPressed, QObject* parent)
    : QObject(parent), m_status(status), m_onPressed(std::move(onPressed)) {}

GlobalStopKey::~GlobalStopKey() = default;

QString GlobalStopKey::chord() {
    return QString::fromLatin1(kChord);
}

void GlobalStopKey::arm() {
    m_facts.path = sessionDesktopProtocol();
    const bool waylandSession = m_facts.path != Protocol::X11;
    if (QGuiApplication::platformName() == QLatin1String("xcb") && !waylandSession) {
        armX11();
    } else if (waylandSession && std::getenv("WAYLAND_DISPLAY") != nullptr) {
        armPortal();
    } else {
        const bool noDesktop = std::getenv("DISPLAY") == nullptr && !waylandSession;
        m_facts.path = noDesktop ? Protocol::Automatic : m_facts.path;
        m_facts.stopKey = StopKey::Unavailable;
        m_facts.detail = noDesktop ? "no desktop to grab it on"
                                   : "Iris's window is not on this desktop (Qt platform " +
                                         QGuiApplication::platformName().toStdString() + ")";
    }
    show();
}

void GlobalStopKey::armX11() {
    // The hotkey calls back on its own thread: the press is posted to this object's thread.
    const char* display = std::getenv("DISPLAY");
    Result<std::unique_ptr<agent::GlobalHotkey>> hotkey =
        agent::GlobalHotkey::grab(display != nullptr ? display : "", kChord, [this] {
            QMetaObject::invokeMethod(
                this, [this] { m_onPressed(); }, Qt::QueuedConnection);
        });
    if (!hotkey) {
        m_facts.stopKey = StopKey::Unavailable;
        m_facts.detail = hotkey.status().message();
        return;
    }
    m_x11 = std::move(*hotkey);
    m_facts.stopKey = StopKey::Grabbed;
    m_facts.detail = kChord;
}

void GlobalStopKey::armPortal() {
    m_portal = std::make_unique<agent::PortalGlobalShortcut>(
        QDBusConnection::sessionBus(),
        agent::GlobalShortcutRequest{QStringLiteral("stop"), QStringLiteral("Stop the Iris agent"),
                                     QString::fromLatin1(kPortalTrigger)});
    connect(m_portal.get(), &agent::PortalGlobalShortcut::activated, this,
            [this] { m_onPressed(); });
    connect(m_portal.get(), &agent::PortalGlobalShortcut::bound, this, [this](const QString& t) {
        m_facts.stopKey = StopKey::PortalBound;
        m_facts.detail = (t.isEmpty() ? QString::fromLatin1(kChord) : t).toStdString();
        show();
    });
    connect(m_portal.get(), &agent::PortalGlobalShortcut::failed, this, [this](const QString& why) {
        m_facts.stopKey = StopKey::Unavailable;
        m_facts.detail = why.toStdString();
        show();
    });
    if (Status bound = m_portal->bind(); !bound.isOk()) {
        m_facts.stopKey = StopKey::Unavailable;
        m_facts.detail = "Wayland lets no program grab keys, and " + bound.message();
        m_portal.reset();
        return;
    }
    m_facts.stopKey = StopKey::PortalPending;
    m_facts.detail = kChord;
}

void GlobalStopKey::show() {
    if (m_status) m_status->setText(desktopStatusText(m_facts));
}

}  // namespace iris::app
