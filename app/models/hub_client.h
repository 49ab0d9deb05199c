#pragma once
// The Hugging Face hub's HTTP API, the part a pull needs: a repository's file list
// (GET {endpoint}/api/models/{repo}/tree/main, paged through the Link header, with each LFS
// file's size and SHA-256) and a file's download URL ({endpoint}/{repo}/resolve/main/{path}).
// Any server with the same routes works as a mirror.
#include <string>
#include <string_view>
#include <vector>

#include "app/models/model_reference.h"
#include "base/status.h"

namespace iris::app::models {

struct HubOptions {
    std::string endpoint = "https://huggingface.co";  // no trailing slash
    // Sent as a Bearer token to the endpoint's host only; never printed or put in a message.
    std::string token;
    long timeoutS = 60;
};

// The defaults with IRIS_HF_ENDPOINT (a mirror) and the token from IRIS_HF_TOKEN or HF_TOKEN.
HubOptions hubOptionsFromEnvironment();

// One page of a tree listing: the files in it (folders skipped). Corrupt names `source` and the
// entry. The hub's JSON is untrusted input (tests/fuzz/hub_tree_fuzz.cpp).
Result<std::vector<HubFile>> parseHubTree(std::string_view json, const std::string& source);

// The rel="next" URL of a Link header, or "" when there is none.
std::string nextPageUrl(std::string_view linkHeader);

// Every file of `repo` (user/repo) on its main branch. NotFound names the repository; other
// errors name the URL.
Result<std::vector<HubFile>> listRepositoryFiles(const HubOptions& options,
                                                 const std::string& repo);

std::string fileUrl(const HubOptions& options, const std::string& repo, const std::string& path);

}  // namespace iris::app::models
