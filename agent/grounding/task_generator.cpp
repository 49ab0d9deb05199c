#include "agent/grounding/task_generator.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "base/strings.h"

namespace iris::agent::grounding {
namespace {

// --- word lists ---------------------------------------------------------------------------------

constexpr std::array kUsers = {"alice", "bob",   "carol", "dmitri", "emma",  "farid",
                               "grace", "hiro",  "ines",  "jonas",  "kofi",  "lena",
                               "mateo", "nadia", "oskar", "priya",  "quinn", "rosa"};
constexpr std::array kFullNames = {"Ada Lovelace",      "Alan Turing",    "Grace Hopper",
                                   "Edsger Dijkstra",   "Barbara Liskov", "Donald Knuth",
                                   "Margaret Hamilton", "Ken Thompson",   "Frances Allen",
                                   "John Backus",       "Radia Perlman",  "Tim Berners-Lee"};
constexpr std::array kSecrets = {"sunflower42", "blue-otter", "maple2024", "quartz99",
                                 "tiger-lily",  "orbit77",    "cobalt5",   "pepper-mint"};
constexpr std::array kQueries = {"weather in Lisbon", "pasta recipes",  "cheap flights",
                                 "python tutorial",   "running shoes",  "museum hours",
                                 "train to Berlin",   "tax forms",      "guitar chords",
                                 "hiking trails",     "coffee grinder", "used bikes"};
constexpr std::array kFiles = {
    "budget.xlsx",  "notes.txt",    "report.pdf",  "photo.jpg",   "slides.pptx", "invoice.pdf",
    "draft.docx",   "data.csv",     "logo.svg",    "backup.zip",  "todo.md",     "contract.pdf",
    "summary.docx", "plan.txt",     "map.png",     "recipes.md",  "taxes.xlsx",  "poster.png",
    "minutes.txt",  "song.mp3",     "letter.docx", "archive.tar", "chart.png",   "agenda.md",
    "manual.pdf",   "schedule.csv", "resume.pdf",  "script.py",   "index.html",  "styles.css",
    "video.mp4",    "keys.txt",     "ledger.xlsx", "thesis.pdf",  "memo.txt",    "banner.jpg",
    "quotes.md",    "travel.pdf",   "gifts.txt",   "lease.pdf"};
constexpr std::array kProducts = {
    "Desk lamp",  "Coffee mug", "Wool scarf",    "Notebook",    "Backpack",   "Water bottle",
    "Headphones", "Plant pot",  "Wall clock",    "Tea kettle",  "Bike light", "Yoga mat",
    "Sunglasses", "Umbrella",   "Candle set",    "Phone stand", "Chess set",  "Travel mug",
    "Desk fan",   "Pillow",     "Picture frame", "Key ring",    "Sketchbook", "Lunch box"};
constexpr std::array kArticles = {"Ten tips for better sleep", "How bridges are built",
                                  "A week in Kyoto",           "Why cats purr",
                                  "The history of coffee",     "Learning to draw",
                                  "Winter gardening",          "Inside a data centre",
                                  "The best board games",      "Cooking with lentils",
                                  "A guide to night skies",    "Fixing a flat tyre"};
constexpr std::array kSites = {"Acme",     "Northwind", "Globex",   "Initech",
                               "Umbrella", "Hooli",     "Vandelay", "Stark",
                               "Wonka",    "Contoso",   "Fabrikam", "Tailspin"};
constexpr std::array kNavLinks = {"Home", "Products",  "Pricing",  "About",
                                  "Blog", "Careers",   "Support",  "Contact",
                                  "Docs", "Community", "Partners", "News"};
constexpr std::array kSideLinks = {"Dashboard", "Projects", "Team",     "Calendar", "Reports",
                                   "Messages",  "Billing",  "Settings", "Files",    "Tasks"};
constexpr std::array kToolbar = {"Bold",        "Italic",       "Underline",  "Undo",
                                 "Redo",        "Cut",          "Copy",       "Paste",
                                 "Insert link", "Insert table", "Align left", "Align right",
                                 "Bullet list", "Comment",      "Spelling",   "Print"};
constexpr std::array kChips = {"All", "Images", "News", "Videos", "Maps", "Shopping", "Books"};
constexpr std::array kToggles = {"Email notifications", "Dark mode",          "Two-factor sign-in",
                                 "Weekly summary",      "Show online status", "Auto-play videos"};
constexpr std::array kOrdinals = {"first", "second",  "third",  "fourth", "fifth",
                                  "sixth", "seventh", "eighth", "ninth",  "tenth"};
constexpr std::array kTodos = {"Buy milk",         "Call the bank",  "Book flights",
                               "Water the plants", "Pay rent",       "Renew passport",
                               "Fix the bike",     "Send invoices",  "Clean the desk",
                               "Plan the trip",    "Back up photos", "Read chapter 3"};
constexpr std::array kTabs = {"Overview", "Activity", "Members",      "Billing",
                              "Usage",    "Security", "Integrations", "Logs"};

// --- looks ---------------------------------------------------------------------------------------

struct Palette {
    const char* background;
    const char* surface;
    const char* text;
    const char* muted;
    const char* border;
};
constexpr std::array kLight = {
    Palette{"#ffffff", "#f6f8fa", "#1f2328", "#656d76", "#d0d7de"},
    Palette{"#f5f5f5", "#ffffff", "#202124", "#5f6368", "#c4c7c5"},
    Palette{"#fbf7f0", "#ffffff", "#2b2b2b", "#6b6357", "#d8cfc0"},
    Palette{"#eef2f7", "#ffffff", "#14213d", "#52607a", "#b8c4d6"},
};
constexpr std::array kDark = {
    Palette{"#0d1117", "#161b22", "#e6edf3", "#8d96a0", "#30363d"},
    Palette{"#1e1e1e", "#2d2d2d", "#d4d4d4", "#9d9d9d", "#454545"},
    Palette{"#202124", "#303134", "#e8eaed", "#9aa0a6", "#5f6368"},
    Palette{"#1b1d2b", "#262a3d", "#e4e6f2", "#9aa0bd", "#3b4060"},
};
constexpr std::array kAccents = {"#0969da", "#1a7f37", "#cf222e", "#8250df",
                                 "#bf3989", "#b35900", "#0f766e", "#4338ca"};
// Only the fonts scripts/setup.sh installs (fonts-dejavu-core).
constexpr std::array kFonts = {"'DejaVu Sans', sans-serif", "'DejaVu Serif', serif",
                               "'DejaVu Sans Mono', monospace"};

struct Look {
    Palette palette;
    const char* accent = kAccents[0];
    const char* font = kFonts[0];
    int fontSize = 14;
    int radius = 4;
    int pad = 8;      // control padding
    int width = 420;  // the main column's width
    bool centred = true;
};

template <class Pool>
const typename Pool::value_type& pick(SplitMix64& random, const Pool& pool) {
    return pool[random.below(pool.size())];
}

// `count` different entries of `pool`, in a random order.
template <class Pool>
std::vector<std::string> distinct(SplitMix64& random, const Pool& pool, int count) {
    std::vector<std::string> all(pool.begin(), pool.end());
    for (std::size_t i = all.size(); i > 1; --i)
        std::swap(all[i - 1], all[random.below(i)]);
    all.resize(std::size_t(std::min<int>(count, int(all.size()))));
    return all;
}

// --- invented text to type ---------------------------------------------------------------------

// A pronounceable made-up word of `low`..`high` syllables: with 18 onsets, 5 vowels and an
// optional coda, two tasks rarely share one, so a model must copy it from the instruction.
std::string inventedWord(SplitMix64& random, int low, int high) {
    static constexpr std::string_view kOnsets = "bcdfghjklmnprstvwz";
    static constexpr std::string_view kVowels = "aeiou";
    static constexpr std::string_view kCodas = "lmnrst";
    std::string word;
    for (int i = random.between(low, high); i > 0; --i) {
        word += kOnsets[random.below(kOnsets.size())];
        word += kVowels[random.below(kVowels.size())];
        if (random.below(3) == 0) word += kCodas[random.below(kCodas.size())];
    }
    return word;
}

std::string capitalised(std::string word) {
    if (!word.empty()) word[0] = char(word[0] - 'a' + 'A');
    return word;
}

// What a field asks for, for invented text.
enum class TextShape { User, Email, Secret, Phrase, FullName, FileName };

std::string inventedText(SplitMix64& random, TextShape shape) {
    static constexpr std::array kDomains = {".com", ".org", ".net", ".io"};
    static constexpr std::array kExtensions = {".txt", ".pdf", ".md", ".csv", ".png", ".docx"};
    switch (shape) {
        case TextShape::User:
            return inventedWord(random, 2, 3) +
                   (random.below(3) == 0 ? std::to_string(random.between(1, 99)) : "");
        case TextShape::Email:
            return inventedWord(random, 1, 3) + "@" + inventedWord(random, 1, 2) +
                   pick(random, kDomains);
        case TextShape::Secret:
            return inventedWord(random, 2, 3) + (random.below(2) == 0 ? "-" : "") +
                   std::to_string(random.between(2, 999));
        case TextShape::Phrase: {
            std::string phrase = inventedWord(random, 1, 3);
            for (int i = random.between(1, 2); i > 0; --i)
                phrase += " " + inventedWord(random, 1, 3);
            return phrase;
        }
        case TextShape::FullName:
            return capitalised(inventedWord(random, 1, 3)) + " " +
                   capitalised(inventedWord(random, 2, 3));
        case TextShape::FileName:
            break;
    }
    return inventedWord(random, 1, 3) + (random.below(2) == 0 ? "-" : "_") +
           inventedWord(random, 1, 2) + pick(random, kExtensions);
}

// --- invented labels ---------------------------------------------------------------------------

// The words a page shows, each (of three letters or more) replaced everywhere by a made-up one of
// about its length, consistently for the page and the instruction: labels a model has never
// seen, which it can only match letter by letter. Key names stay, or "press Enter" would lose its
// meaning.
class Relabeller {
public:
    explicit Relabeller(SplitMix64& random) : m_random(random) {}

