#include "app/models/hub_client.h"

#include <cstdlib>
#include <memory>

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include "base/strings.h"

namespace iris::app::models {
namespace {

struct Page {
    long status = 0;
    std::string body;
    std::string link;
};

std::size_t appendBody(char* data, std::size_t size, std::size_t count, void* user) {
    auto* page = static_cast<Page*>(user);
    if (page->body.size() > (std::size_t(64) << 20)) return 0;  // no listing is this large
    page->body.append(data, size * count);
    return size * count;
}

std::size_t readHeader(char* data, std::size_t size, std::size_t count, void* user) {
    auto* page = static_cast<Page*>(user);
    const std::string_view line(data, size * count);
    if (line.starts_with("HTTP/")) page->link.clear();
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && equalsIgnoringAsciiCase(line.substr(0, colon), "link"))
        page->link = std::string(trim(line.substr(colon + 1)));
    return size * count;
}

std::string hostOf(const std::string& url) {
    std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> parsed(curl_url(), curl_url_cleanup);
    char* host = nullptr;
    if (!parsed || curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK ||
        curl_url_get(parsed.get(), CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        return {};
    }
    std::string text = asciiLower(host);
    curl_free(host);
    return text;
}

Result<Page> getPage(const HubOptions& options, const std::string& url) {
    Page page;
    std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
    if (!curl) return Status::internal(url + ": curl_easy_init failed");
    char message[CURL_ERROR_SIZE] = {};
    curl_slist* headers = curl_slist_append(nullptr, "Accept: application/json");
    std::string authorization;
    // The listing's own host only: a Link to another host gets no token.
    if (!options.token.empty() && hostOf(url) == hostOf(options.endpoint)) {
        authorization = "Authorization: Bearer " + options.token;
        headers = curl_slist_append(headers, authorization.c_str());
    }
    std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headerList(headers,
                                                                           curl_slist_free_all);
    curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl.get(), CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    // libcurl (7.58 and later) sends no Authorization header to another host after a redirect.
    curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl.get(), CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl.get(), CURLOPT_USERAGENT, "iris-models");
    curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, options.timeoutS);
    curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headerList.get());
    curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, message);
    curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, appendBody);
    curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &page);
    curl_easy_setopt(curl.get(), CURLOPT_HEADERFUNCTION, readHeader);
    curl_easy_setopt(curl.get(), CURLOPT_HEADERDATA, &page);
    const CURLcode code = curl_easy_perform(curl.get());
    if (code != CURLE_OK)
        return Status::ioError(url + ": " + (message[0] ? message : curl_easy_strerror(code)));
    curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &page.status);
    return page;
}

}  // namespace

HubOptions hubOptionsFromEnvironment() {
    HubOptions options;
    if (const char* endpoint = std::getenv("IRIS_HF_ENDPOINT"); endpoint && *endpoint)
        options.endpoint = endpoint;
    while (options.endpoint.ends_with('/'))
        options.endpoint.pop_back();
    for (const char* name : {"IRIS_HF_TOKEN", "HF_TOKEN"}) {
        if (const char* token = std::getenv(name); token && *token) {
            options.token = std::string(trim(token));
            break;
        }
    }
    return options;
}

Result<std::vector<HubFile>> parseHubTree(std::string_view json, const std::string& source) {
    const nlohmann::json parsed = nlohmann::json::parse(json, nullptr, false);
    if (parsed.is_discarded()) return Status::corrupt(source + ": not JSON");
    if (!parsed.is_array()) return Status::corrupt(source + ": expected a JSON array of files");
    std::vector<HubFile> files;
    for (std::size_t i = 0; i < parsed.size(); ++i) {
        const nlohmann::json& entry = parsed[i];
        const std::string where = source + ": entry " + std::to_string(i);
        if (!entry.is_object()) return Status::corrupt(where + ": expected an object");
        const auto type = entry.find("type");
        const auto path = entry.find("path");
        if (type == entry.end() || !type->is_string())
            return Status::corrupt(where + ": field 'type': expected a string");
        if (path == entry.end() || !path->is_string())
            return Status::corrupt(where + ": field 'path': expected a string");
        if (*type != "file") continue;
        HubFile file;
        file.path = path->get<std::string>();
        if (const auto size = entry.find("size"); size != entry.end() && size->is_number_unsigned())
            file.size = size->get<std::uint64_t>();
        if (const auto lfs = entry.find("lfs"); lfs != entry.end() && lfs->is_object()) {
            const auto oid = lfs->find("oid");
            if (oid == lfs->end() || !oid->is_string())
                return Status::corrupt(where + ": field 'lfs.oid': expected a string");
            std::string sha = asciiLower(oid->get<std::string>());
            if (sha.starts_with("sha256:")) sha = sha.substr(7);
            const bool hex =
                sha.size() == 64 && sha.find_first_not_of("0123456789abcdef") == std::string::npos;
            if (!hex) return Status::corrupt(where + ": field 'lfs.oid': not a SHA-256");
            file.sha256 = sha;
            if (const auto size = lfs->find("size");
                size != lfs->end() && size->is_number_unsigned())
                file.size = size->get<std::uint64_t>();
        }
        files.push_back(std::move(file));
    }
    return files;
}

std::string nextPageUrl(std::string_view linkHeader) {
    // <url>; rel="next", <url>; rel="prev"
    std::size_t at = 0;
    while (at < linkHeader.size()) {
        const std::size_t open = linkHeader.find('<', at);
        if (open == std::string_view::npos) return {};
        const std::size_t close = linkHeader.find('>', open);
        if (close == std::string_view::npos) return {};
        std::size_t end = linkHeader.find(',', close);
        if (end == std::string_view::npos) end = linkHeader.size();
        const std::string params = asciiLower(linkHeader.substr(close + 1, end - close - 1));
        if (params.find("rel=\"next\"") != std::string::npos ||
            params.find("rel=next") != std::string::npos) {
            return std::string(linkHeader.substr(open + 1, close - open - 1));
        }
        at = end + 1;
    }
    return {};
}

Result<std::vector<HubFile>> listRepositoryFiles(const HubOptions& options,
                                                 const std::string& repo) {
    std::vector<HubFile> files;
    std::string url = options.endpoint + "/api/models/" + repo + "/tree/main?recursive=true";
    for (int pages = 0; !url.empty(); ++pages) {
        if (pages >= 1000) return Status::corrupt(url + ": more than 1000 pages");
        Result<Page> page = getPage(options, url);
        IRIS_RETURN_IF_ERROR(page.status());
        if (page->status == 404 || page->status == 401) {
            return Status::notFound(repo + ": no such repository on " + options.endpoint +
                                    (page->status == 401 || options.token.empty()
                                         ? " (or it is private or gated: set HF_TOKEN)"
                                         : ""));
        }
        if (page->status != 200)
            return Status::ioError(url + ": HTTP " + std::to_string(page->status));
        Result<std::vector<HubFile>> parsed = parseHubTree(page->body, url);
        IRIS_RETURN_IF_ERROR(parsed.status());
        files.insert(files.end(), parsed->begin(), parsed->end());
        url = nextPageUrl(page->link);
        // A relative link is relative to the endpoint.
        if (url.starts_with('/')) url = options.endpoint + url;
    }
    return files;
}

std::string fileUrl(const HubOptions& options, const std::string& repo, const std::string& path) {
    return options.endpoint + "/" + repo + "/resolve/main/" + path;
}

}  // namespace iris::app::models
