#include "tests/agent/env/wayland/fake_compositor.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include "agent/env/wayland/pixel_formats.h"
#include "ext-image-capture-source-v1-server-protocol.h"
#include "ext-image-copy-capture-v1-server-protocol.h"
#include "tests/agent/env/wayland/test_pattern.h"

namespace iris::agent::testing {
namespace {

void bindOutput(wl_client* client, void*, std::uint32_t version, std::uint32_t id) {
    wl_resource* output =
        wl_resource_create(client, &wl_output_interface, static_cast<int>(version), id);
    wl_resource_set_implementation(output, nullptr, nullptr, nullptr);
    wl_output_send_geometry(output, 0, 0, 300, 200, WL_OUTPUT_SUBPIXEL_UNKNOWN, "Iris", "Fake",
                            WL_OUTPUT_TRANSFORM_NORMAL);
    wl_output_send_mode(output, WL_OUTPUT_MODE_CURRENT, FakeCompositor::kWidth,
                        FakeCompositor::kHeight, 60000);
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

void destroyResource(wl_client*, wl_resource* resource) {
    wl_resource_destroy(resource);
}

// ext_output_image_capture_source_manager_v1: sources are opaque, and there is one output.
const struct ext_image_capture_source_v1_interface kSource = {.destroy = destroyResource};

const struct ext_output_image_capture_source_manager_v1_interface kSourceManager = {
    .create_source =
        [](wl_client* client, wl_resource* manager, std::uint32_t id, wl_resource*) {
            wl_resource* source = wl_resource_create(client, &ext_image_capture_source_v1_interface,
                                                     wl_resource_get_version(manager), id);
            wl_resource_set_implementation(source, &kSource, nullptr, nullptr);
        },
    .destroy = destroyResource,
};

void bindSourceManager(wl_client* client, void*, std::uint32_t version, std::uint32_t id) {
    wl_resource* manager =
        wl_resource_create(client, &ext_output_image_capture_source_manager_v1_interface,
                           static_cast<int>(version), id);
    wl_resource_set_implementation(manager, &kSourceManager, nullptr, nullptr);
}

// A capture session: the buffer size it announced last.
struct Session {
    FakeCompositor* compositor;
    wl_resource* resource;
    int width = FakeCompositor::kWidth;
    int height = FakeCompositor::kHeight;
};
// A frame of a session. Iris destroys a frame before its session, so a frame's session outlives it.
struct Frame {
    Session* session;
    wl_resource* buffer = nullptr;
    bool captured = false;
};

}  // namespace

// ext-image-copy-capture-v1, server side.
struct FakeImageCopy {
    static void sendConstraints(const Session& session) {
        wl_array modifiers;
        wl_array_init(&modifiers);
        *static_cast<std::uint64_t*>(wl_array_add(&modifiers, sizeof(std::uint64_t))) = 0;
        ext_image_copy_capture_session_v1_send_dmabuf_format(session.resource,
                                                             shm_format::kXrgb8888, &modifiers);
        wl_array_release(&modifiers);
        // One the client cannot convert first, then the one it must pick.
        ext_image_copy_capture_session_v1_send_shm_format(session.resource,
                                                          shm_format::fourcc('N', 'V', '1', '2'));
        ext_image_copy_capture_session_v1_send_shm_format(session.resource, shm_format::kXbgr8888);
        ext_image_copy_capture_session_v1_send_buffer_size(
            session.resource, static_cast<std::uint32_t>(session.width),
            static_cast<std::uint32_t>(session.height));
        ext_image_copy_capture_session_v1_send_done(session.resource);
    }

