#include "agent/eval/page_blocks.h"

#include <algorithm>
#include <cmath>

namespace iris::agent::eval {
namespace {

using json = nlohmann::json;

bool finiteNumber(const json& v) {
    return v.is_number() && std::isfinite(v.get<double>());
}

}  // namespace

Result<PageTextBlocks> pageTextBlocksFromJson(const json& value) {
    if (!value.is_object()) return Status::corrupt("page text blocks: expected an object");
    PageTextBlocks out;
    for (const char* key : {"width", "height"}) {
        auto it = value.find(key);
        if (it == value.end() || !finiteNumber(*it) || it->get<double>() <= 0) {
            return Status::corrupt(std::string(key) + ": expected a positive number");
        }
    }
    out.pageWidth = value["width"].get<double>();
    out.pageHeight = value["height"].get<double>();
    auto blocks = value.find("blocks");
    if (blocks == value.end() || !blocks->is_array()) {
        return Status::corrupt("blocks: expected a list");
    }
    for (size_t i = 0; i < blocks->size(); ++i) {
        const json& b = (*blocks)[i];
        const std::string where = "blocks[" + std::to_string(i) + "]";
        if (!b.is_object()) return Status::corrupt(where + ": expected an object");
        TextBlock t;
        auto text = b.find("text");
        if (text == b.end() || !text->is_string()) {
            return Status::corrupt(where + ".text: expected a string");
        }
        t.text = text->get<std::string>();
        auto bbox = b.find("bbox");
        if (bbox == b.end() || !bbox->is_array() || bbox->size() != 4 ||
            !std::all_of(bbox->begin(), bbox->end(), finiteNumber)) {
            return Status::corrupt(where + ".bbox: expected 4 numbers [x, y, width, height]");
        }
        t.x = (*bbox)[0].get<double>();
        t.y = (*bbox)[1].get<double>();
        t.width = (*bbox)[2].get<double>();
        t.height = (*bbox)[3].get<double>();
        if (t.width < 0 || t.height < 0) {
            return Status::corrupt(where + ".bbox: width and height must not be negative");
        }
        auto color = b.find("color");
        if (color != b.end()) {
            if (!color->is_array() || color->size() < 3 ||
                !std::all_of(color->begin(), color->begin() + 3, finiteNumber)) {
                return Status::corrupt(where + ".color: expected [r, g, b] in 0..255");
            }
            int* channels[] = {&t.r, &t.g, &t.b};
            for (size_t c = 0; c < 3; ++c) {
                const double v = (*color)[c].get<double>();
                if (v < 0 || v > 255)
                    return Status::corrupt(where + ".color: expected [r, g, b] in 0..255");
                *channels[c] = static_cast<int>(std::lround(v));
            }
        }
        out.blocks.push_back(std::move(t));
    }
    return out;
}

json toJson(const PageTextBlocks& blocks) {
    json list = json::array();
    for (const auto& b : blocks.blocks) {
        list.push_back({{"text", b.text},
                        {"bbox", {b.x, b.y, b.width, b.height}},
                        {"color", {b.r, b.g, b.b}}});
    }
    return {{"width", blocks.pageWidth}, {"height", blocks.pageHeight}, {"blocks", list}};
}

// One block per visible, non-blank text node; box = union of its client rects plus the scroll
// offset (page coordinates); colour = computed colour of the parent element.
const std::string_view kPageTextBlocksScript = R"JS((function () {
  const doc = document.documentElement;
  const width = Math.max(doc.scrollWidth, document.body ? document.body.scrollWidth : 0, 1);
  const height = Math.max(doc.scrollHeight, document.body ? document.body.scrollHeight : 0, 1);
  const blocks = [];
  const walker = document.createTreeWalker(document.body || doc, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.replace(/\s+/g, ' ').trim();
    if (!text) continue;
    const el = node.parentElement;
    if (!el || ['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE'].includes(el.tagName)) continue;
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || style.display === 'none' || parseFloat(style.opacity) === 0) continue;
    range.selectNodeContents(node);
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const r of range.getClientRects()) {
      if (r.width <= 0 || r.height <= 0) continue;
      x0 = Math.min(x0, r.left); y0 = Math.min(y0, r.top);
      x1 = Math.max(x1, r.right); y1 = Math.max(y1, r.bottom);
    }
    if (!(x1 > x0 && y1 > y0)) continue;
    const m = style.color.match(/[\d.]+/g) || [0, 0, 0];
    blocks.push({text: text,
                 bbox: [x0 + window.scrollX, y0 + window.scrollY, x1 - x0, y1 - y0],
                 color: [Number(m[0]), Number(m[1]), Number(m[2])]});
  }
  return JSON.stringify({width: width, height: height, blocks: blocks});
})())JS";

}  // namespace iris::agent::eval
