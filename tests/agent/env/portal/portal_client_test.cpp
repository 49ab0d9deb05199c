// PortalClient and PortalInput against fake_portal.cpp on a private session bus (a dbus-daemon
// the suite starts): the handshake, the restore token kept and honoured, the errors, and the
// portal calls the agent's actions become. Skips when dbus-daemon is not installed.
#include "agent/env/portal/portal_client.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <unistd.h>

#include <QCoreApplication>
#include <QDBusConnection>
#include <QDBusConnectionInterface>
#include <QDBusMessage>
#include <QDBusReply>
#include <QProcess>
#include <QProcessEnvironment>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QThread>

#include "agent/env/portal/pipewire_capture.h"
#include "agent/env/portal/portal_environment.h"
#include "agent/env/portal/portal_global_shortcut.h"
#include "agent/env/portal/portal_input.h"
#include "tests/agent/env/portal/private_session_bus.h"

namespace iris::agent {
namespace {

// Starting processes is bounded generously: a loaded CI machine may be slow, and nothing here
// asserts on time.
constexpr int kStartMs = 30000;

class PortalClientTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        s_daemon = new testing::PrivateSessionBus;
        if (!s_daemon->start()) {
            delete s_daemon;
            s_daemon = nullptr;
            return;
        }
        s_address = s_daemon->address();
    }

    static void TearDownTestSuite() {
        delete s_daemon;
        s_daemon = nullptr;
    }

    void SetUp() override {
        if (s_daemon == nullptr) GTEST_SKIP() << "dbus-daemon is not installed";
        m_tokenFile = std::filesystem::path(IRIS_TEST_ARTIFACTS) /
                      ("portal_token_" + std::to_string(::getpid()) + ".txt");
        std::filesystem::remove(m_tokenFile);
        const QString name = QStringLiteral("iris-portal-test-%1").arg(++s_connections);
        m_bus = std::make_unique<QDBusConnection>(QDBusConnection::connectToBus(s_address, name));
        ASSERT_TRUE(m_bus->isConnected()) << qPrintable(m_bus->lastError().message());
    }

    void TearDown() override {
        stopFake();
        if (m_bus) QDBusConnection::disconnectFromBus(m_bus->name());
        std::filesystem::remove(m_tokenFile);
    }

    void startFake() {
        m_fake = std::make_unique<QProcess>();
        QProcessEnvironment environment = m_fakeEnvironment;
        environment.insert(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), s_address);
        m_fake->setProcessEnvironment(environment);
        m_fake->setProcessChannelMode(QProcess::ForwardedChannels);
        m_fake->start(QStringLiteral(IRIS_FAKE_PORTAL), {});
        ASSERT_TRUE(m_fake->waitForStarted(kStartMs));
        // The fake is ready once it owns the portal's name.
        for (int waited = 0; waited < kStartMs; waited += 20) {
            if (m_bus->interface()->isServiceRegistered("org.freedesktop.portal.Desktop")) return;
            ASSERT_EQ(m_fake->state(), QProcess::Running) << "fake_portal exited";
            QThread::msleep(20);
        }
        FAIL() << "fake_portal did not take org.freedesktop.portal.Desktop";
    }

    void stopFake() {
        if (!m_fake) return;
        m_fake->kill();
        m_fake->waitForFinished(kStartMs);
        m_fake.reset();
    }

    QDBusMessage control(const char* member, const QList<QVariant>& arguments = {}) {
        QDBusMessage call = QDBusMessage::createMethodCall("org.freedesktop.portal.Desktop",
                                                           "/org/freedesktop/portal/desktop",
                                                           "org.iris.test.FakePortal", member);
        call.setArguments(arguments);
        return m_bus->call(call);
    }
    uint dialogCount() { return control("DialogCount").arguments().value(0).toUInt(); }
    QVariantMap lastSelectDevices() {
        return qdbus_cast<QVariantMap>(control("LastSelectDevices").arguments().value(0));
    }
    // The input calls the fake received, without the handshake's.
    QStringList inputCalls() {
        QStringList calls = control("Calls").arguments().value(0).toStringList();
        return calls.filter(QRegularExpression("^Notify"));
    }
    // The input calls and the clipboard's, after the handshake.
    QStringList inputAndClipboardCalls() {
        QStringList calls = control("Calls").arguments().value(0).toStringList();
        return calls.filter(QRegularExpression("^(Notify|SetSelection|Pasted|SelectionWriteDone)"));
    }
    std::string tokenFileContent() {
        std::ifstream in(m_tokenFile);
        std::string line;
        std::getline(in, line);
        return line;
    }

    static inline testing::PrivateSessionBus* s_daemon = nullptr;
    static inline QString s_address;
    static inline int s_connections = 0;
    std::unique_ptr<QDBusConnection> m_bus;
    std::unique_ptr<QProcess> m_fake;
    QProcessEnvironment m_fakeEnvironment = QProcessEnvironment::systemEnvironment();
    std::filesystem::path m_tokenFile;
};

