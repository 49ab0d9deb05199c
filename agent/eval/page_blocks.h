#pragma once
// Text blocks of a rendered page: the input of the design2code metric (docs/webloop.md §2.1).
// Design2Code finds text by re-rendering pages with assigned colours; Iris reads the DOM instead
// (no extra renders, docs/webloop.md §2.1): one block per visible text node, its box the
// union of Range.getClientRects() in page coordinates, its colour the computed CSS colour of the
// node's parent element. kPageTextBlocksScript does exactly that in a browser.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace iris::agent::eval {

struct TextBlock {
    std::string text;  // UTF-8, whitespace collapsed, trimmed
    // Box in CSS px of the full page (origin top-left of the document, not of the viewport).
    double x = 0;
    double y = 0;
    double width = 0;
    double height = 0;
    int r = 0;  // text colour, sRGB 0-255
    int g = 0;
    int b = 0;
};

struct PageTextBlocks {
    double pageWidth = 0;  // CSS px of the whole document (scrollWidth, scrollHeight)
    double pageHeight = 0;
    std::vector<TextBlock> blocks;  // document order
};

// JSON form, as kPageTextBlocksScript returns it and as task files may hold it (an expected value
// given by "rule" or a .json file):
//   {"width": 1280, "height": 2000,
//    "blocks": [{"text": "Hello", "bbox": [x, y, w, h], "color": [r, g, b]}, ...]}
// Errors name the field: "blocks[3].bbox: expected 4 numbers".
Result<PageTextBlocks> pageTextBlocksFromJson(const nlohmann::json& value);
nlohmann::json toJson(const PageTextBlocks& blocks);

// A JavaScript expression (for QWebEnginePage::runJavaScript or CDP Runtime.evaluate) whose value
// is the JSON text of the active document's blocks in the form above. Pure: it changes nothing.
extern const std::string_view kPageTextBlocksScript;

}  // namespace iris::agent::eval
