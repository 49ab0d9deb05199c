// WaylandConnection's screen copies: ext-image-copy-capture-v1 (the protocol wayland-protocols
// standardised) where the compositor offers it, else wlroots' zwlr_screencopy_manager_v1. Both
// copy into a shared-memory buffer Iris allocates, in a pixel format the compositor chooses.
#include <sys/mman.h>
#include <unistd.h>
#include <wayland-client.h>

#include "agent/env/wayland/pixel_formats.h"
#include "agent/env/wayland/wayland_connection.h"
#include "ext-image-capture-source-v1-client-protocol.h"
#include "ext-image-copy-capture-v1-client-protocol.h"
#include "wlr-screencopy-unstable-v1-client-protocol.h"

namespace iris::agent {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kCaptureTimeout{10000};

// The shared memory a screen copy lands in, released on every path.
struct ShmBuffer {
    int fd = -1;
    void* data = MAP_FAILED;
    std::size_t size = 0;
    wl_shm_pool* pool = nullptr;
    wl_buffer* buffer = nullptr;
    ~ShmBuffer() {
        if (buffer != nullptr) wl_buffer_destroy(buffer);
        if (pool != nullptr) wl_shm_pool_destroy(pool);
        if (data != MAP_FAILED) ::munmap(data, size);
        if (fd >= 0) ::close(fd);
    }
    const std::uint8_t* bytes() const { return static_cast<const std::uint8_t*>(data); }
};

Status allocateShm(ShmBuffer& shm, wl_shm* globalShm, std::uint32_t format, std::uint32_t width,
                   std::uint32_t height, std::uint32_t stride, const std::string& what) {
    shm.size = static_cast<std::size_t>(stride) * height;
    shm.fd = ::memfd_create("iris-screen-copy", MFD_CLOEXEC);
    if (shm.fd < 0 || ::ftruncate(shm.fd, static_cast<off_t>(shm.size)) != 0) {
        return Status::ioError(what + ": cannot allocate " + std::to_string(shm.size) +
                               " bytes of shared memory");
    }
    shm.data = ::mmap(nullptr, shm.size, PROT_READ | PROT_WRITE, MAP_SHARED, shm.fd, 0);
    if (shm.data == MAP_FAILED) return Status::ioError(what + ": mmap of the buffer failed");
    shm.pool = wl_shm_create_pool(globalShm, shm.fd, static_cast<std::int32_t>(shm.size));
    shm.buffer = wl_shm_pool_create_buffer(shm.pool, 0, static_cast<std::int32_t>(width),
                                           static_cast<std::int32_t>(height),
                                           static_cast<std::int32_t>(stride), format);
    return Status::ok();
}

std::string formatNames(const std::vector<std::uint32_t>& formats) {
    std::string names;
    for (std::uint32_t format : formats)
        names += (names.empty() ? "" : ", ") + shmFormatName(format);
    return names;
}

// --- ext-image-copy-capture-v1 ---

// What a capture session's compositor said about the buffers it takes. Constraints come in
// batches closed by `done`, and a later batch replaces the earlier one.
struct CopySession {
    std::uint32_t width = 0, height = 0;
    std::vector<std::uint32_t> shmFormats;
    bool dmabufOffered = false;
    bool batchClosed = true;  // the next constraint event starts a new batch
    int batches = 0;          // batches closed so far
    bool stopped = false;

