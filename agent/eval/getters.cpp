// The getters: what a task's "result"/"expected" specs read from the environment, with the
// semantics of xlang-ai/OSWorld:desktop_env/evaluators/getters/*.py where Iris can match them.
#include <algorithm>
#include <sstream>
#include <system_error>

#include "agent/eval/evaluator.h"
#include "agent/eval/url_match.h"
#include "base/strings.h"

namespace iris::agent::eval {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

Status specError(const std::string& key, const std::string& what) {
    return Status::invalidArgument(key + ": " + what);
}

// Is `p` (lexically normal, absolute) inside `root` (after resolving symlinks of both)?
bool isInside(const fs::path& p, const fs::path& root) {
    if (root.empty()) return false;
    std::error_code ec;
    const fs::path rp = fs::weakly_canonical(p, ec);
    if (ec) return false;
    const fs::path rr = fs::weakly_canonical(root, ec);
    if (ec) return false;
    auto pi = rp.begin();
    for (auto ri = rr.begin(); ri != rr.end(); ++ri, ++pi) {
        if (ri->empty()) continue;  // a trailing separator
        if (pi == rp.end() || *pi != *ri) return false;
    }
    return true;
}

// path, dest, multi, gives (OSWorld's vm_file / cloud_file): the (path, index) pairs to return.
Result<std::vector<std::pair<std::string, size_t>>> selectedPaths(const json& spec) {
    const bool multi = spec.value("multi", false);
    std::vector<std::string> paths;
    auto it = spec.find("path");
    if (it == spec.end()) return specError("path", "missing");
    if (!multi) {
        if (!it->is_string()) return specError("path", "expected a string");
        paths.push_back(it->get<std::string>());
    } else {
        if (!it->is_array()) return specError("path", "expected a list (multi is true)");
        for (const auto& p : *it) {
            if (!p.is_string()) return specError("path", "expected a list of strings");
            paths.push_back(p.get<std::string>());
        }
    }
    std::vector<size_t> gives{0};
    if (auto g = spec.find("gives"); g != spec.end()) {
        if (!g->is_array()) return specError("gives", "expected a list of indices");
        gives.clear();
        for (const auto& i : *g) {
            if (!i.is_number_unsigned() && !(i.is_number_integer() && i.get<long long>() >= 0)) {
                return specError("gives", "expected a list of indices");
            }
            gives.push_back(i.get<size_t>());
        }
    }
    std::vector<std::pair<std::string, size_t>> out;
    for (size_t i = 0; i < paths.size(); ++i) {
        if (std::find(gives.begin(), gives.end(), i) != gives.end()) out.emplace_back(paths[i], i);
    }
    return out;
}

// OSWorld returns the single path itself, or a list when several are given.
Value pathsValue(const std::vector<std::string>& paths) {
    if (paths.size() == 1) return json(paths[0]);
    return json(paths);
}

Result<Value> getVmFile(EvaluationContext& context, const json& spec) {
    auto selected = selectedPaths(spec);
    if (!selected) return selected.status();
    const auto& vars = context.variables();
    const auto project = vars.find("PROJECT_DIR");
    std::vector<std::string> local;
    for (const auto& [path, i] : *selected) {
        const fs::path p = fs::path(path).lexically_normal();
        if (!p.is_absolute()) {
            return specError("path", "\"" + path + "\" is not absolute (use {PROJECT_DIR}/...)");
        }
        const bool allowed = (project != vars.end() && isInside(p, project->second)) ||
                             isInside(p, context.runTempDir());
        if (!allowed) {
            return Status::invalidArgument(
                "path: \"" + path + "\" is outside the project and the run's temporary folder");
        }
        auto fetched = context.fetchFile(p);
        if (!fetched) return fetched.status();
        local.push_back(fetched->string());
    }
    return pathsValue(local);
}

Result<Value> getCloudFile(EvaluationContext& context, const json& spec) {
    auto selected = selectedPaths(spec);
    if (!selected) return selected.status();
    std::vector<std::string> local;
    for (const auto& [path, i] : *selected) {
        if (path.rfind("http://", 0) == 0 || path.rfind("https://", 0) == 0) {
            // A download lands in the cache under "dest" (OSWorld's cache/<id>/<dest>).
            std::string dest;
            if (auto d = spec.find("dest"); d != spec.end()) {
                if (d->is_string()) dest = d->get<std::string>();
                if (d->is_array() && i < d->size() && (*d)[i].is_string())
                    dest = (*d)[i].get<std::string>();
            }
            if (dest.empty() || fs::path(dest).is_absolute() ||
                dest.find("..") != std::string::npos) {
                return specError("dest", "a plain file name is needed to download " + path);
            }
            const fs::path target = context.cacheDir() / dest;
            std::error_code ec;
            if (!fs::exists(target, ec)) IRIS_RETURN_IF_ERROR(context.download(path, target));
            local.push_back(target.string());
            continue;
        }
        fs::path p;
        if (path.rfind("file://", 0) == 0) {
            p = fs::path(percentDecode(std::string_view(path).substr(7), false));
        } else {
            p = fs::path(path);
            if (p.is_relative()) p = context.taskDir() / p;
        }
        p = p.lexically_normal();
        std::error_code ec;
        if (!fs::is_regular_file(p, ec)) return Status::notFound(p.string() + ": no such file");
        local.push_back(p.string());
    }
    return pathsValue(local);
}

Result<Value> getCacheFile(EvaluationContext& context, const json& spec) {
    auto it = spec.find("path");
    if (it == spec.end() || !it->is_string()) return specError("path", "expected a string");
    const fs::path rel(it->get<std::string>());
    const fs::path p = (context.cacheDir() / rel).lexically_normal();
    if (rel.is_absolute() || !isInside(p, context.cacheDir())) {
        return specError("path", "must name a file inside the cache folder");
    }
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) return Status::notFound(p.string() + ": no such file");
    return Value(json(p.string()));
}

