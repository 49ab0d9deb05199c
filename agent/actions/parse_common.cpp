#include "agent/actions/parse_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/utf8.h"

namespace iris::agent::detail {
namespace {

std::string formatNumber(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6g", value);
    return buffer;
}

// Length of the valid UTF-8 sequence at text[i], or 0 when there is none.
std::size_t utf8SequenceLength(std::string_view text, std::size_t i) {
    if (static_cast<unsigned char>(text[i]) < 0x80) return 1;
    const utf8::Decoded decoded = utf8::decodeAt(text, i);
    return decoded.valid ? decoded.length : 0;
}

}  // namespace

Result<Point> mapPoint(double x, double y, const ParseOptions& options) {
    if (!std::isfinite(x) || !std::isfinite(y))
        return Status::invalidArgument("coordinates must be finite numbers");
    const double width = options.screenWidth;
    const double height = options.screenHeight;
    const bool knownScreen = width > 0 && height > 0;
    if (!knownScreen && options.frame.kind != CoordinateFrame::Kind::ScreenshotPixels)
        return Status::invalidArgument(
            "the screenshot size is unknown, so scaled coordinates cannot be mapped");
    if (options.frame.kind == CoordinateFrame::Kind::ModelImage)
        return Status::invalidArgument(
            "the model-image coordinate frame was not resolved to the image the model saw");
    Point p{x, y};
    switch (options.frame.kind) {
        case CoordinateFrame::Kind::ScreenshotPixels:
            break;
        case CoordinateFrame::Kind::Relative1000:
            p = {x / 1000.0 * width, y / 1000.0 * height};
            break;
        case CoordinateFrame::Kind::ResizedImage:
            if (options.frame.width <= 0 || options.frame.height <= 0)
                return Status::invalidArgument("the resized-image coordinate frame has no size");
            p = {x * width / options.frame.width, y * height / options.frame.height};
            break;
        case CoordinateFrame::Kind::ModelImage:
            break;  // refused above
    }
    if (knownScreen) {
        // The right and bottom edges themselves are a common answer for "the last pixel".
        if (p.x < 0 || p.y < 0 || p.x > width || p.y > height) {
            // Name the bounds in the frame the model wrote the point in.
            std::string bounds =
                "the " + formatNumber(width) + "x" + formatNumber(height) + " screen";
            if (options.frame.kind == CoordinateFrame::Kind::Relative1000)
                bounds = "the 0..1000 coordinate range";
            if (options.frame.kind == CoordinateFrame::Kind::ResizedImage)
                bounds = "the " + std::to_string(options.frame.width) + "x" +
                         std::to_string(options.frame.height) + " image";
            return Status::outOfRange("point (" + formatNumber(x) + ", " + formatNumber(y) +
                                      ") is outside " + bounds);
        }
        p.x = std::min(p.x, width - 1);
        p.y = std::min(p.y, height - 1);
    }
    return p;
}

std::string toValidUtf8(std::string_view text) {
    return utf8::repair(text);
}

std::string snippet(std::string_view text, std::size_t maxBytes) {
    const bool cut = text.size() > maxBytes;
    std::string out;
    for (std::size_t i = 0; i < text.size() && i < maxBytes;) {
        const auto byte = static_cast<unsigned char>(text[i]);
        const std::size_t length = utf8SequenceLength(text, i);
        if (length == 0 || byte < 0x20 || byte == 0x7f) {
            char buffer[8];
            if (byte == '\n') {
                out += "\\n";
            } else if (byte == '\t') {
                out += "\\t";
            } else {
                std::snprintf(buffer, sizeof buffer, "\\x%02x", static_cast<unsigned int>(byte));
                out += buffer;
            }
            ++i;
        } else {
            out.append(text.substr(i, length));
            i += length;
        }
    }
    if (cut) out += "...";
    return out;
}


std::vector<CodeBlock> codeBlocks(std::string_view text) {
    std::vector<CodeBlock> blocks;
    std::size_t pos = 0;
    // Lines are counted as the scan goes, so that many fences stay linear.
    std::size_t countedTo = 0;
    int line = 1;
    // An answer has a few blocks; a page of fences is noise, and the cap keeps it cheap.
    constexpr std::size_t kMaxBlocks = 64;
    while (blocks.size() < kMaxBlocks) {
        const std::size_t open = text.find("```", pos);
        if (open == std::string_view::npos) break;
        std::size_t bodyStart = open + 3;
        // The language tag runs to the end of the line; "```WAIT```" has none and no newline.
        const std::size_t close = text.find("```", bodyStart);
        if (close == std::string_view::npos) break;
        std::string_view language;
        const std::size_t tagEnd = text.substr(bodyStart, close - bodyStart).find('\n');
        if (tagEnd != std::string_view::npos) {
            const std::size_t newline = bodyStart + tagEnd;
            const std::string_view tag = trim(text.substr(bodyStart, newline - bodyStart));
            const bool isTag = tag.find_first_of(" \t(){}[]'\"=") == std::string_view::npos;
            if (isTag) {
                language = tag;
                bodyStart = newline + 1;
            }
        }
        CodeBlock block;
        block.language = language;
        block.body = text.substr(bodyStart, close - bodyStart);
        for (; countedTo < bodyStart; ++countedTo)
            if (text[countedTo] == '\n') ++line;
        block.firstLine = line;
        blocks.push_back(block);
        pos = close + 3;
    }
    return blocks;
}

std::vector<nlohmann::json> extractJson(std::string_view text) {
    std::vector<nlohmann::json> values;
    const auto tryParse = [](std::string_view candidate) {
        return nlohmann::json::parse(candidate.begin(), candidate.end(), nullptr, false);
    };
    nlohmann::json whole = tryParse(trim(text));
    if (!whole.is_discarded()) {
        values.push_back(std::move(whole));
        return values;
    }
    for (const CodeBlock& block : codeBlocks(text)) {
        nlohmann::json value = tryParse(trim(block.body));
        if (!value.is_discarded()) values.push_back(std::move(value));
    }
    if (!values.empty()) return values;
    // Prose around the JSON: try each opening bracket, up to its balanced close. Strings are
    // skipped so that brackets inside them do not count.
    // Attempts are capped so that a page of brackets stays linear.
    constexpr int kMaxAttempts = 16;
    int attempts = 0;
    for (std::size_t start = 0; start < text.size() && attempts < kMaxAttempts; ++start) {
        if (text[start] != '{' && text[start] != '[') continue;
        ++attempts;
        int depth = 0;
        bool inString = false;
        for (std::size_t i = start; i < text.size(); ++i) {
            const char c = text[i];
            if (inString) {
                if (c == '\\')
                    ++i;
                else if (c == '"')
                    inString = false;
                continue;
            }
            if (c == '"')
                inString = true;
            else if (c == '{' || c == '[')
                ++depth;
            else if (c == '}' || c == ']')
                --depth;
            if (depth == 0) {
                nlohmann::json value = tryParse(text.substr(start, i - start + 1));
                if (!value.is_discarded()) {
                    values.push_back(std::move(value));
                    return values;
                }
                break;
            }
        }
    }
    return values;
}

}  // namespace iris::agent::detail
