#pragma once
// Synthetic pages for the grounding self-test (`iris models check`): each page holds a handful
// of controls (buttons, links, text inputs, checkboxes, icons with labels) at random places,
// sizes and themes, one of which the model is asked to click. The generator is seeded and uses
// its own PRNG (SplitMix64) and integer arithmetic only, so that a seed gives the same pages,
// byte for byte, on every standard library: two quantizations of one model meet the same pages.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace iris::agent::grounding {

// SplitMix64 (Steele, Lea, Flood 2014): a 64-bit state advanced by a constant and mixed.
class SplitMix64 {
public:
    explicit SplitMix64(std::uint64_t seed) : m_state(seed) {}
    std::uint64_t next();
    // Uniform in [0, bound) for bound >= 1 (by remainder: the bias is below 2^-50 for the
    // bounds a page needs).
    std::uint64_t below(std::uint64_t bound);
    // Uniform in [low, high], low <= high.
    int between(int low, int high);

private:
    std::uint64_t m_state;
};

enum class ElementKind { Button, Link, TextInput, Checkbox, Icon };
inline constexpr ElementKind kElementKinds[] = {ElementKind::Button, ElementKind::Link,
                                                ElementKind::TextInput, ElementKind::Checkbox,
                                                ElementKind::Icon};
std::string_view elementKindName(ElementKind kind);  // "button", "link", "text_input", ...

enum class Theme { Light, Dark, Coloured };
std::string_view themeName(Theme theme);  // "light", "dark", "coloured"

struct ScreenSize {
    int width = 0;
    int height = 0;
    friend bool operator==(const ScreenSize&, const ScreenSize&) = default;
};
std::string screenSizeText(ScreenSize size);  // "1280x800"

// A box in CSS pixels of the viewport (one CSS pixel is one screenshot pixel in the browser
// environment): left/top inclusive, width/height > 0.
struct Box {
    int left = 0;
    int top = 0;
    int width = 0;
    int height = 0;
    friend bool operator==(const Box&, const Box&) = default;
};

struct PageElement {
    ElementKind kind = ElementKind::Button;
    std::string label;  // unique on its page
    Box box;            // where the generator placed it (the page sets exactly this box)
};

struct GroundingPage {
    int index = 0;  // in the page set
    ScreenSize screen;
    Theme theme = Theme::Light;
    std::vector<PageElement> elements;
    int target = 0;           // index into elements
    std::string instruction;  // "Click the 'Save changes' button."
    std::string html;         // a complete document; the target carries data-iris-target
};

struct PageSetOptions {
    std::uint64_t seed = 1;
    int count = 20;
    // Pages cycle through these sizes in order (page i has screens[i % size]); must not be empty.
    std::vector<ScreenSize> screens = {{1280, 800}, {1920, 1080}, {1024, 768}};
};

// Page `index` of the set: depends only on the seed, the index and its screen size. Elements
// never overlap and lie wholly on the screen; the target's kind cycles with the index so that
// every kind is asked for equally often.
GroundingPage generatePage(std::uint64_t seed, int index, ScreenSize screen);

// options.count pages (count >= 0; screens must hold sizes of at least 480 x 360).
std::vector<GroundingPage> generatePages(const PageSetOptions& options);

// The CSS selector of the target element on every page.
inline constexpr std::string_view kTargetSelector = "[data-iris-target]";

}  // namespace iris::agent::grounding