TEST_F(PortalClientTest, HandshakeSharesTheMonitorAndKeepsTheToken) {
    startFake();
    FileRestoreTokenStore tokens(m_tokenFile);
    PortalClient client(*m_bus, &tokens);
    Status started = client.start();
    ASSERT_TRUE(started.isOk()) << started.message();

    EXPECT_TRUE(client.remembersConsent());
    ASSERT_EQ(client.streams().size(), 1U);
    EXPECT_EQ(client.streams()[0].nodeId, 42U);
    EXPECT_EQ(client.streams()[0].x, 0);
    EXPECT_EQ(client.streams()[0].y, 0);
    EXPECT_EQ(client.streams()[0].width, 1280);
    EXPECT_EQ(client.streams()[0].height, 800);
    EXPECT_EQ(client.devices(), 3U);
    EXPECT_TRUE(client.sessionHandle().startsWith("/org/freedesktop/portal/desktop/session/"));

    QVariantMap devices = lastSelectDevices();
    EXPECT_EQ(devices.value("types").toUInt(), 3U);         // keyboard | pointer
    EXPECT_EQ(devices.value("persist_mode").toUInt(), 2U);  // until revoked
    EXPECT_FALSE(devices.contains("restore_token"));        // nothing kept yet
    EXPECT_TRUE(control("Calls").arguments().value(0).toStringList().contains(
        "SelectSources types=1"));  // monitors
    EXPECT_EQ(dialogCount(), 1U);
    EXPECT_EQ(tokenFileContent(), "fake-token-1");
    EXPECT_EQ(std::filesystem::status(m_tokenFile).permissions(),
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

    auto fd = client.openPipeWireRemote();
    ASSERT_TRUE(fd.isOk()) << fd.status().message();
    EXPECT_GE(*fd, 0);
    ::close(*fd);
}

TEST_F(PortalClientTest, KeptTokenStartsTheNextSessionWithoutAsking) {
    startFake();
    FileRestoreTokenStore tokens(m_tokenFile);
    {
        PortalClient first(*m_bus, &tokens);
        ASSERT_TRUE(first.start().isOk());
    }
    EXPECT_EQ(dialogCount(), 1U);
    PortalClient second(*m_bus, &tokens);
    Status started = second.start();
    ASSERT_TRUE(started.isOk()) << started.message();
    EXPECT_EQ(lastSelectDevices().value("restore_token").toString(), "fake-token-1");
    EXPECT_EQ(dialogCount(), 1U);                   // no second consent dialog
    EXPECT_EQ(tokenFileContent(), "fake-token-2");  // the portal's new token replaces the old
}

TEST_F(PortalClientTest, TokenThePortalNoLongerHonoursAsksAgainAndIsReplaced) {
    startFake();
    FileRestoreTokenStore tokens(m_tokenFile);
    ASSERT_TRUE(tokens.save("revoked-token").isOk());  // e.g. the user withdrew the permission
    PortalClient client(*m_bus, &tokens);
    Status started = client.start();
    ASSERT_TRUE(started.isOk()) << started.message();
    EXPECT_EQ(lastSelectDevices().value("restore_token").toString(), "revoked-token");
    EXPECT_EQ(dialogCount(), 1U);
    EXPECT_EQ(tokenFileContent(), "fake-token-1");
}

TEST_F(PortalClientTest, RefusedConsentSaysSo) {
    startFake();
    control("SetRefuse", {true});
    FileRestoreTokenStore tokens(m_tokenFile);
    PortalClient client(*m_bus, &tokens);
    Status started = client.start();
    EXPECT_EQ(started.code(), StatusCode::Cancelled);
    EXPECT_NE(started.message().find("RemoteDesktop.Start"), std::string::npos);
    EXPECT_NE(started.message().find("refused"), std::string::npos) << started.message();
    EXPECT_EQ(dialogCount(), 1U);
    EXPECT_EQ(tokenFileContent(), "");  // nothing kept
}

TEST_F(PortalClientTest, MissingPortalServiceSaysWhatToInstall) {
    PortalClient client(*m_bus, nullptr);  // no fake on this bus
    Status started = client.start();
    EXPECT_EQ(started.code(), StatusCode::Unavailable);
    EXPECT_NE(started.message().find("xdg-desktop-portal is not running"), std::string::npos)
        << started.message();
    EXPECT_NE(started.message().find("xdg-desktop-portal-gnome"), std::string::npos);
}

TEST_F(PortalClientTest, MissingRemoteDesktopSaysSo) {
    startFake();
    control("SetRemoteDesktopVersion", {0U});
    PortalClient client(*m_bus, nullptr);
    Status started = client.start();
    EXPECT_EQ(started.code(), StatusCode::Unsupported);
    EXPECT_NE(started.message().find("has no RemoteDesktop interface"), std::string::npos)
        << started.message();
    EXPECT_EQ(dialogCount(), 0U);  // it stopped before asking the user
}

// xdg-desktop-portal 1.16 (Debian 12's, with GNOME 43) has RemoteDesktop version 1: no restore
// tokens, so the session starts without them and the person is asked every time.
TEST_F(PortalClientTest, VersionOneSharesWithoutRestoreTokensAndAsksEachTime) {
    startFake();
    control("SetRemoteDesktopVersion", {1U});
    FileRestoreTokenStore tokens(m_tokenFile);
    ASSERT_TRUE(tokens.save("kept-from-a-newer-portal").isOk());
    for (int session = 1; session <= 2; ++session) {
        PortalClient client(*m_bus, &tokens);
        Status started = client.start();
        ASSERT_TRUE(started.isOk()) << started.message();
        EXPECT_FALSE(client.remembersConsent());
        EXPECT_EQ(client.remoteDesktopVersion(), 1U);
        QVariantMap devices = lastSelectDevices();
        EXPECT_EQ(devices.value("types").toUInt(), 3U);
        EXPECT_FALSE(devices.contains("persist_mode"));
        EXPECT_FALSE(devices.contains("restore_token"));
        EXPECT_EQ(dialogCount(), uint(session));
    }
    EXPECT_EQ(tokenFileContent(), "kept-from-a-newer-portal");  // left for a later portal
}

// Runs the event loop (the shortcut's handshake is asynchronous) until `done` or kStartMs.
bool spinUntil(const std::function<bool()>& done) {
    for (int waited = 0; waited < kStartMs && !done(); waited += 10) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
        QThread::msleep(10);
    }
    return done();
}

