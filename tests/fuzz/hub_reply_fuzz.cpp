// libFuzzer target for what the model hub (or a mirror) answers a pull: the tree listing's JSON
// (app/models/hub_client.h), the Link header that pages it, a Retry-After value, and the
// file choice made from a parsed listing. Any input must parse or fail cleanly.
//   build/fuzz/tests/fuzz/iris_hub_reply_fuzz -max_total_time=300 corpus/
//   tests/fuzz/hub_reply_seeds/
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "app/models/hub_client.h"
#include "app/models/model_download.h"
#include "app/models/model_reference.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace iris::app::models;
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    std::size_t sink = 0;
    const iris::Result<std::vector<HubFile>> files = parseHubTree(bytes, "fuzz");
    if (files) {
        for (const HubFile& file : *files) {
            if (!file.sha256.empty() && file.sha256.size() != 64) __builtin_trap();
            sink += quantizationOfFile(file.path).size();
        }
        const iris::Result<ChosenFiles> chosen = chooseFiles(*files, "u/r", "");
        if (chosen) sink += chosen->model.path.size();
    }
    sink += nextPageUrl(bytes).size();
    sink += std::size_t(parseRetryAfter(std::string(bytes.substr(0, 64)), 0) > 0);
    const iris::Result<ModelReference> reference = parseModelReference(bytes.substr(0, 256));
    if (reference) sink += reference->name.size();
    return sink == 1 ? 0 : 0;  // `sink` keeps the work from being optimised away
}