    // Replaces the words of the text between tags (not in tags, entities, scripts or styles).
    std::string page(std::string_view html) {
        std::string out;
        std::size_t i = 0;
        while (i < html.size()) {
            if (html[i] == '<') {
                const std::string_view close = html.compare(i, 7, "<script") == 0  ? "</script>"
                                               : html.compare(i, 6, "<style") == 0 ? "</style>"
                                                                                   : ">";
                const std::size_t end = html.find(close, i);
                const std::size_t stop =
                    end == std::string_view::npos ? html.size() : end + close.size();
                out += html.substr(i, stop - i);
                i = stop;
            } else if (html[i] == '&') {
                const std::size_t end = html.find(';', i);
                const std::size_t stop = end == std::string_view::npos ? html.size() : end + 1;
                out += html.substr(i, stop - i);
                i = stop;
            } else {
                const std::size_t stop = std::min(html.find_first_of("<&", i), html.size());
                out +=
                    words(html.substr(i, stop - i), [&](std::string_view w) { return learn(w); });
                i = stop;
            }
        }
        return out;
    }

    // The instruction: words in quotes, capitalised words after the first ("the Subject
    // field") and the words that name a field ("the folder name field"), where the page shows
    // them; a quote opens after a non-letter and closes before one, so "dialog's" opens none.
    std::string instruction(std::string_view text) const {
        // [from, to): a field's name, between "the " and " field".
        std::vector<std::pair<std::size_t, std::size_t>> names;
        for (std::size_t at = text.find(" field"); at != std::string_view::npos;
             at = text.find(" field", at + 1)) {
            const std::size_t the = text.rfind("the ", at);
            if (the != std::string_view::npos) names.emplace_back(the + 4, at);
        }
        auto inName = [&](std::string_view w) {
            const std::size_t at = std::size_t(w.data() - text.data());
            return std::any_of(names.begin(), names.end(),
                               [&](const auto& n) { return n.first <= at && at < n.second; });
        };
        std::string out;
        bool quoted = false;
        std::size_t i = 0;
        while (i < text.size()) {
            if (text[i] == '\'') {
                const bool before = i > 0 && isLetter(text[i - 1]);
                const bool after = i + 1 < text.size() && isLetter(text[i + 1]);
                if (!quoted && !before)
                    quoted = true;
                else if (quoted && !after)
                    quoted = false;
                out += text[i++];
                continue;
            }
            std::size_t stop = i;
            while (stop < text.size() && text[stop] != '\'')
                ++stop;
            out += words(text.substr(i, stop - i), [&](std::string_view w) {
                const bool capital = w[0] >= 'A' && w[0] <= 'Z';
                return quoted || (capital && w.data() != text.data()) || inName(w) ? known(w)
                                                                                   : std::string(w);
            });
            i = stop;
        }
        return out;
    }

    // Text typed into a field: its words the page shows, replaced.
    std::string typed(std::string_view text) const {
        return words(text, [&](std::string_view w) { return known(w); });
    }

private:
    static bool isLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

    static std::string lower(std::string_view word) {
        std::string out(word);
        for (char& c : out)
            if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
        return out;
    }

    // `invented` with `like`'s case: all capitals, a capital first, or none.
    static std::string withCase(std::string invented, std::string_view like) {
        const bool upper = like.size() > 1 && std::all_of(like.begin(), like.end(), [](char c) {
                               return c >= 'A' && c <= 'Z';
                           });
        for (std::size_t i = 0; i < invented.size(); ++i)
            if (upper || (i == 0 && like[0] >= 'A' && like[0] <= 'Z'))
                invented[i] = char(invented[i] - 'a' + 'A');
        return invented;
    }

    // Calls `replace` on every run of ASCII letters in `text`.
    template <class Replace>
    static std::string words(std::string_view text, Replace replace) {
        std::string out;
        for (std::size_t i = 0; i < text.size();) {
            if (!isLetter(text[i])) {
                out += text[i++];
                continue;
            }
            std::size_t end = i;
            while (end < text.size() && isLetter(text[end]))
                ++end;
            out += replace(text.substr(i, end - i));
            i = end;
        }
        return out;
    }

