#include "tests/app/models/fake_hub.h"

#include <chrono>
#include <cstdio>
#include <cstring>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/sha256.h"
#include "base/strings.h"

namespace iris::app::models::testing {
namespace {

bool sendAll(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
        if (n <= 0) return false;
        data += n;
        size -= std::size_t(n);
    }
    return true;
}

bool sendText(int fd, const std::string& text) {
    return sendAll(fd, text.data(), text.size());
}

void answer(int fd, int status, const std::string& reason, const std::string& headers,
            const std::string& body) {
    sendText(fd, "HTTP/1.1 " + std::to_string(status) + " " + reason +
                     "\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\nConnection: close\r\n" + headers + "\r\n" + body);
}

std::string header(const std::string& request, std::string_view name) {
    std::size_t at = request.find("\r\n");
    while (at != std::string::npos && at + 2 < request.size()) {
        const std::size_t end = request.find("\r\n", at + 2);
        const std::string line = request.substr(at + 2, end - at - 2);
        const std::size_t colon = line.find(':');
        if (colon != std::string::npos && equalsIgnoringAsciiCase(line.substr(0, colon), name))
            return std::string(trim(line.substr(colon + 1)));
        at = end;
    }
    return {};
}

}  // namespace

std::string fileContent(std::size_t size, unsigned seed) {
    std::string bytes(size, '\0');
    std::uint32_t state = seed * 2654435761u + 1;
    for (char& c : bytes) {
        state = state * 1664525u + 1013904223u;
        c = char(state >> 24);
    }
    return bytes;
}

std::string FakeHub::sha256Hex(const std::string& content) {
    return toHex(Sha256::hash(std::string_view(content)));
}

FakeHub::FakeHub() {
    listen(m_hub, false);
    listen(m_cdn, true);
}

FakeHub::~FakeHub() {
    m_stopping = true;
    for (Listener* l : {&m_hub, &m_cdn}) {
        ::shutdown(l->fd, SHUT_RDWR);
        if (l->thread.joinable()) l->thread.join();
        ::close(l->fd);
    }
    std::vector<std::thread> connections;
    {
        std::lock_guard lock(m_mutex);
        connections.swap(m_connections);
    }
    for (std::thread& t : connections)
        if (t.joinable()) t.join();
}

std::string FakeHub::endpoint() const {
    return "http://127.0.0.1:" + std::to_string(m_hub.port);
}
std::string FakeHub::cdnBase() const {
    return "http://localhost:" + std::to_string(m_cdn.port);
}

std::vector<std::string> FakeHub::hubAuthorizations() {
    std::lock_guard lock(m_mutex);
    return m_hubAuthorizations;
}
std::vector<std::string> FakeHub::cdnAuthorizations() {
    std::lock_guard lock(m_mutex);
    return m_cdnAuthorizations;
}

void FakeHub::listen(Listener& listener, bool cdn) {
    listener.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    ::bind(listener.fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::listen(listener.fd, 64);
    socklen_t length = sizeof address;
    ::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&address), &length);
    listener.port = ntohs(address.sin_port);
    listener.thread = std::thread([this, &listener, cdn] {
        for (;;) {
            const int client = ::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC);
            if (client < 0) {
                if (m_stopping) return;
                continue;
            }
            std::lock_guard lock(m_mutex);
            m_connections.emplace_back([this, client, cdn] {
                serve(client, cdn);
                ::close(client);
            });
        }
    });
}

void FakeHub::serve(int fd, bool cdn) {
    std::string request;
    char buffer[4096];
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < 65536) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0) return;
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) return;
        request.append(buffer, std::size_t(n));
    }
    const std::size_t space = request.find(' ');
    const std::size_t space2 = request.find(' ', space + 1);
    const std::string target = request.substr(space + 1, space2 - space - 1);
    const std::string authorization = header(request, "authorization");
    {
        std::lock_guard lock(m_mutex);
        if (!authorization.empty())
            (cdn ? m_cdnAuthorizations : m_hubAuthorizations).push_back(authorization);
    }
    if (!cdn) return answerHub(fd, target, authorization);
    // /cdn/<path>
    for (const FakeFile& file : files) {
        if (target == "/cdn/" + file.path) return answerFile(fd, file, header(request, "range"));
    }
    answer(fd, 404, "Not Found", "", "no such file");
}