const GlobalShortcutRequest kStopShortcut{QStringLiteral("stop"),
                                          QStringLiteral("Stop the Iris agent"),
                                          QStringLiteral("CTRL+ALT+period")};

TEST_F(PortalClientTest, GlobalShortcutIsBoundAndSignalsOnlyItsOwnPresses) {
    startFake();
    PortalGlobalShortcut shortcut(*m_bus, kStopShortcut);
    int presses = 0;
    QObject::connect(&shortcut, &PortalGlobalShortcut::activated, [&] { ++presses; });
    ASSERT_TRUE(shortcut.bind().isOk());
    ASSERT_TRUE(
        spinUntil([&] { return shortcut.state() != PortalGlobalShortcut::State::Binding; }));
    ASSERT_EQ(shortcut.state(), PortalGlobalShortcut::State::Bound)
        << qPrintable(shortcut.failure());
    EXPECT_EQ(shortcut.trigger(), QStringLiteral("CTRL+ALT+period"));
    EXPECT_EQ(control("LastBoundShortcuts").arguments().value(0).toString(),
              QStringLiteral("stop: Stop the Iris agent (CTRL+ALT+period)"));
    control("ActivateShortcut", {QStringLiteral("another")});  // some other client's
    control("ActivateShortcut", {QStringLiteral("stop")});
    ASSERT_TRUE(spinUntil([&] { return presses > 0; }));
    control("ActivateShortcut", {QStringLiteral("stop")});
    ASSERT_TRUE(spinUntil([&] { return presses > 1; }));
    EXPECT_EQ(presses, 2);
}

TEST_F(PortalClientTest, GlobalShortcutsMissingOrDeclinedSaySo) {
    {
        PortalGlobalShortcut shortcut(*m_bus, kStopShortcut);  // no fake on this bus
        EXPECT_EQ(shortcut.bind().code(), StatusCode::Unavailable);
    }
    startFake();
    control("SetGlobalShortcutsVersion", {0U});
    {
        PortalGlobalShortcut shortcut(*m_bus, kStopShortcut);
        Status bound = shortcut.bind();
        EXPECT_EQ(bound.code(), StatusCode::Unsupported);
        EXPECT_NE(bound.message().find("has no GlobalShortcuts interface"), std::string::npos)
            << bound.message();
    }
    control("SetGlobalShortcutsVersion", {1U});
    control("SetRefuseShortcuts", {true});
    PortalGlobalShortcut shortcut(*m_bus, kStopShortcut);
    ASSERT_TRUE(shortcut.bind().isOk());
    ASSERT_TRUE(
        spinUntil([&] { return shortcut.state() != PortalGlobalShortcut::State::Binding; }));
    EXPECT_EQ(shortcut.state(), PortalGlobalShortcut::State::Failed);
    EXPECT_TRUE(shortcut.failure().contains(QStringLiteral("declined")))
        << qPrintable(shortcut.failure());
}

