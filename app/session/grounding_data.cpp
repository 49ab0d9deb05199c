#include "app/session/grounding_data.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <QObject>

#include "agent/actions/action_format.h"
#include "agent/agent_loop.h"
#include "agent/grounding/task_export.h"
#include "agent/prompt_builder.h"
#include "base/temporary_folder.h"
#include "inference/vision/image_preprocess.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;
namespace gr = agent::grounding;
using nlohmann::json;
using nlohmann::ordered_json;

// The answer as Iris's agent would read it: UI-TARS syntax, points in the frame's image.
Result<std::vector<agent::Action>> parseAnswer(const std::string& answer, gr::AnswerFrame frame) {
    agent::ParseOptions options;
    options.screenWidth = frame.screen.width;
    options.screenHeight = frame.screen.height;
    options.frame = {agent::CoordinateFrame::Kind::ResizedImage, frame.image.width,
                     frame.image.height};
    agent::ChatResponse response;
    response.text = answer;
    agent::ParsedStep parsed =
        agent::parseModelOutput(agent::ActionFormat::UiTars, response, options);
    if (!parsed.errors.empty() || parsed.actions.empty())
        return Status::internal("the answer '" + answer + "' does not parse: " +
                                (parsed.errors.empty() ? "no action" : parsed.errors.front()));
    return parsed.actions;
}

// The recorder's facts and the fields' values now, compared with what the task expects.
Status checkGoalReached(agent::GuiThreadEnvironment& browser, const gr::SyntheticTask& task) {
    std::string script = "(() => { const out = {};";
    for (const auto& [fact, value] : task.expectedFacts)
        script += "out['" + fact + "'] = document.evaluate(\"" + gr::factXPath(fact) +
                  "\", document, null, 9, null).singleNodeValue.textContent;";
    for (const auto& [id, value] : task.expectedValues)
        script +=
            "out['" + id + "'] = document.querySelector('[data-iris-id=\"" + id + "\"]').value;";
    script += " return out; })()";
    Result<std::string> text = evaluateInPage(browser, script);
    IRIS_RETURN_IF_ERROR(text.status().withContext(task.id + ": reading the page's state: "));
    const json state = json::parse(*text, nullptr, false);
    auto expect = [&](const std::string& key, const std::string& value) -> Status {
        if (!state.is_object() || !state.contains(key) || state[key] != value)
            return Status::internal(
                task.id + ": after the oracle's answers " + key + " is " +
                (state.is_object() && state.contains(key) ? state[key].dump() : "missing") +
                ", not \"" + value + "\"");
        return Status::ok();
    };
    for (const auto& [fact, value] : task.expectedFacts)
        IRIS_RETURN_IF_ERROR(expect(fact, value));
    for (const auto& [id, value] : task.expectedValues)
        IRIS_RETURN_IF_ERROR(expect(id, value));
    return Status::ok();
}

// A click must land inside the box it was planned on.
Status checkClicks(const std::vector<agent::Action>& actions, const gr::PlannedStep& planned,
                   const std::string& taskId) {
    for (const agent::Action& action : actions) {
        const auto* click = std::get_if<agent::Click>(&action);
        if (!click || !click->at || !planned.target) continue;
        if (!gr::isInside(*planned.target, {click->at->x, click->at->y}))
            return Status::internal(taskId + ": '" + planned.answer + "' clicks (" +
                                    std::to_string(click->at->x) + ", " +
                                    std::to_string(click->at->y) + "), outside its target");
    }
    return Status::ok();
}

// The steps of one task as the agent loop's prompt remembers them, for "messages".
class PromptMemory {
public:
    PromptMemory(const gr::SyntheticTask& task, gr::AnswerFrame frame) {
        m_settings.format = agent::ActionFormat::UiTars;
        m_settings.instruction = task.instruction;
        m_settings.screenWidth = frame.screen.width;
        m_settings.screenHeight = frame.screen.height;
        m_settings.browser = true;
        m_settings.screenshotsInHistory = agent::LoopOptions{}.screenshotsInHistory;
        m_image = frame.image;
    }

