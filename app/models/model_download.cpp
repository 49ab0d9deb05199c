#include "app/models/model_download.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sha256.h"
#include "base/strings.h"

namespace iris::app::models {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// One part of the file: bytes [begin, end), of which [begin, begin + done) are on disk.
struct Range {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::uint64_t done = 0;
    bool complete() const { return begin + done >= end; }
};

// What one HTTP exchange ended with (after the redirects).
struct Response {
    CURLcode code = CURLE_OK;
    std::string curlMessage;
    long status = 0;
    std::string retryAfter;
    std::string contentRange;
    std::int64_t contentLength = -1;
};

std::string hostOf(const std::string& url) {
    std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> parsed(curl_url(), curl_url_cleanup);
    if (!parsed || curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK)
        return {};
    char* host = nullptr;
    char* port = nullptr;
    std::string text;
    if (curl_url_get(parsed.get(), CURLUPART_HOST, &host, 0) == CURLUE_OK) text = host;
    if (curl_url_get(parsed.get(), CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK)
        text += std::string(":") + port;
    curl_free(host);
    curl_free(port);
    return asciiLower(text);
}

// Content-Range "bytes A-B/T": A and T (T is 0 when "*").
std::optional<std::pair<std::uint64_t, std::uint64_t>> parseContentRange(std::string_view text) {
    text = trim(text);
    if (!text.starts_with("bytes ")) return std::nullopt;
    unsigned long long first = 0, last = 0, total = 0;
    const std::string copy(text.substr(6));
    if (std::sscanf(copy.c_str(), "%llu-%llu/%llu", &first, &last, &total) == 3)
        return std::pair<std::uint64_t, std::uint64_t>(first, total);
    if (std::sscanf(copy.c_str(), "%llu-%llu/*", &first, &last) == 2)
        return std::pair<std::uint64_t, std::uint64_t>(first, 0);
    return std::nullopt;
}

std::string rangesPath(const fs::path& part) {
    return part.string() + ".ranges";
}

// The record of a parallel download: "total T" and one "begin end done" line per range.
std::optional<std::vector<Range>> readRanges(const fs::path& file, std::uint64_t& total) {
    std::ifstream in(file);
    if (!in) return std::nullopt;
    std::string word;
    if (!(in >> word >> total) || word != "total") return std::nullopt;
    std::vector<Range> ranges;
    Range r;
    while (in >> r.begin >> r.end >> r.done) {
        if (r.begin > r.end || r.done > r.end - r.begin || r.end > total) return std::nullopt;
        ranges.push_back(r);
    }
    if (ranges.empty()) return std::nullopt;
    return ranges;
}

bool writeRanges(const fs::path& file, std::uint64_t total, const std::vector<Range>& ranges) {
    const fs::path temporary = file.string() + ".tmp";
    {
        std::ofstream out(temporary, std::ios::trunc);
        out << "total " << total << '\n';
        for (const Range& r : ranges)
            out << r.begin << ' ' << r.end << ' ' << r.done << '\n';
        if (!out.flush()) return false;
    }
    std::error_code error;
    fs::rename(temporary, file, error);
    return !error;
}

class FileDescriptor {
public:
    explicit FileDescriptor(int fd) : m_fd(fd) {}
    ~FileDescriptor() {
        if (m_fd >= 0) ::close(m_fd);
    }
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    int get() const { return m_fd; }

private:
    int m_fd;
};

// The state every range's thread shares: the file, the progress, the first error.
class Transfer {
public:
    Transfer(const DownloadRequest& request, int fd) : m_request(request), m_fd(fd) {}

    const DownloadRequest& request() const { return m_request; }
    int fd() const { return m_fd; }

    bool stopped() const {
        return m_failed.load() || (m_request.cancel && m_request.cancel->load());
    }
    void fail(Status status) {
        std::lock_guard lock(m_mutex);
        if (m_error.isOk()) m_error = std::move(status);
        m_failed = true;
    }
    Status error() const {
        std::lock_guard lock(m_mutex);
        return m_error;
    }

    void start(std::uint64_t done, std::uint64_t total) {
        m_done = done;
        m_resumed = done;
        m_total = total;
        m_samples.clear();
        report(true);
    }
    void setTotal(std::uint64_t total) { m_total = total; }
    void add(std::uint64_t bytes) {
        m_done += bytes;
        report(false);
    }
    void restart() {
        m_done = 0;
        report(true);
    }
    void finish() { report(true); }

    // Ranges of a parallel download, recorded after the data they claim is on disk.
    std::vector<Range> ranges;
    std::uint64_t rangesTotal = 0;
    fs::path rangesFile;
    void recordRange(std::size_t index, std::uint64_t done) {
        std::lock_guard lock(m_rangesMutex);
        if (::fdatasync(m_fd) != 0) return;  // an older record is still true
        ranges[index].done = done;
        writeRanges(rangesFile, rangesTotal, ranges);
    }

private:
    void report(bool force) {
        if (!m_request.onProgress) return;
        std::lock_guard lock(m_progressMutex);
        const Clock::time_point now = Clock::now();
        if (!force && now - m_lastReport < std::chrono::milliseconds(250)) return;
        m_lastReport = now;
        DownloadProgress progress;
        progress.done = m_done.load();
        progress.total = m_total.load();
        progress.resumed = m_resumed;
        m_samples.emplace_back(now, progress.done);
        while (m_samples.size() > 2 && now - m_samples.front().first > std::chrono::seconds(5))
            m_samples.pop_front();
        const double seconds = std::chrono::duration<double>(now - m_samples.front().first).count();
        if (seconds > 0.2 && progress.done >= m_samples.front().second)
            progress.bytesPerSecond = double(progress.done - m_samples.front().second) / seconds;
        m_request.onProgress(progress);
    }

    const DownloadRequest& m_request;
    int m_fd;
    std::atomic<bool> m_failed = false;
    mutable std::mutex m_mutex;
    Status m_error;
    std::mutex m_progressMutex;
    std::mutex m_rangesMutex;
    std::atomic<std::uint64_t> m_done = 0;
    std::atomic<std::uint64_t> m_total = 0;
    std::uint64_t m_resumed = 0;
    Clock::time_point m_lastReport{};
    std::deque<std::pair<Clock::time_point, std::uint64_t>> m_samples;
};

// Where one exchange puts the body of a 200/206 answer: called with the status and bytes;
// returns false to stop the transfer.
using BodySink = std::function<bool(long status, const char* data, std::size_t size)>;

struct ExchangeState {
    Response* response;
    const BodySink* sink;
    Transfer* transfer;
    bool sinkRefused = false;
};

std::size_t onHeader(char* data, std::size_t size, std::size_t count, void* user) {
    auto* state = static_cast<ExchangeState*>(user);
    const std::string_view line(data, size * count);
    if (line.starts_with("HTTP/")) {  // a new answer (after a 1xx or a redirect)
        const std::size_t space = line.find(' ');
        state->response->status = space == std::string_view::npos
                                      ? 0
                                      : std::atol(std::string(line.substr(space + 1)).c_str());
        state->response->retryAfter.clear();
        state->response->contentRange.clear();
        state->response->contentLength = -1;
        return size * count;
    }
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return size * count;
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = trim(line.substr(colon + 1));
    if (equalsIgnoringAsciiCase(name, "retry-after")) state->response->retryAfter = value;
    if (equalsIgnoringAsciiCase(name, "content-range")) state->response->contentRange = value;
    if (equalsIgnoringAsciiCase(name, "content-length"))
        state->response->contentLength = std::atoll(std::string(value).c_str());
    return size * count;
}

std::size_t onBody(char* data, std::size_t size, std::size_t count, void* user) {
    auto* state = static_cast<ExchangeState*>(user);
    const long status = state->response->status;
    if (status != 200 && status != 206) return size * count;  // an error page or a redirect's
    if (!(*state->sink)(status, data, size * count)) {
        state->sinkRefused = true;
        return 0;
    }
    return size * count;
}

int onTransferInfo(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return static_cast<ExchangeState*>(user)->transfer->stopped() ? 1 : 0;
}

bool isRedirect(long status) {
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// One GET of `url` (with "Range: bytes=first-[last]" when `first` is set), following redirects
// by hand so that the token goes to the first host only.
Response exchange(Transfer& transfer, std::optional<std::uint64_t> first,
                  std::optional<std::uint64_t> last, const BodySink& sink) {
    const DownloadRequest& request = transfer.request();
    Response response;
    std::string url = request.url;
    const std::string firstHost = hostOf(url);
    for (int redirects = 0; redirects <= 10; ++redirects) {
        std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(),
                                                                 curl_easy_cleanup);
        if (!curl) {
            response.code = CURLE_FAILED_INIT;
            return response;
        }
        response = Response{};
        ExchangeState state{&response, &sink, &transfer};
        char message[CURL_ERROR_SIZE] = {};
        curl_slist* headers = nullptr;
        std::string authorization;
        if (!request.token.empty() && hostOf(url) == firstHost) {
            authorization = "Authorization: Bearer " + request.token;
            headers = curl_slist_append(headers, authorization.c_str());
        }
        std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headerList(headers,
                                                                               curl_slist_free_all);
        std::string range;
        if (first) {
            range = std::to_string(*first) + "-" + (last ? std::to_string(*last) : "");
            curl_easy_setopt(curl.get(), CURLOPT_RANGE, range.c_str());
        }
        curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
        curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(curl.get(), CURLOPT_USERAGENT, "iris-models");
        curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headerList.get());
        curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT, request.connectTimeoutS);
        curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_LIMIT, 1024L);
        curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_TIME, request.lowSpeedTimeoutS);
        curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, message);
        curl_easy_setopt(curl.get(), CURLOPT_HEADERFUNCTION, onHeader);
        curl_easy_setopt(curl.get(), CURLOPT_HEADERDATA, &state);
        curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, onBody);
        curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &state);
        curl_easy_setopt(curl.get(), CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(curl.get(), CURLOPT_XFERINFOFUNCTION, onTransferInfo);
        curl_easy_setopt(curl.get(), CURLOPT_XFERINFODATA, &state);
        response.code = curl_easy_perform(curl.get());
        if (state.sinkRefused) response.code = CURLE_WRITE_ERROR;
        response.curlMessage = message[0] ? message : curl_easy_strerror(response.code);
        if (response.code != CURLE_OK || !isRedirect(response.status)) return response;
        char* location = nullptr;
        curl_easy_getinfo(curl.get(), CURLINFO_REDIRECT_URL, &location);
        if (!location) return response;
        url = location;
    }
    response.code = CURLE_TOO_MANY_REDIRECTS;
    response.curlMessage = "more than 10 redirects";
    return response;
}

