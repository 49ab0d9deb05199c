#include "agent/clients/http_download.h"

#include <cstdio>
#include <memory>
#include <system_error>

#include <curl/curl.h>

namespace iris::agent {

namespace {

struct FileCloser {
    void operator()(std::FILE* file) const { std::fclose(file); }
};

std::size_t writeToFile(char* data, std::size_t size, std::size_t count, void* file) {
    return std::fwrite(data, size, count, static_cast<std::FILE*>(file));
}

}  // namespace

Status downloadFile(const std::string& url, const std::filesystem::path& dest,
                    const DownloadOptions& options) {
    if (!url.starts_with("http://") && !url.starts_with("https://"))
        return Status::invalidArgument(url + ": not an http(s) URL");
    std::error_code error;
    if (dest.has_parent_path()) std::filesystem::create_directories(dest.parent_path(), error);
    const std::filesystem::path part = dest.string() + ".part";
    Status last = Status::ok();
    for (int attempt = 0; attempt < std::max(1, options.attempts); ++attempt) {
        std::unique_ptr<std::FILE, FileCloser> file(std::fopen(part.c_str(), "wb"));
        if (!file) return Status::ioError(url + ": cannot write " + part.string());
        std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(),
                                                                 curl_easy_cleanup);
        if (!curl) return Status::internal(url + ": curl_easy_init failed");
        char message[CURL_ERROR_SIZE] = {};
        curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
        curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(curl.get(), CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(curl.get(), CURLOPT_MAXREDIRS, 10L);
        curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT, options.connectTimeoutS);
        curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, options.totalTimeoutS);
        curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, message);
        curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, writeToFile);
        curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, file.get());
        const CURLcode code = curl_easy_perform(curl.get());
        long status = 0;
        curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
        const bool flushed = std::fflush(file.get()) == 0;
        file.reset();
        if (code != CURLE_OK) {
            last = Status::ioError(url + ": " + (message[0] ? message : curl_easy_strerror(code)));
            continue;  // connection trouble: try again
        }
        if (!flushed) {
            last = Status::ioError(url + ": writing " + part.string() + " failed (disk full?)");
            break;
        }
        if (status >= 400) {
            last = status == 404 ? Status::notFound(url + ": HTTP 404 (not found)")
                                 : Status::ioError(url + ": HTTP " + std::to_string(status));
            if (status < 500) break;  // the server's answer will not change
            continue;
        }
        std::filesystem::rename(part, dest, error);
        if (error) {
            last = Status::ioError(url + ": cannot move the file to " + dest.string() + ": " +
                                   error.message());
            break;
        }
        return Status::ok();
    }
    std::filesystem::remove(part, error);
    return last;
}

}  // namespace iris::agent
