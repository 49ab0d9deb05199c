#pragma once
// One model file over http(s) into the store, the way multi-gigabyte files need it: resumable
// (the bytes so far are kept in `<target>.part`, never under the final name), redirects followed
// (the token goes to the first host only), several ranges at once where the server allows it,
// 429/503 answered by waiting as Retry-After says, and the size and SHA-256 checked before the
// file is renamed into place. Library code: no terminal output, progress goes to a callback.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "base/status.h"

namespace iris::app::models {

struct DownloadProgress {
    std::uint64_t done = 0;     // bytes of the file on disk so far, resumed ones included
    std::uint64_t total = 0;    // 0 when unknown
    std::uint64_t resumed = 0;  // bytes that were already there when this download started
    double bytesPerSecond = 0;  // over the last few seconds
};

struct DownloadRequest {
    std::string url;
    std::filesystem::path target;    // written as target + ".part", renamed when verified
    std::uint64_t expectedSize = 0;  // 0: unknown (taken from the server)
    std::string expectedSha256;      // 64 lowercase hex digits; empty: not checked
    // Sent as "Authorization: Bearer ..." to the URL's own host only, never to a host a redirect
    // leads to (the hub redirects files to a CDN). Never part of a message.
    std::string token;
    // Files at least this large are fetched as `connections` ranges at once when the server
    // answers a Range request with 206.
    std::uint64_t parallelThreshold = std::uint64_t(256) << 20;
    int connections = 4;
    int attempts = 6;              // per range: dropped connections, 5xx, 429
    double maxRetryWaitS = 120;    // a longer Retry-After is an error (Unavailable)
    double firstRetryWaitS = 0.5;  // doubled after each failed attempt without Retry-After
    long connectTimeoutS = 30;
    long lowSpeedTimeoutS = 60;  // a connection slower than 1 KiB/s this long is dropped
    // Polled during the transfer; once true the download stops with Cancelled and keeps the
    // partial file for the next time.
    const std::atomic<bool>* cancel = nullptr;
    // Called from the downloading threads, at most a few times a second, and once at the end.
    std::function<void(const DownloadProgress&)> onProgress;
};

// Downloads request.url to request.target, resuming `<target>.part` (and its
// `<target>.part.ranges` record of parallel ranges) when they are there. Before the rename the
// size and the SHA-256 are checked; a mismatch deletes the partial file and says so (Corrupt).
// Errors name the URL (without the token): NotFound for 404, Cancelled, Unavailable when the
// server keeps answering 429/503, IoError for the rest (disk full, connection failures after
// every attempt, an HTTP error); the partial file stays for the next call except after a
// mismatch. Free disk space for the remaining bytes is checked before anything is fetched.
// The caller serializes downloads of one target (ModelStore locks the blob).
Status downloadModelFile(const DownloadRequest& request);

// Retry-After: delay-seconds or an HTTP date (RFC 9110), as seconds from `nowUnix`; -1 when it is
// neither.
double parseRetryAfter(const std::string& value, std::int64_t nowUnix);

// The SHA-256 of a file's content as 64 hex digits, reading it in large blocks. `onBytes` (if
// set) hears the bytes read so far.
Result<std::string> sha256OfFile(const std::filesystem::path& path,
                                 const std::function<void(std::uint64_t)>& onBytes = {});

}  // namespace iris::app::models
