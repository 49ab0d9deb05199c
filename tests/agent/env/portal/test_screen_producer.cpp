// A PipeWire video source with known pixels, standing in for the compositor's screen cast in
// portal_client_test.cpp:  test_screen_producer FORMAT WIDTH HEIGHT [silent]  (FORMAT: BGRx or
// RGBA; silent: linked and streaming, and never a frame, as KWin 5.27's headless backend).
// Pixel (x, y) is red x*4 mod 256, green y*5 mod 256, blue 200, in FORMAT's byte order, in memfd
// buffers. It prints its node id once the node exists. With no session manager in the test's
// private PipeWire, it links itself to the capture node Iris creates for it
// ("iris-screencast-<its node id>"), so that several producers can run side by side.
#include <cstdio>
#include <cstring>
#include <string>

#include <pipewire/pipewire.h>
#include <spa/param/video/format-utils.h>
#include <spa/pod/builder.h>

// libpipewire's method macros (pw_registry_add_listener, pw_loop_add_timer) cast in C style.
#pragma GCC diagnostic ignored "-Wold-style-cast"

namespace {

struct Producer {
    pw_main_loop* loop = nullptr;
    pw_core* core = nullptr;
    pw_stream* stream = nullptr;
    pw_registry* registry = nullptr;
    spa_hook streamListener{};
    spa_hook registryListener{};
    pw_proxy* link = nullptr;
    spa_video_format format = SPA_VIDEO_FORMAT_BGRx;
    int width = 0;
    int height = 0;
    bool announced = false;
    uint32_t outputPort = SPA_ID_INVALID;
    uint32_t captureNode = SPA_ID_INVALID;
    uint32_t capturePort = SPA_ID_INVALID;
};

void fill(const Producer& p, uint8_t* pixels, int stride) {
    const bool rgb = p.format == SPA_VIDEO_FORMAT_RGBA;
    for (int y = 0; y < p.height; ++y) {
        uint8_t* row = pixels + y * stride;
        for (int x = 0; x < p.width; ++x) {
            const auto red = static_cast<uint8_t>((x * 4) & 255);
            const auto green = static_cast<uint8_t>((y * 5) & 255);
            const uint8_t blue = 200;
            uint8_t* px = row + x * 4;
            px[0] = rgb ? red : blue;
            px[1] = green;
            px[2] = rgb ? blue : red;
            px[3] = 255;
        }
    }
}

void onProcess(void* data) {
    auto* p = static_cast<Producer*>(data);
    pw_buffer* buffer = pw_stream_dequeue_buffer(p->stream);
    if (buffer == nullptr) return;
    spa_data& d = buffer->buffer->datas[0];
    const int stride = p->width * 4;
    if (d.data != nullptr) {
        fill(*p, static_cast<uint8_t*>(d.data), stride);
        d.chunk->offset = 0;
        d.chunk->stride = stride;
        d.chunk->size = static_cast<uint32_t>(stride * p->height);
    }
    pw_stream_queue_buffer(p->stream, buffer);
}

void maybeLink(Producer* p) {
    if (p->link != nullptr || p->outputPort == SPA_ID_INVALID || p->capturePort == SPA_ID_INVALID) {
        return;
    }
    pw_properties* props = pw_properties_new(nullptr, nullptr);
    pw_properties_setf(props, PW_KEY_LINK_OUTPUT_NODE, "%u", pw_stream_get_node_id(p->stream));
    pw_properties_setf(props, PW_KEY_LINK_OUTPUT_PORT, "%u", p->outputPort);
    pw_properties_setf(props, PW_KEY_LINK_INPUT_NODE, "%u", p->captureNode);
    pw_properties_setf(props, PW_KEY_LINK_INPUT_PORT, "%u", p->capturePort);
    p->link = static_cast<pw_proxy*>(pw_core_create_object(
        p->core, "link-factory", PW_TYPE_INTERFACE_Link, PW_VERSION_LINK, &props->dict, 0));
    pw_properties_free(props);
}

void onGlobal(void* data, uint32_t id, uint32_t, const char* type, uint32_t,
              const spa_dict* props) {
    auto* p = static_cast<Producer*>(data);
    if (props == nullptr) return;
    if (std::strcmp(type, PW_TYPE_INTERFACE_Node) == 0) {
        const char* name = spa_dict_lookup(props, PW_KEY_NODE_NAME);
        const std::string wanted =
            "iris-screencast-" + std::to_string(pw_stream_get_node_id(p->stream));
        if (name != nullptr && name == wanted) p->captureNode = id;
    } else if (std::strcmp(type, PW_TYPE_INTERFACE_Port) == 0) {
        const char* node = spa_dict_lookup(props, PW_KEY_NODE_ID);
        const char* direction = spa_dict_lookup(props, PW_KEY_PORT_DIRECTION);
        if (node == nullptr || direction == nullptr) return;
        const auto nodeId = static_cast<uint32_t>(std::stoul(node));
        if (nodeId == pw_stream_get_node_id(p->stream) && std::strcmp(direction, "out") == 0) {
            p->outputPort = id;
        } else if (nodeId == p->captureNode && std::strcmp(direction, "in") == 0) {
            p->capturePort = id;
        }
    }
    maybeLink(p);
}

void onStateChanged(void* data, pw_stream_state, pw_stream_state state, const char*) {
    auto* p = static_cast<Producer*>(data);
    if (state == PW_STREAM_STATE_PAUSED && !p->announced) {
        p->announced = true;
        std::printf("%u\n", pw_stream_get_node_id(p->stream));
        std::fflush(stdout);
    }
}

void onParamChanged(void* data, uint32_t id, const spa_pod* param) {
    auto* p = static_cast<Producer*>(data);
    if (id != SPA_PARAM_Format || param == nullptr) return;
    uint8_t buffer[256];
    spa_pod_builder builder = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    const int stride = p->width * 4;
    const spa_pod* params[] = {static_cast<const spa_pod*>(spa_pod_builder_add_object(
        &builder, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers, SPA_PARAM_BUFFERS_buffers,
        SPA_POD_CHOICE_RANGE_Int(4, 2, 8), SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(1),
        SPA_PARAM_BUFFERS_size, SPA_POD_Int(stride * p->height), SPA_PARAM_BUFFERS_stride,
        SPA_POD_Int(stride), SPA_PARAM_BUFFERS_dataType, SPA_POD_Int(1 << SPA_DATA_MemFd)))};
    pw_stream_update_params(p->stream, params, 1);
}

void onTimer(void* data, uint64_t) {
    auto* p = static_cast<Producer*>(data);
    pw_stream_trigger_process(p->stream);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4 && !(argc == 5 && std::strcmp(argv[4], "silent") == 0)) {
        std::fprintf(stderr, "usage: test_screen_producer BGRx|RGBA WIDTH HEIGHT [silent]\n");
        return 2;
    }
    const bool silent = argc == 5;
    pw_init(&argc, &argv);
    Producer p;
    p.format = std::strcmp(argv[1], "RGBA") == 0 ? SPA_VIDEO_FORMAT_RGBA : SPA_VIDEO_FORMAT_BGRx;
    p.width = std::stoi(argv[2]);
    p.height = std::stoi(argv[3]);
    p.loop = pw_main_loop_new(nullptr);
    pw_context* context = pw_context_new(pw_main_loop_get_loop(p.loop), nullptr, 0);
    p.core = pw_context_connect(context, nullptr, 0);
    if (p.core == nullptr) {
        std::fprintf(stderr, "test_screen_producer: cannot connect to PipeWire\n");
        return 1;
    }
    p.registry = pw_core_get_registry(p.core, PW_VERSION_REGISTRY, 0);
    pw_registry_events registryEvents{};
    registryEvents.version = PW_VERSION_REGISTRY_EVENTS;
    registryEvents.global = onGlobal;
    pw_registry_add_listener(p.registry, &p.registryListener, &registryEvents, &p);