    // A page word: invented the first time it is seen.
    std::string learn(std::string_view word) {
        const std::string key = lower(word);
        if (word.size() < 3 || key == "enter" || key == "escape") return std::string(word);
        auto found = m_words.find(key);
        if (found == m_words.end()) {
            const int syllables = std::clamp(int(word.size() + 1) / 3, 1, 4);
            found = m_words.emplace(key, inventedWord(m_random, syllables, syllables)).first;
        }
        return withCase(found->second, word);
    }

    // A word the page showed, replaced; any other word as it was.
    std::string known(std::string_view word) const {
        const auto found = m_words.find(lower(word));
        return found == m_words.end() ? std::string(word) : withCase(found->second, word);
    }

    SplitMix64& m_random;
    std::map<std::string, std::string> m_words;  // lower case -> invented
};

Look drawLook(SplitMix64& random) {
    Look look;
    look.palette = random.below(2) == 0 ? pick(random, kLight) : pick(random, kDark);
    look.accent = pick(random, kAccents);
    look.font = pick(random, kFonts);
    look.fontSize = random.between(12, 19);
    look.radius = random.between(0, 12);
    look.pad = random.between(5, 12);
    look.width = random.between(340, 560);
    look.centred = random.below(3) != 0;
    return look;
}

std::string px(int value) {
    return std::to_string(value) + "px";
}

std::string styleSheet(const Look& l) {
    const Palette& p = l.palette;
    const std::string r = px(l.radius);
    return std::string("*{box-sizing:border-box}html,body{margin:0}\n") +
           "body{font-family:" + l.font + ";font-size:" + px(l.fontSize) +
           ";background:" + p.background + ";color:" + p.text + ";line-height:1.4}\n" +
           ".btn{font:inherit;padding:" + px(l.pad) + ' ' + px(l.pad * 2) + ";border-radius:" + r +
           ";border:1px solid " + p.border + ";background:" + p.surface + ";color:" + p.text +
           ";cursor:pointer;margin:4px}\n" + ".btn.primary{background:" + l.accent +
           ";border-color:" + l.accent + ";color:#ffffff}\n" +
           ".field{font:inherit;display:block;width:100%;padding:" + px(l.pad) +
           ";border:1px solid " + p.border + ";border-radius:" + r + ";background:" + p.surface +
           ";color:" + p.text + "}\n.field:focus{outline:2px solid " + l.accent + "}\n" +
           ".lbl{display:block;margin:12px 0 4px}\n.check{display:block;margin:10px 0}\n" +
           "a{color:" + l.accent + "}\n.muted{color:" + p.muted + "}\n" +
           ".main{width:" + px(l.width) + ";margin:" + (l.centred ? "48px auto" : "48px 64px") +
           "}\n.panel{background:" + p.surface + ";border:1px solid " + p.border +
           ";border-radius:" + r + ";padding:20px}\n" +
           "table{border-collapse:collapse;width:100%}td,th{padding:6px 12px;text-align:left;"
           "border-bottom:1px solid " +
           p.border + "}\n" +
           ".bar{display:flex;align-items:center;gap:6px;flex-wrap:wrap;padding:8px 16px;"
           "background:" +
           p.surface + ";border-bottom:1px solid " + p.border + "}\n.bar .grow{flex:1}\n" +
           ".bar a{margin:0 10px;text-decoration:none}\n" +
           ".overlay{position:fixed;left:0;top:0;right:0;bottom:0;background:rgba(0,0,0,0.5);"
           "display:flex;align-items:center;justify-content:center}\n" +
           ".dialog{background:" + p.surface + ";border:1px solid " + p.border +
           ";border-radius:" + r + ";padding:20px;width:" + px(l.width) + "}\n" +
           ".dialog h2{margin:0 0 8px;display:flex}.dialog h2 span{flex:1}\n" +
           ".grid{display:flex;flex-wrap:wrap;gap:16px;padding:24px}\n" +
           ".card{background:" + p.surface + ";border:1px solid " + p.border +
           ";border-radius:" + r + ";padding:14px;width:220px}\n.card h3{margin:0 0 6px}\n" +
           ".side{position:fixed;left:0;top:0;bottom:0;width:200px;background:" + p.surface +
           ";border-right:1px solid " + p.border + ";padding:16px}\n" +
           ".side a{display:block;width:fit-content;padding:8px 6px;text-decoration:none}\n" +
           ".content{margin-left:232px;padding:24px}\n" + "h1{font-size:1.6em;margin:0 0 12px}\n";
}

// The recorder: see task_generator.h. Trusted events only, so that a page script cannot forge
// a fact.
constexpr std::string_view kRecorder = R"JS(<script>
(() => {
  const put = (fact, value) => { document.getElementById('iris-' + fact).textContent = value; };
  const closeDialog = () => {
    const box = document.getElementById('iris-dialog-box');
    if (box) { box.style.display = 'none'; put('dialog', 'closed'); }
  };
  document.addEventListener('click', e => {
    const t = e.target instanceof Element ? e.target : null;
    if (t && t.closest('a')) e.preventDefault();
    if (!e.isTrusted || !t) return;
    const c = t.closest('[data-iris-id]');
    if (!c) return;
    put('last-click', c.dataset.irisId);
    if (c.hasAttribute('data-iris-close')) closeDialog();
  }, true);
  document.addEventListener('keydown', e => {
    if (!e.isTrusted || (e.key !== 'Enter' && e.key !== 'Escape')) return;
    put('last-key', e.key);
    if (e.key === 'Escape') closeDialog();
    const a = document.activeElement;
    const form = e.key === 'Enter' && a ? a.closest('form[data-iris-id]') : null;
    if (form) { put('submitted', form.dataset.irisId); e.preventDefault(); }
  }, true);
  document.addEventListener('submit', e => e.preventDefault(), true);
  window.__irisProbe = id => {
    const el = document.querySelector('[data-iris-id="' + id + '"]');
    // A link wrapped over two lines has a bounding box whose centre lies between its two
    // fragments, on no text: measure its largest fragment instead (one rect for blocks).
    let r = null;
    for (const f of el ? el.getClientRects() : [])
      if (!r || f.width * f.height > r.width * r.height) r = f;
    const a = document.activeElement;
    return {box: r ? {left: r.left, top: r.top, width: r.width, height: r.height} : null,
            focus: a && a.dataset && a.dataset.irisId ? a.dataset.irisId : '',
            scrollY: window.scrollY, width: window.innerWidth, height: window.innerHeight};
  };
})();
</script>
)JS";

// --- building a page -----------------------------------------------------------------------------

struct Builder {
    SplitMix64& random;
    SyntheticTask& task;
    // The stream invented text comes from; null: the word lists' text is typed.
    SplitMix64* invented;
    Look look;
    std::string body;
    std::string title;
    bool dialog = false;  // the page opens with a dialog (#iris-dialog-box)
    int next = 1;

