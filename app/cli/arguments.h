#pragma once
// A small command-line option parser for the subcommands: "--name value", "--name=value",
// short aliases ("-n 5"), flags, repeatable options, and positional arguments. Errors name the
// option and say what was expected.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace iris::app {

struct OptionSpec {
    std::string_view name;   // "model" for --model
    std::string_view alias;  // "m" for -m, or empty
    bool takesValue = true;
    std::string_view help;  // one line, for usage text
};

class Arguments {
public:
    // argv[0] is the program; options may come in any order; "--" ends options.
    static Result<Arguments> parse(int argc, char** argv, std::span<const OptionSpec> specs);

    bool has(std::string_view name) const;
    // The last value given for `name`, or nullopt.
    std::optional<std::string> value(std::string_view name) const;
    std::vector<std::string> values(std::string_view name) const;  // every value, in order
    Result<std::string> required(std::string_view name) const;
    Result<std::int64_t> integer(std::string_view name, std::int64_t fallback) const;
    Result<double> number(std::string_view name, double fallback) const;
    const std::vector<std::string>& positional() const { return m_positional; }

    // "  -m, --model VALUE   help" lines for every spec.
    static std::string usage(std::span<const OptionSpec> specs);

private:
    std::multimap<std::string, std::string, std::less<>> m_values;
    std::vector<std::string> m_positional;
};

}  // namespace iris::app
