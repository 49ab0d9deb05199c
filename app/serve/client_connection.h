#pragma once
// Whether the client of a request that is answered whole (not streamed) is still connected.
// cpp-httplib (0.11, Debian 12's) hands a handler no way to tell: a streamed response learns it
// from its sink, a whole one only when writing the answer. So the connection's socket is found
// among the process's descriptors by its two addresses (unique while the handler runs, since
// cpp-httplib closes the socket only after the handler returns) and polled for the peer's
// hang-up. Linux only (/proc/self/fd, POLLRDHUP), like the rest of Iris.
#include <string>

namespace iris::app::serve {

class ClientConnection {
public:
    // The connection from remote (address, port) to local (address, port); not found (a
    // connection already gone, or addresses that are not IP) reads as connected, so that a
    // failure to find it never cancels a generation.
    ClientConnection(const std::string& remoteAddress, int remotePort,
                     const std::string& localAddress, int localPort);

    // False once the client has closed or reset the connection. Non-blocking.
    bool connected() const;

private:
    int m_fd = -1;
};

}  // namespace iris::app::serve
