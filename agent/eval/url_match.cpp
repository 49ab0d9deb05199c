#include "agent/eval/url_match.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>

#include "base/strings.h"

namespace iris::agent::eval {
namespace {

std::vector<std::string> split(std::string_view s, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        const size_t at = s.find(sep, start);
        out.emplace_back(
            s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
        if (at == std::string_view::npos) break;
        start = at + 1;
    }
    return out;
}

bool isIpv4(const std::string& host) {
    static const std::regex kIp(R"(^\d{1,3}(\.\d{1,3}){3}$)");
    return std::regex_match(host, kIp);
}

}  // namespace

UrlParts parseUrl(std::string_view url) {
    UrlParts p;
    std::string_view rest = url;
    // scheme: letters, digits, + - . after a first letter, then ':'.
    const size_t colon = rest.find(':');
    if (colon != std::string_view::npos && colon > 0 &&
        std::isalpha(static_cast<unsigned char>(rest[0]))) {
        const bool valid = std::all_of(rest.begin(), rest.begin() + long(colon), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
        });
        if (valid) {
            p.scheme = asciiLower(std::string(rest.substr(0, colon)));
            rest.remove_prefix(colon + 1);
        }
    }
    if (rest.substr(0, 2) == "//") {
        rest.remove_prefix(2);
        const size_t end = rest.find_first_of("/?#");
        p.netloc = std::string(rest.substr(0, end));
        rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
    }
    if (const size_t hash = rest.find('#'); hash != std::string_view::npos) {
        p.fragment = std::string(rest.substr(hash + 1));
        rest = rest.substr(0, hash);
    }
    if (const size_t q = rest.find('?'); q != std::string_view::npos) {
        p.query = std::string(rest.substr(q + 1));
        rest = rest.substr(0, q);
    }
    // params: after the last path segment's ';' (urlparse splits only the last segment).
    const size_t slash = rest.rfind('/');
    const size_t semi = rest.find(';', slash == std::string_view::npos ? 0 : slash);
    if (semi != std::string_view::npos) {
        p.params = std::string(rest.substr(semi + 1));
        rest = rest.substr(0, semi);
    }
    p.path = std::string(rest);
    return p;
}

std::string unparseUrl(const UrlParts& p) {
    std::string url;
    std::string path = p.path;
    if (!p.params.empty()) path += ";" + p.params;
    if (!p.netloc.empty() || (!p.scheme.empty() && (p.scheme == "http" || p.scheme == "https" ||
                                                    p.scheme == "ftp" || p.scheme == "file"))) {
        if (!path.empty() && path[0] != '/') path = "/" + path;
        url = "//" + p.netloc + path;
    } else {
        url = path;
    }
    if (!p.scheme.empty()) url = p.scheme + ":" + url;
    if (!p.query.empty()) url += "?" + p.query;
    if (!p.fragment.empty()) url += "#" + p.fragment;
    return url;
}

std::string percentDecode(std::string_view text, bool plusIsSpace) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '+' && plusIsSpace) {
            out += ' ';
        } else if (c == '%' && i + 2 < text.size() && hexDigitValue(text[i + 1]) >= 0 &&
                   hexDigitValue(text[i + 2]) >= 0) {
            out += static_cast<char>(hexDigitValue(text[i + 1]) * 16 + hexDigitValue(text[i + 2]));
            i += 2;
        } else {
            out += c;
        }
    }
    return out;
}

std::map<std::string, std::vector<std::string>> parseQuery(std::string_view query) {
    std::map<std::string, std::vector<std::string>> out;
    for (const std::string& pair : split(query, '&')) {
        if (pair.empty()) continue;
        const size_t eq = pair.find('=');
        if (eq == std::string::npos) continue;
        std::string value = percentDecode(std::string_view(pair).substr(eq + 1), true);
        if (value.empty()) continue;
        out[percentDecode(std::string_view(pair).substr(0, eq), true)].push_back(std::move(value));
    }
    return out;
}

std::string normalizeUrlForCompare(std::string_view url) {
    static const std::regex kHasScheme(R"(^[a-zA-Z][a-zA-Z0-9+.-]*://)");
    std::string u(url);
    if (!std::regex_search(u, kHasScheme)) u = "http://" + u;
    UrlParts p = parseUrl(u);
    std::string host = asciiLower(p.netloc);
    if (const size_t at = host.rfind('@'); at != std::string::npos) host = host.substr(at + 1);
    if (const size_t colon = host.rfind(':');
        colon != std::string::npos && host.find(']') == std::string::npos) {
        host = host.substr(0, colon);
    }
    std::string netloc = host;
    if (!host.empty() && !isIpv4(host) && host.find('.') != std::string::npos) {
        static const std::set<std::string> kTwoLabelSuffixes = {
            "co.uk",  "org.uk", "ac.uk",  "gov.uk", "me.uk",  "ltd.uk", "plc.uk", "net.uk",
            "com.au", "net.au", "org.au", "edu.au", "gov.au", "co.nz",  "org.nz", "co.jp",
            "ne.jp",  "or.jp",  "ac.jp",  "co.kr",  "or.kr",  "com.sg", "edu.sg", "gov.sg",
            "com.br", "com.cn", "net.cn", "org.cn", "com.hk", "com.tw", "co.in",  "net.in",
            "org.in", "com.mx", "co.za",  "com.tr", "com.ar", "com.my", "com.ph", "co.id",
            "com.vn", "co.th",  "com.sa", "com.eg", "co.il",  "com.pk", "com.ng", "com.ua"};
        std::vector<std::string> labels = split(host, '.');
        size_t suffixLabels = 1;
        if (labels.size() >= 3 &&
            kTwoLabelSuffixes.count(labels[labels.size() - 2] + "." + labels.back())) {
            suffixLabels = 2;
        }
        labels.resize(labels.size() - suffixLabels);
        const std::string domain = labels.back();
        labels.pop_back();
        std::string sub;
        for (const auto& l : labels)
            sub += (sub.empty() ? "" : ".") + l;
        if (sub == "www") sub.clear();
        netloc = sub.empty() ? domain : sub + "." + domain;
    }
    p.netloc = netloc;
    if (p.path == "/") p.path.clear();
    return unparseUrl(p);
}

bool compareUrls(std::string_view a, std::string_view b) {
    return normalizeUrlForCompare(a) == normalizeUrlForCompare(b);
}

}  // namespace iris::agent::eval