// Waits `seconds`, waking early when the transfer stops. False when it stopped.
bool waitFor(Transfer& transfer, double seconds) {
    const Clock::time_point until =
        Clock::now() + std::chrono::milliseconds(std::int64_t(seconds * 1000));
    while (Clock::now() < until) {
        if (transfer.stopped()) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return !transfer.stopped();
}

bool writeAll(int fd, const char* data, std::size_t size, std::uint64_t offset) {
    while (size > 0) {
        const ssize_t n = ::pwrite(fd, data, size, off_t(offset));
        if (n <= 0) return false;
        data += n;
        size -= std::size_t(n);
        offset += std::uint64_t(n);
    }
    return true;
}

Status cancelledStatus(const DownloadRequest& request) {
    return Status::cancelled(request.url + ": stopped; " + request.target.string() +
                             ".part keeps the bytes so far for the next pull");
}

// What an HTTP error status means for the attempt loop: a final Status, or nullopt when the
// request should be tried again (after `wait` seconds, when Retry-After said).
std::optional<Status> classifyStatus(const DownloadRequest& request, const Response& response,
                                     double& wait) {
    const long status = response.status;
    if (status == 404)
        return Status::notFound(request.url + ": HTTP 404 (not found): no such repository or file");
    if (status == 401 || status == 403) {
        return Status::ioError(request.url + ": HTTP " + std::to_string(status) +
                               (request.token.empty()
                                    ? " (the repository may need a token: set HF_TOKEN)"
                                    : " (the token in HF_TOKEN / IRIS_HF_TOKEN was refused)"));
    }
    if (status == 429 || status == 503) {
        const double after = parseRetryAfter(response.retryAfter, std::int64_t(std::time(nullptr)));
        if (after > request.maxRetryWaitS) {
            return Status::unavailable(request.url + ": HTTP " + std::to_string(status) +
                                       ", try again in " + std::to_string(std::int64_t(after)) +
                                       " s (Retry-After)");
        }
        if (after >= 0) wait = after;
        return std::nullopt;
    }
    if (status >= 500) return std::nullopt;
    return Status::ioError(request.url + ": HTTP " + std::to_string(status));
}

// Fetches bytes [offset, end) (end 0: to the end of the file) into the file at their offsets,
// trying again after dropped connections, 5xx and 429. `restartable`: a server that ignores the
// Range and answers 200 makes the download start over at byte 0 (a single-range download);
// otherwise that is an error. `onWritten` hears the new `offset` after each block.
Status fetchRange(Transfer& transfer, std::uint64_t& offset, std::uint64_t end, bool restartable,
                  const std::function<void(std::uint64_t)>& onWritten) {
    const DownloadRequest& request = transfer.request();
    double backoff = request.firstRetryWaitS;
    Status last = Status::ioError(request.url + ": no attempt made");
    for (int attempt = 0; attempt < std::max(1, request.attempts); ++attempt) {
        if (transfer.stopped()) return cancelledStatus(request);
        if (end != 0 && offset >= end) return Status::ok();
        bool writeFailed = false;
        bool rangeIgnored = false;
        bool firstBytes = true;
        bool rangeComplete = false;
        const BodySink sink = [&](long status, const char* data, std::size_t size) {
            const bool first = std::exchange(firstBytes, false);
            if (first && status == 200 && offset != 0) {
                if (!restartable) {
                    rangeIgnored = true;
                    return false;
                }
                // The server sends the whole file: start over.
                offset = 0;
                if (::ftruncate(transfer.fd(), 0) != 0) {
                    writeFailed = true;
                    return false;
                }
                transfer.restart();
            }
            if (end != 0) size = std::size_t(std::min<std::uint64_t>(size, end - offset));
            if (!writeAll(transfer.fd(), data, size, offset)) {
                writeFailed = true;
                return false;
            }
            offset += size;
            transfer.add(size);
            if (onWritten) onWritten(offset);
            // A whole file sent for a range (range 0 of a server that ignores Range): the rest is
            // another range's.
            if (end != 0 && offset >= end) {
                rangeComplete = true;
                return false;
            }
            return true;
        };
        std::optional<std::uint64_t> first, lastByte;
        if (offset > 0 || end != 0) first = offset;
        if (end != 0) lastByte = end - 1;
        const Response response = exchange(transfer, first, lastByte, sink);
        if (writeFailed) {
            return Status::ioError(request.target.string() + ".part: writing failed: " +
                                   std::strerror(errno) + " (disk full?)");
        }
        if (rangeIgnored)
            return Status::unsupported(request.url + ": the server ignored the Range request");
        if (rangeComplete) return Status::ok();
        if (transfer.stopped()) return cancelledStatus(request);
        if (response.code == CURLE_OK && response.status == 416 && end == 0 && offset > 0 &&
            request.expectedSize == offset) {
            return Status::ok();  // everything was there already
        }
        double wait = backoff;
        if (response.code != CURLE_OK) {
            last = Status::ioError(request.url + ": " + response.curlMessage + " (after " +
                                   std::to_string(offset) + " bytes)");
        } else if (response.status == 200 || response.status == 206) {
            if (end == 0 || offset >= end) return Status::ok();
            last = Status::ioError(request.url + ": the answer ended after " +
                                   std::to_string(offset) + " bytes");
        } else {
            if (std::optional<Status> final = classifyStatus(request, response, wait))
                return *final;
            last = Status::unavailable(request.url + ": HTTP " + std::to_string(response.status));
        }
        if (attempt + 1 < request.attempts && !waitFor(transfer, wait))
            return cancelledStatus(request);
        backoff = std::min(backoff * 2, 30.0);
    }
    return last;
}

struct Probe {
    bool ranges = false;
    std::uint64_t total = 0;
};

// Whether the server answers Range requests with 206, and the file's size.
Result<Probe> probe(Transfer& transfer) {
    const DownloadRequest& request = transfer.request();
    double backoff = request.firstRetryWaitS;
    Status last = Status::ok();
    for (int attempt = 0; attempt < std::max(1, request.attempts); ++attempt) {
        std::string body;
        const BodySink sink = [&](long status, const char* data, std::size_t size) {
            if (status != 206) return false;  // the whole file: no ranges
            body.append(data, size);
            return body.size() <= 1;
        };
        const Response response = exchange(transfer, 0, 0, sink);
        if (transfer.stopped()) return cancelledStatus(request);
        Probe result;
        if (response.status == 206) {
            if (const auto range = parseContentRange(response.contentRange)) {
                result.ranges = range->first == 0 && range->second > 0;
                result.total = range->second;
            }
            return result;
        }
        if (response.status == 200) {
            if (response.contentLength > 0) result.total = std::uint64_t(response.contentLength);
            return result;
        }
        double wait = backoff;
        if (response.code != CURLE_OK && response.status == 0) {
            last = Status::ioError(request.url + ": " + response.curlMessage);
        } else if (std::optional<Status> final = classifyStatus(request, response, wait)) {
            return *final;
        } else {
            last = Status::unavailable(request.url + ": HTTP " + std::to_string(response.status));
        }
        if (attempt + 1 < request.attempts && !waitFor(transfer, wait))
            return cancelledStatus(request);
        backoff = std::min(backoff * 2, 30.0);
    }
    return last;
}

Status checkFreeSpace(const fs::path& part, std::uint64_t needed) {
    std::error_code error;
    const fs::space_info space = fs::space(part.parent_path(), error);
    if (error || space.available >= needed) return Status::ok();
    return Status::ioError(part.parent_path().string() +
                           ": not enough free disk space: " + std::to_string(needed) +
                           " bytes needed, " + std::to_string(space.available) + " available");
}

// The parallel path: `ranges` (from a record, or planned now) fetched on one thread each.
Status fetchRanges(Transfer& transfer) {
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < transfer.ranges.size(); ++i) {
        if (transfer.ranges[i].complete()) continue;
        threads.emplace_back([&transfer, i] {
            const Range range = transfer.ranges[i];
            std::uint64_t offset = range.begin + range.done;
            std::uint64_t recorded = offset;
            const Status status =
                fetchRange(transfer, offset, range.end, false, [&](std::uint64_t at) {
                    if (at - recorded >= (std::uint64_t(8) << 20) || at == range.end) {
                        transfer.recordRange(i, at - range.begin);
                        recorded = at;
                    }
                });
            if (offset != recorded) transfer.recordRange(i, offset - range.begin);
            if (!status.isOk()) transfer.fail(status);
        });
    }
    for (std::thread& thread : threads)
        thread.join();
    return transfer.error();
}

