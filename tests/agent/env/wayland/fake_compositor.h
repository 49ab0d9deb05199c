#pragma once
// A Wayland compositor for the tests that offers only what the test asks for, served on a socket
// of its own from a thread (libwayland-server). By default one 640x480 wl_output, wl_shm and a
// wl_seat: no screen copies, no virtual input, like GNOME and KDE. With `imageCopy`, also
// ext-image-copy-capture-v1 over output capture sources, whose frames are the test pattern
// (test_pattern.h) in the output's buffer orientation: a compositor of the kind Debian 12 has
// none of (wlroots 0.19 and later), written from the protocol's definition.
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

struct wl_display;

namespace iris::agent::testing {

struct FakeCompositorOptions {
    bool imageCopy = false;
    // The transform the frames' `transform` event reports (wl_output.transform).
    int frameTransform = 0;
    // Every session stops right after its constraints (a source that went away).
    bool stopSessions = false;
    // The first frame fails with `buffer_constraints`, after new constraints of half the size.
    bool shrinkOnFirstCapture = false;
};

class FakeCompositor {
public:
    explicit FakeCompositor(const std::string& socketPath, FakeCompositorOptions options = {});
    ~FakeCompositor();
    FakeCompositor(const FakeCompositor&) = delete;
    FakeCompositor& operator=(const FakeCompositor&) = delete;

    bool ok() const { return m_listening; }
    const std::string& socketPath() const { return m_socketPath; }
    static constexpr int kWidth = 640;
    static constexpr int kHeight = 480;

    // What clients did so far: frames copied, frames failed, the options of the last session.
    int framesCopied() const { return m_framesCopied; }
    int framesFailed() const { return m_framesFailed; }
    std::uint32_t lastSessionOptions() const { return m_lastSessionOptions; }

private:
    friend struct FakeImageCopy;
    void serve();

    std::string m_socketPath;
    FakeCompositorOptions m_options;
    wl_display* m_display = nullptr;
    bool m_listening = false;
    std::atomic<bool> m_stop{false};
    std::atomic<int> m_framesCopied{0};
    std::atomic<int> m_framesFailed{0};
    std::atomic<std::uint32_t> m_lastSessionOptions{0};
    std::thread m_thread;
};

}  // namespace iris::agent::testing