TEST_F(PortalClientTest, SessionClosedByTheDesktopFailsTheNextStep) {
    startFake();
    PortalClient client(*m_bus, nullptr);
    ASSERT_TRUE(client.start().isOk());
    ASSERT_TRUE(client.pointerButton(kEvdevButtonLeft, true).isOk());
    control("CloseSession");
    Status status = client.pointerButton(kEvdevButtonLeft, false);
    EXPECT_EQ(status.code(), StatusCode::Unavailable);
    EXPECT_NE(status.message().find("NotifyPointerButton: the desktop closed the remote desktop "
                                    "session"),
              std::string::npos)
        << status.message();
    EXPECT_EQ(inputCalls(), QStringList{"NotifyPointerButton 272 1"});
    EXPECT_EQ(client.openPipeWireRemote().status().code(), StatusCode::Unavailable);
}

QString motion(double x, double y) {
    return QStringLiteral("NotifyPointerMotionAbsolute 42 %1 %2").arg(x).arg(y);
}
QString button(int code, int state) {
    return QStringLiteral("NotifyPointerButton %1 %2").arg(code).arg(state);
}
QString keysym(uint sym, int state) {
    return QStringLiteral("NotifyKeyboardKeysym %1 %2").arg(sym).arg(state);
}
QStringList typed(std::initializer_list<uint> syms) {
    QStringList calls;
    for (uint sym : syms)
        calls << keysym(sym, 1) << keysym(sym, 0);
    return calls;
}

class PortalInputTest : public PortalClientTest {
protected:
    // Whether the fake portal has the Clipboard interface (xdg-desktop-portal 1.18 and later).
    virtual bool clipboardShared() const { return true; }

    void SetUp() override {
        PortalClientTest::SetUp();
        if (IsSkipped()) return;
        startFake();
        if (!clipboardShared()) control("SetClipboardVersion", {0U});
        m_client = std::make_unique<PortalClient>(*m_bus, nullptr);
        ASSERT_TRUE(m_client->start().isOk());
    }
    void TearDown() override {
        m_client.reset();
        PortalClientTest::TearDown();
    }
    void run(PortalInput& input, const Action& action) {
        Status status = input.execute(action);
        ASSERT_TRUE(status.isOk()) << describe(action) << ": " << status.message();
    }
    std::unique_ptr<PortalClient> m_client;
};

TEST_F(PortalInputTest, ClicksDragsAndScrollsBecomePointerCalls) {
    PortalInput input(*m_client, m_client->streams()[0]);
    run(input, Click{Point{100, 200}, MouseButton::Left, 2});
    run(input, Click{Point{12.5, 7}, MouseButton::Right, 1});
    run(input, Click{std::nullopt, MouseButton::Middle, 1});
    run(input, Drag{Point{10, 20}, Point{90, 100}, MouseButton::Left});
    run(input, Scroll{Point{5, 6}, -2, 3});
    QStringList expected{motion(100, 200), button(0x110, 1), button(0x110, 0), button(0x110, 1),
                         button(0x110, 0), motion(12.5, 7),  button(0x111, 1), button(0x111, 0),
                         button(0x112, 1), button(0x112, 0), motion(10, 20),   button(0x110, 1)};
    for (int k = 1; k <= 8; ++k)
        expected << motion(10 + 10 * k, 20 + 10 * k);
    expected << button(0x110, 0) << motion(5, 6) << "NotifyPointerAxisDiscrete 0 3"
             << "NotifyPointerAxisDiscrete 1 -2";
    EXPECT_EQ(inputCalls(), expected);
}

TEST_F(PortalInputTest, ObservationPixelsAreScaledToTheStreamAndChecked) {
    PortalInput input(*m_client, m_client->streams()[0], 2.0);  // a scale-2 observation
    run(input, MoveTo{Point{200, 101}});
    Status outside = input.execute(Click{Point{2560, 10}, MouseButton::Left, 1});
    EXPECT_EQ(outside.code(), StatusCode::OutOfRange);
    EXPECT_EQ(inputCalls(), QStringList{motion(100, 50.5)});  // nothing for the refused click
}

// A portal before 1.18 (Debian 12's 1.16): no clipboard, every character a keysym.
class PortalInputWithoutClipboardTest : public PortalInputTest {
protected:
    bool clipboardShared() const override { return false; }
};

TEST_F(PortalInputWithoutClipboardTest, TypingSendsKeysymsForAnyCharacter) {
    EXPECT_FALSE(m_client->clipboardEnabled());
    PortalInput input(*m_client, m_client->streams()[0]);
    run(input, TypeText{"Hi 1\n"});
    // H i space 1 Return: Latin-1 keysyms equal the code point; newline is Return (0xff0d).
    QStringList expected = typed({0x48, 0x69, 0x20, 0x31, 0xff0d});
    EXPECT_EQ(inputCalls(), expected);

    run(input, TypeText{"\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82"});  // Привет
    expected << typed({0x0100041f, 0x01000440, 0x01000438, 0x01000432, 0x01000435, 0x01000442});
    run(input, TypeText{"\xf0\x9f\x98\x80"});  // U+1F600, an emoji beyond the BMP
    expected << typed({0x0101f600});
    run(input, TypeText{"\xc3\xa9"});  // é, Latin-1: its own code as keysym
    expected << typed({0xe9});
    EXPECT_EQ(inputCalls(), expected);
}