    void constraint() {
        if (!batchClosed) return;
        batchClosed = false;
        shmFormats.clear();
        dmabufOffered = false;
    }
};

CopySession& sessionOf(void* data) {
    return *static_cast<CopySession*>(data);
}

const ext_image_copy_capture_session_v1_listener kSessionEvents = {
    .buffer_size =
        [](void* data, ext_image_copy_capture_session_v1*, std::uint32_t width,
           std::uint32_t height) {
            sessionOf(data).constraint();
            sessionOf(data).width = width;
            sessionOf(data).height = height;
        },
    .shm_format =
        [](void* data, ext_image_copy_capture_session_v1*, std::uint32_t format) {
            sessionOf(data).constraint();
            sessionOf(data).shmFormats.push_back(format);
        },
    .dmabuf_device = [](void* data, ext_image_copy_capture_session_v1*,
                        wl_array*) { sessionOf(data).constraint(); },
    .dmabuf_format =
        [](void* data, ext_image_copy_capture_session_v1*, std::uint32_t, wl_array*) {
            sessionOf(data).constraint();
            sessionOf(data).dmabufOffered = true;
        },
    .done =
        [](void* data, ext_image_copy_capture_session_v1*) {
            sessionOf(data).batchClosed = true;
            ++sessionOf(data).batches;
        },
    .stopped = [](void* data,
                  ext_image_copy_capture_session_v1*) { sessionOf(data).stopped = true; },
};

struct CopyFrame {
    int transform = 0;
    bool ready = false;
    bool failed = false;
    std::uint32_t reason = 0;
};

CopyFrame& frameOf(void* data) {
    return *static_cast<CopyFrame*>(data);
}

const ext_image_copy_capture_frame_v1_listener kCopyFrameEvents = {
    .transform =
        [](void* data, ext_image_copy_capture_frame_v1*, std::uint32_t transform) {
            frameOf(data).transform = static_cast<int>(transform);
        },
    .damage = [](void*, ext_image_copy_capture_frame_v1*, std::int32_t, std::int32_t, std::int32_t,
                 std::int32_t) {},
    .presentation_time = [](void*, ext_image_copy_capture_frame_v1*, std::uint32_t, std::uint32_t,
                            std::uint32_t) {},
    .ready = [](void* data, ext_image_copy_capture_frame_v1*) { frameOf(data).ready = true; },
    .failed =
        [](void* data, ext_image_copy_capture_frame_v1*, std::uint32_t reason) {
            frameOf(data).failed = true;
            frameOf(data).reason = reason;
        },
};

Status sessionStopped(const std::string& what) {
    return Status::ioError(what +
                           ": the compositor stopped the capture session (the output may have "
                           "been disabled or unplugged)");
}

// --- zwlr_screencopy_manager_v1 ---

// A screen copy in flight: what the compositor said about it so far.
struct ScreencopyFrame {
    struct Offer {
        std::uint32_t format, width, height, stride;
    };
    std::vector<Offer> offers;
    bool buffersDone = false;  // version 3: every buffer type has been offered
    bool ready = false;
    bool failed = false;
    std::uint32_t flags = 0;
};

ScreencopyFrame& screencopyOf(void* data) {
    return *static_cast<ScreencopyFrame*>(data);
}

const zwlr_screencopy_frame_v1_listener kScreencopyEvents = {
    .buffer =
        [](void* data, zwlr_screencopy_frame_v1*, std::uint32_t format, std::uint32_t width,
           std::uint32_t height, std::uint32_t stride) {
            screencopyOf(data).offers.push_back({format, width, height, stride});
        },
    .flags = [](void* data, zwlr_screencopy_frame_v1*,
                std::uint32_t flags) { screencopyOf(data).flags = flags; },
    .ready = [](void* data, zwlr_screencopy_frame_v1*, std::uint32_t, std::uint32_t,
                std::uint32_t) { screencopyOf(data).ready = true; },
    .failed = [](void* data, zwlr_screencopy_frame_v1*) { screencopyOf(data).failed = true; },
    .damage = [](void*, zwlr_screencopy_frame_v1*, std::uint32_t, std::uint32_t, std::uint32_t,
                 std::uint32_t) {},
    .linux_dmabuf = [](void*, zwlr_screencopy_frame_v1*, std::uint32_t, std::uint32_t,
                       std::uint32_t) {},
    .buffer_done = [](void* data,
                      zwlr_screencopy_frame_v1*) { screencopyOf(data).buffersDone = true; },
};

// The first shared-memory buffer type of `frame` whose pixel format Iris converts.
Result<ScreencopyFrame::Offer> chooseOffer(const ScreencopyFrame& frame, const std::string& what) {
    if (frame.failed) {
        return Status::ioError(what +
                               ": the compositor refused (the output may have been disabled or "
                               "unplugged)");
    }
    std::vector<std::uint32_t> formats;
    for (const ScreencopyFrame::Offer& offer : frame.offers) {
        if (canConvertShmFormat(offer.format)) return offer;
        formats.push_back(offer.format);
    }
    return Status::unsupported(what + ": none of the offered pixel formats (" +
                               formatNames(formats) + ") is one Iris converts");
}

}  // namespace

