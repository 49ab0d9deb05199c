#include "agent/env/portal/pipewire_capture.h"

#include <chrono>

#include <opencv2/imgproc.hpp>
#include <pipewire/pipewire.h>
#include <spa/param/video/format-utils.h>
#include <spa/pod/builder.h>
#include <unistd.h>

namespace iris::agent {

// libpipewire's method macros (pw_registry_add_listener) cast in C style.
#pragma GCC diagnostic ignored "-Wold-style-cast"

struct PipeWireListeners {
    spa_hook stream{};
    pw_stream_events events{};
    pw_registry* registry = nullptr;
    spa_hook registryHook{};
    pw_registry_events registryEvents{};
    std::uint32_t nodeId = 0;
};

struct PipeWireCallbacks {
    // Without a session manager nothing unlinks a stream whose source vanished (it only
    // pauses), so the capture watches the source node itself.
    static void globalRemoved(void* self, uint32_t id) {
        auto* capture = static_cast<PipeWireCapture*>(self);
        if (id == capture->m_listeners->nodeId) {
            capture->fail(
                "the PipeWire screen stream stopped: its node went away (the desktop ended the "
                "screen cast); start a new session");
        }
    }

    static void process(void* self) { static_cast<PipeWireCapture*>(self)->process(); }

    static void paramChanged(void* self, uint32_t id, const spa_pod* param) {
        if (id == SPA_PARAM_Format && param != nullptr) {
            static_cast<PipeWireCapture*>(self)->formatChanged(param);
        }
    }

    static void stateChanged(void* self, pw_stream_state old, pw_stream_state state,
                             const char* error) {
        auto* capture = static_cast<PipeWireCapture*>(self);
        if (state == PW_STREAM_STATE_ERROR) {
            capture->fail(std::string("the PipeWire screen stream failed: ") +
                          (error != nullptr ? error : "no reason given"));
        } else if (state == PW_STREAM_STATE_UNCONNECTED && old != PW_STREAM_STATE_UNCONNECTED) {
            capture->fail(
                "the PipeWire screen stream stopped (the desktop ended the screen cast, or "
                "PipeWire restarted); start a new session");
        }
    }
};

namespace {

constexpr int kMaxSide = 16384;

// What Iris accepts: 32-bit RGB in memory it can map. The first format is the preferred one.
const spa_pod* enumFormat(spa_pod_builder* builder) {
    spa_rectangle defaultSize{1920, 1080};
    spa_rectangle minSize{1, 1};
    spa_rectangle maxSize{kMaxSide, kMaxSide};
    spa_fraction defaultRate{30, 1};
    spa_fraction minRate{0, 1};
    spa_fraction maxRate{1000, 1};
    return static_cast<const spa_pod*>(spa_pod_builder_add_object(
        builder, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat, SPA_FORMAT_mediaType,
        SPA_POD_Id(SPA_MEDIA_TYPE_video), SPA_FORMAT_mediaSubtype,
        SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw), SPA_FORMAT_VIDEO_format,
        SPA_POD_CHOICE_ENUM_Id(5, SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_BGRx,
                               SPA_VIDEO_FORMAT_RGBx, SPA_VIDEO_FORMAT_BGRA, SPA_VIDEO_FORMAT_RGBA),
        SPA_FORMAT_VIDEO_size, SPA_POD_CHOICE_RANGE_Rectangle(&defaultSize, &minSize, &maxSize),
        SPA_FORMAT_VIDEO_framerate,
        SPA_POD_CHOICE_RANGE_Fraction(&defaultRate, &minRate, &maxRate)));
}

void initPipeWireOnce() {
    static std::once_flag once;
    std::call_once(once, [] { pw_init(nullptr, nullptr); });
}

}  // namespace