Result<CommandSpec> commandOf(const json& spec) {
    CommandSpec c;
    c.shell = spec.value("shell", false);
    auto it = spec.find("command");
    if (it == spec.end()) return specError("command", "missing");
    if (it->is_string()) {
        c.isString = true;
        c.text = it->get<std::string>();
        c.argv = {c.text};
        if (!c.shell) {
            c.argv.clear();
            std::istringstream in(c.text);
            std::string w;
            while (in >> w)
                c.argv.push_back(w);
        }
    } else if (it->is_array()) {
        for (const auto& a : *it) {
            if (!a.is_string()) return specError("command", "expected a list of strings");
            c.argv.push_back(a.get<std::string>());
        }
    } else {
        return specError("command", "expected a string or a list of strings");
    }
    return c;
}

Result<Value> getVmCommandLine(EvaluationContext& context, const json& spec) {
    auto command = commandOf(spec);
    if (!command) return command.status();
    auto out = context.runCommand(*command);
    if (!out) return out.status();
    return Value(json(out->out));
}

Result<Value> getVmCommandError(EvaluationContext& context, const json& spec) {
    auto command = commandOf(spec);
    if (!command) return command.status();
    auto out = context.runCommand(*command);
    if (!out) return out.status();
    return Value(json(out->err));
}

Result<Value> getRule(EvaluationContext&, const json& spec) {
    auto it = spec.find("rules");
    if (it == spec.end()) return specError("rules", "missing");
    return Value(*it);
}

// OSWorld reads the omnibox text and re-adds goto_prefix; Iris's browser knows the real URL, so
// the URL is returned as it is (compare_urls drops "www" anyway).
Result<Value> getActiveUrl(EvaluationContext& context, const json&) {
    auto tab = context.activeTab();
    if (!tab) return tab.status();
    return Value(json(tab->url));
}

Result<Value> getActiveTabInfo(EvaluationContext& context, const json&) {
    auto tab = context.activeTab();
    if (!tab) return tab.status();
    auto html = context.activePageHtml();
    if (!html) return html.status();
    return Value(json{{"title", tab->title}, {"url", tab->url}, {"content", *html}});
}