    std::string newId() { return "c" + std::to_string(next++); }
    std::string button(std::string_view label, bool primary = false, std::string_view extra = {}) {
        const std::string id = newId();
        body += "<button type=\"button\" class=\"btn" + std::string(primary ? " primary" : "") +
                "\" data-iris-id=\"" + id + "\"" + std::string(extra) + ">" + htmlEscape(label) +
                "</button>";
        return id;
    }
    std::string link(std::string_view label) {
        const std::string id = newId();
        body += "<a href=\"#\" data-iris-id=\"" + id + "\">" + htmlEscape(label) + "</a>";
        return id;
    }
    std::string field(std::string_view label, std::string_view type, bool autofocus = false) {
        const std::string id = newId();
        body += "<label class=\"lbl\" for=\"" + id + "\">" + htmlEscape(label) +
                "</label><input class=\"field\" id=\"" + id + "\" data-iris-id=\"" + id +
                "\" type=\"" + std::string(type) + "\"" + (autofocus ? " autofocus" : "") + ">";
        return id;
    }
    std::string checkbox(std::string_view label) {
        const std::string id = newId();
        body += "<div class=\"check\"><label data-iris-id=\"" + id +
                "\"><input type=\"checkbox\"> " + htmlEscape(label) + "</label></div>";
        return id;
    }
    void text(std::string_view html) { body += html; }