void FakeHub::answerHub(int fd, const std::string& target, const std::string&) {
    const std::string tree = "/api/models/" + repo + "/tree/main";
    if (target.starts_with(tree)) {
        std::size_t cursor = 0;
        if (const std::size_t at = target.find("cursor="); at != std::string::npos)
            cursor = std::stoul(target.substr(at + 7));
        nlohmann::json page = nlohmann::json::array();
        for (std::size_t i = cursor; i < files.size() && i < cursor + std::size_t(pageSize); ++i) {
            const FakeFile& file = files[i];
            nlohmann::json entry = {{"type", "file"},
                                    {"path", file.path},
                                    {"size", file.content.size()},
                                    {"oid", "0123abcd"}};
            if (file.path.ends_with(".gguf")) {
                entry["lfs"] = {{"oid", file.listedSha256.empty() ? sha256Hex(file.content)
                                                                  : file.listedSha256},
                                {"size", file.content.size()},
                                {"pointerSize", 134}};
            }
            page.push_back(entry);
        }
        if (cursor == 0) page.push_back({{"type", "directory"}, {"path", "docs"}, {"oid", "1"}});
        std::string headers = "Content-Type: application/json\r\n";
        if (cursor + std::size_t(pageSize) < files.size()) {
            headers += "Link: <" + endpoint() + tree +
                       "?recursive=true&cursor=" + std::to_string(cursor + std::size_t(pageSize)) +
                       ">; rel=\"next\"\r\n";
        }
        return answer(fd, 200, "OK", headers, page.dump());
    }
    const std::string resolve = "/" + repo + "/resolve/main/";
    if (target.starts_with(resolve)) {
        const std::string path = target.substr(resolve.size());
        for (const FakeFile& file : files) {
            if (file.path != path) continue;
            if (redirect)
                return answer(fd, 302, "Found", "Location: " + cdnBase() + "/cdn/" + path + "\r\n",
                              "");
            return answerFile(fd, file, "");
        }
        return answer(fd, 404, "Not Found", "X-Error-Code: EntryNotFound\r\n", "Entry not found");
    }
    answer(fd, 404, "Not Found", "", "Repository not found");
}

void FakeHub::answerFile(int fd, const FakeFile& file, const std::string& range) {
    ++fileRequests;
    if (tooManyRequests > 0) {
        --tooManyRequests;
        return answer(fd, 429, "Too Many Requests", "Retry-After: " + retryAfter + "\r\n",
                      "slow down");
    }
    std::uint64_t first = 0, last = file.content.size() - 1;
    bool partial = false;
    if (ranges && range.starts_with("bytes=")) {
        unsigned long long a = 0, b = 0;
        const int got = std::sscanf(range.c_str() + 6, "%llu-%llu", &a, &b);
        if (got >= 1) {
            if (a >= file.content.size()) {
                return answer(
                    fd, 416, "Range Not Satisfiable",
                    "Content-Range: bytes */" + std::to_string(file.content.size()) + "\r\n", "");
            }
            first = a;
            if (got == 2) last = std::min<std::uint64_t>(b, last);
            partial = true;
        }
    }
    const std::uint64_t length = last - first + 1;
    std::string head = partial ? "HTTP/1.1 206 Partial Content\r\n" : "HTTP/1.1 200 OK\r\n";
    head += "Content-Length: " + std::to_string(length) + "\r\nConnection: close\r\n";
    if (ranges) head += "Accept-Ranges: bytes\r\n";
    if (partial) {
        head += "Content-Range: bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" +
                std::to_string(file.content.size()) + "\r\n";
    }
    if (!sendText(fd, head + "\r\n")) return;
    std::uint64_t limit = length;
    if (drops > 0) {
        --drops;
        limit = std::min<std::uint64_t>(length, dropAfter);
    }
    constexpr std::uint64_t kChunk = 4096;
    for (std::uint64_t at = 0; at < limit; at += kChunk) {
        const std::uint64_t n = std::min(kChunk, limit - at);
        if (!sendAll(fd, file.content.data() + first + at, n)) return;
        bytesServed += n;
        if (const int us = sleepPerChunkUs; us > 0)
            std::this_thread::sleep_for(std::chrono::microseconds(us));
    }
}

}  // namespace iris::app::models::testing