Result<Value> getOpenTabsInfo(EvaluationContext& context, const json&) {
    auto tabs = context.openTabs();
    if (!tabs) return tabs.status();
    json list = json::array();
    for (const auto& t : *tabs)
        list.push_back({{"title", t.title}, {"url", t.url}});
    return Value(list);
}

Result<Value> getActiveTabUrlParse(EvaluationContext& context, const json& spec) {
    auto keys = spec.find("parse_keys");
    if (keys == spec.end() || !keys->is_array())
        return specError("parse_keys", "expected a list of strings");
    auto tab = context.activeTab();
    if (!tab) return tab.status();
    const auto query = parseQuery(parseUrl(tab->url).query);
    json out = json::object();
    for (const auto& k : *keys) {
        if (!k.is_string()) return specError("parse_keys", "expected a list of strings");
        auto it = query.find(k.get<std::string>());
        out[k.get<std::string>()] = it == query.end() ? std::string() : it->second.front();
    }
    if (auto replace = spec.find("replace"); replace != spec.end()) {
        if (!replace->is_object()) return specError("replace", "expected an object {old: new}");
        for (auto it = replace->begin(); it != replace->end(); ++it) {
            if (!it.value().is_string())
                return specError("replace", "expected an object {old: new}");
            if (!out.contains(it.key())) {
                // Python's dict.pop raises KeyError here.
                return specError("replace", "key \"" + it.key() + "\" is not in parse_keys");
            }
            json v = out[it.key()];
            out.erase(it.key());
            out[it.value().get<std::string>()] = v;
        }
    }
    if (spec.value("split_list", false)) {
        for (auto& [k, v] : out.items()) {
            json parts = json::array();
            const std::string s = v.get<std::string>();
            size_t start = 0;
            while (true) {
                const size_t comma = s.find(',', start);
                parts.push_back(s.substr(
                    start, comma == std::string::npos ? std::string::npos : comma - start));
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
            v = parts;
        }
    }
    return Value(out);
}


// The class / xpath / input categories of OSWorld's active_tab_html_parse, read from the live
// active page. ("label" needs Playwright's text= engine and is not supported.)
Result<Value> getActiveTabHtmlParse(EvaluationContext& context, const json& spec) {
    const std::string category = spec.value("category", "");
    json out = json::object();
    auto texts = [&](QueryLanguage lang, const std::string& expr,
                     QueryValue what) -> Result<std::vector<std::string>> {
        auto r = context.queryActivePage(lang, expr, what);
        if (!r) return r.status();
        for (auto& s : *r)
            s = std::string(trim(s));
        return r;
    };
    if (category == "class") {
        static const char* const kUnsupported[] = {
            "class_multiObject_child", "class_multiObject_only_child",
            "class_multiObject_search_exist", "class_multiObject_li", "class_multiObject_index"};
        for (const char* key : kUnsupported) {
            if (spec.contains(key))
                return Status::unsupported(std::string(key) + ": not supported by Iris");
        }
        if (auto multi = spec.find("class_multiObject"); multi != spec.end()) {
            if (!multi->is_object()) return specError("class_multiObject", "expected an object");
            for (auto it = multi->begin(); it != multi->end(); ++it) {
                auto found = texts(QueryLanguage::Css, "." + it.key(), QueryValue::TextContent);
                if (!found) return found.status();
                if (!it.value().is_object())
                    return specError("class_multiObject." + it.key(), "expected an object");
                for (auto o = it.value().begin(); o != it.value().end(); ++o) {
                    size_t index = 0;
                    try {
                        index = static_cast<size_t>(std::stoul(o.key()));
                    } catch (const std::exception&) {
                        return specError("class_multiObject." + it.key(), "keys must be indices");
                    }
                    if (!o.value().is_string())
                        return specError("class_multiObject." + it.key(), "values must be strings");
                    if (index < found->size()) out[o.value().get<std::string>()] = (*found)[index];
                }
            }
        }
        if (auto single = spec.find("class_singleObject"); single != spec.end()) {
            if (!single->is_object()) return specError("class_singleObject", "expected an object");
            for (auto it = single->begin(); it != single->end(); ++it) {
                if (!it.value().is_string())
                    return specError("class_singleObject." + it.key(), "expected a string");
                auto found = texts(QueryLanguage::Css, "." + it.key(), QueryValue::TextContent);
                if (!found) return found.status();
                if (!found->empty()) out[it.value().get<std::string>()] = found->front();
            }
        }
        return Value(out);
    }
    if (category == "xpath" || category == "input") {
        const char* key = category == "xpath" ? "xpathObject" : "inputObject";
        const QueryValue what =
            category == "xpath" ? QueryValue::TextContent : QueryValue::InputValue;
        auto objects = spec.find(key);
        if (objects == spec.end() || !objects->is_object())
            return specError(key, "expected an object");
        for (auto it = objects->begin(); it != objects->end(); ++it) {
            if (!it.value().is_string())
                return specError(std::string(key) + "." + it.key(), "expected a string");
            auto found = texts(QueryLanguage::XPath, it.key(), what);
            if (!found) return found.status();
            if (!found->empty()) out[it.value().get<std::string>()] = found->front();
        }
        return Value(out);
    }
    return Status::unsupported("category \"" + category +
                               "\" is not supported (class, xpath, input are)");
}

Result<Value> getPageScreenshot(EvaluationContext& context, const json& spec) {
    std::string url;
    if (auto it = spec.find("url"); it != spec.end()) {
        if (!it->is_string()) return specError("url", "expected a string");
        url = it->get<std::string>();
    }
    auto shot = context.screenshot(url);
    if (!shot) return shot.status();
    if (shot->empty()) return Status::ioError("the screenshot is empty");
    return Value(*shot);
}

Result<Value> getPageTextBlocks(EvaluationContext& context, const json& spec) {
    std::string url;
    if (auto it = spec.find("url"); it != spec.end()) {
        if (!it->is_string()) return specError("url", "expected a string");
        url = it->get<std::string>();
    }
    auto blocks = context.pageTextBlocks(url);
    if (!blocks) return blocks.status();
    return Value(*blocks);
}

}  // namespace

