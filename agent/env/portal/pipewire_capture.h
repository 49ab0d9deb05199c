#pragma once
// The frames of a ScreenCast stream, read with libpipewire on the connection the portal opened
// (ScreenCast.OpenPipeWireRemote). Formats: SPA video/raw BGRx, RGBx, BGRA and RGBA in
// shared-memory buffers (memfd or plain memory); DMA-BUF buffers are refused at negotiation, so
// the compositor copies into memory Iris can read. PipeWire runs the stream on its own thread;
// the newest frame is kept, converted to 8-bit BGR (OpenCV's order, what observations hold).
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <opencv2/core/mat.hpp>

#include "base/status.h"

struct pw_thread_loop;
struct pw_context;
struct pw_core;
struct pw_stream;
struct spa_pod;

namespace iris::agent {

class PipeWireCapture {
public:
    // `fd`: the PipeWire connection (the capture owns and closes it); `nodeId`: the stream's
    // node (PortalStream::nodeId).
    static Result<std::unique_ptr<PipeWireCapture>> connect(int fd, std::uint32_t nodeId);
    ~PipeWireCapture();
    PipeWireCapture(const PipeWireCapture&) = delete;
    PipeWireCapture& operator=(const PipeWireCapture&) = delete;

    // The newest frame a process cycle delivered after `afterSequence` (0: any), waiting up to
    // `timeoutMs` for it. Fails when the stream stopped or failed, naming why.
    Result<cv::Mat> nextFrame(int timeoutMs, std::uint64_t afterSequence = 0);
    std::uint64_t frameSequence() const;  // how many frames arrived so far
    bool failed() const;                  // the stream reported an error or stopped

private:
    friend struct PipeWireCallbacks;  // libpipewire's C callbacks, in the .cpp

    PipeWireCapture() = default;
    void process();
    void formatChanged(const spa_pod* format);
    void fail(std::string message);

    pw_thread_loop* m_loop = nullptr;
    pw_context* m_context = nullptr;
    pw_core* m_core = nullptr;
    pw_stream* m_stream = nullptr;
    std::unique_ptr<struct PipeWireListeners> m_listeners;

    // Written on PipeWire's thread, read by the caller's.
    mutable std::mutex m_mutex;
    std::condition_variable m_arrived;
    std::uint32_t m_format = 0;  // spa_video_format of the negotiated stream
    int m_width = 0;
    int m_height = 0;
    cv::Mat m_frame;
    std::uint64_t m_sequence = 0;
    std::string m_error;  // set once the stream failed or stopped
};

}  // namespace iris::agent