    static void capture(wl_client*, wl_resource* resource) {
        auto& frame = *static_cast<Frame*>(wl_resource_get_user_data(resource));
        Session& session = *frame.session;
        FakeCompositor& compositor = *session.compositor;
        if (frame.captured || frame.buffer == nullptr) {
            wl_resource_post_error(resource,
                                   frame.captured
                                       ? EXT_IMAGE_COPY_CAPTURE_FRAME_V1_ERROR_ALREADY_CAPTURED
                                       : EXT_IMAGE_COPY_CAPTURE_FRAME_V1_ERROR_NO_BUFFER,
                                   "capture sent twice or without a buffer");
            return;
        }
        frame.captured = true;
        if (compositor.m_options.shrinkOnFirstCapture && compositor.m_framesFailed == 0) {
            session.width /= 2;
            session.height /= 2;
            sendConstraints(session);
            ++compositor.m_framesFailed;
            ext_image_copy_capture_frame_v1_send_failed(
                resource, EXT_IMAGE_COPY_CAPTURE_FRAME_V1_FAILURE_REASON_BUFFER_CONSTRAINTS);
            return;
        }
        wl_shm_buffer* shm = wl_shm_buffer_get(frame.buffer);
        if (shm == nullptr || wl_shm_buffer_get_width(shm) != session.width ||
            wl_shm_buffer_get_height(shm) != session.height ||
            wl_shm_buffer_get_format(shm) != shm_format::kXbgr8888) {
            ++compositor.m_framesFailed;
            ext_image_copy_capture_frame_v1_send_failed(
                resource, EXT_IMAGE_COPY_CAPTURE_FRAME_V1_FAILURE_REASON_BUFFER_CONSTRAINTS);
            return;
        }
        const int stride = wl_shm_buffer_get_stride(shm);
        wl_shm_buffer_begin_access(shm);
        auto* bytes = static_cast<std::uint8_t*>(wl_shm_buffer_get_data(shm));
        for (int y = 0; y < session.height; ++y) {
            for (int x = 0; x < session.width; ++x) {
                Rgb rgb = patternAt(x, y);
                std::uint8_t* pixel = bytes + static_cast<std::ptrdiff_t>(y) * stride + 4 * x;
                pixel[0] = rgb.r;  // XBGR8888: the word X:B:G:R, little-endian
                pixel[1] = rgb.g;
                pixel[2] = rgb.b;
                pixel[3] = 0xff;
            }
        }
        wl_shm_buffer_end_access(shm);
        ext_image_copy_capture_frame_v1_send_transform(
            resource, static_cast<std::uint32_t>(compositor.m_options.frameTransform));
        ext_image_copy_capture_frame_v1_send_damage(resource, 0, 0, session.width, session.height);
        ext_image_copy_capture_frame_v1_send_presentation_time(resource, 0, 1, 0);
        ext_image_copy_capture_frame_v1_send_ready(resource);
        ++compositor.m_framesCopied;
    }

    static constexpr struct ext_image_copy_capture_frame_v1_interface kFrame = {
        .destroy = destroyResource,
        .attach_buffer =
            [](wl_client*, wl_resource* resource, wl_resource* buffer) {
                static_cast<Frame*>(wl_resource_get_user_data(resource))->buffer = buffer;
            },
        .damage_buffer = [](wl_client*, wl_resource*, std::int32_t, std::int32_t, std::int32_t,
                            std::int32_t) {},
        .capture = capture,
    };

    static constexpr struct ext_image_copy_capture_session_v1_interface kSession = {
        .create_frame =
            [](wl_client* client, wl_resource* resource, std::uint32_t id) {
                wl_resource* frame =
                    wl_resource_create(client, &ext_image_copy_capture_frame_v1_interface, 1, id);
                auto* state = new Frame{static_cast<Session*>(wl_resource_get_user_data(resource))};
                wl_resource_set_implementation(frame, &kFrame, state, [](wl_resource* r) {
                    delete static_cast<Frame*>(wl_resource_get_user_data(r));
                });
            },
        .destroy = destroyResource,
    };

    static constexpr struct ext_image_copy_capture_manager_v1_interface kManager = {
        .create_session =
            [](wl_client* client, wl_resource* manager, std::uint32_t id, wl_resource*,
               std::uint32_t options) {
                auto* compositor = static_cast<FakeCompositor*>(wl_resource_get_user_data(manager));
                compositor->m_lastSessionOptions = options;
                wl_resource* resource =
                    wl_resource_create(client, &ext_image_copy_capture_session_v1_interface, 1, id);
                auto* session = new Session{compositor, resource};
                wl_resource_set_implementation(resource, &kSession, session, [](wl_resource* r) {
                    delete static_cast<Session*>(wl_resource_get_user_data(r));
                });
                sendConstraints(*session);
                if (compositor->m_options.stopSessions)
                    ext_image_copy_capture_session_v1_send_stopped(resource);
            },
        .create_pointer_cursor_session =
            [](wl_client*, wl_resource* manager, std::uint32_t, wl_resource*, wl_resource*) {
                wl_resource_post_error(manager, 0, "the fake compositor has no cursor sessions");
            },
        .destroy = destroyResource,
    };

    static void bindManager(wl_client* client, void* data, std::uint32_t version,
                            std::uint32_t id) {
        wl_resource* manager = wl_resource_create(
            client, &ext_image_copy_capture_manager_v1_interface, static_cast<int>(version), id);
        wl_resource_set_implementation(manager, &kManager, data, nullptr);
    }
};

FakeCompositor::FakeCompositor(const std::string& socketPath, FakeCompositorOptions options)
    : m_socketPath(socketPath), m_options(options) {
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
    wl_display_add_shm_format(m_display, shm_format::kXbgr8888);
    wl_global_create(m_display, &wl_output_interface, 3, nullptr, bindOutput);
    wl_global_create(m_display, &wl_seat_interface, 1, nullptr, bindSeat);
    if (m_options.imageCopy) {
        wl_global_create(m_display, &ext_output_image_capture_source_manager_v1_interface, 1,
                         nullptr, bindSourceManager);
        wl_global_create(m_display, &ext_image_copy_capture_manager_v1_interface, 1, this,
                         FakeImageCopy::bindManager);
    }
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
