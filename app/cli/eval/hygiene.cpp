#include "app/cli/eval/hygiene.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include <QString>
#include <QUrl>

#include "app/cli/eval/config_steps.h"
#include "app/cli/eval/eval_context.h"
#include "app/cli/eval/eval_results.h"
#include "base/strings.h"

namespace iris::app::eval {
namespace {

namespace ev = agent::eval;

constexpr double kLargeCoverage = 0.30;    // (a): an image this much of the viewport
constexpr double kMockupCoverage = 0.01;   // (a): the mockup file itself, at any useful size
constexpr double kHiddenFraction = 0.20;   // (b): original text still there but not shown
constexpr double kMissingFraction = 0.50;  // (b): original text not shown, hidden or deleted

bool isMockupMetric(const std::string& func) {
    return func == "compare_images" || func == "check_structure_sim" ||
           func == "check_structure_sim_with_threshold" || func == "design2code";
}

// The last path component of a URL or path, without query or fragment.
std::string fileNameOf(std::string source) {
    source = source.substr(0, source.find_first_of("?#"));
    const std::size_t slash = source.find_last_of("/\\");
    return slash == std::string::npos ? source : source.substr(slash + 1);
}

// A file's bytes; empty when it cannot be read (or is empty, or over 64 MiB).
std::string fileBytes(const std::filesystem::path& path) {
    std::error_code error;
    const auto size = std::filesystem::file_size(path, error);
    if (error || size == 0 || size > (64u << 20)) return {};
    std::ifstream in(path, std::ios::binary);
    std::string bytes(size, '\0');
    if (!in.read(bytes.data(), std::streamsize(size))) return {};
    return bytes;
}

std::string shortened(const std::string& text, std::size_t most = 60) {
    return text.size() <= most ? text : text.substr(0, most) + "...";
}

std::string mediaName(const PageMedia& media) {
    std::string name = media.kind == "background-image" || media.kind == "content-image"
                           ? "a CSS " + media.kind.substr(0, media.kind.find('-')) + " image"
                           : "an <" + media.kind + ">";
    if (!media.source.empty()) name += " (" + shortened(media.source) + ")";
    return name;
}

void findImages(const PageInspection& scored, const PageInspection* original,
                const std::vector<std::string>& mockupFiles, std::vector<std::string>& found) {
    for (const PageMedia& media : scored.media) {
        const std::string file = fileNameOf(media.source);
        const bool isMockup = !file.empty() && std::find(mockupFiles.begin(), mockupFiles.end(),
                                                         file) != mockupFiles.end();
        if (isMockup && media.coverage >= kMockupCoverage) {
            found.push_back("the page shows the target mockup " + file + " in " + mediaName(media) +
                            " covering " + percentText(media.coverage, 0) + " of the viewport");
            continue;
        }
        if (media.coverage < kLargeCoverage) continue;
        const bool wasThere =
            original && std::any_of(original->media.begin(), original->media.end(),
                                    [&](const PageMedia& before) {
                                        return before.kind == media.kind &&
                                               before.source == media.source &&
                                               before.coverage >= kLargeCoverage;
                                    });
        if (!wasThere)
            found.push_back(mediaName(media) + " that the original page did not have covers " +
                            percentText(media.coverage, 0) + " of the viewport");
    }
}

void findHiddenText(const PageInspection& scored, const PageInspection& original,
                    std::vector<std::string>& found) {
    std::string shownText = " ";
    std::map<std::string, std::string> hiddenWhy;  // texts the scored page has but does not show
    for (const PageText& text : scored.texts) {
        if (text.hidden.empty()) {
            shownText += text.text + " ";
        } else {
            hiddenWhy.emplace(text.text, text.hidden);
        }
    }
    double total = 0, hidden = 0, missing = 0;
    std::vector<std::string> examples;
    for (const PageText& text : original.texts) {
        if (!text.hidden.empty()) continue;
        total += double(text.text.size());
        // A substring of the shown text: an honest edit may split a text node (a word made bold).
        if (shownText.find(text.text) != std::string::npos) continue;
        missing += double(text.text.size());
        const auto why = hiddenWhy.find(text.text);
        if (why == hiddenWhy.end()) continue;
        hidden += double(text.text.size());
        if (examples.size() < 3)
            examples.push_back("\"" + shortened(text.text, 40) + "\" (" + why->second + ")");
    }
    if (total <= 0) return;
    std::string listed;
    for (const std::string& example : examples)
        listed += (listed.empty() ? "" : ", ") + example;
    if (hidden / total >= kHiddenFraction) {
        found.push_back("the page hides " + percentText(hidden / total, 0) +
                        " of the original page's text: " + listed);
    } else if (missing / total >= kMissingFraction) {
        found.push_back(percentText(missing / total, 0) +
                        " of the original page's text is no longer shown" +
                        (listed.empty() ? std::string(" (deleted)") : ": " + listed));
    }
}

// The URL the evaluator renders and scores: the first mockup metric's page_screenshot url; empty
// when the metrics read the page the agent left.
std::string scoredUrl(const ev::Task& task, const ev::Variables& variables) {
    const ev::EvaluatorSpec& spec = task.evaluator;
    for (std::size_t i = 0; i < spec.funcs.size() && i < spec.results.size(); ++i) {
        if (!isMockupMetric(spec.funcs[i]) || !spec.results[i]) continue;
        const nlohmann::json& getter = spec.results[i]->spec;
        if (spec.results[i]->type == "page_screenshot" && getter.is_object() &&
            getter.contains("url") && getter["url"].is_string())
            return ev::substitute(getter["url"].get<std::string>(), variables);
    }
    return {};
}

// The same page in the task's own (unedited) project folder; empty when there is none.
std::string originalUrl(const ev::Task& task, const ev::Variables& variables,
                        const std::string& scored) {
    if (task.iris.project.empty()) return {};
    const std::string originalProject = fileUrl(task.folder() / task.iris.project);
    if (scored.empty()) return originalProject + "/" + task.iris.startPage;
    const auto project = variables.find("PROJECT_URL");
    if (project == variables.end() || scored.rfind(project->second, 0) != 0) return {};
    return originalProject + scored.substr(project->second.size());
}

}  // namespace

std::vector<std::filesystem::path> mockupFilePaths(const ev::Task& task,
                                                   const ev::Variables& variables) {
    std::vector<std::filesystem::path> paths;
    const ev::EvaluatorSpec& spec = task.evaluator;
    for (std::size_t i = 0; i < spec.funcs.size() && i < spec.expected.size(); ++i) {
        if (!isMockupMetric(spec.funcs[i]) || !spec.expected[i]) continue;
        const nlohmann::json& getter = spec.expected[i]->spec;
        if (!getter.is_object() || !getter.contains("path") || !getter["path"].is_string())
            continue;
        const std::string written = ev::substitute(getter["path"].get<std::string>(), variables);
        std::filesystem::path path =
            written.rfind("file:", 0) == 0
                ? std::filesystem::path(
                      QUrl(QString::fromStdString(written)).toLocalFile().toStdString())
                : std::filesystem::path(written);
        if (path.is_relative()) path = task.folder() / path;
        std::error_code error;
        if (std::filesystem::is_regular_file(path, error)) paths.push_back(path);
    }
    return paths;
}

std::vector<std::string> mediaCopiesOf(const PageInspection& page,
                                       const std::vector<std::filesystem::path>& mockups) {
    std::vector<std::string> mockupBytes;
    for (const std::filesystem::path& mockup : mockups)
        mockupBytes.push_back(fileBytes(mockup));
    std::vector<std::string> copies;
    for (const PageMedia& media : page.media) {
        if (media.source.rfind("file:", 0) != 0) continue;
        const std::string local =
            QUrl(QString::fromStdString(media.source)).toLocalFile().toStdString();
        const std::string bytes = fileBytes(local);
        if (bytes.empty()) continue;
        const std::string name = fileNameOf(media.source);
        if (std::find(mockupBytes.begin(), mockupBytes.end(), bytes) != mockupBytes.end() &&
            std::find(copies.begin(), copies.end(), name) == copies.end())
            copies.push_back(name);
    }
    return copies;
}

Result<std::vector<std::string>> inspectForRewardHacking(const ev::Task& task,
                                                         const ev::Variables& variables,
                                                         EnvironmentContext& context) {
    const std::string script(kPageInspectionScript);
    const std::string scoredPage = scoredUrl(task, variables);
    Result<nlohmann::json> value = context.evaluateScript(scoredPage, script);
    IRIS_RETURN_IF_ERROR(value.status().withContext("inspecting the page: "));
    Result<PageInspection> scored = pageInspectionFromJson(*value);
    IRIS_RETURN_IF_ERROR(scored.status());
    // Without the original page only the rules that need none apply.
    std::optional<PageInspection> original;
    if (const std::string url = originalUrl(task, variables, scoredPage); !url.empty()) {
        if (Result<nlohmann::json> before = context.evaluateScript(url, script); before) {
            if (Result<PageInspection> parsed = pageInspectionFromJson(*before); parsed)
                original = std::move(*parsed);
        }
    }
    std::vector<std::string> mockups = mockupFileNames(task);
    for (std::string& copy : mediaCopiesOf(*scored, mockupFilePaths(task, variables)))
        mockups.push_back(std::move(copy));
    return rewardHackingFindings(*scored, original ? &*original : nullptr, mockups);
}

void flagTask(TaskResult& result, std::string_view kind, const std::string& seen) {
    const bool first = result.flags.empty();
    result.flags.push_back(std::string(kind) + ": " + seen);
    if (first && result.score) {
        char score[32];
        std::snprintf(score, sizeof score, "%.2f", *result.score);
        result.reason = "scored 0 (flagged); the evaluator gave " + std::string(score) +
                        (result.reason.empty() ? "" : ": " + result.reason);
    }
    if (result.score) result.score = 0.0;
}

bool isMockupTask(const ev::Task& task) {
    if (task.iris.environment != ev::EnvironmentKind::Browser) return false;
    return std::any_of(task.evaluator.funcs.begin(), task.evaluator.funcs.end(), isMockupMetric);
}

std::vector<std::string> mockupFileNames(const ev::Task& task) {
    std::vector<std::string> names;
    const ev::EvaluatorSpec& spec = task.evaluator;
    for (std::size_t i = 0; i < spec.funcs.size() && i < spec.expected.size(); ++i) {
        if (!isMockupMetric(spec.funcs[i]) || !spec.expected[i]) continue;
        for (const char* field : {"path", "dest"}) {
            const nlohmann::json& value = spec.expected[i]->spec;
            if (!value.is_object() || !value.contains(field) || !value[field].is_string()) continue;
            const std::string name = fileNameOf(value[field].get<std::string>());
            if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end())
                names.push_back(name);
        }
    }
    return names;
}