    // The request for the step whose screenshot is the file `image`; then remembers `answer`
    // (successful browser actions leave no feedback text, as in the loop).
    ordered_json request(const std::string& image, const std::string& answer) {
        auto encoded = std::make_shared<agent::EncodedImage>();
        encoded->mimeType = "image/png";
        encoded->width = m_image.width;
        encoded->height = m_image.height;
        m_names[encoded.get()] = image;
        agent::StepMemory current{encoded, {}, {}, {}};
        const agent::ChatRequest chat = agent::buildChatRequest(m_settings, m_history, current);
        ordered_json messages = ordered_json::array();
        for (const agent::ChatMessage& message : chat.messages) {
            ordered_json content = ordered_json::array();
            for (const agent::ContentPart& part : message.content) {
                if (part.isImage())
                    content.push_back({{"type", "image"}, {"image", m_names.at(part.image.get())}});
                else
                    content.push_back({{"type", "text"}, {"text", part.text}});
            }
            messages.push_back({{"role", message.role}, {"content", content}});
        }
        current.answer.text = answer;
        m_history.push_back(std::move(current));
        return messages;
    }

private:
    agent::PromptSettings m_settings;
    gr::ScreenSize m_image;
    std::vector<agent::StepMemory> m_history;
    std::map<const agent::EncodedImage*, std::string> m_names;
};

// Boxes are written to a tenth of the image's pixel: enough to score a click, and short lines.
double tenthOfPixel(double v) {
    return std::round(v * 10) / 10;
}

// Every word the page shows inside the viewport, with its box (viewport pixels), and the value or
// placeholder of each input, select and text area with the control's box: what a screenshot
// reads where. Words, not text nodes, so that a wrapped text gives one box per word and never a
// box spanning two lines. Hidden text has no client rects and drops out.
constexpr const char* kVisibleTextScript = R"JS((() => {
  const out = [], w = window.innerWidth, h = window.innerHeight;
  const add = (r, text) => {
    if (r.width >= 1 && r.height >= 1 && r.right > 0 && r.bottom > 0 && r.left < w && r.top < h)
      out.push([r.left, r.top, r.right, r.bottom, text]);
  };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const p = n.parentElement;
    if (!p || p.closest('script, style, select, textarea')) continue;
    if (getComputedStyle(p).visibility === 'hidden') continue;
    for (const m of n.textContent.matchAll(/\S+/g)) {
      range.setStart(n, m.index);
      range.setEnd(n, m.index + m[0].length);
      add(range.getBoundingClientRect(), m[0]);
    }
  }
  for (const el of document.querySelectorAll('input, select, textarea')) {
    if (getComputedStyle(el).visibility === 'hidden') continue;
    const text = el.tagName === 'SELECT'
        ? (el.selectedOptions[0] ? el.selectedOptions[0].text : '')
        : (['checkbox', 'radio', 'hidden'].includes(el.type) ? '' : (el.value || el.placeholder));
    if (text.trim()) add(el.getBoundingClientRect(), text.trim());
  }
  return out;
})())JS";

// The page's visible words in the image's pixels: [[left, top, right, bottom, text], ...].
Result<json> visibleTexts(agent::GuiThreadEnvironment& browser, gr::AnswerFrame frame) {
    Result<std::string> text = evaluateInPage(browser, kVisibleTextScript);
    IRIS_RETURN_IF_ERROR(text.status().withContext("measuring the page's text: "));
    json boxes = json::parse(*text, nullptr, false);
    if (!boxes.is_array()) return Status::corrupt("the page's text boxes: not an array");
    const double sx = double(frame.image.width) / frame.screen.width;
    const double sy = double(frame.image.height) / frame.screen.height;
    for (json& box : boxes) {
        if (!box.is_array() || box.size() != 5 || !box[4].is_string() ||
            !std::all_of(box.begin(), box.begin() + 4, [](const json& v) { return v.is_number(); }))
            return Status::corrupt("the page's text boxes: an entry is not [l, t, r, b, text]: " +
                                   box.dump());
        for (int i = 0; i < 4; ++i)
            box[i] = tenthOfPixel(box[i].get<double>() * (i % 2 == 0 ? sx : sy));
    }
    return boxes;
}

