#include "agent/eval/task.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

namespace iris::agent::eval {
namespace {

using json = nlohmann::json;

const char* typeName(const json& v) {
    switch (v.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::boolean:
            return "a boolean";
        case json::value_t::string:
            return "a string";
        case json::value_t::array:
            return "a list";
        case json::value_t::object:
            return "an object";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
        case json::value_t::number_float:
            return "a number";
        default:
            return "an unsupported value";
    }
}

Status fieldError(const std::string& path, const std::string& what) {
    return Status::corrupt(path + ": " + what);
}

Status typeError(const std::string& path, const char* expected, const json& got) {
    return fieldError(path, std::string("expected ") + expected + ", got " + typeName(got));
}

std::string join(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
}
std::string index(const std::string& parent, size_t i) {
    return parent + "[" + std::to_string(i) + "]";
}

// Drops keys starting with '_' (comments in OSWorld's files), recursively in objects.
json withoutComments(const json& v) {
    if (v.is_object()) {
        json out = json::object();
        for (auto it = v.begin(); it != v.end(); ++it) {
            if (!it.key().empty() && it.key()[0] == '_') continue;
            out[it.key()] = withoutComments(it.value());
        }
        return out;
    }
    if (v.is_array()) {
        json out = json::array();
        for (const auto& e : v)
            out.push_back(withoutComments(e));
        return out;
    }
    return v;
}

// Optional typed fields of an object: absent keeps the default; a wrong type is an error.
Status optString(const json& obj, const char* key, const std::string& path, std::string& out) {
    auto it = obj.find(key);
    if (it == obj.end()) return Status::ok();
    if (!it->is_string()) return typeError(join(path, key), "a string", *it);
    out = it->get<std::string>();
    return Status::ok();
}
Status optBool(const json& obj, const char* key, const std::string& path, bool& out) {
    auto it = obj.find(key);
    if (it == obj.end()) return Status::ok();
    if (!it->is_boolean()) return typeError(join(path, key), "a boolean", *it);
    out = it->get<bool>();
    return Status::ok();
}
Status optNumber(const json& obj, const char* key, const std::string& path, double& out) {
    auto it = obj.find(key);
    if (it == obj.end()) return Status::ok();
    if (!it->is_number()) return typeError(join(path, key), "a number", *it);
    out = it->get<double>();
    return Status::ok();
}
Status stringList(const json& v, const std::string& path, std::vector<std::string>& out) {
    if (!v.is_array()) return typeError(path, "a list of strings", v);
    out.clear();
    for (size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_string()) return typeError(index(path, i), "a string", v[i]);
        out.push_back(v[i].get<std::string>());
    }
    return Status::ok();
}
Status reqString(const json& obj, const char* key, const std::string& path, std::string& out) {
    if (!obj.contains(key)) return fieldError(join(path, key), "missing");
    return optString(obj, key, path, out);
}

std::vector<std::string> splitWhitespace(const std::string& s) {
    std::vector<std::string> words;
    std::istringstream in(s);
    std::string w;
    while (in >> w)
        words.push_back(w);
    return words;
}

Status parseCommand(const json& params, const std::string& path, CommandSpec& out) {
    IRIS_RETURN_IF_ERROR(optBool(params, "shell", path, out.shell));
    auto it = params.find("command");
    if (it == params.end()) return fieldError(join(path, "command"), "missing");
    if (it->is_string()) {
        out.isString = true;
        out.text = it->get<std::string>();
        // OSWorld splits a string on whitespace unless it runs through a shell.
        out.argv = out.shell ? std::vector<std::string>{out.text} : splitWhitespace(out.text);
        return Status::ok();
    }
    if (it->is_array()) return stringList(*it, join(path, "command"), out.argv);
    return typeError(join(path, "command"), "a string or a list of strings", *it);
}

Result<StepParams> parseParams(const std::string& type, const json& p, const std::string& path) {
    if (type == "launch") {
        LaunchStep s;
        IRIS_RETURN_IF_ERROR(parseCommand(p, path, s.command));
        return StepParams(s);
    }
    if (type == "execute" || type == "command") {
        ExecuteStep s;
        IRIS_RETURN_IF_ERROR(parseCommand(p, path, s.command));
        IRIS_RETURN_IF_ERROR(optString(p, "stdout", path, s.stdoutFile));
        IRIS_RETURN_IF_ERROR(optString(p, "stderr", path, s.stderrFile));
        if (auto it = p.find("until"); it != p.end()) {
            if (!it->is_object() && !it->is_null()) {
                return typeError(join(path, "until"), "an object", *it);
            }
            s.until = *it;
        }
        return StepParams(s);
    }
    if (type == "open") {
        OpenStep s;
        IRIS_RETURN_IF_ERROR(reqString(p, "path", path, s.path));
        return StepParams(s);
    }
    if (type == "sleep") {
        SleepStep s;
        if (!p.contains("seconds")) return fieldError(join(path, "seconds"), "missing");
        IRIS_RETURN_IF_ERROR(optNumber(p, "seconds", path, s.seconds));
        if (s.seconds < 0) return fieldError(join(path, "seconds"), "must not be negative");
        return StepParams(s);
    }
    if (type == "download") {
        DownloadStep s;
        auto it = p.find("files");
        if (it == p.end()) return fieldError(join(path, "files"), "missing");
        if (!it->is_array()) return typeError(join(path, "files"), "a list", *it);
        for (size_t i = 0; i < it->size(); ++i) {
            const json& f = (*it)[i];
            const std::string fp = index(join(path, "files"), i);
            if (!f.is_object()) return typeError(fp, "an object", f);
            DownloadStep::File file;
            IRIS_RETURN_IF_ERROR(reqString(f, "url", fp, file.url));
            IRIS_RETURN_IF_ERROR(reqString(f, "path", fp, file.path));
            s.files.push_back(std::move(file));
        }
        return StepParams(s);
    }
    if (type == "chrome_open_tabs" || type == "chrome_close_tabs") {
        const char* key = type == "chrome_open_tabs" ? "urls_to_open" : "urls_to_close";
        auto it = p.find(key);
        if (it == p.end()) return fieldError(join(path, key), "missing");
        std::vector<std::string> urls;
        IRIS_RETURN_IF_ERROR(stringList(*it, join(path, key), urls));
        if (type == "chrome_open_tabs") return StepParams(ChromeOpenTabsStep{std::move(urls)});
        return StepParams(ChromeCloseTabsStep{std::move(urls)});
    }
    if (type == "activate_window") {
        ActivateWindowStep s;
        IRIS_RETURN_IF_ERROR(reqString(p, "window_name", path, s.windowName));
        IRIS_RETURN_IF_ERROR(optBool(p, "strict", path, s.strict));
        IRIS_RETURN_IF_ERROR(optBool(p, "by_class", path, s.byClass));
        return StepParams(s);
    }
    return StepParams(UnsupportedStep{});
}

Result<std::vector<ConfigStep>> parseSteps(const json& v, const std::string& path) {
    std::vector<ConfigStep> steps;
    if (v.is_null()) return steps;
    if (!v.is_array()) return typeError(path, "a list of steps", v);
    for (size_t i = 0; i < v.size(); ++i) {
        auto step = parseConfigStep(v[i], index(path, i));
        if (!step) return step.status();
        steps.push_back(std::move(*step));
    }
    return steps;
}

Result<std::optional<GetterSpec>> parseGetter(const json& v, const std::string& path) {
    // OSWorld skips a getter that is absent, None or empty ({}).
    if (v.is_null() || (v.is_object() && v.empty())) return std::optional<GetterSpec>();
    if (!v.is_object()) return typeError(path, "an object", v);
    GetterSpec g;
    IRIS_RETURN_IF_ERROR(reqString(v, "type", path, g.type));
    g.spec = v;
    return std::optional<GetterSpec>(std::move(g));
}

Status parseEvaluator(const json& e, const std::string& path, EvaluatorSpec& out) {
    if (!e.is_object()) return typeError(path, "an object", e);
    out.raw = e;
    auto func = e.find("func");
    if (func == e.end()) return fieldError(join(path, "func"), "missing");
    if (func->is_string()) {
        out.funcs = {func->get<std::string>()};
    } else if (func->is_array()) {
        out.funcIsList = true;
        IRIS_RETURN_IF_ERROR(stringList(*func, join(path, "func"), out.funcs));
        if (out.funcs.empty()) return fieldError(join(path, "func"), "empty list");
    } else {
        return typeError(join(path, "func"), "a string or a list of strings", *func);
    }
    const size_t n = out.funcs.size();

    // result / expected: one getter for a string func, a list of n for a list func.
    auto getters = [&](const char* key, std::vector<std::optional<GetterSpec>>& dst) -> Status {
        dst.assign(n, std::nullopt);
        auto it = e.find(key);
        if (it == e.end()) return Status::ok();
        const std::string kp = join(path, key);
        if (!out.funcIsList) {
            auto g = parseGetter(*it, kp);
            if (!g) return g.status();
            dst[0] = std::move(*g);
            return Status::ok();
        }
        if (it->is_array() && it->empty()) return Status::ok();  // OSWorld: falsy, no getter
        if (!it->is_array()) return typeError(kp, "a list (func is a list)", *it);
        if (it->size() != n) {
            return fieldError(kp, "has " + std::to_string(it->size()) + " entries, func has " +
                                      std::to_string(n));
        }
        for (size_t i = 0; i < n; ++i) {
            auto g = parseGetter((*it)[i], index(kp, i));
            if (!g) return g.status();
            dst[i] = std::move(*g);
        }
        return Status::ok();
    };
    IRIS_RETURN_IF_ERROR(getters("result", out.results));
    IRIS_RETURN_IF_ERROR(getters("expected", out.expected));

    out.options.assign(n, json::object());
    if (auto it = e.find("options"); it != e.end() && !it->is_null()) {
        const std::string kp = join(path, "options");
        if (!out.funcIsList) {
            if (!it->is_object()) return typeError(kp, "an object", *it);
            out.options[0] = *it;
        } else {
            if (!it->is_array()) return typeError(kp, "a list (func is a list)", *it);
            if (it->size() != n) {
                return fieldError(kp, "has " + std::to_string(it->size()) + " entries, func has " +
                                          std::to_string(n));
            }
            for (size_t i = 0; i < n; ++i) {
                const json& o = (*it)[i];
                if (o.is_null()) continue;  // null means {}
                if (!o.is_object()) return typeError(index(kp, i), "an object or null", o);
                out.options[i] = o;
            }
        }
    }

    std::string conj = "and";
    IRIS_RETURN_IF_ERROR(optString(e, "conj", path, conj));
    if (conj == "and") {
        out.conj = Conj::And;
    } else if (conj == "or") {
        out.conj = Conj::Or;
    } else {
        return fieldError(join(path, "conj"), "expected \"and\" or \"or\", got \"" + conj + "\"");
    }

    if (auto it = e.find("postconfig"); it != e.end()) {
        auto steps = parseSteps(*it, join(path, "postconfig"));
        if (!steps) return steps.status();
        out.postconfig = std::move(*steps);
    }
    return Status::ok();
}

Status parseIris(const json& v, IrisExtension& out) {
    const std::string path = "iris";
    if (!v.is_object()) return typeError(path, "an object", v);
    out.present = true;
    std::string env = "browser";
    IRIS_RETURN_IF_ERROR(optString(v, "environment", path, env));
    if (env == "browser") {
        out.environment = EnvironmentKind::Browser;
    } else if (env == "desktop") {
        out.environment = EnvironmentKind::Desktop;
    } else {
        return fieldError("iris.environment",
                          "expected \"browser\" or \"desktop\", got \"" + env + "\"");
    }
    IRIS_RETURN_IF_ERROR(optString(v, "project", path, out.project));
    IRIS_RETURN_IF_ERROR(optString(v, "start_page", path, out.startPage));
    IRIS_RETURN_IF_ERROR(optString(v, "demonstration", path, out.demonstration));
    IRIS_RETURN_IF_ERROR(optString(v, "action_format", path, out.actionFormat));
    if (!out.actionFormat.empty()) {
        static const char* const kFormats[] = {"pyautogui", "computer_13", "uitars", "tools"};
        if (std::find(std::begin(kFormats), std::end(kFormats), out.actionFormat) ==
            std::end(kFormats)) {
            return fieldError("iris.action_format",
                              "expected pyautogui, computer_13, uitars or tools, got \"" +
                                  out.actionFormat + "\"");
        }
    }
    // Paths in a task are relative to its folder (project, demonstration) or to the project
    // (start_page); an absolute path would make the task depend on one machine.
    const std::pair<const char*, const std::string*> rels[] = {
        {"iris.project", &out.project},
        {"iris.demonstration", &out.demonstration},
        {"iris.start_page", &out.startPage}};
    for (const auto& [field, value] : rels) {
        const std::filesystem::path p(*value);
        if (p.is_absolute()) return fieldError(field, "must be a relative path");
    }
    const std::filesystem::path start(out.startPage);
    if (out.startPage.empty() ||
        std::any_of(start.begin(), start.end(), [](const auto& part) { return part == ".."; })) {
        return fieldError("iris.start_page", "must name a file inside the project");
    }
    if (auto it = v.find("viewport"); it != v.end()) {
        if (!it->is_array() || it->size() != 2 || !(*it)[0].is_number_integer() ||
            !(*it)[1].is_number_integer()) {
            return fieldError("iris.viewport", "expected [width, height] in pixels");
        }
        const auto w = (*it)[0].get<long long>();
        const auto h = (*it)[1].get<long long>();
        if (w < 64 || h < 64 || w > 16384 || h > 16384) {
            return fieldError("iris.viewport", "width and height must lie in 64..16384");
        }
        out.viewportWidth = static_cast<int>(w);
        out.viewportHeight = static_cast<int>(h);
    }
    if (auto it = v.find("max_steps"); it != v.end()) {
        if (!it->is_number_integer() || it->get<long long>() <= 0 ||
            it->get<long long>() > 100000) {
            return fieldError("iris.max_steps", "expected a positive integer");
        }
        out.maxSteps = it->get<int>();
    }
    return Status::ok();
}

Result<Task> parseDocument(const json& doc) {
    if (!doc.is_object()) return typeError("(top level)", "an object", doc);
    Task t;
    t.raw = doc;
    IRIS_RETURN_IF_ERROR(reqString(doc, "id", "", t.id));
    if (t.id.empty()) return fieldError("id", "empty");
    IRIS_RETURN_IF_ERROR(reqString(doc, "instruction", "", t.instruction));
    IRIS_RETURN_IF_ERROR(optString(doc, "snapshot", "", t.snapshot));
    IRIS_RETURN_IF_ERROR(optString(doc, "source", "", t.source));
    IRIS_RETURN_IF_ERROR(optString(doc, "trajectory", "", t.trajectory));
    IRIS_RETURN_IF_ERROR(optString(doc, "possibility_of_env_change", "", t.possibilityOfEnvChange));
    IRIS_RETURN_IF_ERROR(optBool(doc, "proxy", "", t.proxy));
    IRIS_RETURN_IF_ERROR(optBool(doc, "fixed_ip", "", t.fixedIp));
    if (auto it = doc.find("related_apps"); it != doc.end()) {
        IRIS_RETURN_IF_ERROR(stringList(*it, "related_apps", t.relatedApps));
    }
    if (doc.contains("hint")) {
        std::string hint;
        IRIS_RETURN_IF_ERROR(optString(doc, "hint", "", hint));
        t.hint = hint;
    }
    if (doc.contains("env_may_change")) {
        bool b = false;
        IRIS_RETURN_IF_ERROR(optBool(doc, "env_may_change", "", b));
        t.envMayChange = b;
    }
    if (auto it = doc.find("config"); it != doc.end()) {
        auto steps = parseSteps(*it, "config");
        if (!steps) return steps.status();
        t.config = std::move(*steps);
    }
    auto ev = doc.find("evaluator");
    if (ev == doc.end()) return fieldError("evaluator", "missing");
    IRIS_RETURN_IF_ERROR(parseEvaluator(*ev, "evaluator", t.evaluator));
    if (auto it = doc.find("iris"); it != doc.end()) IRIS_RETURN_IF_ERROR(parseIris(*it, t.iris));
    return t;
}

bool readFile(const std::filesystem::path& path, std::string& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::ostringstream ss;
    ss << in.rdbuf();
    out = ss.str();
    return !in.bad();
}

}  // namespace