// The partial file of a download and the record of its parallel ranges beside it.
struct PartFiles {
    fs::path part;
    fs::path ranges;
};

Status truncated(int fd, const fs::path& part, std::uint64_t size) {
    if (::ftruncate(fd, off_t(size)) != 0)
        return Status::ioError(part.string() + ": " + std::strerror(errno));
    return Status::ok();
}

// What a download starts from: `have` bytes that are a prefix of the file, or the record of a
// parallel download (its ranges and the file's size). A part whose bytes cannot be trusted (a
// parallel download's without a usable record, one longer than the file) is emptied.
struct PartState {
    std::uint64_t have = 0;
    std::optional<std::vector<Range>> recorded;
    std::uint64_t recordedTotal = 0;
};

Result<PartState> reconcilePart(const DownloadRequest& request, int fd, const PartFiles& files) {
    struct stat info {};
    if (::fstat(fd, &info) != 0)
        return Status::ioError(files.part.string() + ": " + std::strerror(errno));
    PartState state;
    state.have = std::uint64_t(info.st_size);
    state.recorded = readRanges(files.ranges, state.recordedTotal);
    if (state.recorded && request.expectedSize != 0 && state.recordedTotal != request.expectedSize)
        state.recorded.reset();  // a record of another file: start over
    std::error_code error;
    if (!state.recorded && fs::exists(files.ranges, error)) {
        state.have = 0;  // a parallel download's file without a usable record: bytes unknown
        IRIS_RETURN_IF_ERROR(truncated(fd, files.part, 0));
        fs::remove(files.ranges, error);
    }
    if (request.expectedSize != 0 && state.have > request.expectedSize && !state.recorded) {
        state.have = 0;  // longer than the file: not a prefix of it
        IRIS_RETURN_IF_ERROR(truncated(fd, files.part, 0));
    }
    return state;
}