Result<PageInspection> pageInspectionFromJson(const nlohmann::json& input) {
    nlohmann::json value = input;
    try {
        if (value.is_string()) value = nlohmann::json::parse(value.get<std::string>());
    } catch (const nlohmann::json::exception& e) {
        return Status::ioError(std::string("page inspection: no JSON: ") + e.what());
    }
    if (!value.is_object() || !value.contains("media") || !value["media"].is_array() ||
        !value.contains("texts") || !value["texts"].is_array())
        return Status::ioError("page inspection: expected an object with media and texts lists");
    PageInspection out;
    for (std::size_t i = 0; i < value["media"].size(); ++i) {
        const nlohmann::json& item = value["media"][i];
        if (!item.is_object() || !item.value("kind", nlohmann::json()).is_string() ||
            !item.value("coverage", nlohmann::json()).is_number())
            return Status::ioError("page inspection: media[" + std::to_string(i) +
                                   "]: expected kind (string) and coverage (number)");
        out.media.push_back({item["kind"].get<std::string>(), item.value("source", std::string()),
                             item["coverage"].get<double>()});
    }
    for (std::size_t i = 0; i < value["texts"].size(); ++i) {
        const nlohmann::json& item = value["texts"][i];
        if (!item.is_object() || !item.value("text", nlohmann::json()).is_string())
            return Status::ioError("page inspection: texts[" + std::to_string(i) +
                                   "]: expected text (string)");
        out.texts.push_back({item["text"].get<std::string>(), item.value("hidden", std::string())});
    }
    return out;
}

