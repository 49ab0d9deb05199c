#pragma once
// Pieces shared by the format parsers (internal to agent/actions).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agent/actions/action_format.h"
#include "base/strings.h"  // trim(), which every parser uses

namespace iris::agent::detail {

// The per-format parsers behind parseModelOutput(); each fills `step` and never throws.
void parseComputer13(std::string_view text, const ParseOptions& options, ParsedStep& step);
void parsePyautogui(std::string_view text, const ParseOptions& options, ParsedStep& step);
void parseUiTars(std::string_view text, const ParseOptions& options, ParsedStep& step);
void parseToolCalls(const ChatResponse& response, const ParseOptions& options, ParsedStep& step);

// WAIT, DONE or FAIL on their own, in a ``` fence, or as the last line of `text`.
std::optional<Action> specialTokenAction(std::string_view text);

// A model coordinate pair in `options.frame` -> observation pixels. Errors for non-finite values
// and for points outside the screenshot (when its size is known).
Result<Point> mapPoint(double x, double y, const ParseOptions& options);

// `text` with every invalid UTF-8 sequence replaced by U+FFFD, so that it can go into JSON.
std::string toValidUtf8(std::string_view text);

// A short, printable, valid-UTF-8 quotation of model text for an error message.
std::string snippet(std::string_view text, std::size_t maxBytes = 60);

// A Markdown code fence: ```lang\n body ```. At most the first 64 are returned.
struct CodeBlock {
    std::string_view language;
    std::string_view body;
    int firstLine = 1;  // 1-based line of the body's first line in the whole text
};
std::vector<CodeBlock> codeBlocks(std::string_view text);

// JSON values found in model text: the whole text if it is JSON, else every fenced block that is,
// else the first balanced {...} or [...] that is. Empty when there are none.
std::vector<nlohmann::json> extractJson(std::string_view text);

}  // namespace iris::agent::detail
