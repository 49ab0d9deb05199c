#pragma once
// URL helpers with the semantics of the Python OSWorld's chrome metrics and getters rely on.
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace iris::agent::eval {

struct UrlParts {  // urllib.parse.urlparse
    std::string scheme, netloc, path, params, query, fragment;
};
UrlParts parseUrl(std::string_view url);
std::string unparseUrl(const UrlParts& parts);  // urllib.parse.urlunparse

// urllib.parse.parse_qs(query): '&'-separated, '+' is a space, %XX decoded, blank values and
// pairs without '=' dropped; values in order of appearance.
std::map<std::string, std::vector<std::string>> parseQuery(std::string_view query);
std::string percentDecode(std::string_view text, bool plusIsSpace);

// OSWorld's compare_urls (metrics/utils.py): a scheme-less URL is read as http://, the scheme is
// lower-cased, the host lower-cased and reduced to subdomain + registered domain with a bare "www"
// subdomain and the public suffix dropped (so airbnb.com equals www.airbnb.com.sg), the port is
// dropped, path "/" equals "", and params, query and fragment must match. The public suffix comes
// from a built-in list of common two-label suffixes (co.uk, com.au, ...) or else the last label,
// where Python uses the full Public Suffix List (tldextract).
bool compareUrls(std::string_view a, std::string_view b);
std::string normalizeUrlForCompare(std::string_view url);

}  // namespace iris::agent::eval