TEST_F(PortalInputTest, TextBeyondAsciiIsPastedOnceAndNewlinesStayKeys) {
    ASSERT_TRUE(m_client->clipboardEnabled());
    PortalInput input(*m_client, m_client->streams()[0]);
    run(input, TypeText{"Hi\t1\n"});  // printable ASCII: keysyms, as without the clipboard
    QStringList expected = typed({0x48, 0x69, 0xff09, 0x31, 0xff0d});
    EXPECT_EQ(inputAndClipboardCalls(), expected);

    // "Grüße, Привет 😀", Return, "ok": the line pasted whole, Return and "ok" typed.
    const std::string line =
        "Gr\xc3\xbc\xc3\x9f"
        "e, \xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xf0\x9f\x98\x80";
    run(input, TypeText{line + "\nok"});
    expected << "SetSelection text/plain;charset=utf-8,text/plain,UTF8_STRING" << keysym(0xffe3, 1)
             << keysym('v', 1) << "Pasted " + QString::fromStdString(line) << keysym('v', 0)
             << keysym(0xffe3, 0) << typed({0xff0d, 'o', 'k'});
    QStringList calls = inputAndClipboardCalls();
    // The paste is served while the keys go up: where between them depends on timing.
    const auto pasted = calls.indexOf("Pasted " + QString::fromStdString(line));
    ASSERT_GE(pasted, 0) << qPrintable(calls.join('\n'));
    calls.move(pasted,
               static_cast<int>(expected.indexOf("Pasted " + QString::fromStdString(line))));
    EXPECT_EQ(calls, expected);

    // Another application pasting later gets nothing: the text may have been a password.
    control("RequestPaste");
    for (int waited = 0;
         waited < kStartMs && !inputAndClipboardCalls().contains("SelectionWriteDone 2 false");
         waited += 20) {
        ASSERT_TRUE(m_client->checkSession("test").isOk());  // delivers the portal's signal
        QThread::msleep(20);
    }
    EXPECT_TRUE(inputAndClipboardCalls().contains("SelectionWriteDone 2 false"));
}

TEST_F(PortalInputTest, PasteThatNoApplicationTakesSaysSo) {
    control("SetPasteTarget", {false});
    PortalInput input(*m_client, m_client->streams()[0]);
    Status status = input.execute(TypeText{"caf\xc3\xa9"});
    EXPECT_EQ(status.code(), StatusCode::Unavailable);
    EXPECT_NE(status.message().find("no application asked for it"), std::string::npos)
        << status.message();
    // The keys still went up.
    EXPECT_EQ(inputCalls().back(), keysym(0xffe3, 0));
}

TEST_F(PortalInputTest, ChordsPressInOrderAndReleaseInReverse) {
    PortalInput input(*m_client, m_client->streams()[0]);
    run(input, PressKeys{{"ctrl", "a"}});
    run(input, KeyDown{"shift"});
    run(input, KeyUp{"shift"});
    // Control_L 0xffe3, a 0x61, Shift_L 0xffe1.
    EXPECT_EQ(inputCalls(), (QStringList{keysym(0xffe3, 1), keysym(0x61, 1), keysym(0x61, 0),
                                         keysym(0xffe3, 0), keysym(0xffe1, 1), keysym(0xffe1, 0)}));
    Status unknown = input.execute(PressKeys{{"ctrl", "nokey"}});
    EXPECT_EQ(unknown.code(), StatusCode::InvalidArgument);
    EXPECT_EQ(inputCalls().size(), 6);  // nothing pressed for a chord with an unknown key
}

// A private PipeWire daemon (its own XDG_RUNTIME_DIR, no session bus, no session manager), a
// test producer with known pixels in it, and the fake portal handing out a connection to it.
class PortalFramesTest : public PortalClientTest {
protected:
    void SetUp() override {
        PortalClientTest::SetUp();
        if (IsSkipped()) return;
        if (QStandardPaths::findExecutable("pipewire").isEmpty()) {
            GTEST_SKIP() << "the pipewire daemon is not installed";
        }
        ASSERT_TRUE(m_runtime.isValid());
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert("XDG_RUNTIME_DIR", m_runtime.path());
        environment.remove("DBUS_SESSION_BUS_ADDRESS");
        m_pipewire.setProcessEnvironment(environment);
        m_pipewire.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        m_pipewire.start("pipewire", {});
        ASSERT_TRUE(m_pipewire.waitForStarted(kStartMs));
        const QString socket = m_runtime.filePath("pipewire-0");
        for (int waited = 0; waited < kStartMs && !QFile::exists(socket); waited += 20) {
            ASSERT_EQ(m_pipewire.state(), QProcess::Running) << "pipewire exited";
            QThread::msleep(20);
        }
        ASSERT_TRUE(QFile::exists(socket)) << "pipewire made no socket";
        m_producer.setProcessEnvironment(environment);
        m_secondProducer.setProcessEnvironment(environment);
        m_fakeEnvironment.insert("IRIS_FAKE_PIPEWIRE_SOCKET", socket);
    }

