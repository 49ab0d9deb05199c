#pragma once
// One file over http(s) to disk, for task set-up and gold files (OSWorld's `download` step and
// `cloud_file` getter) when a run allows the network. Written to `dest` + ".part" and renamed
// when complete, so a failed transfer never leaves a truncated file under the final name.

#include <filesystem>
#include <string>

#include "base/status.h"

namespace iris::agent {

struct DownloadOptions {
    long connectTimeoutS = 30;
    long totalTimeoutS = 300;  // OSWorld's
    int attempts = 3;          // connection errors and 5xx are tried again; 4xx are not
};

// Errors name the URL: InvalidArgument for a scheme other than http(s), NotFound for 404,
// IoError for other HTTP statuses, connection failures and a destination that cannot be written.
Status downloadFile(const std::string& url, const std::filesystem::path& dest,
                    const DownloadOptions& options = {});

}  // namespace iris::agent
