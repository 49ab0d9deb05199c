#pragma once
// ChatRequest and ChatResponse as JSON, for recordings. A request's images are written as
// references ({"type": "image", "sha256": ..., "mime_type", "width", "height"}) and read back
// through a lookup, so that a screenshot sent in many requests is stored once.
#include <functional>
#include <memory>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/clients/chat.h"
#include "base/status.h"

namespace iris::agent {

// The name an image is stored and referenced under: the SHA-256 of its encoded bytes as 64
// lower-case hex digits. Two screenshots share a row exactly when their bytes are equal.
std::string sha256Hex(std::span<const std::uint8_t> bytes);

// `value` as JSON text, for storage. Strings may hold model output, and a model can emit any
// bytes: invalid UTF-8 becomes U+FFFD instead of failing the write (nlohmann::json::dump throws).
std::string toJsonText(const nlohmann::json& value);

// The reference an image part becomes: {"type": "image", "sha256", "mime_type", "width",
// "height"}.
nlohmann::json imageReference(const EncodedImage& image);

using ImageReferenceFn = std::function<nlohmann::json(const EncodedImage& image)>;
using ImageLookupFn =
    std::function<Result<std::shared_ptr<const EncodedImage>>(const std::string& sha256)>;

// `reference` turns each image part into its JSON (imageReference, or that plus more fields).
nlohmann::json chatRequestToJson(const ChatRequest& request,
                                 const ImageReferenceFn& reference = imageReference);
// `lookup` finds an image by the "sha256" of its reference. Errors name the field that is wrong
// ("messages[1].content[0].sha256: ...").
Result<ChatRequest> chatRequestFromJson(const nlohmann::json& json, const ImageLookupFn& lookup);

nlohmann::json chatResponseToJson(const ChatResponse& response);
Result<ChatResponse> chatResponseFromJson(const nlohmann::json& json);

}  // namespace iris::agent