    // The task's single goal: click `id`, named as `naming` says.
    void clickTask(const std::string& id, StepKind naming, std::string instruction) {
        task.instruction = std::move(instruction);
        task.goals.push_back({TaskGoal::Act::Click, id, {}, naming});
        task.expectedFacts["last_click"] = id;
    }
    // Text for a field to be typed into: `listed` (already drawn from a word list, so that the
    // page stream is the same either way), or an invented text of that shape.
    std::string toType(std::string listed, TextShape shape) {
        return invented == nullptr ? listed : inventedText(*invented, shape);
    }
    void typeGoal(const std::string& id, const std::string& text) {
        task.goals.push_back({TaskGoal::Act::Type, id, text, StepKind::ClickRole});
        task.expectedValues[id] = text;
    }
    void clickGoal(const std::string& id) {
        task.goals.push_back({TaskGoal::Act::Click, id, {}, StepKind::ClickLabel});
        task.expectedFacts["last_click"] = id;
    }
    void keyGoal(std::string_view key) {
        task.goals.push_back({TaskGoal::Act::Key, {}, std::string(key), StepKind::Key});
        task.expectedFacts["last_key"] = key == "enter" ? "Enter" : "Escape";
    }
};

std::string quoted(std::string_view text) {
    return "'" + std::string(text) + "'";
}

// A row of filler text so that pages are not bare.
std::string filler(SplitMix64& random, int sentences) {
    static constexpr std::array kSentences = {
        "Changes are saved automatically.",  "Last updated two days ago.",
        "You can undo this later.",          "Everything here is private.",
        "Need help? Our team replies fast.", "All prices include tax.",
        "Shared with three people.",         "Synced a minute ago."};
    std::string out = "<p class=\"muted\">";
    for (int i = 0; i < sentences; ++i)
        out += std::string(i ? " " : "") + pick(random, kSentences);
    return out + "</p>";
}

// --- training templates --------------------------------------------------------------------------

void formLogin(Builder& b) {
    SplitMix64& r = b.random;
    const std::string site = pick(r, kSites);
    b.title = "Sign in - " + site;
    b.text("<div class=\"main\"><div class=\"panel\"><h1>Sign in to " + site + "</h1>");
    const bool email = r.below(2) == 0;
    const std::string userLabel = email ? "Email address" : "Username";
    const std::string user = pick(r, kUsers);
    const std::string login =
        email ? b.toType(user + "@example.com", TextShape::Email) : b.toType(user, TextShape::User);
    const std::string userId = b.field(userLabel, "text", true);
    const std::string passId = b.field("Password", "password");
    const std::string rememberId = b.checkbox("Remember me");
    b.text("<div>");
    const std::string signIn = b.button("Sign in", true);
    b.text("</div><p>");
    const std::string forgot = b.link("Forgot password?");
    b.text(" &middot; ");
    const std::string create = b.link("Create an account");
    b.text("</p>" + filler(r, 1) + "</div></div>");
    const std::string secret = b.toType(pick(r, kSecrets), TextShape::Secret);
    switch (r.below(6)) {
        case 0:
        case 1:
            b.task.instruction =
                "Sign in as " + login + " with the password " + quoted(secret) + ".";
            b.typeGoal(userId, login);
            b.typeGoal(passId, secret);
            b.clickGoal(signIn);
            break;
        case 2: {
            const std::array choices = {std::pair{signIn, "Click the 'Sign in' button."},
                                        std::pair{forgot, "Click 'Forgot password?'."},
                                        std::pair{create, "Click 'Create an account'."},
                                        std::pair{rememberId, "Tick 'Remember me'."}};
            const auto& [id, text] = pick(r, choices);
            b.clickTask(id, StepKind::ClickLabel, text);
            break;
        }
        case 3:
            b.clickTask(passId, StepKind::ClickRole, "Click the password field.");
            break;
        case 4:
            b.task.instruction = "Type " + quoted(login) + " into the " + userLabel + " field.";
            b.typeGoal(userId, login);
            break;
        default:
            b.task.instruction =
                "Enter " + quoted(login) + " as the " + userLabel + " and press Enter.";
            b.typeGoal(userId, login);
            b.keyGoal("enter");
            break;
    }
}

void formSearch(Builder& b) {
    SplitMix64& r = b.random;
    const std::string site = pick(r, kSites);
    b.title = site + " Search";
    b.text("<div class=\"bar\"><b>" + site + "</b><span class=\"grow\"></span>");
    const std::string help = b.link("Help");
    b.text("</div><div class=\"main\"><form data-iris-id=\"search\">");
    const std::string fieldId = b.newId();
    b.text("<input class=\"field\" data-iris-id=\"" + fieldId +
           "\" type=\"search\" placeholder=\"Search " + site + "\">");
    b.text("</form><div>");
    const std::string go = b.button("Search", true);
    std::vector<std::string> chipIds;
    const std::vector<std::string> chips = distinct(r, kChips, r.between(3, 5));
    for (const std::string& chip : chips)
        chipIds.push_back(b.button(chip));
    b.text("</div>" + filler(r, 2) + "</div>");
    const std::string query = b.toType(pick(r, kQueries), TextShape::Phrase);
    switch (r.below(6)) {
        case 0:
        case 1:
            b.task.instruction = "Search for " + quoted(query) + ".";
            b.typeGoal(fieldId, query);
            b.keyGoal("enter");
            b.task.expectedFacts["submitted"] = "search";
            break;
        case 2:
            b.clickTask(fieldId, StepKind::ClickRole, "Click the search field.");
            break;
        case 3: {
            const std::size_t i = r.below(chipIds.size());
            b.clickTask(chipIds[i], StepKind::ClickLabel,
                        "Click the " + quoted(chips[i]) + " button.");
            break;
        }
        case 4:
            b.task.instruction =
                "Type " + quoted(query) + " into the search field and click 'Search'.";
            b.typeGoal(fieldId, query);
            b.clickGoal(go);
            break;
        default:
            if (r.below(2) == 0)
                b.clickTask(go, StepKind::ClickLabel, "Click the 'Search' button.");
            else
                b.clickTask(help, StepKind::ClickLabel, "Open 'Help'.");
            break;
    }
}

void toolbarEditor(Builder& b) {
    SplitMix64& r = b.random;
    b.title = "Untitled document";
    const std::vector<std::string> labels = distinct(r, kToolbar, r.between(5, 9));
    std::vector<std::string> ids;
    b.text("<div class=\"bar\">");
    for (const std::string& label : labels)
        ids.push_back(b.button(label));
    b.text("<span class=\"grow\"></span>");
    const std::string find = b.newId();
    b.text("<input class=\"field\" style=\"width:160px\" data-iris-id=\"" + find +
           "\" type=\"text\" placeholder=\"Find\">");
    b.text("</div><div class=\"main\"><h1>Meeting notes</h1>" + filler(r, 3) + filler(r, 2) +
           "</div>");
    const std::size_t i = r.below(ids.size());
    switch (r.below(4)) {
        case 0:
        case 1:
            b.clickTask(ids[i], StepKind::ClickLabel, "Click " + quoted(labels[i]) + ".");
            break;
        case 2:
            b.clickTask(ids[i], StepKind::ClickPosition,
                        "Click the " + std::string(kOrdinals[i]) + " button in the toolbar.");
            break;
        default:
            b.task.instruction = "Type " + quoted(labels[i]) + " into the find field.";
            b.typeGoal(find, labels[i]);
            break;
    }
}

// Rows of `names`, each with the `actions` buttons; returns ids[row][action].
std::vector<std::vector<std::string>> rows(Builder& b, const std::vector<std::string>& names,
                                           const std::vector<std::string>& actions, bool table) {
    std::vector<std::vector<std::string>> ids;
    b.text(table ? "<table><tr><th>Name</th><th>Size</th><th></th></tr>" : "<div>");
    for (const std::string& name : names) {
        b.text(table ? "<tr><td>" + htmlEscape(name) + "</td><td>" +
                           std::to_string(b.random.between(2, 900)) + " KB</td><td>"
                     : "<div class=\"panel\" style=\"margin:8px 0;display:flex;align-items:"
                       "center\"><span style=\"flex:1\">" +
                           htmlEscape(name) + "</span>");
        ids.emplace_back();
        for (const std::string& action : actions)
            ids.back().push_back(b.button(action));
        b.text(table ? "</td></tr>" : "</div>");
    }
    b.text(table ? "</table>" : "</div>");
    return ids;
}

// A list task: a row action named by position, by its row, or (long lists) below the fold.
void rowTask(Builder& b, const std::vector<std::string>& names,
             const std::vector<std::string>& actions,
             const std::vector<std::vector<std::string>>& ids, bool longList) {
    SplitMix64& r = b.random;
    const std::size_t a = r.below(actions.size());
    if (longList) {
        const std::size_t row = names.size() - 1 - r.below(4);
        b.clickTask(ids[row][a], StepKind::ClickLabel,
                    "Click " + quoted(actions[a]) + " for " + quoted(names[row]) + ".");
        return;
    }
    const std::size_t row = r.below(std::min<std::size_t>(names.size(), 5));
    if (r.below(2) == 0)
        b.clickTask(
            ids[row][a], StepKind::ClickPosition,
            "Click the " + std::string(kOrdinals[row]) + " " + quoted(actions[a]) + " button.");
    else
        b.clickTask(ids[row][a], StepKind::ClickLabel,
                    "Click " + quoted(actions[a]) + " for " + quoted(names[row]) + ".");
}

void tableFiles(Builder& b) {
    SplitMix64& r = b.random;
    b.title = "Files";
    const bool longList = r.below(3) == 0;
    const std::vector<std::string> names =
        distinct(r, kFiles, longList ? r.between(12, 16) : r.between(4, 8));
    const std::vector<std::string> actions =
        r.below(2) ? std::vector<std::string>{"Open", "Delete"}
                   : std::vector<std::string>{"Share", "Download", "Delete"};
    b.text("<div class=\"main\" style=\"width:" + px(std::max(b.look.width, 520)) +
           "\"><h1>My files</h1>");
    const auto ids = rows(b, names, actions, true);
    b.text("</div>");
    rowTask(b, names, actions, ids, longList);
}

// The dialog over a page; returns {close, cancel, confirm} ids.
std::array<std::string, 3> dialogFrame(Builder& b, const std::string& heading,
                                       const std::string& confirm,
                                       const std::function<void()>& inside) {
    b.dialog = true;
    b.text("<div class=\"main\"><h1>" + heading + "</h1>" + filler(b.random, 3) +
           filler(b.random, 2) +
           "</div><div class=\"overlay\" id=\"iris-dialog-box\"><div class=\"dialog\" "
           "role=\"dialog\"><h2><span>" +
           heading + "</span>");
    const std::string close = b.button("\xC3\x97", false, " aria-label=\"Close\" data-iris-close");
    b.text("</h2>");
    inside();
    b.text("<div style=\"text-align:right\">");
    const std::string cancel = b.button("Cancel", false, " data-iris-close");
    const std::string ok = b.button(confirm, true);
    b.text("</div></div></div>");
    return {close, cancel, ok};
}

void dialogConfirm(Builder& b) {
    SplitMix64& r = b.random;
    const std::string file = pick(r, kFiles);
    b.title = "Confirm";
    const bool remove = r.below(2) == 0;
    const std::string verb = remove ? "Delete" : "Archive";
    const auto [close, cancel, ok] = dialogFrame(b, verb + " " + file + "?", verb, [&] {
        b.text("<p>This will " + std::string(remove ? "permanently delete" : "archive") + " <b>" +
               file + "</b>.</p>");
    });
    switch (r.below(4)) {
        case 0:
            b.task.instruction = "Close the dialog with the Escape key.";
            b.keyGoal("escape");
            b.task.expectedFacts["dialog"] = "closed";
            break;
        case 1:
            b.clickTask(close, StepKind::ClickRole, "Click the dialog's close button.");
            b.task.expectedFacts["dialog"] = "closed";
            break;
        case 2:
            b.clickTask(cancel, StepKind::ClickLabel, "Click 'Cancel' in the dialog.");
            b.task.expectedFacts["dialog"] = "closed";
            break;
        default:
            b.clickTask(ok, StepKind::ClickLabel, "Confirm: click " + quoted(verb) + ".");
            break;
    }
}

void dialogNewFolder(Builder& b) {
    SplitMix64& r = b.random;
    b.title = "Files";
    std::string fieldId;
    const auto [close, cancel, ok] =
        dialogFrame(b, "New folder", "Create", [&] { fieldId = b.field("Folder name", "text"); });
    const std::string name = b.toType(pick(r, kQueries), TextShape::Phrase);
    switch (r.below(5)) {
        case 0:
        case 1:
            b.task.instruction = "Create a folder named " + quoted(name) + ".";
            b.typeGoal(fieldId, name);
            b.clickGoal(ok);
            break;
        case 2:
            b.clickTask(fieldId, StepKind::ClickRole, "Click the folder name field.");
            break;
        case 3:
            b.task.instruction = "Type " + quoted(name) + " as the folder name.";
            b.typeGoal(fieldId, name);
            break;
        default:
            if (r.below(2) == 0)
                b.clickTask(cancel, StepKind::ClickLabel, "Click 'Cancel'.");
            else
                b.clickTask(close, StepKind::ClickRole, "Close the dialog with its close button.");
            b.task.expectedFacts["dialog"] = "closed";
            break;
    }
}

void navTopbar(Builder& b) {
    SplitMix64& r = b.random;
    const std::string site = pick(r, kSites);
    b.title = site;
    const std::vector<std::string> links = distinct(r, kNavLinks, r.between(4, 7));
    std::vector<std::string> ids;
    b.text("<div class=\"bar\">");
    const std::string menu = b.button("\xE2\x98\xB0", false, " aria-label=\"Menu\"");
    b.text("<b>" + site + "</b><span class=\"grow\"></span>");
    for (const std::string& link : links)
        ids.push_back(b.link(link));
    const std::string signUp = b.button("Sign up", true);
    b.text("</div><div class=\"main\"><h1>Welcome to " + site + "</h1>" + filler(r, 3));
    const std::string start = b.button("Get started", true);
    b.text("</div>");
    const std::size_t i = r.below(ids.size());
    switch (r.below(5)) {
        case 0:
        case 1:
            b.clickTask(ids[i], StepKind::ClickLabel, "Go to the " + quoted(links[i]) + " page.");
            break;
        case 2:
            b.clickTask(ids[i], StepKind::ClickPosition,
                        "Click the " + std::string(kOrdinals[i]) + " link in the navigation bar.");
            break;
        case 3:
            b.clickTask(menu, StepKind::ClickRole, "Open the menu.");
            break;
        default:
            if (r.below(2) == 0)
                b.clickTask(signUp, StepKind::ClickLabel, "Click 'Sign up'.");
            else
                b.clickTask(start, StepKind::ClickLabel, "Click 'Get started'.");
            break;
    }
}

// Cards of `titles`, each with a price and the `action` button; returns the buttons' ids.
std::vector<std::string> cards(Builder& b, const std::vector<std::string>& titles,
                               const std::string& action) {
    std::vector<std::string> ids;
    b.text("<div class=\"grid\">");
    for (const std::string& title : titles) {
        b.text("<div class=\"card\"><h3>" + htmlEscape(title) + "</h3><p class=\"muted\">$" +
               std::to_string(b.random.between(5, 240)) + "</p>");
        ids.push_back(b.button(action, b.random.below(2) == 0));
        b.text("</div>");
    }
    b.text("</div>");
    return ids;
}

void cardsGrid(Builder& b) {
    SplitMix64& r = b.random;
    b.title = "Shop";
    const bool longList = r.below(3) == 0;
    const std::vector<std::string> titles = distinct(r, kProducts, longList ? 24 : r.between(3, 8));
    const std::string action = r.below(2) ? "Add to cart" : "Buy now";
    b.text("<h1 style=\"padding:24px 24px 0\">Our products</h1>");
    const std::vector<std::string> ids = cards(b, titles, action);
    if (longList) {
        const std::size_t i = titles.size() - 1 - r.below(3);
        b.clickTask(ids[i], StepKind::ClickLabel,
                    "Click " + quoted(action) + " on the " + quoted(titles[i]) + " card.");
        return;
    }
    const std::size_t i = r.below(titles.size());
    if (r.below(2) == 0)
        b.clickTask(ids[i], StepKind::ClickPosition,
                    "Click " + quoted(action) + " on the " + std::string(kOrdinals[i]) + " card.");
    else
        b.clickTask(ids[i], StepKind::ClickLabel,
                    "Click " + quoted(action) + " on the " + quoted(titles[i]) + " card.");
}

// --- more training templates (TaskOptions::moreTemplates) ----------------------------------------

void formContact(Builder& b) {
    SplitMix64& r = b.random;
    const std::string site = pick(r, kSites);
    b.title = "Contact " + site;
    b.text("<div class=\"main\"><div class=\"panel\"><h1>Contact us</h1>" + filler(r, 1));
    const std::string subjectId = b.field("Subject", "text", true);
    const std::string nameId = b.field("Your name", "text");
    const std::string emailId = b.field("Email", "email");
    b.text("<div>");
    const std::string send = b.button("Send message", true);
    const std::string clear = b.button("Clear");
    b.text("</div><p>");
    const std::string privacy = b.link("Privacy policy");
    b.text("</p></div></div>");
    const std::string email =
        b.toType(std::string(pick(r, kUsers)) + "@example.net", TextShape::Email);
    const std::string subject = b.toType(pick(r, kQueries), TextShape::Phrase);
    switch (r.below(6)) {
        case 0:
        case 1:
            b.task.instruction =
                "Write to " + site + " about " + quoted(subject) + " from " + email + ".";
            b.typeGoal(subjectId, subject);
            b.typeGoal(emailId, email);
            b.clickGoal(send);
            break;
        case 2: {
            const std::array choices = {std::pair{nameId, "Click the name field."},
                                        std::pair{emailId, "Click the email field."},
                                        std::pair{subjectId, "Click the subject field."}};
            const auto& [id, text] = pick(r, choices);
            b.clickTask(id, StepKind::ClickRole, text);
            break;
        }
        case 3:
            b.task.instruction = "Type " + quoted(subject) + " into the Subject field.";
            b.typeGoal(subjectId, subject);
            break;
        default: {
            const std::array choices = {std::pair{send, "Click 'Send message'."},
                                        std::pair{clear, "Click 'Clear'."},
                                        std::pair{privacy, "Open the 'Privacy policy' link."}};
            const auto& [id, text] = pick(r, choices);
            b.clickTask(id, StepKind::ClickLabel, text);
            break;
        }
    }
}

void listTodo(Builder& b) {
    SplitMix64& r = b.random;
    b.title = "To do";
    const std::vector<std::string> items = distinct(r, kTodos, r.between(3, 7));
    b.text("<div class=\"main\"><h1>To do</h1>");
    std::vector<std::string> ids;
    for (const std::string& item : items)
        ids.push_back(b.checkbox(item));
    const std::string newTask = b.field("New task", "text");
    const std::string add = b.button("Add", true);
    b.text(filler(r, 1) + "</div>");
    const std::string task = b.toType(pick(r, kTodos), TextShape::Phrase);
    const std::size_t i = r.below(ids.size());
    switch (r.below(5)) {
        case 0:
        case 1:
            b.clickTask(ids[i], StepKind::ClickLabel, "Tick " + quoted(items[i]) + ".");
            break;
        case 2:
            b.clickTask(ids[i], StepKind::ClickPosition,
                        "Tick the " + std::string(kOrdinals[i]) + " task in the list.");
            break;
        case 3:
            b.task.instruction = "Add the task " + quoted(task) + ".";
            b.typeGoal(newTask, task);
            b.clickGoal(add);
            break;
        default:
            b.task.instruction = "Type " + quoted(task) + " as a new task and press Enter.";
            b.typeGoal(newTask, task);
            b.keyGoal("enter");
            break;
    }
}

void navTabs(Builder& b) {
    SplitMix64& r = b.random;
    const std::string site = pick(r, kSites);
    b.title = site + " project";
    const std::vector<std::string> tabs = distinct(r, kTabs, r.between(3, 6));
    b.text("<div class=\"main\" style=\"width:" + px(std::max(b.look.width, 560)) + "\"><h1>" +
           site + " project</h1><div class=\"bar\">");
    std::vector<std::string> ids;
    for (const std::string& tab : tabs)
        ids.push_back(b.button(tab));
    b.text("</div>" + filler(r, 2));
    const std::string filterId = b.newId();
    b.text("<input class=\"field\" data-iris-id=\"" + filterId +
           "\" type=\"text\" placeholder=\"Filter\">" + filler(r, 1) + "</div>");
    const std::string filter = b.toType(pick(r, kQueries), TextShape::Phrase);
    const std::size_t i = r.below(ids.size());
    switch (r.below(5)) {
        case 0:
        case 1:
            b.clickTask(ids[i], StepKind::ClickLabel, "Open the " + quoted(tabs[i]) + " tab.");
            break;
        case 2:
            b.clickTask(ids[i], StepKind::ClickPosition,
                        "Open the " + std::string(kOrdinals[i]) + " tab.");
            break;
        case 3:
            b.clickTask(filterId, StepKind::ClickRole, "Click the filter field.");
            break;
        default:
            b.task.instruction = "Filter the page by " + quoted(filter) + ".";
            b.typeGoal(filterId, filter);
            break;
    }
}

// --- held-out templates --------------------------------------------------------------------------

void formSignup(Builder& b) {
    SplitMix64& r = b.random;
    const std::string site = pick(r, kSites);
    b.title = "Create your " + site + " account";
    b.text("<div class=\"main\"><div class=\"panel\"><h1>Create your account</h1>");
    const std::string nameId = b.field("Full name", "text", true);
    const std::string emailId = b.field("Email", "email");
    const std::string passId = b.field("Password", "password");
    const std::string terms = b.checkbox("I agree to the terms");
    const std::string create = b.button("Create account", true);
    b.text("<p>Already have an account? ");
    const std::string signIn = b.link("Sign in");
    b.text("</p></div></div>");
    const std::string name = b.toType(pick(r, kFullNames), TextShape::FullName);
    const std::string email =
        b.toType(std::string(pick(r, kUsers)) + "@example.org", TextShape::Email);
    switch (r.below(5)) {
        case 0:
        case 1:
            b.task.instruction = "Sign up as " + name + " with the email " + email + ".";
            b.typeGoal(nameId, name);
            b.typeGoal(emailId, email);
            b.clickGoal(create);
            break;
        case 2:
            b.clickTask(emailId, StepKind::ClickRole, "Click the email field.");
            break;
        case 3:
            b.task.instruction = "Type " + quoted(email) + " into the email field.";
            b.typeGoal(emailId, email);
            break;
        default: {
            const std::array choices = {std::pair{terms, "Tick 'I agree to the terms'."},
                                        std::pair{create, "Click 'Create account'."},
                                        std::pair{signIn, "Click the 'Sign in' link."},
                                        std::pair{passId, "Click the password field."}};
            const std::size_t c = r.below(choices.size());
            b.clickTask(choices[c].first, c == 3 ? StepKind::ClickRole : StepKind::ClickLabel,
                        choices[c].second);
            break;
        }
    }
}

void formSettings(Builder& b) {
    SplitMix64& r = b.random;
    b.title = "Settings";
    b.text("<div class=\"main\"><h1>Settings</h1><form data-iris-id=\"settings\">");
    const std::string nameId = b.field("Display name", "text");
    const std::vector<std::string> toggles = distinct(r, kToggles, r.between(2, 4));
    std::vector<std::string> toggleIds;
    for (const std::string& t : toggles)
        toggleIds.push_back(b.checkbox(t));
    b.text("</form><div>");
    const std::string cancel = b.button("Cancel");
    const std::string save = b.button("Save changes", true);
    b.text("</div>" + filler(r, 1) + "</div>");
    const std::string name = b.toType(pick(r, kFullNames), TextShape::FullName);
    switch (r.below(6)) {
        case 0:
        case 1:
            b.task.instruction = "Set the display name to " + quoted(name) + " and save.";
            b.typeGoal(nameId, name);
            b.clickGoal(save);
            break;
        case 2: {
            const std::size_t i = r.below(toggles.size());
            b.clickTask(toggleIds[i], StepKind::ClickLabel, "Tick " + quoted(toggles[i]) + ".");
            break;
        }
        case 3:
            b.clickTask(nameId, StepKind::ClickRole, "Click the display name field.");
            break;
        case 4:
            b.task.instruction = "Set the display name to " + quoted(name) + " and press Enter.";
            b.typeGoal(nameId, name);
            b.keyGoal("enter");
            b.task.expectedFacts["submitted"] = "settings";
            break;
        default: {
            const bool saving = r.below(2) == 0;
            b.clickTask(saving ? save : cancel, StepKind::ClickLabel,
                        saving ? "Click 'Save changes'." : "Click 'Cancel'.");
            break;
        }
    }
}

void listContacts(Builder& b) {
    SplitMix64& r = b.random;
    b.title = "Contacts";
    const bool longList = r.below(3) == 0;
    std::vector<std::string> names = distinct(r, kFullNames, 12);
    if (!longList) names.resize(std::size_t(r.between(3, 6)));
    const std::vector<std::string> actions = {"Message", "Remove"};
    b.text("<div class=\"main\" style=\"width:" + px(std::max(b.look.width, 480)) +
           "\"><h1>Contacts</h1>");
    const auto ids = rows(b, names, actions, false);
    b.text("</div>");
    rowTask(b, names, actions, ids, longList);
}

void dialogForm(Builder& b) {
    SplitMix64& r = b.random;
    b.title = "Rename";
    const std::string file = pick(r, kFiles);
    std::string fieldId;
    const auto [close, cancel, ok] =
        dialogFrame(b, "Rename " + file, "Rename", [&] { fieldId = b.field("New name", "text"); });
    const std::string name = b.toType(pick(r, kFiles), TextShape::FileName);
    switch (r.below(4)) {
        case 0:
        case 1:
            b.task.instruction = "Rename the file to " + quoted(name) + ".";
            b.typeGoal(fieldId, name);
            b.clickGoal(ok);
            break;
        case 2:
            b.task.instruction = "Close the dialog with the Escape key.";
            b.keyGoal("escape");
            b.task.expectedFacts["dialog"] = "closed";
            break;
        default:
            b.clickTask(close, StepKind::ClickRole, "Click the dialog's close button.");
            b.task.expectedFacts["dialog"] = "closed";
            break;
    }
}

void navSidebar(Builder& b) {
    SplitMix64& r = b.random;
    b.title = "Workspace";
    const std::vector<std::string> links = distinct(r, kSideLinks, r.between(5, 8));
    std::vector<std::string> ids;
    b.text("<div class=\"side\"><b>" + std::string(pick(r, kSites)) + "</b>");
    for (const std::string& link : links)
        ids.push_back(b.link(link));
    b.text("</div><div class=\"content\"><div>");
    const std::string add = b.button("New project", true);
    b.text("</div><h1>" + links[0] + "</h1>" + filler(r, 3) + "</div>");
    const std::size_t i = r.below(ids.size());
    switch (r.below(4)) {
        case 0:
        case 1:
            b.clickTask(ids[i], StepKind::ClickLabel, "Open " + quoted(links[i]) + ".");
            break;
        case 2:
            b.clickTask(ids[i], StepKind::ClickPosition,
                        "Click the " + std::string(kOrdinals[i]) + " link in the sidebar.");
            break;
        default:
            b.clickTask(add, StepKind::ClickLabel, "Click 'New project'.");
            break;
    }
}

void cardsArticles(Builder& b) {
    SplitMix64& r = b.random;
    b.title = "Reading list";
    const bool longList = r.below(3) == 0;
    const std::vector<std::string> titles = distinct(r, kArticles, longList ? 8 : r.between(3, 6));
    b.text("<div class=\"main\" style=\"width:" + px(std::max(b.look.width, 480)) +
           "\"><h1>Reading list</h1>");
    std::vector<std::string> ids;
    for (const std::string& title : titles) {
        b.text("<div class=\"panel\" style=\"margin:12px 0\"><h3>" + htmlEscape(title) + "</h3>" +
               filler(r, 1));
        ids.push_back(b.button("Read more"));
        b.text("</div>");
    }
    b.text("</div>");
    const std::size_t i = longList ? titles.size() - 1 - r.below(3)
                                   : r.below(std::min<std::size_t>(titles.size(), 5));
    if (!longList && r.below(2) == 0)
        b.clickTask(ids[i], StepKind::ClickPosition,
                    "Click 'Read more' on the " + std::string(kOrdinals[i]) + " article.");
    else
        b.clickTask(ids[i], StepKind::ClickLabel,
                    "Click 'Read more' on " + quoted(titles[i]) + ".");
}

struct Template {
    std::string_view name;
    void (*build)(Builder&);
};
constexpr std::array kTrainTemplates = {
    Template{"form/login", formLogin},         Template{"form/search", formSearch},
    Template{"toolbar/editor", toolbarEditor}, Template{"table/files", tableFiles},
    Template{"dialog/confirm", dialogConfirm}, Template{"dialog/new-folder", dialogNewFolder},
    Template{"nav/topbar", navTopbar},         Template{"cards/grid", cardsGrid}};
constexpr std::array kMoreTrainTemplates = {Template{"form/contact", formContact},
                                            Template{"list/todo", listTodo},
                                            Template{"nav/tabs", navTabs}};
constexpr std::array kHeldOutTemplates = {
    Template{"form/signup", formSignup},     Template{"form/settings", formSettings},
    Template{"list/contacts", listContacts}, Template{"dialog/form", dialogForm},
    Template{"nav/sidebar", navSidebar},     Template{"cards/articles", cardsArticles}};

std::string document(const Builder& b) {
    std::string html = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" +
                       htmlEscape(b.title) + "</title>\n<style>\n" + styleSheet(b.look) +
                       "</style></head><body>\n" + b.body + "\n<div id=\"iris-state\" hidden>";
    for (std::string_view fact : kFactNames) {
        std::string id(fact);
        std::replace(id.begin(), id.end(), '_', '-');
        html += "<span id=\"iris-" + id + "\">" +
                (fact == "dialog" ? std::string(b.dialog ? "open" : "none") : "") + "</span>";
    }
    return html + "</div>\n" + std::string(kRecorder) + "</body></html>\n";
}

}  // namespace

