#include "app/serve/client_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace iris::app::serve {
namespace {

// An address and port as text, the way cpp-httplib reports them.
bool sameEndpoint(const sockaddr_storage& address, const std::string& host, int port) {
    char text[INET6_ADDRSTRLEN] = {};
    int actualPort = -1;
    if (address.ss_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
        if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) == nullptr) return false;
        actualPort = ntohs(in->sin_port);
    } else if (address.ss_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
        if (inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text) == nullptr) return false;
        actualPort = ntohs(in6->sin6_port);
    } else {
        return false;
    }
    return actualPort == port && host == text;
}

}  // namespace

ClientConnection::ClientConnection(const std::string& remoteAddress, int remotePort,
                                   const std::string& localAddress, int localPort) {
    if (remotePort < 0 || localPort < 0) return;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
        char* end = nullptr;
        const std::string name = entry.path().filename().string();
        const long fd = std::strtol(name.c_str(), &end, 10);
        if (end == name.c_str() || *end != '\0') continue;
        struct stat info {};
        if (fstat(int(fd), &info) != 0 || !S_ISSOCK(info.st_mode)) continue;
        sockaddr_storage peer{}, local{};
        socklen_t peerLength = sizeof peer, localLength = sizeof local;
        if (getpeername(int(fd), reinterpret_cast<sockaddr*>(&peer), &peerLength) != 0) continue;
        if (getsockname(int(fd), reinterpret_cast<sockaddr*>(&local), &localLength) != 0) continue;
        if (sameEndpoint(peer, remoteAddress, remotePort) &&
            sameEndpoint(local, localAddress, localPort)) {
            m_fd = int(fd);
            return;
        }
    }
}

bool ClientConnection::connected() const {
    if (m_fd < 0) return true;
    pollfd watch{m_fd, POLLRDHUP, 0};
    if (poll(&watch, 1, 0) <= 0) return true;
    return (watch.revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0;
}

}  // namespace iris::app::serve