    p.stream = pw_stream_new(p.core, "iris-test-screen",
                             pw_properties_new(PW_KEY_MEDIA_CLASS, "Video/Source", nullptr));
    pw_stream_events events{};
    events.version = PW_VERSION_STREAM_EVENTS;
    events.process = onProcess;
    events.state_changed = onStateChanged;
    events.param_changed = onParamChanged;
    pw_stream_add_listener(p.stream, &p.streamListener, &events, &p);

    uint8_t buffer[512];
    spa_pod_builder builder = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    spa_rectangle size{static_cast<uint32_t>(p.width), static_cast<uint32_t>(p.height)};
    spa_fraction rate{30, 1};
    const spa_pod* params[] = {static_cast<const spa_pod*>(spa_pod_builder_add_object(
        &builder, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat, SPA_FORMAT_mediaType,
        SPA_POD_Id(SPA_MEDIA_TYPE_video), SPA_FORMAT_mediaSubtype,
        SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw), SPA_FORMAT_VIDEO_format, SPA_POD_Id(p.format),
        SPA_FORMAT_VIDEO_size, SPA_POD_Rectangle(&size), SPA_FORMAT_VIDEO_framerate,
        SPA_POD_Fraction(&rate)))};
    pw_stream_connect(
        p.stream, PW_DIRECTION_OUTPUT, PW_ID_ANY,
        static_cast<pw_stream_flags>(PW_STREAM_FLAG_DRIVER | PW_STREAM_FLAG_MAP_BUFFERS), params,
        1);

    // A driver runs a cycle when told: a frame every 30 ms (never, silent).
    if (!silent) {
        spa_source* timer = pw_loop_add_timer(pw_main_loop_get_loop(p.loop), onTimer, &p);
        timespec interval{0, 30 * 1000 * 1000};
        pw_loop_update_timer(pw_main_loop_get_loop(p.loop), timer, &interval, &interval, false);
    }
    pw_main_loop_run(p.loop);
    return 0;
}