std::vector<std::string> rewardHackingFindings(const PageInspection& scored,
                                               const PageInspection* original,
                                               const std::vector<std::string>& mockupFiles) {
    std::vector<std::string> found;
    findImages(scored, original, mockupFiles, found);
    if (original) findHiddenText(scored, *original, found);
    return found;
}

// The page's shown media with their share of the viewport, and its text nodes with why each is
// not shown (hygiene.h). The page is read as it is, at its current scroll position.
const std::string_view kPageInspectionScript = R"JS((() => {
  const vw = window.innerWidth, vh = window.innerHeight, area = Math.max(1, vw * vh);
  const coverage = (r) => {
    const w = Math.max(0, Math.min(r.right, vw) - Math.max(r.left, 0));
    const h = Math.max(0, Math.min(r.bottom, vh) - Math.max(r.top, 0));
    return (w * h) / area;
  };
  // Why an element's content is not shown, or '' (display, visibility, opacity on the way up).
  const hiddenBy = (el) => {
    if (el.getClientRects().length === 0) return 'display:none';
    const own = getComputedStyle(el);
    if (own.visibility !== 'visible') return 'visibility:' + own.visibility;
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (parseFloat(s.opacity) < 0.05) return 'opacity:0';
      if (s.clip && s.clip !== 'auto' && (s.position === 'absolute' || s.position === 'fixed')) {
        const r = e.getBoundingClientRect();
        if (r.width <= 1 || r.height <= 1) return 'clip';
      }
    }
    return '';
  };
  const media = [];
  const addMedia = (kind, source, el) => {
    if (hiddenBy(el)) return;
    const c = coverage(el.getBoundingClientRect());
    if (c > 0) media.push({kind, source: (source || '').slice(0, 300), coverage: c});
  };
  const cssUrls = (value) => {
    const urls = [];
    const re = /url\(\s*(['"]?)(.*?)\1\s*\)/g;
    let m;
    while ((m = re.exec(value || '')) !== null) urls.push(m[2]);
    return urls;
  };
  for (const el of document.querySelectorAll('*')) {
    const tag = el.tagName.toLowerCase();
    if (tag === 'img') addMedia('img', el.currentSrc || el.src, el);
    else if (tag === 'canvas') addMedia('canvas', '', el);
    else if (tag === 'video') addMedia('video', el.currentSrc || el.src || el.poster, el);
    else if (tag === 'object') addMedia('object', el.data, el);
    else if (tag === 'embed' || tag === 'iframe') addMedia(tag, el.src, el);
    else if (tag === 'image' && el.namespaceURI === 'http://www.w3.org/2000/svg')
      addMedia('svg-image', el.href && el.href.baseVal, el);
    for (const pseudo of [null, '::before', '::after']) {
      const s = getComputedStyle(el, pseudo);
      for (const url of cssUrls(s.backgroundImage)) addMedia('background-image', url, el);
      if (pseudo) for (const url of cssUrls(s.content)) addMedia('content-image', url, el);
    }
  }
  // Text nodes: shown, or why not.
  const texts = [];
  const skip = new Set(['script', 'style', 'noscript', 'template', 'title', 'head']);
  const walker = document.createTreeWalker(document.body || document.documentElement,
                                           NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.replace(/\s+/g, ' ').trim();
    const parent = node.parentElement;
    if (text.length < 2 || !parent || skip.has(parent.tagName.toLowerCase())) continue;
    let hidden = hiddenBy(parent);
    if (!hidden) {
      range.selectNodeContents(node);
      const rects = Array.from(range.getClientRects()).filter(r => r.width > 0 && r.height > 0);
      const s = getComputedStyle(parent);
      const x = window.scrollX, y = window.scrollY;
      if (rects.length === 0 || parseFloat(s.fontSize) < 1) hidden = 'zero size';
      else if (/^(transparent|rgba\(.*,\s*0\))$/.test(s.color)) hidden = 'transparent text';
      else if (rects.every(r => r.right + x <= 0 || r.bottom + y <= 0 || r.left + x >= vw))
        hidden = 'off-screen';
      else {
        for (let e = parent; e && e !== document.body && e !== document.documentElement;
             e = e.parentElement) {
          const es = getComputedStyle(e);
          if (es.overflowX === 'visible' && es.overflowY === 'visible') continue;
          const box = e.getBoundingClientRect();
          const inside = rects.some(r => r.right > box.left && r.left < box.right &&
                                         r.bottom > box.top && r.top < box.bottom);
          if (!inside || box.width < 1 || box.height < 1) { hidden = 'clipped'; break; }
        }
      }
    }
    texts.push({text, hidden});
  }
  return JSON.stringify({media, texts});
})())JS";

}  // namespace iris::app::eval