std::string imageName(const std::string& taskId, int step) {
    return taskId + "-" + std::to_string(step) + ".png";
}

// examples.jsonl's line for one step: the field names the training script reads.
std::string exampleLine(const gr::SyntheticTask& task, int step, gr::AnswerFrame frame,
                        const std::vector<std::string>& history, const gr::PlannedStep& planned,
                        json texts, PromptMemory* prompt) {
    ordered_json line;
    line["id"] = task.id + "-" + std::to_string(step);
    line["task"] = task.id;
    line["step"] = step;
    line["image"] = "images/" + imageName(task.id, step);
    line["image_width"] = frame.image.width;
    line["image_height"] = frame.image.height;
    line["screen_width"] = frame.screen.width;
    line["screen_height"] = frame.screen.height;
    line["instruction"] = task.instruction;
    line["history"] = history;
    line["answer"] = planned.answer;
    line["kind"] = gr::stepKindName(planned.kind);
    line["template"] = task.templateName;
    line["split"] = gr::splitName(task.split);
    // Clicks: the target's measured box in the image's pixels [left, top, right, bottom], so that
    // a click can be scored without the browser; null for other steps.
    line["target_box"] = nullptr;
    if (planned.target) {
        const double sx = double(frame.image.width) / frame.screen.width;
        const double sy = double(frame.image.height) / frame.screen.height;
        const gr::Rect& box = *planned.target;
        line["target_box"] = {tenthOfPixel(box.left * sx), tenthOfPixel(box.top * sy),
                              tenthOfPixel((box.left + box.width) * sx),
                              tenthOfPixel((box.top + box.height) * sy)};
    }
    // For training losses on reading the page (scripts/training/train.py --read).
    line["texts"] = std::move(texts);
    if (prompt)
        line["messages"] = prompt->request("images/" + imageName(task.id, step), planned.answer);
    return line.dump() + "\n";
}

Status writeModelImage(const cv::Mat& screenshot, gr::ScreenSize size, const fs::path& path) {
    cv::Mat resized = screenshot;
    // Bicubic, as the engine's preprocessing (inference::ResampleFilter::Bicubic) resizes.
    if (screenshot.cols != size.width || screenshot.rows != size.height)
        cv::resize(screenshot, resized, cv::Size(size.width, size.height), 0, 0, cv::INTER_CUBIC);
    if (!cv::imwrite(path.string(), resized, {cv::IMWRITE_PNG_COMPRESSION, 3}))
        return Status::ioError(path.string() + ": cannot write the image");
    return Status::ok();
}

json datasetJson(const GroundingDataOptions& options, const GroundingDataSummary& summary) {
    json kinds = json::object();
    for (gr::StepKind kind : gr::kStepKinds) {
        const std::string name(gr::stepKindName(kind));
        const auto found = summary.stepsPerKind.find(name);
        kinds[name] = found == summary.stepsPerKind.end() ? 0 : found->second;
    }
    json templates = json::array();
    for (std::string_view name : gr::templateNames(options.split, options.tasks.moreTemplates))
        templates.push_back(name);
    const char* typed = options.tasks.typed == gr::TypedText::Invented ? "invented" : "word lists";
    return {{"generator", "iris models data"},
            {"generator_version", kGroundingDataVersion},
            {"split", gr::splitName(options.split)},
            {"seed", options.seed},
            {"first_index", options.firstIndex},
            {"count", options.count},
            {"max_pixels", options.maxPixels},
            {"typed_text", typed},
            {"more_templates", options.tasks.moreTemplates},
            {"invented_labels", options.tasks.inventedLabels},
            {"action_format", "uitars"},
            {"messages", options.messages},
            {"coordinates",
             options.osworld ? "screen pixels"
                             : "pixels of the resized image (smart resize, factor 28, max_pixels)"},
            {"click_point", "the centre of the control's box as the browser measured it"},
            {"templates", templates},
            {"tasks", summary.tasks},
            {"steps", summary.steps},
            {"steps_per_kind", kinds}};
}