    void TearDown() override {
        for (QProcess* process : {&m_producer, &m_secondProducer, &m_pipewire}) {
            process->kill();
            process->waitForFinished(kStartMs);
        }
        PortalClientTest::TearDown();
    }

    // Starts a producer (the first, or `second`; `silent`: one that sends no frame) and returns
    // its node id.
    uint startProducer(const char* format, int width, int height, bool second = false,
                       bool silent = false) {
        QProcess& producer = second ? m_secondProducer : m_producer;
        QStringList arguments = {format, QString::number(width), QString::number(height)};
        if (silent) arguments << "silent";
        producer.start(IRIS_TEST_SCREEN_PRODUCER, arguments);
        if (!producer.waitForStarted(kStartMs)) return 0;
        while (!producer.canReadLine() && producer.waitForReadyRead(kStartMs)) {
        }
        return producer.readLine().trimmed().toUInt();
    }

    void expectProducerPixels(const char* format) {
        const int width = 64;
        const int height = 48;
        const uint node = startProducer(format, width, height);
        ASSERT_NE(node, 0U) << "the producer printed no node id";
        startFake();
        control("SetStreamNode", {node, width, height});
        PortalClient client(*m_bus, nullptr);
        Status started = client.start();
        ASSERT_TRUE(started.isOk()) << started.message();
        ASSERT_EQ(client.streams()[0].nodeId, node);
        auto fd = client.openPipeWireRemote();
        ASSERT_TRUE(fd.isOk()) << fd.status().message();
        auto capture = PipeWireCapture::connect(*fd, node);
        ASSERT_TRUE(capture.isOk()) << capture.status().message();
        auto frame = (*capture)->nextFrame(kStartMs);
        ASSERT_TRUE(frame.isOk()) << frame.status().message();
        ASSERT_EQ(frame->cols, width);
        ASSERT_EQ(frame->rows, height);
        ASSERT_EQ(frame->type(), CV_8UC3);
        int wrong = 0;
        for (int y = 0; y < height; ++y) {
            for (int x = 0; x < width; ++x) {
                const auto& bgr = frame->at<cv::Vec3b>(y, x);
                // The producer's pattern: red x*4, green y*5, blue 200.
                if (bgr != cv::Vec3b(200, static_cast<uchar>((y * 5) & 255),
                                     static_cast<uchar>((x * 4) & 255))) {
                    ++wrong;
                }
            }
        }
        const cv::Vec3b sample = frame->at<cv::Vec3b>(7, 10);
        EXPECT_EQ(wrong, 0) << "pixel (10, 7) is BGR " << int(sample[0]) << " " << int(sample[1])
                            << " " << int(sample[2]) << ", expected 200 35 40";
    }

    QTemporaryDir m_runtime;
    QProcess m_pipewire;
    QProcess m_producer;
    QProcess m_secondProducer;
};

// The producers' pattern at frame pixel (x, y), BGR: red x*4, green y*5, blue 200.
cv::Vec3b producerPixel(int x, int y) {
    return {200, static_cast<uchar>((y * 5) & 255), static_cast<uchar>((x * 4) & 255)};
}

// Pixels of `frame` that differ from the producers' pattern.
int patternMismatches(const cv::Mat& frame) {
    int wrong = 0;
    for (int y = 0; y < frame.rows; ++y) {
        for (int x = 0; x < frame.cols; ++x)
            wrong += frame.at<cv::Vec3b>(y, x) != producerPixel(x, y) ? 1 : 0;
    }
    return wrong;
}

