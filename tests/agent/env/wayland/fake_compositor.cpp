#include "tests/agent/env/wayland/fake_compositor.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

namespace iris::agent::testing {
namespace {

void bindOutput(wl_client* client, void*, std::uint32_t version, std::uint32_t id) {
    wl_resource* output =
        wl_resource_create(client, &wl_output_interface, static_cast<int>(version), id);
    wl_resource_set_implementation(output, nullptr, nullptr, nullptr);
    wl_output_send_geometry(output, 0, 0, 300, 200, WL_OUTPUT_SUBPIXEL_UNKNOWN, "Iris", "Fake",
                            WL_OUTPUT_TRANSFORM_NORMAL);
    wl_output_send_mode(output, WL_OUTPUT_MODE_CURRENT, 640, 480, 60000);
    if (version >= 2) {
        wl_output_send_scale(output, 1);
        wl_output_send_done(output);
    }
}

void bindSeat(wl_client* client, void*, std::uint32_t version, std::uint32_t id) {
    wl_resource* seat =
        wl_resource_create(client, &wl_seat_interface, static_cast<int>(version), id);
    wl_resource_set_implementation(seat, nullptr, nullptr, nullptr);
    wl_seat_send_capabilities(seat, 0);
}

}  // namespace

FakeCompositor::FakeCompositor(const std::string& socketPath) : m_socketPath(socketPath) {
    m_display = wl_display_create();
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    socketPath.copy(address.sun_path, sizeof(address.sun_path) - 1);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(fd, 4) != 0 || wl_display_add_socket_fd(m_display, fd) != 0) {
        if (fd >= 0) ::close(fd);
        return;
    }
    wl_display_init_shm(m_display);
    wl_global_create(m_display, &wl_output_interface, 3, nullptr, bindOutput);
    wl_global_create(m_display, &wl_seat_interface, 1, nullptr, bindSeat);
    m_listening = true;
    m_thread = std::thread([this] { serve(); });
}

FakeCompositor::~FakeCompositor() {
    m_stop = true;
    if (m_thread.joinable()) m_thread.join();
    wl_display_destroy_clients(m_display);
    wl_display_destroy(m_display);
    ::unlink(m_socketPath.c_str());
}

void FakeCompositor::serve() {
    wl_event_loop* loop = wl_display_get_event_loop(m_display);
    while (!m_stop) {
        wl_event_loop_dispatch(loop, 20);
        wl_display_flush_clients(m_display);
    }
}

}  // namespace iris::agent::testing