// Moves every file of `from` into `to` (created), keeping names.
Status moveFiles(const fs::path& from, const fs::path& to) {
    std::error_code error;
    fs::create_directories(to, error);
    if (error) return Status::ioError(to.string() + ": " + error.message());
    for (const fs::directory_entry& entry : fs::directory_iterator(from, error)) {
        fs::rename(entry.path(), to / entry.path().filename(), error);
        if (error) return Status::ioError(entry.path().string() + ": " + error.message());
    }
    if (error) return Status::ioError(from.string() + ": " + error.message());
    return Status::ok();
}

// A part's counts, from the dataset.json it wrote.
Result<GroundingDataSummary> partSummary(const fs::path& record) {
    std::ifstream file(record, std::ios::binary);
    const json data = json::parse(file, nullptr, false);
    if (!data.is_object() || !data.contains("steps_per_kind"))
        return Status::corrupt(record.string() + ": not a data set record");
    GroundingDataSummary summary;
    summary.tasks = data.value("tasks", 0);
    summary.steps = data.value("steps", 0);
    for (const auto& [kind, n] : data["steps_per_kind"].items())
        if (n.get<int>() > 0) summary.stepsPerKind[kind] = n.get<int>();
    return summary;
}

}  // namespace

Result<GroundingDataSummary> joinGroundingDataParts(const GroundingDataOptions& options,
                                                    const std::vector<fs::path>& parts) {
    GroundingDataSummary total;
    std::ofstream examples;
    const fs::path examplesPath = options.out / "examples.jsonl";
    if (!options.osworld) {
        examples.open(examplesPath, std::ios::binary | std::ios::trunc);
        if (!examples) return Status::ioError(examplesPath.string() + ": cannot write");
    }
    const fs::path project = fs::path("projects") / "synthetic-grounding";
    for (const fs::path& part : parts) {
        Result<GroundingDataSummary> summary =
            partSummary(options.osworld ? part / project / "dataset.json" : part / "dataset.json");
        IRIS_RETURN_IF_ERROR(summary.status());
        total.tasks += summary->tasks;
        total.steps += summary->steps;
        for (const auto& [kind, n] : summary->stepsPerKind)
            total.stepsPerKind[kind] += n;
        if (options.osworld) {
            fs::remove(part / project / "dataset.json");
            for (const fs::path& dir : {fs::path("examples") / "synthetic-grounding",
                                        fs::path("demonstrations"), project})
                IRIS_RETURN_IF_ERROR(moveFiles(part / dir, options.out / dir));
        } else {
            std::ifstream lines(part / "examples.jsonl", std::ios::binary);
            // A stream buffer that yields nothing would set the failbit: parts are never empty
            // (every task has its finished() step), but an unreadable one must say so.
            if (!lines || lines.peek() == std::ifstream::traits_type::eof())
                return Status::ioError((part / "examples.jsonl").string() + ": missing or empty");
            examples << lines.rdbuf();
            if (!examples) return Status::ioError(examplesPath.string() + ": cannot write");
            IRIS_RETURN_IF_ERROR(moveFiles(part / "images", options.out / "images"));
        }
        std::error_code error;
        fs::remove_all(part, error);
    }
    const fs::path record =
        options.osworld ? options.out / project / "dataset.json" : options.out / "dataset.json";
    IRIS_RETURN_IF_ERROR(writeTextFile(record, datasetJson(options, total).dump(2) + "\n"));
    return total;
}

Result<gr::ScreenSize> modelImageSize(gr::ScreenSize screen, std::int64_t maxPixels) {
    inference::ImagePreprocessOptions budget;
    budget.maxPixels = maxPixels;
    Result<inference::ImageSize> size = inference::smartResize(screen.width, screen.height, budget);
    IRIS_RETURN_IF_ERROR(size.status());
    return gr::ScreenSize{size->width, size->height};
}