// Resumes a parallel download from its record; the file's size.
Result<std::uint64_t> resumeRanges(Transfer& transfer, const PartState& state,
                                   const PartFiles& files) {
    transfer.ranges = *state.recorded;
    transfer.rangesTotal = state.recordedTotal;
    std::uint64_t done = 0;
    for (const Range& r : transfer.ranges)
        done += r.done;
    IRIS_RETURN_IF_ERROR(checkFreeSpace(files.part, 0));
    transfer.start(done, state.recordedTotal);
    const Status ranged = fetchRanges(transfer);
    if (ranged.code() != StatusCode::Unsupported) {
        IRIS_RETURN_IF_ERROR(ranged);
        return state.recordedTotal;
    }
    // The server no longer answers ranges: its bytes come again, from the start.
    IRIS_RETURN_IF_ERROR(truncated(transfer.fd(), files.part, 0));
    std::error_code error;
    fs::remove(files.ranges, error);
    Transfer again(transfer.request(), transfer.fd());
    again.start(0, state.recordedTotal);
    std::uint64_t offset = 0;
    IRIS_RETURN_IF_ERROR(fetchRange(again, offset, 0, true, {}));
    return state.recordedTotal;
}

// A download without a record: one connection from `have`, or, for a large file from a server
// that answers ranges, the rest split into `connections` ranges at once (the file at its full
// size from the start, and a record saying which bytes are real). The file's size.
Result<std::uint64_t> fetchFresh(Transfer& transfer, std::uint64_t have, const PartFiles& files) {
    const DownloadRequest& request = transfer.request();
    std::uint64_t total = request.expectedSize;
    bool parallel = false;
    const bool large =
        request.expectedSize == 0 || request.expectedSize >= request.parallelThreshold;
    if (request.connections > 1 && large &&
        (request.expectedSize == 0 || have < request.expectedSize)) {
        Result<Probe> probed = probe(transfer);
        IRIS_RETURN_IF_ERROR(probed.status());
        if (total == 0) total = probed->total;
        parallel = probed->ranges && total >= request.parallelThreshold && total > have;
    }
    if (total != 0)
        IRIS_RETURN_IF_ERROR(checkFreeSpace(files.part, total > have ? total - have : 0));
    transfer.start(have, total);
    if (!parallel) {
        std::uint64_t offset = have;
        IRIS_RETURN_IF_ERROR(fetchRange(transfer, offset, 0, true, {}));
        return total == 0 ? offset : total;
    }
    transfer.rangesTotal = total;
    transfer.ranges.push_back({0, have, have});
    const std::uint64_t rest = total - have;
    const std::uint64_t count = std::uint64_t(std::max(1, request.connections));
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::uint64_t begin = have + rest * i / count;
        const std::uint64_t end = have + rest * (i + 1) / count;
        if (end > begin) transfer.ranges.push_back({begin, end, 0});
    }
    if (!writeRanges(files.ranges, total, transfer.ranges))
        return Status::ioError(files.ranges.string() + ": cannot write");
    IRIS_RETURN_IF_ERROR(truncated(transfer.fd(), files.part, total));
    IRIS_RETURN_IF_ERROR(fetchRanges(transfer));
    return total;
}