CaptureProtocol WaylandConnection::captureProtocol() const {
    if (m_shm == nullptr) return CaptureProtocol::None;
    if (m_imageCopy != nullptr && m_outputSources != nullptr)
        return CaptureProtocol::ExtImageCopyCapture;
    return m_screencopy != nullptr ? CaptureProtocol::WlrScreencopy : CaptureProtocol::None;
}

Status WaylandConnection::requireScreenCopy() const {
    if (captureProtocol() != CaptureProtocol::None) return Status::ok();
    std::string missing;
    if (m_shm == nullptr) {
        missing = "wl_shm";
    } else if (m_imageCopy != nullptr) {
        missing =
            "ext_output_image_capture_source_manager_v1 (ext_image_copy_capture_manager_v1 "
            "needs it for outputs) nor zwlr_screencopy_manager_v1";
    } else {
        missing = "zwlr_screencopy_manager_v1 nor ext_image_copy_capture_manager_v1";
    }
    return Status::unsupported(
        "desktop: the Wayland compositor at " + m_name + " offers no " + missing +
        ", so Iris cannot capture its screen. wlroots compositors (sway, Hyprland, river, labwc) "
        "offer it; on GNOME and KDE use the xdg-desktop-portal path (--env desktop:portal), or "
        "--env desktop:x11 for X11 applications under Xwayland");
}

Result<cv::Mat> WaylandConnection::capture(const WaylandOutput& output) {
    IRIS_RETURN_IF_ERROR(requireScreenCopy());
    const std::string what = "desktop: capturing output " + output.name;
    if (output.gone) return Status::ioError(what + ": the output is gone (unplugged or disabled)");
    return captureProtocol() == CaptureProtocol::ExtImageCopyCapture
               ? captureWithImageCopy(output, what)
               : captureWithScreencopy(output, what);
}

Result<cv::Mat> WaylandConnection::captureWithImageCopy(const WaylandOutput& output,
                                                        const std::string& what) {
    // A session per capture: only a session's first frame is copied at once, later ones may
    // wait until the screen changes, and an observation must not wait for that. With the pointer
    // painted in, as the screencopy path does.
    CopySession session;
    ext_image_capture_source_v1* source =
        ext_output_image_capture_source_manager_v1_create_source(m_outputSources, output.output);
    ext_image_copy_capture_session_v1* proxy = ext_image_copy_capture_manager_v1_create_session(
        m_imageCopy, source, EXT_IMAGE_COPY_CAPTURE_MANAGER_V1_OPTIONS_PAINT_CURSORS);
    ext_image_copy_capture_session_v1_add_listener(proxy, &kSessionEvents, &session);

    auto copyOnce = [&](bool& constraintsChanged) -> Result<cv::Mat> {
        IRIS_RETURN_IF_ERROR(dispatchUntil(
            [&] { return session.stopped || (session.batches > 0 && session.batchClosed); },
            kCaptureTimeout, what));
        if (session.stopped) return sessionStopped(what);
        std::uint32_t format = 0;
        int bytesPerPixel = 0;
        for (std::uint32_t offered : session.shmFormats) {
            bytesPerPixel = shmFormatBytesPerPixel(offered);
            if (bytesPerPixel > 0) {
                format = offered;
                break;
            }
        }
        if (bytesPerPixel == 0) {
            return Status::unsupported(
                what + (session.shmFormats.empty()
                            ? std::string(": the compositor offers only dma-buf buffers, and Iris "
                                          "copies into shared memory")
                            : ": none of the offered pixel formats (" +
                                  formatNames(session.shmFormats) + ") is one Iris converts"));
        }
        if (session.width == 0 || session.height == 0) {
            return Status::ioError(what + ": the compositor announced an empty buffer size");
        }
        ShmBuffer shm;
        const std::uint32_t stride = session.width * static_cast<std::uint32_t>(bytesPerPixel);
        IRIS_RETURN_IF_ERROR(
            allocateShm(shm, m_shm, format, session.width, session.height, stride, what));
        CopyFrame frame;
        frame.transform = output.transform;  // until the frame says otherwise
        ext_image_copy_capture_frame_v1* copy =
            ext_image_copy_capture_session_v1_create_frame(proxy);
        ext_image_copy_capture_frame_v1_add_listener(copy, &kCopyFrameEvents, &frame);
        ext_image_copy_capture_frame_v1_attach_buffer(copy, shm.buffer);
        ext_image_copy_capture_frame_v1_damage_buffer(copy, 0, 0,
                                                      static_cast<std::int32_t>(session.width),
                                                      static_cast<std::int32_t>(session.height));
        ext_image_copy_capture_frame_v1_capture(copy);
        Status copied = dispatchUntil(
            [&] { return frame.ready || frame.failed || session.stopped; }, kCaptureTimeout, what);
        ext_image_copy_capture_frame_v1_destroy(copy);
        IRIS_RETURN_IF_ERROR(copied);
        if (frame.failed || !frame.ready) {
            if (session.stopped ||
                frame.reason == EXT_IMAGE_COPY_CAPTURE_FRAME_V1_FAILURE_REASON_STOPPED) {
                return sessionStopped(what);
            }
            constraintsChanged =
                frame.reason == EXT_IMAGE_COPY_CAPTURE_FRAME_V1_FAILURE_REASON_BUFFER_CONSTRAINTS;
            return Status::ioError(what + (constraintsChanged
                                               ? ": the buffer no longer fits the output (its mode "
                                                 "changed during the copy)"
                                               : ": the copy failed"));
        }
        Result<cv::Mat> image =
            convertToBgr(shm.bytes(), format, static_cast<int>(session.width),
                         static_cast<int>(session.height), static_cast<int>(stride), false);
        if (!image) return image.status();
        // The frame's transform is the output's, in wl_output's sense (what wlroots sends).
        return applyOutputTransform(*image, frame.transform);
    };

    bool constraintsChanged = false;
    Result<cv::Mat> image = copyOnce(constraintsChanged);
    if (!image && constraintsChanged) {
        // The compositor sends the new constraints with the failure; once more with them.
        Status synced = roundtrip(what);
        constraintsChanged = false;
        image = synced.isOk() ? copyOnce(constraintsChanged) : Result<cv::Mat>(synced);
    }
    ext_image_copy_capture_session_v1_destroy(proxy);
    ext_image_capture_source_v1_destroy(source);
    return image;
}

