#include "agent/clients/sse_parser.h"

namespace iris::agent {

Status SseParser::feed(std::string_view bytes, std::vector<SseEvent>& events) {
    IRIS_RETURN_IF_ERROR(m_failed);
    std::size_t i = 0;
    while (i < bytes.size()) {
        if (m_skipLf) {
            m_skipLf = false;
            if (bytes[i] == '\n') {
                ++i;
                ++m_offset;
                m_lineOffset = m_offset;
                continue;
            }
        }
        const std::size_t end = bytes.find_first_of("\r\n", i);
        const std::size_t take = (end == std::string_view::npos ? bytes.size() : end) - i;
        if (m_line.size() + m_data.size() + take > kMaxEventBytes) {
            m_failed =
                Status::corrupt("byte " + std::to_string(m_offset) + ": an event longer than " +
                                std::to_string(kMaxEventBytes) + " bytes");
            return m_failed;
        }
        m_line.append(bytes.substr(i, take));
        i += take;
        m_offset += take;
        if (end == std::string_view::npos) break;
        m_skipLf = bytes[i] == '\r';
        ++i;
        ++m_offset;
        line(events);
        m_line.clear();
        m_lineOffset = m_offset;
    }
    return Status::ok();
}

void SseParser::line(std::vector<SseEvent>& events) {
    std::string_view text = m_line;
    if (m_lineOffset == 0 && text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
    if (text.empty()) {
        if (m_hasData) {
            SseEvent event;
            if (!m_type.empty()) event.type = std::move(m_type);
            event.data = std::move(m_data);
            event.data.pop_back();  // the \n after the last data line
            event.id = m_lastId;
            event.number = ++m_dispatched;
            event.offset = m_eventOffset;
            events.push_back(std::move(event));
        }
        m_type.clear();
        m_data.clear();
        m_eventStarted = false;
        m_hasData = false;
        return;
    }
    if (text.front() == ':') return;  // a comment, often a keep-alive

    const std::size_t colon = text.find(':');
    const std::string_view field = text.substr(0, colon);
    std::string_view value;
    if (colon != std::string_view::npos) {
        value = text.substr(colon + 1);
        if (value.starts_with(' ')) value.remove_prefix(1);
    }
    if (!m_eventStarted) {
        m_eventStarted = true;
        m_eventOffset = m_lineOffset;
    }
    if (field == "data") {
        m_data.append(value);
        m_data.push_back('\n');
        m_hasData = true;
    } else if (field == "event") {
        m_type = value;
    } else if (field == "id") {
        if (value.find('\0') == std::string_view::npos) m_lastId = value;
    }
    // "retry" and unknown fields are ignored, as the standard says.
}

}  // namespace iris::agent