std::string_view splitName(Split split) {
    return split == Split::Train ? "train" : "heldout";
}

std::string_view stepKindName(StepKind kind) {
    switch (kind) {
        case StepKind::ClickLabel:
            return "click_label";
        case StepKind::ClickRole:
            return "click_role";
        case StepKind::ClickPosition:
            return "click_position";
        case StepKind::Type:
            return "type";
        case StepKind::Scroll:
            return "scroll";
        case StepKind::Key:
            return "key";
        case StepKind::Done:
            break;
    }
    return "done";
}

// The templates a family draws from, in the order tasks cycle through them.
std::vector<const Template*> familyTemplates(Split split, bool moreTemplates) {
    std::vector<const Template*> family;
    if (split == Split::HeldOut) {
        for (const Template& t : kHeldOutTemplates)
            family.push_back(&t);
        return family;
    }
    for (const Template& t : kTrainTemplates)
        family.push_back(&t);
    if (moreTemplates) {
        for (const Template& t : kMoreTrainTemplates)
            family.push_back(&t);
    }
    return family;
}

const std::vector<std::string_view>& templateNames(Split split, bool moreTemplates) {
    static const auto names = [](Split family, bool more) {
        std::vector<std::string_view> out;
        for (const Template* t : familyTemplates(family, more))
            out.push_back(t->name);
        return out;
    };
    static const std::vector<std::string_view> train = names(Split::Train, false);
    static const std::vector<std::string_view> moreTrain = names(Split::Train, true);
    static const std::vector<std::string_view> heldOut = names(Split::HeldOut, false);
    if (split == Split::HeldOut) return heldOut;
    return moreTemplates ? moreTrain : train;
}