// The finished part checked (its size, its SHA-256) and renamed to the target; a part that is
// not the file is deleted and says so, one that is short stays to be resumed.
Status publish(const DownloadRequest& request, int fd, const PartFiles& files) {
    std::error_code error;
    const auto discard = [&](const std::string& what) {
        fs::remove(files.part, error);
        fs::remove(files.ranges, error);
        return Status::corrupt(request.url + ": " + what + "; deleted the partial file " +
                               files.part.string() + ", the next pull starts over");
    };
    if (::fdatasync(fd) != 0)
        return Status::ioError(files.part.string() + ": " + std::strerror(errno) + " (disk full?)");
    struct stat info {};
    if (::fstat(fd, &info) != 0)
        return Status::ioError(files.part.string() + ": " + std::strerror(errno));
    const std::uint64_t size = std::uint64_t(info.st_size);
    if (request.expectedSize != 0 && size != request.expectedSize) {
        if (size < request.expectedSize) {
            return Status::ioError(request.url + ": the server sent " + std::to_string(size) +
                                   " of " + std::to_string(request.expectedSize) +
                                   " bytes; pull again to resume");
        }
        return discard("size mismatch: expected " + std::to_string(request.expectedSize) +
                       " bytes, got " + std::to_string(size));
    }
    if (!request.expectedSha256.empty()) {
        Result<std::string> digest = sha256OfFile(files.part);
        IRIS_RETURN_IF_ERROR(digest.status());
        if (*digest != asciiLower(request.expectedSha256)) {
            return discard("SHA-256 mismatch: expected " + asciiLower(request.expectedSha256) +
                           ", got " + *digest);
        }
    }
    fs::rename(files.part, request.target, error);
    if (error) {
        return Status::ioError(files.part.string() + ": cannot rename to " +
                               request.target.string() + ": " + error.message());
    }
    fs::remove(files.ranges, error);
    return Status::ok();
}

}  // namespace

