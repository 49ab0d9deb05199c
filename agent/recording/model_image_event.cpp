#include "agent/recording/model_image_event.h"

#include <charconv>
#include <string>

namespace iris::agent {
namespace {

using nlohmann::json;

json sizeToJson(int width, int height) {
    return {{"width", width}, {"height", height}};
}

// {"width": w, "height": h} with two integers; nullopt for anything else.
std::optional<inference::ImageSize> sizeFromJson(const json& j, std::string_view key) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_object()) return std::nullopt;
    const auto width = it->find("width");
    const auto height = it->find("height");
    if (width == it->end() || height == it->end() || !width->is_number_integer() ||
        !height->is_number_integer())
        return std::nullopt;
    return inference::ImageSize{width->get<int>(), height->get<int>()};
}

// Reads `literal` and then a decimal integer from the front of `text`.
bool consume(std::string_view& text, std::string_view literal, int& value) {
    if (!text.starts_with(literal)) return false;
    text.remove_prefix(literal.size());
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc()) return false;
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
    return true;
}

}  // namespace

SessionEvent ModelImageEvent::toEvent(std::optional<int> stepIndex) const {
    std::string message = "the " + std::to_string(screenWidth) + "x" +
                          std::to_string(screenHeight) + " screenshot is shown to the model as " +
                          std::to_string(image.width) + "x" + std::to_string(image.height);
    json data = {{"screen", sizeToJson(screenWidth, screenHeight)},
                 {"image", sizeToJson(image.width, image.height)}};
    return {stepIndex, 0, std::string(kKind), std::move(message), std::move(data)};
}

std::optional<ModelImageEvent> ModelImageEvent::fromEvent(const SessionEvent& event) {
    if (event.kind != kKind) return std::nullopt;
    if (event.data.is_null()) return parseLegacyModelImageMessage(event.message);
    if (!event.data.is_object()) return std::nullopt;
    const std::optional<inference::ImageSize> screen = sizeFromJson(event.data, "screen");
    const std::optional<inference::ImageSize> image = sizeFromJson(event.data, "image");
    if (!screen || !image) return std::nullopt;
    return ModelImageEvent{screen->width, screen->height, *image};
}

std::optional<ModelImageEvent> parseLegacyModelImageMessage(std::string_view message) {
    ModelImageEvent event;
    if (!consume(message, "the ", event.screenWidth) ||
        !consume(message, "x", event.screenHeight) ||
        !consume(message, " screenshot is shown to the model as ", event.image.width) ||
        !consume(message, "x", event.image.height) || !message.empty())
        return std::nullopt;
    return event;
}

}  // namespace iris::agent
