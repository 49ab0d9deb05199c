#pragma once
// Checks every desktop environment passes alike, whatever speaks to the screen (X11 here,
// Wayland in tests/agent/env/wayland): run by both test suites on their own desktops.
#include <string>

#include <gtest/gtest.h>

#include "agent/environment.h"

namespace iris::agent::testing {

// `environment` shows a 320x240 screen (at observation scale 1).
inline void expectDesktopRejectsWhatItCannotDo(Environment& environment) {
    EXPECT_EQ(environment.execute(Navigate{"https://example.org"}).status.code(),
              StatusCode::Unsupported);
    EXPECT_EQ(environment.execute(WriteFile{"a.txt", "x"}).status.code(), StatusCode::Unsupported);
    ActionResult outside = environment.execute(Click{Point{321, 10}, MouseButton::Left, 1});
    EXPECT_EQ(outside.status.code(), StatusCode::InvalidArgument);
    EXPECT_NE(outside.status.message().find("(321, 10)"), std::string::npos);
    EXPECT_EQ(environment.execute(PressKeys{{"ctrl", "nosuchkey"}}).status.code(),
              StatusCode::InvalidArgument);
    EXPECT_EQ(environment.execute(TypeText{"a\xff"}).status.code(), StatusCode::InvalidArgument);
    EXPECT_EQ(environment.execute(TypeText{"a\x01"}).status.code(), StatusCode::InvalidArgument);
    EXPECT_EQ(environment.execute(Click{Point{1, 1}, MouseButton::Left, 4}).status.code(),
              StatusCode::InvalidArgument);
    EXPECT_EQ(environment.execute(Scroll{std::nullopt, 0, 201}).status.code(),
              StatusCode::InvalidArgument);
    EXPECT_EQ(environment.execute(Wait{-1}).status.code(), StatusCode::InvalidArgument);
    EXPECT_TRUE(environment.execute(Done{"ok"}).status.isOk());
    EXPECT_TRUE(environment.execute(Wait{0.01}).status.isOk());
}

}  // namespace iris::agent::testing
