#pragma once
// The status bar's statement of how a desktop session reaches the desktop Iris runs on: which
// capture and input path it uses (X11; a wlroots compositor's image copies and virtual input; the
// xdg-desktop-portal ScreenCast and RemoteDesktop of GNOME and KDE), and whether a global stop
// key works there, and why not. GlobalStopKey arms that key: an X11 grab, or on Wayland the
// GlobalShortcuts portal, where the desktop offers it (no Wayland client may grab keys itself).
#include <functional>
#include <memory>
#include <string>

#include <QLabel>
#include <QObject>
#include <QString>

#include "app/session/environment_spec.h"

namespace iris::agent {
class GlobalHotkey;
class PortalGlobalShortcut;
}  // namespace iris::agent

namespace iris::app {

struct DesktopStatusFacts {
    // Automatic is read as "no desktop session" (nothing to capture).
    EnvironmentSpec::Protocol path = EnvironmentSpec::Protocol::Automatic;
    enum class StopKey {
        Grabbed,        // an X11 grab; `detail` is the chord
        PortalBound,    // the GlobalShortcuts portal bound it; `detail` is the desktop's trigger
        PortalPending,  // asked the portal, no answer yet; `detail` is the chord asked for
        Unavailable,    // `detail` says why
    };
    StopKey stopKey = StopKey::Unavailable;
    std::string detail;
};

// One line: "Desktop: X11 (capture XGetImage, input XTest) · global stop key Ctrl+Alt+. (an X11
// grab)", "... · no global stop key: <why>; Ctrl+. stops the agent from an Iris window".
QString desktopStatusText(const DesktopStatusFacts& facts);

// Arms the global stop key for this session's desktop and keeps `status` showing the statement.
// `onPressed` runs on the GUI thread at every press.
class GlobalStopKey final : public QObject {
    Q_OBJECT
public:
    GlobalStopKey(QLabel* status, std::function<void()> onPressed, QObject* parent = nullptr);
    ~GlobalStopKey() override;

    // X11 (the Qt platform xcb): grabs the chord on $DISPLAY. Wayland: binds it through the
    // GlobalShortcuts portal on the session bus; the answer updates the status later.
    void arm();
    const DesktopStatusFacts& facts() const { return m_facts; }
    // The chord Iris asks for, as people write it.
    static QString chord();

private:
    void show();
    void armX11();
    void armPortal();

    QLabel* m_status;
    std::function<void()> m_onPressed;
    DesktopStatusFacts m_facts;
    std::unique_ptr<agent::GlobalHotkey> m_x11;
    std::unique_ptr<agent::PortalGlobalShortcut> m_portal;
};

}  // namespace iris::app
