#include "app/cli/arguments.h"

#include <charconv>
#include <cstdlib>

namespace iris::app {
namespace {

const OptionSpec* findSpec(std::span<const OptionSpec> specs, std::string_view arg, bool isLong) {
    for (const OptionSpec& spec : specs) {
        if ((isLong && spec.name == arg) || (!isLong && !spec.alias.empty() && spec.alias == arg))
            return &spec;
    }
    return nullptr;
}

}  // namespace

Result<Arguments> Arguments::parse(int argc, char** argv, std::span<const OptionSpec> specs) {
    Arguments args;
    bool optionsEnded = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (optionsEnded || arg.size() < 2 || arg[0] != '-' || (arg[1] >= '0' && arg[1] <= '9')) {
            args.m_positional.emplace_back(arg);
            continue;
        }
        if (arg == "--") {
            optionsEnded = true;
            continue;
        }
        const bool isLong = arg.starts_with("--");
        std::string_view name = arg.substr(isLong ? 2 : 1);
        std::optional<std::string> inlineValue;
        if (const std::size_t eq = name.find('='); isLong && eq != std::string_view::npos) {
            inlineValue = std::string(name.substr(eq + 1));
            name = name.substr(0, eq);
        }
        const OptionSpec* spec = findSpec(specs, name, isLong);
        if (spec == nullptr)
            return Status::invalidArgument("unknown option '" + std::string(arg) + "'");
        if (!spec->takesValue) {
            if (inlineValue)
                return Status::invalidArgument("option '--" + std::string(spec->name) +
                                               "' takes no value");
            args.m_values.emplace(std::string(spec->name), "");
            continue;
        }
        if (!inlineValue) {
            if (i + 1 >= argc)
                return Status::invalidArgument("option '--" + std::string(spec->name) +
                                               "' needs a value");
            inlineValue = argv[++i];
        }
        args.m_values.emplace(std::string(spec->name), *inlineValue);
    }
    return args;
}

bool Arguments::has(std::string_view name) const {
    return m_values.find(name) != m_values.end();
}

std::optional<std::string> Arguments::value(std::string_view name) const {
    const auto [begin, end] = m_values.equal_range(name);
    if (begin == end) return std::nullopt;
    return std::prev(end)->second;
}

std::vector<std::string> Arguments::values(std::string_view name) const {
    std::vector<std::string> out;
    const auto [begin, end] = m_values.equal_range(name);
    for (auto it = begin; it != end; ++it)
        out.push_back(it->second);
    return out;
}

Result<std::string> Arguments::required(std::string_view name) const {
    if (std::optional<std::string> v = value(name)) return *v;
    return Status::invalidArgument("option '--" + std::string(name) + "' is required");
}

Result<std::int64_t> Arguments::integer(std::string_view name, std::int64_t fallback) const {
    const std::optional<std::string> v = value(name);
    if (!v) return fallback;
    std::int64_t n = 0;
    const auto [end, error] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (error != std::errc() || end != v->data() + v->size()) {
        return Status::invalidArgument("option '--" + std::string(name) +
                                       "' expects an integer, got '" + *v + "'");
    }
    return n;
}

Result<double> Arguments::number(std::string_view name, double fallback) const {
    const std::optional<std::string> v = value(name);
    if (!v) return fallback;
    char* end = nullptr;
    const double d = std::strtod(v->c_str(), &end);
    if (v->empty() || end != v->c_str() + v->size()) {
        return Status::invalidArgument("option '--" + std::string(name) +
                                       "' expects a number, got '" + *v + "'");
    }
    return d;
}

std::string Arguments::usage(std::span<const OptionSpec> specs) {
    std::string text;
    for (const OptionSpec& spec : specs) {
        std::string left = "  ";
        left += spec.alias.empty() ? "    " : "-" + std::string(spec.alias) + ", ";
        left += "--" + std::string(spec.name) + (spec.takesValue ? " VALUE" : "");
        if (left.size() < 28) left.append(28 - left.size(), ' ');
        text += left + " " + std::string(spec.help) + "\n";
    }
    return text;
}

}  // namespace iris::app
