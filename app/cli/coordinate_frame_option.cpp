#include "app/cli/coordinate_frame_option.h"

#include "app/session/environment_spec.h"
#include "inference/vision/image_preprocess.h"

namespace iris::app {

OptionSpec actionFormatOption() {
    return {"action-format", "f", true, "tools, computer13, pyautogui or uitars (default tools)"};
}

OptionSpec coordinateFrameOption(bool resizedPerScreen) {
    return {"coords", "", true,
            resizedPerScreen
                ? "the model's coordinates: auto (pixels of the image the model was shown: the "
                  "local engine's smart resize with --mmproj, else the screenshot's; the default "
                  "for uitars), pixels (the default otherwise), relative1000, resized:WxH, or "
                  "resized (the engine's default smart resize of each page's screen, for a "
                  "server)"
                : "the model's coordinates: auto (pixels of the image the model was shown: the "
                  "local engine's smart resize with --mmproj, else the screenshot's; the default "
                  "for uitars), pixels (the default otherwise), relative1000, resized:WxH, or "
                  "resized (the engine's default smart resize of --viewport, for a server)"};
}

Result<agent::CoordinateFrame> parseCoordinateFrame(const std::string& text,
                                                    std::optional<std::pair<int, int>> screen) {
    agent::CoordinateFrame frame;
    if (text == "pixels") return frame;
    if (text == "auto") {
        frame.kind = agent::CoordinateFrame::Kind::ModelImage;
        return frame;
    }
    if (text == "resized") {
        if (!screen) {
            return Status::invalidArgument(
                "--coords resized: the screen size is known only once the desktop runs; give "
                "resized:WxH, or auto with --model and --mmproj");
        }
        const inference::ImagePreprocessOptions options;  // Qwen2.5-VL's budget (llama.cpp's)
        Result<inference::ImageSize> size =
            inference::smartResize(screen->first, screen->second, options);
        IRIS_RETURN_IF_ERROR(size.status());
        frame.kind = agent::CoordinateFrame::Kind::ResizedImage;
        frame.width = size->width;
        frame.height = size->height;
        return frame;
    }
    if (text == "relative1000") {
        frame.kind = agent::CoordinateFrame::Kind::Relative1000;
        return frame;
    }
    if (text.starts_with("resized:")) {
        Result<std::pair<int, int>> size = parseSize(text.substr(8));
        IRIS_RETURN_IF_ERROR(size.status());
        frame.kind = agent::CoordinateFrame::Kind::ResizedImage;
        frame.width = size->first;
        frame.height = size->second;
        return frame;
    }
    return Status::invalidArgument(
        "--coords '" + text + "': expected auto, pixels, relative1000, resized or resized:WxH");
}

}  // namespace iris::app
