#pragma once
// A stand-in for the Hugging Face hub on loopback, for the download and pull tests: the tree
// listing (paged, with LFS sizes and SHA-256), /resolve/ redirecting to a second host name
// (localhost instead of 127.0.0.1) that serves the bytes, Range requests, and faults on demand.
// A small HTTP/1.1 server over raw sockets, one request per connection, so that a test controls
// every byte: where a connection drops, whether Range is honoured, how many bytes went out.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace iris::app::models::testing {

struct FakeFile {
    std::string path;
    std::string content;
    std::string listedSha256;  // what the listing says; empty: the content's real hash
};

class FakeHub {
public:
    FakeHub();
    ~FakeHub();
    FakeHub(const FakeHub&) = delete;
    FakeHub& operator=(const FakeHub&) = delete;

    std::string endpoint() const;  // http://127.0.0.1:PORT
    std::string cdnBase() const;   // http://localhost:PORT2

    std::string repo = "test/tiny-GGUF";
    std::vector<FakeFile> files;  // set before the first request
    int pageSize = 2;
    bool redirect = true;             // /resolve/ answers 302 to the CDN host
    std::atomic<bool> ranges = true;  // the CDN honours Range
    // The next `drops` file answers close the connection after `dropAfter` body bytes.
    std::atomic<int> drops = 0;
    std::atomic<std::uint64_t> dropAfter = 0;
    // The next `tooManyRequests` file requests get 429 with this Retry-After.
    std::atomic<int> tooManyRequests = 0;
    std::string retryAfter = "1";
    std::atomic<int> sleepPerChunkUs = 0;  // slows the CDN down (4 KiB chunks)

    std::atomic<std::uint64_t> bytesServed = 0;  // body bytes of files written to sockets
    std::atomic<int> fileRequests = 0;
    std::vector<std::string> hubAuthorizations();  // Authorization headers the hub saw
    std::vector<std::string> cdnAuthorizations();  // and the CDN

    static std::string sha256Hex(const std::string& content);

private:
    struct Listener {
        int fd = -1;
        int port = 0;
        std::thread thread;
    };
    void listen(Listener& listener, bool cdn);
    void serve(int fd, bool cdn);
    void answerHub(int fd, const std::string& target, const std::string& authorization);
    void answerFile(int fd, const FakeFile& file, const std::string& range);

    Listener m_hub, m_cdn;
    std::atomic<bool> m_stopping = false;
    std::mutex m_mutex;
    std::vector<std::string> m_hubAuthorizations, m_cdnAuthorizations;
    std::vector<std::thread> m_connections;
};

// Deterministic bytes for a file of `size`.
std::string fileContent(std::size_t size, unsigned seed);

}  // namespace iris::app::models::testing