SyntheticTask generateTask(Split split, std::uint64_t seed, int index, TaskOptions options) {
    // The split is mixed into the stream, so a held-out task never shares a stream with a
    // training task, whatever seeds the two runs were given.
    const std::uint64_t salt = split == Split::Train ? 0x5452414Eull : 0x48454C44ull;
    SplitMix64 random(seed ^ (salt << 32) ^ (0xD1B54A32D192ED03ull * (std::uint64_t(index) + 1)));
    SyntheticTask task;
    task.split = split;
    char id[32];
    std::snprintf(id, sizeof id, "%s-%06d", split == Split::Train ? "train" : "heldout", index);
    task.id = id;
    const int slot = index % 10;
    task.screen = slot < 6   ? ScreenSize{1280, 800}
                  : slot < 8 ? ScreenSize{1024, 768}
                             : ScreenSize{1920, 1080};
    const std::vector<const Template*> family = familyTemplates(split, options.moreTemplates);
    const Template& t = *family[std::size_t(index) % family.size()];
    task.templateName = std::string(t.name);
    // Invented text has a stream of its own, so that drawing it leaves the page's untouched.
    SplitMix64 invented(seed ^ (salt << 16) ^ (0x9E3779B97F4A7C15ull * (std::uint64_t(index) + 1)));
    SplitMix64* typed = options.typed == TypedText::Invented ? &invented : nullptr;
    Builder builder{random, task, typed, drawLook(random), {}, {}, false, 1};
    t.build(builder);
    if (options.inventedLabels) {
        // A stream of its own again: the page's layout and the typed text stay as they were.
        SplitMix64 labels(seed ^ (salt << 8) ^
                          (0xBF58476D1CE4E5B9ull * (std::uint64_t(index) + 1)));
        Relabeller relabel(labels);
        builder.title = relabel.page(builder.title);
        builder.body = relabel.page(builder.body);
        task.instruction = relabel.instruction(task.instruction);
        for (TaskGoal& goal : task.goals) {
            if (goal.act != TaskGoal::Act::Type) continue;
            goal.text = relabel.typed(goal.text);
            task.expectedValues[goal.target] = goal.text;
        }
    }
    task.html = document(builder);
    return task;
}

std::string factXPath(std::string_view fact) {
    std::string id(fact);
    std::replace(id.begin(), id.end(), '_', '-');
    return "//*[@id='iris-" + id + "']";
}

std::string controlXPath(std::string_view id) {
    return "//*[@data-iris-id='" + std::string(id) + "']";
}

}  // namespace iris::agent::grounding