// A HiDPI monitor: 32x24 logical pixels shown in a 64x48 frame (scale 2).
TEST_F(PortalFramesTest, EnvironmentObservesTheScreenAndClicksWhereTheModelPointed) {
    const uint node = startProducer("BGRx", 64, 48);
    ASSERT_NE(node, 0U) << "the producer printed no node id";
    startFake();
    control("SetStreamNode", {node, 32, 24});
    FileRestoreTokenStore tokens(m_tokenFile);
    auto env = PortalEnvironment::open(*m_bus, &tokens);
    ASSERT_TRUE(env.isOk()) << env.status().message();
    EXPECT_EQ((*env)->describe(), "desktop:portal");

    auto observation = (*env)->observe();
    ASSERT_TRUE(observation.isOk()) << observation.status().message();
    ASSERT_EQ(observation->screenshot.cols, 64);
    ASSERT_EQ(observation->screenshot.rows, 48);
    EXPECT_EQ(observation->devicePixelRatio, 1.0);
    const cv::Vec3b pixel = observation->screenshot.at<cv::Vec3b>(7, 10);
    EXPECT_EQ(pixel, cv::Vec3b(200, 35, 40));  // blue 200, green 7*5, red 10*4

    ActionResult clicked = (*env)->execute(Click{Point{20, 30}, MouseButton::Left, 1});
    ASSERT_TRUE(clicked.status.isOk()) << clicked.status.message();
    EXPECT_EQ(inputCalls(),
              (QStringList{QStringLiteral("NotifyPointerMotionAbsolute %1 10 15").arg(node),
                           button(0x110, 1), button(0x110, 0)}));
    EXPECT_TRUE((*env)->observe().isOk());  // no new frame needed: the newest one is current
    EXPECT_TRUE((*env)->execute(Wait{0}).status.isOk());
    EXPECT_TRUE((*env)->execute(Done{"ok"}).status.isOk());
    EXPECT_EQ((*env)->execute(Navigate{"https://example.org"}).status.code(),
              StatusCode::Unsupported);
    EXPECT_EQ(inputCalls().size(), 3);  // none of them touched the portal
    EXPECT_EQ(tokenFileContent(), "fake-token-1");

    control("CloseSession");  // the user pressed "Stop sharing"
    auto closed = (*env)->observe();
    EXPECT_EQ(closed.status().code(), StatusCode::Unavailable);
    EXPECT_NE(closed.status().message().find("observe: the desktop closed"), std::string::npos)
        << closed.status().message();
}

// Two shared monitors, listed right one first: `monitor` counts from the left, the observation's
// origin is the chosen monitor's position in device pixels, and input goes to its stream.
TEST_F(PortalFramesTest, ChosenMonitorOfSeveralIsObservedAndClicked) {
    const uint node = startProducer("BGRx", 64, 48);
    ASSERT_NE(node, 0U) << "the producer printed no node id";
    startFake();
    control("SetStreamNode", {node, 32, 24});    // listed first, at logical (0, 0)
    control("AddStream", {7U, -40, 0, 40, 24});  // listed second, left of it; never connected
    PortalEnvironmentOptions options;
    options.monitor = 1;
    auto env = PortalEnvironment::open(*m_bus, nullptr, options);
    ASSERT_TRUE(env.isOk()) << env.status().message();
    EXPECT_EQ((*env)->describe(), "desktop:portal@1");
    auto observation = (*env)->observe();
    ASSERT_TRUE(observation.isOk()) << observation.status().message();
    EXPECT_EQ(observation->screenshot.cols, 64);
    EXPECT_EQ(observation->screenshot.at<cv::Vec3b>(7, 10), cv::Vec3b(200, 35, 40));
    EXPECT_EQ(observation->origin.x, 0.0);  // the producer's monitor is at logical (0, 0)
    ActionResult clicked = (*env)->execute(Click{Point{20, 30}, MouseButton::Left, 1});
    ASSERT_TRUE(clicked.status.isOk()) << clicked.status.message();
    EXPECT_EQ(inputCalls().value(0),
              QStringLiteral("NotifyPointerMotionAbsolute %1 10 15").arg(node));
}

