#include "agent/eval/python_like.h"

#include <charconv>
#include <cmath>

namespace iris::agent::eval {
namespace {

using json = nlohmann::json;

bool isNumberLike(const json& v) {
    return v.is_number() || v.is_boolean();
}
double asDouble(const json& v) {
    return v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>();
}

std::string reprString(const std::string& s) {
    // Python prefers single quotes, switching to double quotes when the text has ' and no ".
    const bool useDouble = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
    const char q = useDouble ? '"' : '\'';
    std::string out(1, q);
    for (char c : s) {
        switch (c) {
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c == q) {
                    out += '\\';
                    out += c;
                } else {
                    out += c;
                }
        }
    }
    out += q;
    return out;
}

// repr(float): the shortest text that reads back, with ".0" on integral values.
std::string floatRepr(double x) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
    std::string s(buf, ec == std::errc() ? end : buf);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s;
}

}  // namespace

bool pyTruthy(const json& v) {
    switch (v.type()) {
        case json::value_t::null:
            return false;
        case json::value_t::boolean:
            return v.get<bool>();
        case json::value_t::string:
            return !v.get_ref<const std::string&>().empty();
        case json::value_t::array:
        case json::value_t::object:
            return !v.empty();
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
        case json::value_t::number_float:
            return v.get<double>() != 0;
        default:
            return true;
    }
}

bool pyEquals(const json& a, const json& b) {
    if (isNumberLike(a) && isNumberLike(b)) return asDouble(a) == asDouble(b);
    if (a.type() != b.type()) {
        return false;
    }
    if (a.is_array()) {
        if (a.size() != b.size()) return false;
        for (size_t i = 0; i < a.size(); ++i) {
            if (!pyEquals(a[i], b[i])) return false;
        }
        return true;
    }
    if (a.is_object()) {
        if (a.size() != b.size()) return false;
        for (auto it = a.begin(); it != a.end(); ++it) {
            auto other = b.find(it.key());
            if (other == b.end() || !pyEquals(it.value(), *other)) return false;
        }
        return true;
    }
    return a == b;
}

bool pyContains(const json& haystack, const json& needle) {
    if (haystack.is_string()) {
        if (!needle.is_string()) return false;
        return haystack.get_ref<const std::string&>().find(needle.get_ref<const std::string&>()) !=
               std::string::npos;
    }
    if (haystack.is_array()) {
        for (const auto& e : haystack) {
            if (pyEquals(e, needle)) return true;
        }
        return false;
    }
    if (haystack.is_object() && needle.is_string())
        return haystack.contains(needle.get<std::string>());
    return false;
}

std::string pyRepr(const json& v) {
    switch (v.type()) {
        case json::value_t::null:
            return "None";
        case json::value_t::boolean:
            return v.get<bool>() ? "True" : "False";
        case json::value_t::string:
            return reprString(v.get<std::string>());
        case json::value_t::number_integer:
            return std::to_string(v.get<long long>());
        case json::value_t::number_unsigned:
            return std::to_string(v.get<unsigned long long>());
        case json::value_t::number_float:
            return floatRepr(v.get<double>());
        case json::value_t::array: {
            std::string out = "[";
            for (size_t i = 0; i < v.size(); ++i)
                out += (i ? ", " : "") + pyRepr(v[i]);
            return out + "]";
        }
        case json::value_t::object: {
            std::string out = "{";
            bool first = true;
            for (auto it = v.begin(); it != v.end(); ++it) {
                out += (first ? "" : ", ") + reprString(it.key()) + ": " + pyRepr(it.value());
                first = false;
            }
            return out + "}";
        }
        default:
            return v.dump();
    }
}

std::string pyStr(const json& v) {
    return v.is_string() ? v.get<std::string>() : pyRepr(v);
}

std::optional<int> pyCompare(const json& a, const json& b) {
    if (isNumberLike(a) && isNumberLike(b)) {
        const double x = asDouble(a), y = asDouble(b);
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.is_string() && b.is_string()) {
        const int c = a.get_ref<const std::string&>().compare(b.get_ref<const std::string&>());
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    return std::nullopt;
}

}  // namespace iris::agent::eval