Result<std::unique_ptr<PipeWireCapture>> PipeWireCapture::connect(int fd, std::uint32_t nodeId) {
    initPipeWireOnce();
    std::unique_ptr<PipeWireCapture> capture(new PipeWireCapture);
    capture->m_listeners = std::make_unique<PipeWireListeners>();
    capture->m_loop = pw_thread_loop_new("iris-screencast", nullptr);
    if (capture->m_loop == nullptr) {
        ::close(fd);
        return Status::ioError("PipeWire: cannot create the stream's thread loop");
    }
    capture->m_context = pw_context_new(pw_thread_loop_get_loop(capture->m_loop), nullptr, 0);
    if (capture->m_context == nullptr || pw_thread_loop_start(capture->m_loop) < 0) {
        ::close(fd);
        return Status::ioError("PipeWire: cannot start the stream's thread loop");
    }

    pw_thread_loop_lock(capture->m_loop);
    Status status = Status::ok();
    capture->m_core = pw_context_connect_fd(capture->m_context, fd, nullptr, 0);  // owns fd
    if (capture->m_core == nullptr) {
        status = Status::unavailable(
            "PipeWire: cannot use the connection the portal opened (is PipeWire running?)");
    } else {
        pw_properties* props = pw_properties_new(PW_KEY_MEDIA_TYPE, "Video", PW_KEY_MEDIA_CATEGORY,
                                                 "Capture", PW_KEY_MEDIA_ROLE, "Screen", nullptr);
        // The name says which screen it captures when several are (pw-dump, pw-top). The target
        // is the node id the portal gave, passed to pw_stream_connect below (node.target), not
        // target.object: that one means the node's object.serial, which equals its id only
        // until PipeWire reuses an id, so WirePlumber found no target from the second screen
        // cast of a login on and destroyed the stream (seen on GNOME 43).
        pw_properties_setf(props, PW_KEY_NODE_NAME, "iris-screencast-%u", nodeId);
        capture->m_stream = pw_stream_new(capture->m_core, "iris-screencast", props);
        auto& events = capture->m_listeners->events;
        events.version = PW_VERSION_STREAM_EVENTS;
        events.process = &PipeWireCallbacks::process;
        events.param_changed = &PipeWireCallbacks::paramChanged;
        events.state_changed = &PipeWireCallbacks::stateChanged;
        pw_stream_add_listener(capture->m_stream, &capture->m_listeners->stream, &events,
                               capture.get());
        auto& listeners = *capture->m_listeners;
        listeners.nodeId = nodeId;
        listeners.registry = pw_core_get_registry(capture->m_core, PW_VERSION_REGISTRY, 0);
        listeners.registryEvents.version = PW_VERSION_REGISTRY_EVENTS;
        listeners.registryEvents.global_remove = &PipeWireCallbacks::globalRemoved;
        pw_registry_add_listener(listeners.registry, &listeners.registryHook,
                                 &listeners.registryEvents, capture.get());
        uint8_t buffer[1024];
        spa_pod_builder builder = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
        const spa_pod* params[] = {enumFormat(&builder)};
        int connected = pw_stream_connect(
            capture->m_stream, PW_DIRECTION_INPUT, nodeId,
            // Never relinked elsewhere (a camera) when the screen's node goes away.
            static_cast<pw_stream_flags>(PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_MAP_BUFFERS |
                                         PW_STREAM_FLAG_DONT_RECONNECT),
            params, 1);
        if (connected < 0) {
            status = Status::unavailable("PipeWire: cannot connect to the screen stream's node " +
                                         std::to_string(nodeId));
        }
    }
    pw_thread_loop_unlock(capture->m_loop);
    if (!status.isOk()) return status;
    return capture;
}

PipeWireCapture::~PipeWireCapture() {
    if (m_loop != nullptr) pw_thread_loop_stop(m_loop);
    if (m_stream != nullptr) pw_stream_destroy(m_stream);
    if (m_listeners && m_listeners->registry != nullptr) {
        pw_proxy_destroy(reinterpret_cast<pw_proxy*>(m_listeners->registry));
    }
    if (m_core != nullptr) pw_core_disconnect(m_core);
    if (m_context != nullptr) pw_context_destroy(m_context);
    if (m_loop != nullptr) pw_thread_loop_destroy(m_loop);
}

