#pragma once
// A Wayland compositor for the error tests that offers only what the test asks for (by default
// one 640x480 wl_output, wl_shm and a wl_seat: no screen copies, no virtual input, like GNOME
// and KDE), served on a socket of its own from a thread. libwayland-server.
#include <atomic>
#include <string>
#include <thread>

struct wl_display;

namespace iris::agent::testing {

class FakeCompositor {
public:
    explicit FakeCompositor(const std::string& socketPath);
    ~FakeCompositor();
    FakeCompositor(const FakeCompositor&) = delete;
    FakeCompositor& operator=(const FakeCompositor&) = delete;

    bool ok() const { return m_listening; }
    const std::string& socketPath() const { return m_socketPath; }

private:
    void serve();

    std::string m_socketPath;
    wl_display* m_display = nullptr;
    bool m_listening = false;
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};

}  // namespace iris::agent::testing