Result<cv::Mat> WaylandConnection::captureWithScreencopy(const WaylandOutput& output,
                                                         const std::string& what) {
    ScreencopyFrame frame;
    // With the pointer, always: compositors that draw it in software (the headless backend)
    // cannot leave it out, so leaving it out elsewhere would make observations differ by
    // compositor.
    zwlr_screencopy_frame_v1* proxy =
        zwlr_screencopy_manager_v1_capture_output(m_screencopy, 1, output.output);
    zwlr_screencopy_frame_v1_add_listener(proxy, &kScreencopyEvents, &frame);
    const bool announcesDone = zwlr_screencopy_frame_v1_get_version(proxy) >= 3;
    ShmBuffer shm;
    Status copied = dispatchUntil(
        [&] { return frame.failed || (announcesDone ? frame.buffersDone : !frame.offers.empty()); },
        kCaptureTimeout, what);
    Result<ScreencopyFrame::Offer> offer =
        copied.isOk() ? chooseOffer(frame, what) : Result<ScreencopyFrame::Offer>(copied);
    if (offer) {
        copied = allocateShm(shm, m_shm, offer->format, offer->width, offer->height, offer->stride,
                             what);
    }
    if (offer && copied.isOk()) {
        zwlr_screencopy_frame_v1_copy(proxy, shm.buffer);
        copied = dispatchUntil([&] { return frame.ready || frame.failed; }, kCaptureTimeout, what);
    }
    zwlr_screencopy_frame_v1_destroy(proxy);
    if (!offer) return offer.status();
    IRIS_RETURN_IF_ERROR(copied);
    if (frame.failed) {
        return Status::ioError(
            what + ": the copy failed (the output may have been disabled or unplugged)");
    }
    Result<cv::Mat> image =
        convertToBgr(shm.bytes(), offer->format, static_cast<int>(offer->width),
                     static_cast<int>(offer->height), static_cast<int>(offer->stride),
                     (frame.flags & ZWLR_SCREENCOPY_FRAME_V1_FLAGS_Y_INVERT) != 0);
    if (!image) return image.status();
    return applyOutputTransform(*image, output.transform);
}

}  // namespace iris::agent