void PipeWireCapture::formatChanged(const spa_pod* format) {
    spa_video_info_raw info{};
    if (spa_format_video_raw_parse(format, &info) < 0) {
        fail("PipeWire: the screen stream's format is not raw video");
        return;
    }
    {
        std::lock_guard lock(m_mutex);
        m_format = info.format;
        m_width = static_cast<int>(info.size.width);
        m_height = static_cast<int>(info.size.height);
    }
    // Buffers Iris can map: memfd or plain memory, never DMA-BUF (that would need a GPU import).
    uint8_t buffer[256];
    spa_pod_builder builder = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    const int dataTypes = (1 << SPA_DATA_MemFd) | (1 << SPA_DATA_MemPtr);
    const spa_pod* params[] = {static_cast<const spa_pod*>(spa_pod_builder_add_object(
        &builder, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers, SPA_PARAM_BUFFERS_dataType,
        SPA_POD_CHOICE_FLAGS_Int(dataTypes)))};
    pw_stream_update_params(m_stream, params, 1);
}

void PipeWireCapture::process() {
    pw_buffer* latest = nullptr;
    // Only the newest buffer matters: hand older ones straight back.
    while (pw_buffer* next = pw_stream_dequeue_buffer(m_stream)) {
        if (latest != nullptr) pw_stream_queue_buffer(m_stream, latest);
        latest = next;
    }
    if (latest == nullptr) return;
    const spa_data& data = latest->buffer->datas[0];
    std::unique_lock lock(m_mutex);
    // Empty chunks (a cursor-only update) and corrupted ones keep the previous frame.
    if (data.data != nullptr && data.chunk != nullptr && data.chunk->size > 0 && m_width > 0 &&
        (data.chunk->flags & SPA_CHUNK_FLAG_CORRUPTED) == 0) {
        const int stride = data.chunk->stride > 0 ? data.chunk->stride : m_width * 4;
        const auto* pixels = static_cast<const uint8_t*>(data.data) + data.chunk->offset;
        const std::size_t needed =
            static_cast<std::size_t>(stride) * static_cast<std::size_t>(m_height - 1) +
            static_cast<std::size_t>(m_width) * 4;
        if (data.chunk->offset + needed <= data.maxsize) {
            cv::Mat view(m_height, m_width, CV_8UC4, const_cast<uint8_t*>(pixels),
                         static_cast<std::size_t>(stride));
            const bool rgb = m_format == SPA_VIDEO_FORMAT_RGBx || m_format == SPA_VIDEO_FORMAT_RGBA;
            cv::cvtColor(view, m_frame, rgb ? cv::COLOR_RGBA2BGR : cv::COLOR_BGRA2BGR);
            ++m_sequence;
        }
    }
    lock.unlock();
    m_arrived.notify_all();
    pw_stream_queue_buffer(m_stream, latest);
}

void PipeWireCapture::fail(std::string message) {
    {
        std::lock_guard lock(m_mutex);
        if (m_error.empty()) m_error = std::move(message);
    }
    m_arrived.notify_all();
}

std::uint64_t PipeWireCapture::frameSequence() const {
    std::lock_guard lock(m_mutex);
    return m_sequence;
}

bool PipeWireCapture::failed() const {
    std::lock_guard lock(m_mutex);
    return !m_error.empty();
}

Result<cv::Mat> PipeWireCapture::nextFrame(int timeoutMs, std::uint64_t afterSequence) {
    std::unique_lock lock(m_mutex);
    const bool arrived = m_arrived.wait_for(lock, std::chrono::milliseconds(timeoutMs), [&] {
        return m_sequence > afterSequence || !m_error.empty();
    });
    if (!m_error.empty()) return Status::unavailable(m_error);
    if (!arrived) {
        return Status::unavailable("PipeWire: no frame of the screen stream within " +
                                   std::to_string(timeoutMs) + " ms");
    }
    return m_frame.clone();
}

}  // namespace iris::agent