Result<std::vector<std::string>> playSyntheticTask(
    GroundingBrowsers& browsers, const fs::path& folder, const gr::SyntheticTask& task,
    gr::AnswerFrame frame, int maxSteps, const std::function<Status(const PlayedStep&)>& onStep) {
    const fs::path page = folder / (task.id + ".html");
    IRIS_RETURN_IF_ERROR(writeTextFile(page, task.html));
    Result<agent::GuiThreadEnvironment*> shown = browsers.show(task.screen, page);
    IRIS_RETURN_IF_ERROR(shown.status().withContext(task.id + ": "));
    agent::GuiThreadEnvironment& browser = **shown;
    std::vector<std::string> answers;
    std::size_t goal = 0;
    for (int step = 0; step < maxSteps; ++step) {
        Result<agent::Observation> seen = browser.observe();
        IRIS_RETURN_IF_ERROR(seen.status().withContext(task.id + ": "));
        const std::string control = gr::probedControl(task, goal);
        Result<std::string> probeText = evaluateInPage(browser, gr::probeScript(control));
        IRIS_RETURN_IF_ERROR(probeText.status().withContext(task.id + ": probing the page: "));
        Result<gr::ControlProbe> probe = gr::parseControlProbe(*probeText);
        IRIS_RETURN_IF_ERROR(probe.status().withContext(task.id + ": "));
        Result<gr::PlannedStep> planned = gr::planStep(task, goal, *probe, frame);
        IRIS_RETURN_IF_ERROR(planned.status());
        if (onStep)
            IRIS_RETURN_IF_ERROR(onStep({step, control, &seen->screenshot, &*planned, &browser}));
        answers.push_back(planned->answer);
        if (planned->done) {
            IRIS_RETURN_IF_ERROR(checkGoalReached(browser, task));
            return answers;
        }
        Result<std::vector<agent::Action>> actions = parseAnswer(planned->answer, frame);
        IRIS_RETURN_IF_ERROR(actions.status().withContext(task.id + ": "));
        IRIS_RETURN_IF_ERROR(checkClicks(*actions, *planned, task.id));
        for (const agent::Action& action : *actions)
            IRIS_RETURN_IF_ERROR(browser.execute(action).status.withContext(task.id + ": "));
        if (planned->finishesGoal) ++goal;
    }
    std::string tried;
    for (const std::string& answer : answers)
        tried += (tried.empty() ? "" : ", ") + answer;
    return Status::internal(task.id + ": the oracle did not finish within " +
                            std::to_string(maxSteps) + " steps (" + tried + ")");
}