// Two shared monitors and none chosen: one picture of both at the denser one's scale, and
// each point goes to the stream of the monitor under it.
TEST_F(PortalFramesTest, EverySharedMonitorIsInOnePictureAndClicksGoToTheOneUnderThem) {
    const uint hidpi = startProducer("BGRx", 64, 48);  // 32x24 logical at (0, 0): scale 2
    ASSERT_NE(hidpi, 0U) << "the first producer printed no node id";
    const uint plain = startProducer("RGBA", 40, 24, true);  // 40x24 logical at (32, 8): scale 1
    ASSERT_NE(plain, 0U) << "the second producer printed no node id";
    startFake();
    control("SetStreamNode", {hidpi, 32, 24});
    control("AddStream", {plain, 32, 8, 40, 24});
    auto env = PortalEnvironment::open(*m_bus, nullptr);
    ASSERT_TRUE(env.isOk()) << env.status().message();
    EXPECT_EQ((*env)->monitorsShown(), 2u);
    EXPECT_EQ((*env)->describe(), "desktop:portal, 2 monitors");

    // The box of both is 72x32 logical pixels, drawn at 2 pixels each.
    auto observation = (*env)->observe();
    ASSERT_TRUE(observation.isOk()) << observation.status().message();
    const cv::Mat& desktop = observation->screenshot;
    ASSERT_EQ(desktop.cols, 144);
    ASSERT_EQ(desktop.rows, 64);
    EXPECT_EQ(observation->origin, (Point{0, 0}));
    EXPECT_EQ(patternMismatches(desktop(cv::Rect(0, 0, 64, 48)).clone()), 0);
    const cv::Mat enlarged = desktop(cv::Rect(64, 16, 80, 48));
    int wrong = 0;
    for (int y = 0; y < enlarged.rows; ++y) {
        for (int x = 0; x < enlarged.cols; ++x)
            wrong += enlarged.at<cv::Vec3b>(y, x) != producerPixel(x / 2, y / 2) ? 1 : 0;
    }
    EXPECT_EQ(wrong, 0) << "the scale-1 monitor is not its frame with each pixel doubled";
    EXPECT_EQ(cv::countNonZero(desktop(cv::Rect(0, 48, 64, 16)).clone().reshape(1)), 0);
    EXPECT_EQ(cv::countNonZero(desktop(cv::Rect(64, 0, 80, 16)).clone().reshape(1)), 0);

    ASSERT_TRUE((*env)->execute(MoveTo{Point{20, 30}}).status.isOk());
    ASSERT_TRUE((*env)->execute(MoveTo{Point{64 + 21, 16 + 11}}).status.isOk());
    ActionResult between = (*env)->execute(Click{Point{100, 4}, MouseButton::Left, 1});
    EXPECT_EQ(between.status.code(), StatusCode::OutOfRange);
    EXPECT_NE(between.status.message().find("on none of the 2 shared monitors"), std::string::npos)
        << between.status.message();
    EXPECT_EQ(inputCalls(),
              (QStringList{QStringLiteral("NotifyPointerMotionAbsolute %1 10 15").arg(hidpi),
                           QStringLiteral("NotifyPointerMotionAbsolute %1 10.5 5.5").arg(plain)}));
}

TEST_F(PortalClientTest, MonitorBeyondTheSharedOnesSaysHowManyWereShared) {
    startFake();
    control("AddStream", {43U, 1280, 0, 1280, 800});
    PortalEnvironmentOptions options;
    options.monitor = 2;
    auto env = PortalEnvironment::open(*m_bus, nullptr, options);
    ASSERT_FALSE(env.isOk());
    EXPECT_EQ(env.status().code(), StatusCode::OutOfRange);
    EXPECT_NE(env.status().message().find("monitor 2 was asked for, and the person shared 2 "
                                          "monitor(s)"),
              std::string::npos)
        << env.status().message();
}

TEST_F(PortalFramesTest, StreamThatStopsFailsTheNextFrame) {
    const uint node = startProducer("BGRx", 64, 48);
    ASSERT_NE(node, 0U);
    startFake();
    control("SetStreamNode", {node, 64, 48});
    PortalClient client(*m_bus, nullptr);
    ASSERT_TRUE(client.start().isOk());
    auto fd = client.openPipeWireRemote();
    ASSERT_TRUE(fd.isOk());
    auto capture = PipeWireCapture::connect(*fd, node);
    ASSERT_TRUE(capture.isOk());
    ASSERT_TRUE((*capture)->nextFrame(kStartMs).isOk());
    m_producer.kill();  // the compositor's screen cast goes away
    m_producer.waitForFinished(kStartMs);
    auto after = (*capture)->nextFrame(kStartMs, (*capture)->frameSequence());
    EXPECT_FALSE(after.isOk());
    EXPECT_NE(after.status().message().find("stream stopped"), std::string::npos)
        << after.status().message();
}

// A desktop that shares the screen and never records it (KWin 5.27 on a headless virtual
// output, scripts/kde-trial): open() gives up after the first frame's wait and says so.
TEST_F(PortalFramesTest, ScreenThatSendsNoPictureSaysSo) {
    const uint node = startProducer("BGRx", 64, 48, false, /*silent=*/true);
    ASSERT_NE(node, 0U);
    startFake();
    control("SetStreamNode", {node, 64, 48});
    PortalEnvironmentOptions options;
    options.firstFrameTimeoutMs = 1500;
    auto env = PortalEnvironment::open(*m_bus, nullptr, options);
    ASSERT_FALSE(env.isOk());
    EXPECT_EQ(env.status().code(), StatusCode::Unavailable);
    const std::string message = env.status().message();
    EXPECT_NE(message.find("the first frame of shared screen " + std::to_string(node)),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("sent no picture"), std::string::npos) << message;
}

TEST_F(PortalFramesTest, BgrxFramesOfTheSharedScreenArriveIntact) {
    expectProducerPixels("BGRx");
}

TEST_F(PortalFramesTest, RgbaFramesOfTheSharedScreenArriveIntact) {
    expectProducerPixels("RGBA");
}

}  // namespace
}  // namespace iris::agent

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
