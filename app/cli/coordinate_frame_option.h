#pragma once
// The options that say how a model acts, shared by `iris run` and `iris models check`:
// --action-format and --coords (the coordinate frame of the model's answers).
#include <optional>
#include <string>
#include <utility>

#include "agent/actions/action_format.h"
#include "app/cli/arguments.h"
#include "base/status.h"

namespace iris::app {

OptionSpec actionFormatOption();  // --action-format, -f
// --coords. `resizedPerScreen`: the command's screens vary (iris models check), so "resized"
// follows each screenshot instead of --viewport.
OptionSpec coordinateFrameOption(bool resizedPerScreen = false);

// --coords TEXT: "auto", "pixels", "relative1000", "resized:WxH", or "resized". `screen` is the
// screenshot size when it is known before the environment starts (the browser viewport, a
// private display), for "resized": the frame of the image the local engine's vision tower sees,
// smart-resized with the engine's default pixel budget (image_preprocess.h). Errors name
// --coords.
Result<agent::CoordinateFrame> parseCoordinateFrame(const std::string& text,
                                                    std::optional<std::pair<int, int>> screen);

}  // namespace iris::app
