#pragma once
// Server-Sent Events (the WHATWG "text/event-stream" format) parsed incrementally: bytes in, in
// chunks split anywhere (mid-line, mid-character, between \r and \n), complete events out. Pure:
// no I/O, no clock, so it can be fuzzed and tested split by split.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace iris::agent {

struct SseEvent {
    std::string type = "message";  // the "event:" field
    std::string data;              // "data:" lines joined with \n
    std::string id;                // the last "id:" field seen
    int number = 0;                // 1 for the stream's first event
    std::size_t offset = 0;        // byte offset in the stream where the event's first line began
};

// Not thread-safe; one per response stream.
class SseParser {
public:
    // An event (its data lines together) longer than this is refused: a stream that never sends
    // a blank line must not grow memory without bound.
    static constexpr std::size_t kMaxEventBytes = std::size_t(16) << 20;

    // Parses `bytes`, the stream's next chunk, and appends the events it completes. Corrupt
    // (naming the byte offset) when an event exceeds kMaxEventBytes; the parser then stays failed.
    Status feed(std::string_view bytes, std::vector<SseEvent>& events);

    // Bytes consumed so far, and whether a started event was left without its blank line (the
    // stream ended mid-event: per the standard, that event is dropped).
    std::size_t bytesSeen() const { return m_offset; }
    bool hasPartialEvent() const { return !m_line.empty() || m_eventStarted; }
    int eventsDispatched() const { return m_dispatched; }

private:
    void line(std::vector<SseEvent>& events);

    std::string m_line;  // the current line, without its terminator
    std::size_t m_lineOffset = 0;
    bool m_skipLf = false;  // the previous line ended in \r: a \n next belongs to it
    std::size_t m_offset = 0;
    bool m_eventStarted = false;  // a field line since the last blank line
    bool m_hasData = false;
    std::size_t m_eventOffset = 0;
    std::string m_type;
    std::string m_data;
    std::string m_lastId;
    int m_dispatched = 0;
    Status m_failed;
};

}  // namespace iris::agent
