#pragma once
// Shorthands for the parser tests.
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "agent/actions/action_format.h"

namespace iris::agent::testing {

inline ParseOptions screen(int width = 1920, int height = 1080) {
    ParseOptions options;
    options.screenWidth = width;
    options.screenHeight = height;
    return options;
}

inline ParsedStep parseText(ActionFormat format, std::string_view text,
                            const ParseOptions& options = screen()) {
    ChatResponse response;
    response.text = std::string(text);
    return parseModelOutput(format, response, options);
}

inline std::string describeAll(const ParsedStep& step) {
    std::string out;
    for (const Action& action : step.actions)
        out += describe(action) + "; ";
    for (const std::string& error : step.errors)
        out += "error: " + error + "; ";
    return out;
}

// A step that parsed into exactly `expected` with no errors.
inline void expectActions(const ParsedStep& step, const std::vector<Action>& expected) {
    EXPECT_TRUE(step.errors.empty()) << describeAll(step);
    EXPECT_EQ(step.actions, expected) << describeAll(step);
}

// A step with an error containing `fragment`.
inline void expectError(const ParsedStep& step, std::string_view fragment) {
    bool found = false;
    for (const std::string& error : step.errors)
        found = found || error.find(fragment) != std::string::npos;
    EXPECT_TRUE(found) << "no error containing '" << fragment << "' in: " << describeAll(step);
}

}  // namespace iris::agent::testing