bool isBrowserPlumbingStep(const ConfigStep& step) {
    const auto* launch = std::get_if<LaunchStep>(&step.params);
    if (launch == nullptr || launch->command.argv.empty()) return false;
    std::vector<std::string> argv = launch->command.argv;
    if (launch->command.shell && launch->command.isString)
        argv = splitWhitespace(launch->command.text);
    if (argv.empty()) return false;
    const std::string prog = std::filesystem::path(argv[0]).filename().string();
    if (prog == "google-chrome" || prog == "chromium" || prog == "chromium-browser" ||
        prog == "socat") {
        return true;
    }
    return prog == "pkill" && argv.size() == 2 && (argv[1] == "chrome" || argv[1] == "chromium");
}

Result<ConfigStep> parseConfigStep(const json& step, const std::string& where) {
    if (!step.is_object()) return typeError(where, "an object {type, parameters}", step);
    ConfigStep out;
    out.where = where;
    IRIS_RETURN_IF_ERROR(reqString(step, "type", where, out.type));
    out.parameters = json::object();
    if (auto it = step.find("parameters"); it != step.end() && !it->is_null()) {
        if (!it->is_object()) return typeError(join(where, "parameters"), "an object", *it);
        out.parameters = withoutComments(*it);
    }
    auto params = parseParams(out.type, out.parameters, join(where, "parameters"));
    if (!params) return params.status();
    out.params = std::move(*params);
    return out;
}