double parseRetryAfter(const std::string& value, std::int64_t nowUnix) {
    const std::string_view text = trim(value);
    if (text.empty()) return -1;
    if (std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return text.size() > 9 ? 1e9 : double(std::stoll(std::string(text)));
    // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" (month names in English whatever the locale).
    char weekday[4] = {}, month[4] = {};
    int day = 0, year = 0, hour = 0, minute = 0, second = 0;
    const std::string copy(text);
    if (std::sscanf(copy.c_str(), "%3s, %d %3s %d %d:%d:%d GMT", weekday, &day, month, &year, &hour,
                    &minute, &second) != 7) {
        return -1;
    }
    static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    int monthIndex = -1;
    for (int i = 0; i < 12; ++i)
        if (equalsIgnoringAsciiCase(month, kMonths[i])) monthIndex = i;
    if (monthIndex < 0 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return -1;
    std::tm tm{};
    tm.tm_year = year - 1900;
    tm.tm_mon = monthIndex;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = minute;
    tm.tm_sec = second;
    const std::int64_t at = std::int64_t(::timegm(&tm));
    return double(std::max<std::int64_t>(0, at - nowUnix));
}

Result<std::string> sha256OfFile(const fs::path& path,
                                 const std::function<void(std::uint64_t)>& onBytes) {
    FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0)
        return Status::ioError(path.string() + ": cannot open: " + std::strerror(errno));
    Sha256 hash;
    std::vector<std::uint8_t> buffer(std::size_t(4) << 20);
    std::uint64_t total = 0;
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
        if (n < 0) return Status::ioError(path.string() + ": read failed: " + std::strerror(errno));
        if (n == 0) break;
        hash.update(std::span<const std::uint8_t>(buffer.data(), std::size_t(n)));
        total += std::uint64_t(n);
        if (onBytes) onBytes(total);
    }
    return toHex(hash.finish());
}

Status downloadModelFile(const DownloadRequest& request) {
    if (!request.url.starts_with("http://") && !request.url.starts_with("https://"))
        return Status::invalidArgument(request.url + ": not an http(s) URL");
    std::error_code error;
    fs::create_directories(request.target.parent_path(), error);
    const PartFiles files{request.target.string() + ".part",
                          rangesPath(request.target.string() + ".part")};
    FileDescriptor fd(::open(files.part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (fd.get() < 0)
        return Status::ioError(files.part.string() +
                               ": cannot open for writing: " + std::strerror(errno));
    Result<PartState> state = reconcilePart(request, fd.get(), files);
    IRIS_RETURN_IF_ERROR(state.status());
    Transfer transfer(request, fd.get());
    transfer.rangesFile = files.ranges;
    Result<std::uint64_t> total = state->recorded ? resumeRanges(transfer, *state, files)
                                                  : fetchFresh(transfer, state->have, files);
    IRIS_RETURN_IF_ERROR(total.status());
    transfer.setTotal(*total);
    transfer.finish();
    return publish(request, fd.get(), files);
}

}  // namespace iris::app::models
