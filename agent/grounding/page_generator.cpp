#include "agent/grounding/page_generator.h"

#include <algorithm>
#include <array>
#include <set>

#include "base/strings.h"

namespace iris::agent::grounding {
namespace {

// Label pools per kind; a page draws from them without repeating a label.
constexpr std::array kButtonVerbs = {"Save",    "Delete",  "Export",  "Share",   "Open",
                                     "Send",    "Archive", "Print",   "Upload",  "Download",
                                     "Refresh", "Apply",   "Submit",  "Preview", "Publish",
                                     "Rename",  "Copy",    "Restore", "Review",  "Create"};
constexpr std::array kButtonNouns = {"changes", "report",  "draft",   "file",  "invoice",
                                     "order",   "profile", "message", "photo", "account",
                                     "project", "list",    "summary", "notes", "booking"};
constexpr std::array kLinks = {
    "Privacy policy", "Terms of service", "Help center",     "Contact us", "Learn more",
    "Release notes",  "Forgot password?", "View all",        "Pricing",    "Documentation",
    "Careers",        "Status page",      "Community forum", "Blog",       "About us",
    "Sitemap",        "Cookie settings",  "Support"};
constexpr std::array kInputs = {"Email address", "First name", "Last name",      "Phone number",
                                "Search",        "City",       "Postal code",    "Company",
                                "Username",      "Password",   "Street address", "Website",
                                "Coupon code",   "Job title",  "Country"};
constexpr std::array kCheckboxes = {"Remember me",
                                    "Subscribe to newsletter",
                                    "I agree to the terms",
                                    "Enable notifications",
                                    "Show hidden files",
                                    "Dark mode",
                                    "Auto-save",
                                    "Send a copy to me",
                                    "Keep me signed in",
                                    "Make profile public",
                                    "Use metric units",
                                    "Allow cookies"};
constexpr std::array kIcons = {"Settings", "Inbox", "Calendar", "Photos", "Music", "Maps",
                               "Weather",  "Notes", "Contacts", "Camera", "Files", "Clock",
                               "Mail",     "Store", "Games",    "Wallet"};
constexpr std::array kTitles = {"Account settings", "Dashboard", "Checkout",  "Project overview",
                                "Messages",         "Profile",   "Documents", "Preferences"};

// Icon shapes in a 24 x 24 view box; `%` stands for the fill colour.
constexpr std::array kIconShapes = {
    R"(<circle cx="12" cy="12" r="10" fill="%"/>)",
    R"(<rect x="3" y="3" width="18" height="18" rx="4" fill="%"/>)",
    R"(<polygon points="12,2 22,21 2,21" fill="%"/>)",
    R"(<polygon points="12,1 15,9 23,9 17,14 19,22 12,17 5,22 7,14 1,9 9,9" fill="%"/>)",
    R"(<polygon points="12,1 23,12 12,23 1,12" fill="%"/>)",
    R"(<path d="M3 6h18v3H3zM3 11h18v3H3zM3 16h18v3H3z" fill="%"/>)",
};

struct Palette {
    const char* background;
    const char* text;
    const char* control;  // neutral control background
    const char* border;
    const char* link;
};
constexpr std::array kLightPalettes = {
    Palette{"#ffffff", "#1f2328", "#f6f8fa", "#d0d7de", "#0969da"},
    Palette{"#f5f5f5", "#202124", "#ffffff", "#c4c7c5", "#1a0dab"},
    Palette{"#fafaf7", "#2b2b2b", "#ecebe4", "#b9b8b0", "#005a9c"},
};
constexpr std::array kDarkPalettes = {
    Palette{"#0d1117", "#e6edf3", "#21262d", "#30363d", "#58a6ff"},
    Palette{"#1e1e1e", "#d4d4d4", "#2d2d2d", "#454545", "#4fc1ff"},
    Palette{"#202124", "#e8eaed", "#303134", "#5f6368", "#8ab4f8"},
};
constexpr std::array kColouredPalettes = {
    Palette{"#fde2e4", "#3d1f24", "#fff5f6", "#d9a5ac", "#9b2335"},
    Palette{"#dfe7fd", "#1b2a4a", "#f3f6ff", "#9fb1e0", "#2541b2"},
    Palette{"#2a9d8f", "#ffffff", "#23867a", "#8fd3ca", "#fff3b0"},
    Palette{"#264653", "#f1faee", "#30596a", "#6f9aab", "#f4a261"},
    Palette{"#6d597a", "#fdf0ff", "#7d6a8a", "#b9a6c6", "#ffd6a5"},
};
constexpr std::array kAccents = {"#0969da", "#1a7f37", "#cf222e", "#8250df", "#bf3989", "#b35900"};

constexpr int kBarHeight = 40;  // the page's title bar; controls sit below it
constexpr int kMargin = 8;      // between controls and from the screen's edges

template <class Pool>
const typename Pool::value_type& pick(SplitMix64& random, const Pool& pool) {
    return pool[random.below(pool.size())];
}

// An upper bound of the rendered width of `text` in a sans-serif font of `fontSize` pixels:
// wide enough that no label is cut, whichever sans-serif font the machine has.
int textWidth(const std::string& text, int fontSize) {
    return int(text.size()) * fontSize * 66 / 100 + 4;
}

std::string drawLabel(SplitMix64& random, ElementKind kind) {
    switch (kind) {
        case ElementKind::Button:
            return std::string(pick(random, kButtonVerbs)) + ' ' + pick(random, kButtonNouns);
        case ElementKind::Link:
            return pick(random, kLinks);
        case ElementKind::TextInput:
            return pick(random, kInputs);
        case ElementKind::Checkbox:
            return pick(random, kCheckboxes);
        case ElementKind::Icon:
            break;
    }
    return pick(random, kIcons);
}

std::string_view kindNoun(ElementKind kind) {
    switch (kind) {
        case ElementKind::Button:
            return "button";
        case ElementKind::Link:
            return "link";
        case ElementKind::TextInput:
            return "text field";
        case ElementKind::Checkbox:
            return "checkbox";
        case ElementKind::Icon:
            break;
    }
    return "icon";
}

// What the generator decides about one control besides its place.
struct Draft {
    PageElement element;
    int fontSize = 14;
    int radius = 0;
    bool accent = false;  // buttons: filled with an accent colour
    const char* accentColour = kAccents[0];
    const char* shape = kIconShapes[0];
    int iconSize = 24;
};

Draft drawDraft(SplitMix64& random, ElementKind kind, std::string label) {
    Draft d;
    d.element.kind = kind;
    d.element.label = std::move(label);
    d.fontSize = random.between(12, 20);
    d.radius = random.between(0, 10);
    d.accent = random.below(2) == 1;
    d.accentColour = pick(random, kAccents);
    d.shape = pick(random, kIconShapes);
    d.iconSize = random.between(24, 56);
    const int text = textWidth(d.element.label, d.fontSize);
    Box& box = d.element.box;
    switch (kind) {
        case ElementKind::Button:
            box.width = text + 2 * random.between(8, 28);
            box.height = d.fontSize + random.between(12, 28);
            break;
        case ElementKind::Link:
            box.width = text + 4;
            box.height = d.fontSize + 8;
            break;
        case ElementKind::TextInput:
            box.width = std::max(text + 24, random.between(140, 320));
            box.height = d.fontSize + random.between(14, 22);
            break;
        case ElementKind::Checkbox:
            box.width = 16 + 8 + text + 4;
            box.height = std::max(d.fontSize + 8, 22);
            break;
        case ElementKind::Icon:
            box.width = std::max(d.iconSize, textWidth(d.element.label, 13)) + 12;
            box.height = d.iconSize + 6 + 13 + 10;
            break;
    }
    return d;
}

bool overlaps(const Box& a, const Box& b) {
    return a.left < b.left + b.width + kMargin && b.left < a.left + a.width + kMargin &&
           a.top < b.top + b.height + kMargin && b.top < a.top + a.height + kMargin;
}

// A random free place for `box` below the title bar; false when 400 tries found none.
bool place(SplitMix64& random, Box& box, ScreenSize screen, const std::vector<Draft>& placed) {
    const int maxLeft = screen.width - kMargin - box.width;
    const int maxTop = screen.height - kMargin - box.height;
    if (maxLeft < kMargin || maxTop < kBarHeight + kMargin) return false;
    for (int attempt = 0; attempt < 400; ++attempt) {
        box.left = random.between(kMargin, maxLeft);
        box.top = random.between(kBarHeight + kMargin, maxTop);
        const bool free = std::none_of(placed.begin(), placed.end(), [&](const Draft& other) {
            return overlaps(box, other.element.box);
        });
        if (free) return true;
    }
    return false;
}

std::string px(int value) {
    return std::to_string(value) + "px";
}

std::string boxStyle(const Box& box) {
    return "left:" + px(box.left) + ";top:" + px(box.top) + ";width:" + px(box.width) +
           ";height:" + px(box.height) + ';';
}

std::string elementHtml(const Draft& d, const Palette& palette, bool target) {
    const PageElement& e = d.element;
    const std::string marker = target ? " data-iris-target=\"1\"" : "";
    const std::string font = "font-size:" + px(d.fontSize) + ';';
    const std::string radius = "border-radius:" + px(d.radius) + ';';
    const std::string label = htmlEscape(e.label);
    switch (e.kind) {
        case ElementKind::Button: {
            const std::string colours =
                d.accent ? std::string("background:") + d.accentColour +
                               ";color:#ffffff;border:1px solid " + d.accentColour + ';'
                         : std::string("background:") + palette.control + ";color:" + palette.text +
                               ";border:1px solid " + palette.border + ';';
            return "<button class=\"e\"" + marker + " style=\"" + boxStyle(e.box) + font + radius +
                   colours + "\">" + label + "</button>\n";
        }
        case ElementKind::Link:
            return "<a class=\"e\" href=\"#\"" + marker + " style=\"" + boxStyle(e.box) + font +
                   "line-height:" + px(e.box.height) + ";color:" + palette.link + "\">" + label +
                   "</a>\n";
        case ElementKind::TextInput:
            return "<input class=\"e\" type=\"text\"" + marker + " placeholder=\"" + label +
                   "\" style=\"" + boxStyle(e.box) + font + radius +
                   "background:" + palette.control + ";color:" + palette.text +
                   ";border:1px solid " + palette.border + ";padding:0 8px\">\n";
        case ElementKind::Checkbox:
            return "<label class=\"e cb\"" + marker + " style=\"" + boxStyle(e.box) + font +
                   "color:" + palette.text + "\"><input type=\"checkbox\"><span>" + label +
                   "</span></label>\n";
        case ElementKind::Icon:
            break;
    }
    std::string shape = d.shape;
    shape.replace(shape.find('%'), 1, d.accentColour);
    return "<div class=\"e icon\" role=\"button\"" + marker + " style=\"" + boxStyle(e.box) +
           radius + "color:" + palette.text + "\"><svg width=\"" + std::to_string(d.iconSize) +
           "\" height=\"" + std::to_string(d.iconSize) + "\" viewBox=\"0 0 24 24\">" + shape +
           "</svg><span>" + label + "</span></div>\n";
}

std::string pageHtml(const GroundingPage& page, const std::vector<Draft>& drafts,
                     const Palette& palette, const std::string& title) {
    const ScreenSize s = page.screen;
    std::string html =
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + title +
        "</title>\n<style>\n"
        "html,body{margin:0;padding:0;overflow:hidden}\n"
        "body{position:relative;width:" +
        px(s.width) + ";height:" + px(s.height) + ";background:" + palette.background +
        ";color:" + palette.text +
        ";font-family:sans-serif}\n"
        ".e{position:absolute;box-sizing:border-box;margin:0;padding:0;white-space:nowrap;"
        "overflow:hidden;font-family:sans-serif}\n"
        "button.e{text-align:center;cursor:pointer}\n"
        ".cb{display:flex;align-items:center;gap:8px}\n"
        ".cb input{width:16px;height:16px;margin:0;flex:none}\n"
        ".icon{display:flex;flex-direction:column;align-items:center;justify-content:center;"
        "gap:6px;font-size:13px}\n"
        ".bar{position:absolute;left:0;top:0;width:" +
        px(s.width) + ";height:" + px(kBarHeight) + ";line-height:" + px(kBarHeight) +
        ";padding-left:16px;box-sizing:border-box;font-size:16px;font-weight:bold;"
        "border-bottom:1px solid " +
        palette.border + "}\n</style></head><body>\n<div class=\"bar\">" + title + "</div>\n";
    for (std::size_t i = 0; i < drafts.size(); ++i)
        html += elementHtml(drafts[i], palette, int(i) == page.target);
    // Links lead nowhere: a click must leave the page as it is.
    html +=
        "<script>document.addEventListener('click', e => { if (e.target.closest('a')) "
        "e.preventDefault(); }, true);</script>\n</body></html>\n";
    return html;
}

}  // namespace

std::uint64_t SplitMix64::next() {
    std::uint64_t z = (m_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

std::uint64_t SplitMix64::below(std::uint64_t bound) {
    return next() % bound;
}

int SplitMix64::between(int low, int high) {
    return low + int(below(std::uint64_t(high - low) + 1));
}

std::string_view elementKindName(ElementKind kind) {
    switch (kind) {
        case ElementKind::Button:
            return "button";
        case ElementKind::Link:
            return "link";
        case ElementKind::TextInput:
            return "text_input";
        case ElementKind::Checkbox:
            return "checkbox";
        case ElementKind::Icon:
            break;
    }
    return "icon";
}

std::string_view themeName(Theme theme) {
    switch (theme) {
        case Theme::Light:
            return "light";
        case Theme::Dark:
            return "dark";
        case Theme::Coloured:
            break;
    }
    return "coloured";
}

std::string screenSizeText(ScreenSize size) {
    return std::to_string(size.width) + "x" + std::to_string(size.height);
}

GroundingPage generatePage(std::uint64_t seed, int index, ScreenSize screen) {
    // Each page has its own stream, so page i is the same whatever the count.
    SplitMix64 random(seed ^ (0xD1B54A32D192ED03ull * (std::uint64_t(index) + 1)));
    GroundingPage page;
    page.index = index;
    page.screen = screen;
    page.theme = static_cast<Theme>(random.below(3));
    const Palette& palette = page.theme == Theme::Light  ? pick(random, kLightPalettes)
                             : page.theme == Theme::Dark ? pick(random, kDarkPalettes)
                                                         : pick(random, kColouredPalettes);
    const std::string title = pick(random, kTitles);

    const int wanted = random.between(6, 10);
    std::set<std::string> labels;
    std::vector<Draft> drafts;
    for (int attempt = 0; int(drafts.size()) < wanted && attempt < 200; ++attempt) {
        // The first control is the target, its kind cycling with the index.
        const ElementKind kind = drafts.empty()
                                     ? kElementKinds[std::size_t(index) % std::size(kElementKinds)]
                                     : kElementKinds[random.below(std::size(kElementKinds))];
        std::string label = drawLabel(random, kind);
        if (labels.count(label)) continue;
        Draft draft = drawDraft(random, kind, std::move(label));
        if (!place(random, draft.element.box, screen, drafts)) continue;
        labels.insert(draft.element.label);
        drafts.push_back(std::move(draft));
    }
    if (drafts.empty()) return page;  // screens below the documented minimum
    // The target's place in the document is random too, so that it is not always first.
    const std::size_t slot = random.below(drafts.size());
    std::swap(drafts[0], drafts[slot]);
    page.target = int(slot);
    for (const Draft& d : drafts)
        page.elements.push_back(d.element);
    const PageElement& target = page.elements[std::size_t(page.target)];
    page.instruction =
        "Click the '" + target.label + "' " + std::string(kindNoun(target.kind)) + ".";
    page.html = pageHtml(page, drafts, palette, title);
    return page;
}

std::vector<GroundingPage> generatePages(const PageSetOptions& options) {
    std::vector<GroundingPage> pages;
    if (options.screens.empty()) return pages;
    for (int i = 0; i < options.count; ++i)
        pages.push_back(generatePage(options.seed, i,
                                     options.screens[std::size_t(i) % options.screens.size()]));
    return pages;
}

}  // namespace iris::agent::grounding
