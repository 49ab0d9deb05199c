#include "agent/env/desktop/global_hotkey.h"

#include <chrono>
#include <condition_variable>
#include <mutex>

#include <gtest/gtest.h>

#include "agent/env/desktop/child_process.h"
#include "agent/env/desktop/x_connection.h"
#include "agent/env/desktop/x_input.h"
#include "agent/env/desktop/xvfb_display.h"

namespace iris::agent {
namespace {

// Counts presses reported on the hotkey's thread.
struct PressCounter {
    std::mutex mutex;
    std::condition_variable changed;
    int presses = 0;

    void press() {
        std::lock_guard lock(mutex);
        ++presses;
        changed.notify_all();
    }
    // Waits (bounded, so that a broken grab fails instead of hanging) until `count` presses.
    bool waitFor(int count) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, std::chrono::seconds(20), [&] { return presses >= count; });
    }
};

class GlobalHotkeyTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (!findExecutable("Xvfb")) GTEST_SKIP() << "Xvfb is not installed (Debian: xvfb)";
        XvfbOptions options;
        options.width = 320;
        options.height = 240;
        Result<std::unique_ptr<XvfbDisplay>> display = XvfbDisplay::start(options);
        ASSERT_TRUE(display) << display.status().message();
        m_display = std::move(*display);
        Result<std::unique_ptr<XConnection>> typist = XConnection::open(m_display->name());
        ASSERT_TRUE(typist) << typist.status().message();
        m_typist = std::move(*typist);
    }

    // Presses the keys as a person would, from another X client.
    void press(const std::vector<std::string>& keys) {
        Result<XInput> input = XInput::create(*m_typist);
        ASSERT_TRUE(input) << input.status().message();
        ASSERT_TRUE(input->pressKeys(keys).isOk());
    }

    std::unique_ptr<XvfbDisplay> m_display;
    std::unique_ptr<XConnection> m_typist;
};

TEST_F(GlobalHotkeyTest, ReportsTheChordPressedInAnotherClient) {
    PressCounter counter;
    Result<std::unique_ptr<GlobalHotkey>> hotkey =
        GlobalHotkey::grab(m_display->name(), "Ctrl+Alt+.", [&] { counter.press(); });
    ASSERT_TRUE(hotkey) << hotkey.status().message();
    press({"ctrl", "alt", "."});
    EXPECT_TRUE(counter.waitFor(1));
    press({"ctrl", "alt", "."});
    EXPECT_TRUE(counter.waitFor(2));
}

TEST_F(GlobalHotkeyTest, IgnoresTheKeyWithOtherModifiers) {
    PressCounter counter;
    Result<std::unique_ptr<GlobalHotkey>> hotkey =
        GlobalHotkey::grab(m_display->name(), "ctrl+alt+.", [&] { counter.press(); });
    ASSERT_TRUE(hotkey) << hotkey.status().message();
    press({"ctrl", "."});                  // not grabbed: goes to the focus window
    press({"ctrl", "alt", "shift", "."});  // grabbed chord plus Shift: not ours either
    press({"ctrl", "alt", "."});           // the marker: it is reported after the others
    ASSERT_TRUE(counter.waitFor(1));
    std::lock_guard lock(counter.mutex);
    EXPECT_EQ(counter.presses, 1);
}

TEST_F(GlobalHotkeyTest, StillFiresWithCapsLockOn) {
    PressCounter counter;
    Result<std::unique_ptr<GlobalHotkey>> hotkey =
        GlobalHotkey::grab(m_display->name(), "Ctrl+Alt+.", [&] { counter.press(); });
    ASSERT_TRUE(hotkey) << hotkey.status().message();
    press({"capslock"});
    press({"ctrl", "alt", "."});
    EXPECT_TRUE(counter.waitFor(1));
    press({"capslock"});
}

TEST_F(GlobalHotkeyTest, ASecondGrabOfTheSameChordIsRefusedByName) {
    Result<std::unique_ptr<GlobalHotkey>> first =
        GlobalHotkey::grab(m_display->name(), "Ctrl+Alt+.", [] {});
    ASSERT_TRUE(first) << first.status().message();
    Result<std::unique_ptr<GlobalHotkey>> second =
        GlobalHotkey::grab(m_display->name(), "Ctrl+Alt+.", [] {});
    ASSERT_FALSE(second);
    EXPECT_NE(second.status().message().find("Ctrl+Alt+."), std::string::npos);
    EXPECT_NE(second.status().message().find("taken by another application"), std::string::npos);
    first->reset();  // released on destruction: now the chord can be grabbed again
    EXPECT_TRUE(GlobalHotkey::grab(m_display->name(), "Ctrl+Alt+.", [] {}));
}

TEST(GlobalHotkey, NamesWhatIsWrongWithAChord) {
    Result<std::unique_ptr<GlobalHotkey>> badModifier = GlobalHotkey::grab(":0", "Hyper+.", [] {});
    ASSERT_FALSE(badModifier);
    EXPECT_NE(badModifier.status().message().find("'Hyper' is not a modifier"), std::string::npos);
    Result<std::unique_ptr<GlobalHotkey>> badKey =
        GlobalHotkey::grab(":0", "Ctrl+nosuchkey", [] {});
    ASSERT_FALSE(badKey);
    EXPECT_NE(badKey.status().message().find("unknown key 'nosuchkey'"), std::string::npos);
}

}  // namespace
}  // namespace iris::agent
