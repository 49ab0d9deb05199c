#include "agent/env/browser/browser_environment.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <QApplication>
#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFileInfo>
#include <QImage>
#include <QInputMethodEvent>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QKeyEvent>
#include <QLoggingCategory>
#include <QMouseEvent>
#include <QPixmap>
#include <QStyleHints>
#include <QThread>
#include <QTimer>
#include <QUrl>
#include <QWebEngineNewWindowRequest>
#include <QWebEnginePage>
#include <QWebEngineProfile>
#include <QWebEngineScript>
#include <QWebEngineSettings>
#include <QWebEngineView>
#include <QWheelEvent>

namespace iris::agent {
namespace {

// Measured on these machines to give pixel-identical renders of the same page (platform notes),
// plus the throttling switches that keep a page that is never on screen running at full rate.
constexpr std::string_view kDeterministicFlags =
    "--disable-background-networking --font-render-hinting=none --disable-lcd-text "
    "--force-color-profile=srgb --hide-scrollbars --disable-font-subpixel-positioning "
    "--disable-background-timer-throttling --disable-renderer-backgrounding "
    "--disable-backgrounding-occluded-windows --mute-audio";

// After an input action: long enough for the renderer to handle the events and paint, short
// enough that a page that never settles does not stall every action (observe() waits properly).
constexpr int kInputSettleMs = 2000;
constexpr int kPollMs = 4;
constexpr int kWheelNotch = 120;  // Qt's angle delta for one wheel notch (1/8 degree units)
constexpr int kDragSteps = 12;
constexpr int kStableGrabTries = 6;
constexpr double kMaxWaitSeconds = 600;
// QWebEnginePage::setZoomFactor's range: device pixel ratios 0.2 to 4 can be compensated.
constexpr double kMinZoom = 0.25;
constexpr double kMaxZoom = 5.0;

QString toQString(std::string_view text) {
    return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

std::string formatPoint(Point p) {
    return "(" + std::to_string(p.x) + ", " + std::to_string(p.y) + ")";
}

// A JavaScript string literal for `text` (JSON strings are valid JavaScript literals).
QString jsStringLiteral(const QString& text) {
    const QByteArray json = QJsonDocument(QJsonArray{text}).toJson(QJsonDocument::Compact);
    return QString::fromUtf8(json.mid(1, json.size() - 2));
}

// Spins the calling thread's event loop until `done()` holds or `timeoutMs` passes.
bool waitUntil(const std::function<bool()>& done, int timeoutMs) {
    QElapsedTimer clock;
    clock.start();
    while (!done()) {
        if (clock.elapsed() >= timeoutMs) return false;
        QEventLoop loop;
        QTimer::singleShot(kPollMs, &loop, &QEventLoop::quit);
        loop.exec();
    }
    return true;
}

void spinFor(int ms) {
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

// A page that never opens a modal dialog (alert, confirm, prompt, file chooser): in an
// unattended session a nested dialog loop would block the agent forever.
class AgentPage final : public QWebEnginePage {
public:
    explicit AgentPage(QWebEngineProfile* profile) : QWebEnginePage(profile, nullptr) {}

protected:
    void javaScriptAlert(const QUrl&, const QString&) override {}
    bool javaScriptConfirm(const QUrl&, const QString&) override { return false; }
    bool javaScriptPrompt(const QUrl&, const QString&, const QString&, QString*) override {
        return false;
    }
    QStringList chooseFiles(FileSelectionMode, const QStringList&, const QStringList&) override {
        return {};
    }
    void javaScriptConsoleMessage(JavaScriptConsoleMessageLevel, const QString&, int,
                                  const QString&) override {}
};

struct KeySpec {
    int key = 0;
    QString text;                                    // what the key types without modifiers
    Qt::KeyboardModifier modifier = Qt::NoModifier;  // set for modifier keys
};

struct NamedKey {
    std::string_view name;
    int key;
    char16_t text;
    Qt::KeyboardModifier modifier;
};

// pyautogui's key names (KEYBOARD_KEYS) that are not single characters.
constexpr NamedKey kNamedKeys[] = {
    {"enter", Qt::Key_Return, u'\r', Qt::NoModifier},
    {"return", Qt::Key_Return, u'\r', Qt::NoModifier},
    {"tab", Qt::Key_Tab, u'\t', Qt::NoModifier},
    {"esc", Qt::Key_Escape, 0x1b, Qt::NoModifier},
    {"escape", Qt::Key_Escape, 0x1b, Qt::NoModifier},
    {"backspace", Qt::Key_Backspace, u'\b', Qt::NoModifier},
    {"delete", Qt::Key_Delete, 0x7f, Qt::NoModifier},
    {"del", Qt::Key_Delete, 0x7f, Qt::NoModifier},
    {"space", Qt::Key_Space, u' ', Qt::NoModifier},
    {"insert", Qt::Key_Insert, 0, Qt::NoModifier},
    {"up", Qt::Key_Up, 0, Qt::NoModifier},
    {"down", Qt::Key_Down, 0, Qt::NoModifier},
    {"left", Qt::Key_Left, 0, Qt::NoModifier},
    {"right", Qt::Key_Right, 0, Qt::NoModifier},
    {"home", Qt::Key_Home, 0, Qt::NoModifier},
    {"end", Qt::Key_End, 0, Qt::NoModifier},
    {"pageup", Qt::Key_PageUp, 0, Qt::NoModifier},
    {"pgup", Qt::Key_PageUp, 0, Qt::NoModifier},
    {"pagedown", Qt::Key_PageDown, 0, Qt::NoModifier},
    {"pgdn", Qt::Key_PageDown, 0, Qt::NoModifier},
    {"capslock", Qt::Key_CapsLock, 0, Qt::NoModifier},
    {"numlock", Qt::Key_NumLock, 0, Qt::NoModifier},
    {"scrolllock", Qt::Key_ScrollLock, 0, Qt::NoModifier},
    {"printscreen", Qt::Key_Print, 0, Qt::NoModifier},
    {"prtsc", Qt::Key_Print, 0, Qt::NoModifier},
    {"pause", Qt::Key_Pause, 0, Qt::NoModifier},
    {"menu", Qt::Key_Menu, 0, Qt::NoModifier},
    {"apps", Qt::Key_Menu, 0, Qt::NoModifier},
    {"ctrl", Qt::Key_Control, 0, Qt::ControlModifier},
    {"ctrlleft", Qt::Key_Control, 0, Qt::ControlModifier},
    {"ctrlright", Qt::Key_Control, 0, Qt::ControlModifier},
    {"control", Qt::Key_Control, 0, Qt::ControlModifier},
    {"shift", Qt::Key_Shift, 0, Qt::ShiftModifier},
    {"shiftleft", Qt::Key_Shift, 0, Qt::ShiftModifier},
    {"shiftright", Qt::Key_Shift, 0, Qt::ShiftModifier},
    {"alt", Qt::Key_Alt, 0, Qt::AltModifier},
    {"altleft", Qt::Key_Alt, 0, Qt::AltModifier},
    {"altright", Qt::Key_Alt, 0, Qt::AltModifier},
    {"option", Qt::Key_Alt, 0, Qt::AltModifier},
    {"win", Qt::Key_Meta, 0, Qt::MetaModifier},
    {"winleft", Qt::Key_Meta, 0, Qt::MetaModifier},
    {"winright", Qt::Key_Meta, 0, Qt::MetaModifier},
    {"meta", Qt::Key_Meta, 0, Qt::MetaModifier},
    {"cmd", Qt::Key_Meta, 0, Qt::MetaModifier},
    {"command", Qt::Key_Meta, 0, Qt::MetaModifier},
    {"super", Qt::Key_Meta, 0, Qt::MetaModifier},
};

// Qt's key code for a character typed as text: letters are their upper case (Qt::Key_A), ASCII
// and Latin-1 characters their own code, anything else has no key of its own.
int keyForCharacter(char32_t c) {
    if (c >= U'a' && c <= U'z') return Qt::Key_A + static_cast<int>(c - U'a');
    if (c < 0x80) return static_cast<int>(c);
    if (c <= 0xff) {
        const char32_t upper = QChar::toUpper(c);
        return static_cast<int>(upper <= 0xff ? upper : c);
    }
    return Qt::Key_unknown;
}

Result<KeySpec> keyFromName(const std::string& name) {
    const QString qname = toQString(name);
    const QList<uint> chars = qname.toUcs4();
    if (chars.size() == 1) {
        const auto c = static_cast<char32_t>(chars[0]);
        if (c == U'\n' || c == U'\r') return KeySpec{Qt::Key_Return, QStringLiteral("\r")};
        if (c == U'\t') return KeySpec{Qt::Key_Tab, QStringLiteral("\t")};
        if (c >= 0x20 && c != 0x7f) return KeySpec{keyForCharacter(c), qname};
    }
    const std::string lower = qname.toLower().toStdString();
    for (const NamedKey& named : kNamedKeys) {
        if (named.name == lower) {
            return KeySpec{named.key, named.text != 0 ? QString(QChar(named.text)) : QString(),
                           named.modifier};
        }
    }
    if (lower.size() >= 2 && lower.size() <= 3 && lower[0] == 'f') {
        const std::string digits = lower.substr(1);
        if (std::all_of(digits.begin(), digits.end(),
                        [](char d) { return d >= '0' && d <= '9'; })) {
            const int n = std::stoi(digits);
            if (n >= 1 && n <= 24) return KeySpec{Qt::Key_F1 + (n - 1), QString()};
        }
    }
    return Status::invalidArgument("unknown key name \"" + name + "\"");
}

Qt::MouseButton toQtButton(MouseButton button) {
    switch (button) {
        case MouseButton::Left:
            return Qt::LeftButton;
        case MouseButton::Right:
            return Qt::RightButton;
        case MouseButton::Middle:
            return Qt::MiddleButton;
    }
    return Qt::LeftButton;
}

cv::Mat toBgrMat(const QImage& image) {
    const QImage bgr = image.convertToFormat(QImage::Format_BGR888);
    const cv::Mat view(bgr.height(), bgr.width(), CV_8UC3, const_cast<uchar*>(bgr.constBits()),
                       static_cast<std::size_t>(bgr.bytesPerLine()));
    return view.clone();
}

template <class>
inline constexpr bool kAlwaysFalse = false;

}  // namespace

struct BrowserEnvironment::Impl {
    BrowserOptions options;
    QUrl startUrl;
    QString rootDir;  // the start folder when the start page is local: Navigate resolves in it
    std::unique_ptr<QWebEngineView> view;
    std::unique_ptr<QWebEngineProfile> profile;
    std::unique_ptr<QWebEnginePage> page;
    // The view's device pixel ratio that the page's zoom compensates. Chromium folds the device
    // scale into the page zoom, so a view of viewport/ratio logical pixels with the page zoomed
    // to 1/ratio lays out and rasterises one CSS pixel per device pixel: the same pixels as at
    // ratio 1, and the grab needs no scaling. 1 when the ratio is 1 or outside the zoom range
    // (then grabs are scaled to CSS pixels instead).
    double ratio = 1;

    bool loading = false;
    bool lastLoadOk = true;
    quint64 loadsStarted = 0;
    quint64 loadsFinished = 0;
    quint64 settleToken = 0;

    // Input state: what the page has been told about the pointer, buttons and modifiers.
    QPointF pointer;
    Qt::MouseButtons buttons;
    Qt::KeyboardModifiers modifiers;
    // Event timestamps: Qt WebEngine counts clicks from press timestamps, so they must be real
    // and monotonic, and separate clicks are pushed a double-click interval apart.
    QElapsedTimer clock;
    quint64 eventTime = 0;

    Status checkThread() const {
        if (QThread::currentThread() != view->thread()) {
            return Status::internal(
                "BrowserEnvironment used off its Qt thread; wrap it in GuiThreadEnvironment");
        }
        return {};
    }

    // --- device pixels --------------------------------------------------------------------
    // Sizes the view for a CSS viewport of cssWidth x cssHeight at the view's device pixel ratio
    // now (it changes when the GUI moves to another screen). Returns whether anything changed.
    bool fit(int cssWidth, int cssHeight) {
        double r = view->devicePixelRatioF();
        if (!(r > 0) || 1 / r < kMinZoom || 1 / r > kMaxZoom) r = 1;
        // Rounded up: at a ratio that does not divide the viewport the page is a pixel wider or
        // taller, and the grab is cropped.
        const QSize logical(static_cast<int>(std::ceil(cssWidth / r - 1e-9)),
                            static_cast<int>(std::ceil(cssHeight / r - 1e-9)));
        const bool changed =
            r != ratio || view->size() != logical || !qFuzzyCompare(page->zoomFactor(), 1 / r);
        ratio = r;
        view->setFixedSize(logical);
        if (!qFuzzyCompare(page->zoomFactor(), 1 / r)) page->setZoomFactor(1 / r);
        return changed;
    }

    // The page's viewport in CSS pixels as the view is sized now.
    QSize cssViewport() const {
        return {static_cast<int>(std::lround(view->width() * ratio)),
                static_cast<int>(std::lround(view->height() * ratio))};
    }

    // Before an observation or an action: a changed device pixel ratio is compensated and the
    // page relaid out before anything is grabbed or clicked.
    Status refit() {
        if (!fit(options.viewportWidth, options.viewportHeight)) return {};
        return settle(options.settleTimeoutMs);
    }

    // --- pages and loading -------------------------------------------------------------------
    void replacePage() {
        auto newProfile = std::make_unique<QWebEngineProfile>();  // no storage name: off the record
        newProfile->setHttpCacheType(QWebEngineProfile::MemoryHttpCache);
        newProfile->setSpellCheckEnabled(false);
        auto newPage = std::make_unique<AgentPage>(newProfile.get());
        QWebEngineSettings* settings = newPage->settings();
        settings->setAttribute(QWebEngineSettings::ShowScrollBars, false);
        settings->setAttribute(QWebEngineSettings::ScrollAnimatorEnabled, false);
        settings->setAttribute(QWebEngineSettings::FocusOnNavigationEnabled, true);
        settings->setAttribute(QWebEngineSettings::LocalContentCanAccessFileUrls, true);
        QWebEnginePage* raw = newPage.get();
        QObject::connect(raw, &QWebEnginePage::loadStarted, raw, [this] {
            loading = true;
            ++loadsStarted;
        });
        QObject::connect(raw, &QWebEnginePage::loadFinished, raw, [this](bool ok) {
            loading = false;
            lastLoadOk = ok;
            ++loadsFinished;
        });
        // One tab: a link or script that opens a window loads its URL here instead.
        QObject::connect(
            raw, &QWebEnginePage::newWindowRequested, raw,
            [raw](QWebEngineNewWindowRequest& request) { raw->load(request.requestedUrl()); });
        view->setPage(raw);
        // The old page goes before its profile (Chromium requires it).
        page = std::move(newPage);
        profile = std::move(newProfile);
        loading = false;
        lastLoadOk = true;
    }

    Status load(const QUrl& url) {
        const quint64 before = loadsFinished;
        page->load(url);
        if (!waitUntil([&] { return loadsFinished > before && !loading; },
                       options.settleTimeoutMs)) {
            return Status::outOfRange("loading " + url.toString().toStdString() +
                                      " timed out after " +
                                      std::to_string(options.settleTimeoutMs) + " ms");
        }
        if (!lastLoadOk) {
            return Status::ioError("could not load " + url.toString().toStdString());
        }
        return {};
    }

    // --- scripts -----------------------------------------------------------------------------
    Result<QVariant> runScript(const QString& script, quint32 world, int timeoutMs) {
        struct Reply {
            bool done = false;
            QVariant value;
        };
        auto reply = std::make_shared<Reply>();
        page->runJavaScript(script, world, [reply](const QVariant& value) {
            reply->done = true;
            reply->value = value;
        });
        if (!waitUntil([&] { return reply->done; }, timeoutMs)) {
            return Status::outOfRange("the page did not answer a script within " +
                                      std::to_string(timeoutMs) + " ms");
        }
        return reply->value;
    }

    // Waits until the page is loaded, its fonts are ready and two animation frames have run
    // (the second one paints everything that the first one's layout produced). With a zoomed
    // page (ratio != 1) or a resized view, also until the page has the view's CSS viewport: a
    // zoom or resize reaches the renderer asynchronously.
    Status settle(int timeoutMs, bool checkViewport = false) {
        if (ratio != 1) checkViewport = true;
        QElapsedTimer waited;
        waited.start();
        auto remaining = [&] {
            return std::max(1, timeoutMs - static_cast<int>(waited.elapsed()));
        };
        for (;;) {
            if (!waitUntil([&] { return !loading; }, remaining())) {
                return Status::outOfRange("the page was still loading after " +
                                          std::to_string(timeoutMs) + " ms");
            }
            const quint64 startedBefore = loadsStarted;
            const quint64 token = ++settleToken;
            const QString tokenText = QString::number(token);
            const QString arm =
                QStringLiteral(
                    "(() => { const token = %1;"
                    " const done = () => requestAnimationFrame(() => requestAnimationFrame(() =>"
                    " { window.__irisSettled = token; }));"
                    " (document.fonts ? document.fonts.ready : Promise.resolve()).then(done, done);"
                    " return true; })()")
                    .arg(tokenText);
            Result<QVariant> armed =
                runScript(arm, QWebEngineScript::ApplicationWorld, remaining());
            IRIS_RETURN_IF_ERROR(armed.status());
            QString check =
                QStringLiteral("document.readyState === 'complete' && window.__irisSettled === %1")
                    .arg(tokenText);
            if (checkViewport) {
                const QSize css = cssViewport();
                check += QStringLiteral(" && window.innerWidth === %1 && window.innerHeight === %2")
                             .arg(css.width())
                             .arg(css.height());
            }
            bool settled = false;
            for (;;) {
                Result<QVariant> state =
                    runScript(check, QWebEngineScript::ApplicationWorld, remaining());
                IRIS_RETURN_IF_ERROR(state.status());
                if (state->toBool()) {
                    settled = true;
                    break;
                }
                if (loading || loadsStarted != startedBefore) break;  // a navigation began
                if (waited.elapsed() >= timeoutMs) {
                    return Status::outOfRange(
                        "the page did not settle (fonts, two animation "
                        "frames) within " +
                        std::to_string(timeoutMs) + " ms");
                }
                spinFor(kPollMs);
            }
            if (settled && !loading && loadsStarted == startedBefore) return {};
        }
    }

    // --- capture -----------------------------------------------------------------------------
    QImage grabOnce(int width, int height) {
        QImage image = view->grab().toImage();
        image.setDevicePixelRatio(1);  // observation pixels are CSS pixels
        if (image.width() == width && image.height() == height) return image;
        // A compensated ratio that does not divide the viewport: the page is up to a device
        // pixel per unit of ratio larger, the rest is the same layout.
        const int slack = static_cast<int>(std::ceil(ratio));
        if (ratio != 1 && image.width() >= width && image.width() <= width + slack &&
            image.height() >= height && image.height() <= height + slack) {
            return image.copy(0, 0, width, height);
        }
        // An uncompensated ratio (outside the zoom range): scaled, so that the geometry at
        // least is the CSS pixels'.
        return image.scaled(width, height, Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
    }

    // The settled frame: grabs until two in a row agree (the compositor may lag one frame
    // behind the renderer); an animated page gets its latest grab.
    cv::Mat grabStable(int width, int height) {
        QImage previous = grabOnce(width, height);
        for (int i = 0; i < kStableGrabTries; ++i) {
            spinFor(16);
            QImage next = grabOnce(width, height);
            const bool same = next == previous;
            previous = std::move(next);
            if (same) break;
        }
        return toBgrMat(previous);
    }

    // --- input -------------------------------------------------------------------------------
    QWidget* inputTarget() const {
        // The render widget can be replaced (renderer swap on navigation): ask every time.
        QWidget* proxy = view->focusProxy();
        return proxy != nullptr ? proxy : view.get();
    }

    quint64 nextTimestamp(quint64 minimumGap = 1) {
        eventTime = std::max(eventTime + minimumGap, static_cast<quint64>(clock.elapsed()));
        return eventTime;
    }

    Status checkPoint(Point p, std::string_view what) const {
        const int width = options.viewportWidth;
        const int height = options.viewportHeight;
        const bool inside = std::isfinite(p.x) && std::isfinite(p.y) && p.x >= 0 && p.y >= 0 &&
                            p.x < width && p.y < height;
        if (inside) return {};
        return Status::invalidArgument(std::string(what) + " at " + formatPoint(p) +
                                       " is outside the " + std::to_string(width) + "x" +
                                       std::to_string(height) + " viewport");
    }

    // CSS pixels (the page's, the observation's) to the view's logical pixels.
    QPointF toLogical(QPointF css) const { return css / ratio; }

    void sendMouse(QEvent::Type type, QPointF position, Qt::MouseButton button, quint64 timestamp) {
        if (type == QEvent::MouseButtonPress || type == QEvent::MouseButtonDblClick) {
            buttons |= button;
        } else if (type == QEvent::MouseButtonRelease) {
            buttons &= ~Qt::MouseButtons(button);
        }
        pointer = position;
        QWidget* target = inputTarget();
        const QPointF local = target->mapFrom(view.get(), toLogical(position));
        QMouseEvent event(type, local, local, target->mapToGlobal(local), button, buttons,
                          modifiers);
        event.setTimestamp(timestamp);
        QCoreApplication::sendEvent(target, &event);
    }

    void moveTo(QPointF position) {
        sendMouse(QEvent::MouseMove, position, Qt::NoButton, nextTimestamp());
    }

    void click(QPointF position, Qt::MouseButton button, int count) {
        if (position != pointer) moveTo(position);
        const int doubleClickMs = QGuiApplication::styleHints()->mouseDoubleClickInterval();
        // Far enough from any earlier press that this is a new click sequence.
        quint64 t = nextTimestamp(static_cast<quint64>(doubleClickMs) + 1);
        for (int i = 0; i < count; ++i) {
            if (i > 0) t = nextTimestamp(10);
            // Qt's widget sequence: the second press arrives as a double-click event (the
            // render widget turns it back into a press); Chromium counts clicks from the press
            // timestamps.
            sendMouse(i == 1 ? QEvent::MouseButtonDblClick : QEvent::MouseButtonPress, position,
                      button, t);
            sendMouse(QEvent::MouseButtonRelease, position, button, nextTimestamp(10));
        }
    }

    void drag(QPointF from, QPointF to, Qt::MouseButton button) {
        if (from != pointer) moveTo(from);
        sendMouse(QEvent::MouseButtonPress, from, button,
                  nextTimestamp(static_cast<quint64>(
                                    QGuiApplication::styleHints()->mouseDoubleClickInterval()) +
                                1));
        spinFor(16);
        for (int step = 1; step <= kDragSteps; ++step) {
            const double f = static_cast<double>(step) / kDragSteps;
            moveTo(from + (to - from) * f);
            spinFor(16);  // one frame per move, as a hand would: pages sample moves per frame
        }
        sendMouse(QEvent::MouseButtonRelease, to, button, nextTimestamp());
    }

    void scroll(QPointF position, int dx, int dy) {
        if (position != pointer) moveTo(position);
        QWidget* target = inputTarget();
        const QPointF local = target->mapFrom(view.get(), toLogical(position));
        const int notches = std::max(std::abs(dx), std::abs(dy));
        for (int i = 0; i < notches; ++i) {
            // Qt's angle delta is positive when the wheel turns away from the user, which
            // scrolls towards the top: the opposite of Scroll's sign.
            const int stepX = i < std::abs(dx) ? (dx > 0 ? -kWheelNotch : kWheelNotch) : 0;
            const int stepY = i < std::abs(dy) ? (dy > 0 ? -kWheelNotch : kWheelNotch) : 0;
            QWheelEvent event(local, target->mapToGlobal(local), QPoint(), QPoint(stepX, stepY),
                              buttons, modifiers, Qt::NoScrollPhase, false);
            event.setTimestamp(nextTimestamp());
            QCoreApplication::sendEvent(target, &event);
            spinFor(16);
        }
    }

    void sendKey(QEvent::Type type, int key, const QString& text) {
        QKeyEvent event(type, key, modifiers, text);
        event.setTimestamp(nextTimestamp());
        QCoreApplication::sendEvent(inputTarget(), &event);
    }

    // The text a key types with the modifiers now held: none under a shortcut modifier,
    // upper-case letters under Shift.
    QString textUnderModifiers(const KeySpec& spec) const {
        if (modifiers & (Qt::ControlModifier | Qt::AltModifier | Qt::MetaModifier)) return {};
        if ((modifiers & Qt::ShiftModifier) && spec.key >= Qt::Key_A && spec.key <= Qt::Key_Z) {
            return spec.text.toUpper();
        }
        return spec.text;
    }

    void keyDown(const KeySpec& spec) {
        if (spec.modifier != Qt::NoModifier) {
            modifiers |= spec.modifier;
            sendKey(QEvent::KeyPress, spec.key, {});
        } else {
            sendKey(QEvent::KeyPress, spec.key, textUnderModifiers(spec));
        }
    }

    void keyUp(const KeySpec& spec) {
        if (spec.modifier != Qt::NoModifier) {
            modifiers &= ~Qt::KeyboardModifiers(spec.modifier);
            sendKey(QEvent::KeyRelease, spec.key, {});
        } else {
            sendKey(QEvent::KeyRelease, spec.key, textUnderModifiers(spec));
        }
    }

    void typeText(const std::string& text) {
        const QList<uint> codePoints = toQString(text).toUcs4();
        for (const uint c : codePoints) {
            const auto character = static_cast<char32_t>(c);
            KeySpec spec;
            if (character == U'\n' || character == U'\r') {
                spec = {Qt::Key_Return, QStringLiteral("\r")};
            } else if (character == U'\t') {
                spec = {Qt::Key_Tab, QStringLiteral("\t")};
            } else if (character > 0xffff) {
                // Chromium's key events carry one UTF-16 unit: characters outside the Basic
                // Multilingual Plane (emoji) arrive the way an input method commits them.
                QInputMethodEvent commit;
                commit.setCommitString(QString::fromUcs4(&character, 1));
                QCoreApplication::sendEvent(inputTarget(), &commit);
                continue;
            } else {
                spec = {keyForCharacter(character), QString::fromUcs4(&character, 1)};
            }
            // Upper-case letters are typed with Shift held, as a keyboard would.
            const bool shifted =
                character >= U'A' && character <= U'Z' && !(modifiers & Qt::ShiftModifier);
            if (shifted) modifiers |= Qt::ShiftModifier;
            sendKey(QEvent::KeyPress, spec.key, spec.text);
            sendKey(QEvent::KeyRelease, spec.key, spec.text);
            if (shifted) modifiers &= ~Qt::KeyboardModifiers(Qt::ShiftModifier);
        }
    }

    // --- navigation ------------------------------------------------------------------------
    Result<QUrl> resolve(const std::string& target) const {
        const QString text = toQString(target).trimmed();
        if (text.isEmpty()) return Status::invalidArgument("navigate: the URL is empty");
        const QUrl url(text);
        if (url.isValid() && url.scheme().size() > 1) {
            const QString scheme = url.scheme().toLower();
            if (scheme != u"http" && scheme != u"https" && scheme != u"file" &&
                scheme != u"about" && scheme != u"data") {
                return Status::invalidArgument("navigate: scheme \"" + scheme.toStdString() +
                                               "\" is not allowed in " + target);
            }
            return url;
        }
        if (!rootDir.isEmpty()) {
            // A path inside the web project: "/about.html" is the project's, not the disk's.
            QString relative = text;
            while (relative.startsWith(u'/'))
                relative.remove(0, 1);
            return QUrl::fromLocalFile(rootDir + u'/').resolved(QUrl(relative));
        }
        return startUrl.resolved(QUrl(text));
    }

    // --- actions -----------------------------------------------------------------------------
    Status pointOr(const std::optional<Point>& at, std::string_view what, QPointF& out) const {
        if (!at) {
            out = pointer;
            return {};
        }
        IRIS_RETURN_IF_ERROR(checkPoint(*at, what));
        out = QPointF(at->x, at->y);
        return {};
    }

    Status run(const Action& action) {
        return std::visit(
            [&](const auto& a) -> Status {
                using T = std::decay_t<decltype(a)>;
                QPointF p;
                if constexpr (std::is_same_v<T, Click>) {
                    if (a.count < 1 || a.count > 3) {
                        return Status::invalidArgument("click: count " + std::to_string(a.count) +
                                                       " is not 1, 2 or 3");
                    }
                    IRIS_RETURN_IF_ERROR(pointOr(a.at, "click", p));
                    click(p, toQtButton(a.button), a.count);
                } else if constexpr (std::is_same_v<T, MoveTo>) {
                    IRIS_RETURN_IF_ERROR(pointOr(a.to, "move", p));
                    moveTo(p);
                } else if constexpr (std::is_same_v<T, MouseDown>) {
                    sendMouse(QEvent::MouseButtonPress, pointer, toQtButton(a.button),
                              nextTimestamp(static_cast<quint64>(
                                  QGuiApplication::styleHints()->mouseDoubleClickInterval())));
                } else if constexpr (std::is_same_v<T, MouseUp>) {
                    sendMouse(QEvent::MouseButtonRelease, pointer, toQtButton(a.button),
                              nextTimestamp());
                } else if constexpr (std::is_same_v<T, Drag>) {
                    IRIS_RETURN_IF_ERROR(pointOr(a.from, "drag start", p));
                    QPointF to;
                    IRIS_RETURN_IF_ERROR(pointOr(a.to, "drag end", to));
                    drag(p, to, toQtButton(a.button));
                } else if constexpr (std::is_same_v<T, Scroll>) {
                    IRIS_RETURN_IF_ERROR(pointOr(a.at, "scroll", p));
                    scroll(p, a.dx, a.dy);
                } else if constexpr (std::is_same_v<T, TypeText>) {
                    typeText(a.text);
                } else if constexpr (std::is_same_v<T, PressKeys>) {
                    if (a.keys.empty()) return Status::invalidArgument("press keys: no keys");
                    std::vector<KeySpec> specs;
                    for (const std::string& name : a.keys) {
                        Result<KeySpec> spec = keyFromName(name);
                        IRIS_RETURN_IF_ERROR(spec.status());
                        specs.push_back(*spec);
                    }
                    for (const KeySpec& spec : specs)
                        keyDown(spec);
                    for (auto it = specs.rbegin(); it != specs.rend(); ++it)
                        keyUp(*it);
                } else if constexpr (std::is_same_v<T, KeyDown>) {
                    Result<KeySpec> spec = keyFromName(a.key);
                    IRIS_RETURN_IF_ERROR(spec.status());
                    keyDown(*spec);
                } else if constexpr (std::is_same_v<T, KeyUp>) {
                    Result<KeySpec> spec = keyFromName(a.key);
                    IRIS_RETURN_IF_ERROR(spec.status());
                    keyUp(*spec);
                } else if constexpr (std::is_same_v<T, Wait>) {
                    if (!std::isfinite(a.seconds) || a.seconds < 0 || a.seconds > kMaxWaitSeconds) {
                        return Status::invalidArgument("wait: " + std::to_string(a.seconds) +
                                                       " s is not between 0 and 600");
                    }
                    spinFor(static_cast<int>(std::lround(a.seconds * 1000)));
                    return {};
                } else if constexpr (std::is_same_v<T, Navigate>) {
                    Result<QUrl> url = resolve(a.url);
                    IRIS_RETURN_IF_ERROR(url.status());
                    return load(*url);
                } else if constexpr (std::is_same_v<T, Done> || std::is_same_v<T, Fail>) {
                    return {};  // the loop ends the episode; nothing happens on the page
                } else if constexpr (std::is_same_v<T, ReadFile> || std::is_same_v<T, WriteFile> ||
                                     std::is_same_v<T, ReplaceInFile>) {
                    return Status::unsupported(std::string(actionName(action)) +
                                               " is a workspace action, not a browser one");
                } else {
                    static_assert(kAlwaysFalse<T>, "an Action alternative is not handled");
                }
                // Let the renderer handle the events and paint before the next action; a page
                // that does not settle is reported by observe().
                (void)settle(std::min(kInputSettleMs, options.settleTimeoutMs));
                return {};
            },
            action);
    }
};

void BrowserEnvironment::prepareProcess() {
    QByteArray flags = qgetenv("QTWEBENGINE_CHROMIUM_FLAGS");
    if (!flags.contains("--font-render-hinting")) {
        if (!flags.isEmpty()) flags += ' ';
        flags += QByteArray(kDeterministicFlags.data(),
                            static_cast<qsizetype>(kDeterministicFlags.size()));
        qputenv("QTWEBENGINE_CHROMIUM_FLAGS", flags);
    }
    // GPU-less compositing: deterministic, and Qt Quick's OpenGL path crashes under Xvfb.
    if (!qEnvironmentVariableIsSet("QT_QUICK_BACKEND")) qputenv("QT_QUICK_BACKEND", "software");
    QCoreApplication::setAttribute(Qt::AA_ShareOpenGLContexts);
    // Qt WebEngine prints its whole Chromium configuration at start-up; an agent's output should
    // start with what the agent does. QT_LOGGING_RULES still wins for debugging.
    QLoggingCategory::setFilterRules(QStringLiteral("qt.webenginecontext.info=false"));
}

Result<std::unique_ptr<BrowserEnvironment>> BrowserEnvironment::create(BrowserOptions options) {
    if (qobject_cast<QApplication*>(QCoreApplication::instance()) == nullptr) {
        return Status::internal("BrowserEnvironment needs a QApplication");
    }
    if (options.viewportWidth < 1 || options.viewportWidth > kMaxViewportSide ||
        options.viewportHeight < 1 || options.viewportHeight > kMaxViewportSide) {
        return Status::invalidArgument("browser viewport " + std::to_string(options.viewportWidth) +
                                       "x" + std::to_string(options.viewportHeight) +
                                       " is not between 1 and " + std::to_string(kMaxViewportSide) +
                                       " pixels a side");
    }
    if (options.settleTimeoutMs < 1) {
        return Status::invalidArgument("browser settleTimeoutMs " +
                                       std::to_string(options.settleTimeoutMs) +
                                       " must be positive");
    }
    auto impl = std::make_unique<Impl>();
    const QString start = toQString(options.startUrl).trimmed();
    if (start.isEmpty()) return Status::invalidArgument("browser startUrl is empty");
    const QUrl asUrl(start);
    const QString scheme = asUrl.scheme().toLower();
    const bool isWeb = asUrl.isValid() && (scheme == u"http" || scheme == u"https");
    const bool isFileUrl = asUrl.isValid() && scheme == u"file";
    // about:blank: an empty page, where a task without a project starts (OSWorld's Chrome
    // tasks open their pages in config steps).
    if (isWeb || start == u"about:blank") {
        impl->startUrl = asUrl;
    } else if (!isFileUrl && scheme.size() > 1) {
        return Status::invalidArgument("browser startUrl \"" + options.startUrl +
                                       "\" is not an http(s) or file URL, nor a local path");
    } else {
        const QFileInfo info(isFileUrl ? asUrl.toLocalFile() : start);
        if (!info.exists()) return Status::notFound("browser start page " + options.startUrl);
        if (info.isDir()) {
            impl->rootDir = info.absoluteFilePath();
            const QString index = QDir(impl->rootDir).filePath(QStringLiteral("index.html"));
            if (!QFileInfo::exists(index)) {
                return Status::notFound("browser start folder " + options.startUrl +
                                        " has no index.html");
            }
            impl->startUrl = QUrl::fromLocalFile(index);
        } else {
            impl->rootDir = info.absolutePath();
            impl->startUrl = isFileUrl ? asUrl : QUrl::fromLocalFile(info.absoluteFilePath());
        }
    }
    impl->options = std::move(options);
    impl->clock.start();
    impl->eventTime = 0;

    impl->view = std::make_unique<QWebEngineView>();
    // Rendered and grabbed, never on screen; a page that is shown runs its animation frames.
    impl->view->setAttribute(Qt::WA_DontShowOnScreen);
    impl->view->setContextMenuPolicy(Qt::PreventContextMenu);
    impl->replacePage();
    impl->fit(impl->options.viewportWidth, impl->options.viewportHeight);
    impl->view->show();
    return std::unique_ptr<BrowserEnvironment>(new BrowserEnvironment(std::move(impl)));
}

BrowserEnvironment::BrowserEnvironment(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

BrowserEnvironment::~BrowserEnvironment() {
    if (!m_impl) return;
    // The view first (it refers to the page), then the page, then its profile.
    m_impl->view.reset();
    m_impl->page.reset();
    m_impl->profile.reset();
}

Status BrowserEnvironment::reset() {
    IRIS_RETURN_IF_ERROR(m_impl->checkThread());
    Impl& d = *m_impl;
    // Nothing stays pressed into the next episode: the new page never sees the old presses.
    d.buttons = Qt::NoButton;
    d.modifiers = Qt::NoModifier;
    d.pointer = QPointF();
    d.replacePage();
    d.fit(d.options.viewportWidth, d.options.viewportHeight);
    IRIS_RETURN_IF_ERROR(d.load(d.startUrl).withContext("browser reset: "));
    d.view->setFocus();
    return d.settle(d.options.settleTimeoutMs).withContext("browser reset: ");
}

Result<Observation> BrowserEnvironment::observe() {
    IRIS_RETURN_IF_ERROR(m_impl->checkThread());
    Impl& d = *m_impl;
    Observation observation;
    if (d.options.fullPageScreenshots) {
        Result<cv::Mat> full = fullPageScreenshot();
        IRIS_RETURN_IF_ERROR(full.status());
        observation.screenshot = std::move(*full);
    } else {
        IRIS_RETURN_IF_ERROR(d.refit().withContext("browser observe: "));
        IRIS_RETURN_IF_ERROR(d.settle(d.options.settleTimeoutMs).withContext("browser observe: "));
        observation.screenshot = d.grabStable(d.options.viewportWidth, d.options.viewportHeight);
    }
    Result<QVariant> text =
        d.runScript(QStringLiteral("document.body ? document.body.innerText : ''"),
                    QWebEngineScript::ApplicationWorld, d.options.settleTimeoutMs);
    IRIS_RETURN_IF_ERROR(text.status().withContext("browser observe: page text: "));
    QString pageText = text->toString();
    if (static_cast<std::size_t>(pageText.size()) > kMaxTextChars) {
        qsizetype cut = static_cast<qsizetype>(kMaxTextChars);
        if (pageText.at(cut - 1).isHighSurrogate()) --cut;  // never split a character
        pageText.truncate(cut);
    }
    observation.text = pageText.toStdString();
    observation.url = url();
    observation.title = title();
    observation.devicePixelRatio = 1.0;
    observation.capturedAtMs = QDateTime::currentMSecsSinceEpoch();
    return observation;
}

ActionResult BrowserEnvironment::execute(const Action& action) {
    ActionResult result;
    result.status = m_impl->checkThread();
    if (!result.status.isOk()) return result;
    result.status = m_impl->refit();
    if (result.status.isOk()) result.status = m_impl->run(action);
    return result;
}

std::string BrowserEnvironment::describe() const {
    return "browser";
}

Result<cv::Mat> BrowserEnvironment::fullPageScreenshot() {
    IRIS_RETURN_IF_ERROR(m_impl->checkThread());
    Impl& d = *m_impl;
    const int width = d.options.viewportWidth;
    const int height = d.options.viewportHeight;
    IRIS_RETURN_IF_ERROR(d.refit().withContext("full-page screenshot: "));
    IRIS_RETURN_IF_ERROR(d.settle(d.options.settleTimeoutMs).withContext("full-page screenshot: "));
    Result<QVariant> metrics = d.runScript(
        QStringLiteral("[window.scrollX, window.scrollY, Math.max("
                       "document.documentElement ? document.documentElement.scrollHeight : 0,"
                       " document.body ? document.body.scrollHeight : 0)]"),
        QWebEngineScript::ApplicationWorld, d.options.settleTimeoutMs);
    IRIS_RETURN_IF_ERROR(metrics.status().withContext("full-page screenshot: "));
    const QVariantList values = metrics->toList();
    if (values.size() != 3) return Status::internal("full-page screenshot: no page metrics");
    const double scrollX = values[0].toDouble();
    const double scrollY = values[1].toDouble();
    const int documentHeight =
        std::clamp(static_cast<int>(std::lround(values[2].toDouble())), height, kMaxFullPageHeight);
    if (documentHeight == height) return d.grabStable(width, height);

    // At the top before the resize: a view as tall as the document has nothing to scroll, but
    // the renderer clamps the old offset asynchronously and under load paints a frame or two
    // still scrolled, which the stable grab then takes.
    IRIS_RETURN_IF_ERROR(d.runScript(QStringLiteral("window.scrollTo(0, 0); true"),
                                     QWebEngineScript::ApplicationWorld, d.options.settleTimeoutMs)
                             .status()
                             .withContext("full-page screenshot: "));
    d.fit(width, documentHeight);
    Status settled = d.settle(d.options.settleTimeoutMs, true);
    cv::Mat image;
    if (settled.isOk()) image = d.grabStable(width, documentHeight);
    d.fit(width, height);
    Status restored = d.settle(d.options.settleTimeoutMs, true);
    if (restored.isOk()) {
        Result<QVariant> scrolled =
            d.runScript(QStringLiteral("window.scrollTo(%1, %2); true").arg(scrollX).arg(scrollY),
                        QWebEngineScript::ApplicationWorld, d.options.settleTimeoutMs);
        restored = scrolled.status();
    }
    IRIS_RETURN_IF_ERROR(settled.withContext("full-page screenshot: "));
    IRIS_RETURN_IF_ERROR(restored.withContext("full-page screenshot: restoring the viewport: "));
    return image;
}

Result<std::string> BrowserEnvironment::evaluateJavaScript(const std::string& script) {
    IRIS_RETURN_IF_ERROR(m_impl->checkThread());
    Impl& d = *m_impl;
    // Indirect eval runs the script at global scope and yields its completion value; the
    // wrapper turns that and any exception into one JSON reply.
    const QString wrapped =
        QStringLiteral(
            "(() => { try { const value = (0, eval)(%1); const json = JSON.stringify(value);"
            " return JSON.stringify({ok: true, json: json === undefined ? 'null' : json}); }"
            " catch (e) { return JSON.stringify({ok: false, error: String(e)}); } })()")
            .arg(jsStringLiteral(toQString(script)));
    Result<QVariant> reply =
        d.runScript(wrapped, QWebEngineScript::MainWorld, d.options.settleTimeoutMs);
    IRIS_RETURN_IF_ERROR(reply.status().withContext("evaluateJavaScript: "));
    const QJsonObject object = QJsonDocument::fromJson(reply->toString().toUtf8()).object();
    if (object.isEmpty()) {
        return Status::internal("evaluateJavaScript: the page returned no result");
    }
    if (!object.value(QStringLiteral("ok")).toBool()) {
        return Status::invalidArgument(
            "evaluateJavaScript: the script threw " +
            object.value(QStringLiteral("error")).toString().toStdString());
    }
    return object.value(QStringLiteral("json")).toString().toStdString();
}

std::string BrowserEnvironment::url() const {
    return m_impl->page->url().toString().toStdString();
}

std::string BrowserEnvironment::title() const {
    return m_impl->page->title().toStdString();
}

Status BrowserEnvironment::reload() {
    IRIS_RETURN_IF_ERROR(m_impl->checkThread());
    Impl& d = *m_impl;
    const quint64 before = d.loadsFinished;
    d.page->triggerAction(QWebEnginePage::ReloadAndBypassCache);
    if (!waitUntil([&] { return d.loadsFinished > before && !d.loading; },
                   d.options.settleTimeoutMs)) {
        return Status::outOfRange("reload of " + url() + " timed out after " +
                                  std::to_string(d.options.settleTimeoutMs) + " ms");
    }
    if (!d.lastLoadOk) return Status::ioError("could not reload " + url());
    return d.settle(d.options.settleTimeoutMs).withContext("reload: ");
}

QWidget* BrowserEnvironment::view() {
    return m_impl->view.get();
}

}  // namespace iris::agent