const std::vector<GetterInfo>& allGetters() {
    constexpr unsigned kB = unsigned(Needs::Browser), kC = unsigned(Needs::Commands),
                       kF = unsigned(Needs::Files), kN = unsigned(Needs::None);
    static const std::vector<GetterInfo> kGetters = {
        {"vm_file", kF,
         "local path of an environment file inside {PROJECT_DIR} or the run's temp folder",
         getVmFile},
        {"cloud_file", kN,
         "a gold file: path relative to the task's folder, file:// URL, or http(s) when the run "
         "allows network",
         getCloudFile},
        {"cache_file", kN,
         "a file in the run's cache folder, written by an execute step's stdout/stderr",
         getCacheFile},
        {"vm_command_line", kC, "stdout of a command (only when the run allows commands)",
         getVmCommandLine},
        {"vm_command_error", kC, "stderr of a command (only when the run allows commands)",
         getVmCommandError},
        {"rule", kN, "the spec's \"rules\" as they are", getRule},
        {"active_url_from_accessTree", kB, "URL of the active tab", getActiveUrl},
        {"active_tab_info", kB,
         "{title, url, content} of the active tab (the live page, not reloaded)", getActiveTabInfo},
        {"open_tabs_info", kB, "[{title, url}] of every open tab", getOpenTabsInfo},
        {"active_tab_url_parse", kB,
         "query parameters parse_keys of the active URL (replace, split_list)",
         getActiveTabUrlParse},
        {"active_tab_html_parse", kB,
         "texts of the active page by category class (class_singleObject, class_multiObject), "
         "xpath (xpathObject), input (inputObject)",
         getActiveTabHtmlParse},
        {"page_screenshot", kB,
         "Iris: screenshot of the active page, or of \"url\" rendered separately",
         getPageScreenshot},
        {"page_text_blocks", kB,
         "Iris: text blocks of the active page, or of \"url\" rendered separately",
         getPageTextBlocks},
    };
    return kGetters;
}

const GetterInfo* findGetter(std::string_view type) {
    for (const auto& g : allGetters()) {
        if (g.name == type) return &g;
    }
    return nullptr;
}

}  // namespace iris::agent::eval