Result<Task> parseTask(std::string_view jsonText, std::string_view sourceName) {
    const std::string prefix = std::string(sourceName) + ": ";
    json doc;
    try {
        doc = json::parse(jsonText);
    } catch (const json::parse_error& e) {
        return Status::corrupt(prefix + "not valid JSON at byte " + std::to_string(e.byte) + ": " +
                               e.what());
    }
    auto task = parseDocument(withoutComments(doc));
    if (!task) return task.status().withContext(prefix);
    return task;
}

Result<Task> loadTask(const std::filesystem::path& path) {
    std::string text;
    if (!readFile(path, text)) return Status::ioError(path.string() + ": cannot read the file");
    auto task = parseTask(text, path.string());
    if (!task) return task;
    std::error_code ec;
    auto abs = std::filesystem::absolute(path, ec);
    task->file = ec ? path : abs.lexically_normal();
    const auto parent = task->file.parent_path().filename().string();
    task->domain = parent;
    return task;
}

Result<std::vector<LoadedTaskFile>> loadTaskDir(const std::filesystem::path& dir) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
        return Status::notFound(dir.string() + ": not a folder");
    }
    std::filesystem::path root = dir;
    if (std::filesystem::is_directory(dir / "examples", ec)) root = dir / "examples";
    std::vector<std::filesystem::path> files;
    auto consider = [&](const std::filesystem::path& p) {
        if (p.extension() != ".json") return;
        if (p.filename().string().rfind("test_", 0) == 0) return;  // OSWorld's meta lists
        files.push_back(p);
    };
    for (std::filesystem::directory_iterator it(root, ec), end; !ec && it != end;
         it.increment(ec)) {
        std::error_code ec2;
        if (it->is_directory(ec2)) {
            // examples/<domain>/<id>.json
            for (std::filesystem::directory_iterator sub(it->path(), ec2), subEnd;
                 !ec2 && sub != subEnd; sub.increment(ec2)) {
                std::error_code ec3;
                if (sub->is_regular_file(ec3)) consider(sub->path());
            }
        } else if (it->is_regular_file(ec2)) {
            consider(it->path());
        }
    }
    if (ec) return Status::ioError(root.string() + ": cannot list the folder: " + ec.message());
    std::sort(files.begin(), files.end());
    std::vector<LoadedTaskFile> out;
    out.reserve(files.size());
    for (const auto& f : files) {
        auto t = loadTask(f);
        // A flat folder's files have no domain, unless the folder is itself examples/<domain>.
        if (t && f.parent_path() == root && root.parent_path().filename() != "examples") {
            t->domain.clear();
        }
        out.push_back(LoadedTaskFile{f, std::move(t)});
    }
    return out;
}

std::string substitute(std::string_view text, const Variables& vars) {
    std::string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        if (text[i] == '{') {
            const size_t close = text.find('}', i + 1);
            if (close != std::string_view::npos) {
                const std::string name(text.substr(i + 1, close - i - 1));
                if (auto it = vars.find(name); it != vars.end()) {
                    out += it->second;
                    i = close + 1;
                    continue;
                }
            }
        }
        out += text[i++];
    }
    return out;
}

json substituteJson(const json& value, const Variables& vars) {
    if (value.is_string()) return substitute(value.get_ref<const std::string&>(), vars);
    if (value.is_array()) {
        json out = json::array();
        for (const auto& e : value)
            out.push_back(substituteJson(e, vars));
        return out;
    }
    if (value.is_object()) {
        json out = json::object();
        for (auto it = value.begin(); it != value.end(); ++it)
            out[it.key()] = substituteJson(it.value(), vars);
        return out;
    }
    return value;
}

Result<ConfigStep> substituteStep(const ConfigStep& step, const Variables& vars) {
    json j = {{"type", step.type}, {"parameters", substituteJson(step.parameters, vars)}};
    return parseConfigStep(j, step.where);
}

}  // namespace iris::agent::eval