namespace {

// Where writeGroundingData puts things under options.out.
struct OutputLayout {
    fs::path images, examples, tasks, demonstrations, project;
    explicit OutputLayout(const fs::path& out)
        : images(out / "images"),
          examples(out / "examples.jsonl"),
          tasks(out / "examples" / "synthetic-grounding"),
          demonstrations(out / "demonstrations"),
          project(out / "projects" / "synthetic-grounding") {}
};

Status makeFolders(const OutputLayout& layout, bool osworld) {
    std::error_code error;
    for (const fs::path& dir :
         osworld ? std::vector<fs::path>{layout.tasks, layout.demonstrations, layout.project}
                 : std::vector<fs::path>{layout.images}) {
        fs::create_directories(dir, error);
        if (error) return Status::ioError(dir.string() + ": " + error.message());
    }
    return Status::ok();
}

// The task file, its demonstration (the oracle's answers) and its page.
Status writeOsworldTask(const OutputLayout& layout, const gr::SyntheticTask& task,
                        const std::vector<std::string>& answers) {
    IRIS_RETURN_IF_ERROR(writeTextFile(layout.project / (task.id + ".html"), task.html));
    const json file =
        gr::osworldTask(task, "../../projects/synthetic-grounding",
                        "../../demonstrations/" + task.id + ".json", int(answers.size()) + 5);
    IRIS_RETURN_IF_ERROR(writeTextFile(layout.tasks / (task.id + ".json"), file.dump(2) + "\n"));
    return writeTextFile(layout.demonstrations / (task.id + ".json"),
                         gr::demonstration(task, answers).dump(2) + "\n");
}

// Plays one task; its examples' lines are appended to `lines` (not with --osworld), its images
// and task files written.
Status writeTask(const GroundingDataOptions& options, const OutputLayout& layout,
                 GroundingBrowsers& browsers, const fs::path& pages, const gr::SyntheticTask& task,
                 GroundingDataSummary& summary, std::string& lines) {
    gr::AnswerFrame frame{task.screen, task.screen};
    if (!options.osworld) {
        Result<gr::ScreenSize> image = modelImageSize(task.screen, options.maxPixels);
        IRIS_RETURN_IF_ERROR(image.status().withContext("max pixels: "));
        frame.image = *image;
    }
    std::vector<std::string> history;
    std::optional<PromptMemory> prompt;
    if (options.messages) prompt.emplace(task, frame);
    Result<std::vector<std::string>> answers = playSyntheticTask(
        browsers, pages, task, frame, options.maxSteps, [&](const PlayedStep& step) -> Status {
            ++summary.steps;
            ++summary.stepsPerKind[std::string(gr::stepKindName(step.planned->kind))];
            if (options.osworld) return Status::ok();
            IRIS_RETURN_IF_ERROR(writeModelImage(*step.screenshot, frame.image,
                                                 layout.images / imageName(task.id, step.index)));
            Result<json> texts = visibleTexts(*step.browser, frame);
            IRIS_RETURN_IF_ERROR(texts.status().withContext(task.id + ": "));
            lines += exampleLine(task, step.index, frame, history, *step.planned, std::move(*texts),
                                 prompt ? &*prompt : nullptr);
            history.push_back(step.planned->answer);
            return Status::ok();
        });
    IRIS_RETURN_IF_ERROR(answers.status());
    ++summary.tasks;
    return options.osworld ? writeOsworldTask(layout, task, *answers) : Status::ok();
}

}  // namespace

Result<GroundingDataSummary> writeGroundingData(const GroundingDataOptions& options,
                                                const GroundingDataProgress& progress,
                                                const std::atomic<bool>* stop) {
    if (options.count < 1) return Status::invalidArgument("count: at least one task");
    if (options.firstIndex < 0) return Status::invalidArgument("first index: must be >= 0");
    const auto started = std::chrono::steady_clock::now();
    Result<TemporaryFolder> pages = TemporaryFolder::create("iris-grounding-data");
    IRIS_RETURN_IF_ERROR(pages.status());
    const OutputLayout layout(options.out);
    IRIS_RETURN_IF_ERROR(makeFolders(layout, options.osworld));
    std::ofstream examples;
    const Status cannotWrite = Status::ioError(layout.examples.string() + ": cannot write");
    if (!options.osworld) {
        examples.open(layout.examples, std::ios::binary | std::ios::trunc);
        if (!examples) return cannotWrite;
    }

    QObject anchor;
    GroundingBrowsers browsers(&anchor);
    GroundingDataSummary summary;
    for (int i = 0; i < options.count; ++i) {
        if (stop && stop->load())
            return Status::cancelled("stopped after " + std::to_string(i) + " tasks");
        std::string lines;
        IRIS_RETURN_IF_ERROR(writeTask(
            options, layout, browsers, pages->path(),
            gr::generateTask(options.split, options.seed, options.firstIndex + i, options.tasks),
            summary, lines));
        if (!options.osworld && !(examples << lines)) return cannotWrite;
        if (progress) progress(i + 1, options.count, summary.steps);
    }
    if (!options.osworld) {
        examples.close();
        if (!examples) return cannotWrite;
    }
    summary.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    // With --osworld the record goes into the pages' project (copied with it, read by nothing).
    const fs::path record =
        options.osworld ? layout.project / "dataset.json" : options.out / "dataset.json";
    IRIS_RETURN_IF_ERROR(writeTextFile(record, datasetJson(options, summary).dump(2) + "\n"));
    return summary;
}

}  // namespace iris::app
