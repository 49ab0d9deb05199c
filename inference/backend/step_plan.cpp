#include "inference/backend/step_plan.h"

#include <algorithm>

namespace iris::inference {

StepPlan planStep(std::span<const TokenInput> batch, const KvCache& cache) {
    const std::int64_t blockSize = cache.options().blockSize;
    StepPlan plan;
    for (std::size_t t = 0; t < batch.size(); ++t) {
        const TokenInput& in = batch[t];
        const std::span<const std::int32_t> table = cache.blockTable(in.sequence);
        if (plan.runs.empty() || batch[std::size_t(plan.runs.back().first)].sequence != in.sequence)
            plan.runs.push_back({std::int64_t(t), 0, 0});
        StepRun& run = plan.runs.back();
        ++run.tokens;
        run.maxLength = std::max(run.maxLength, in.slot + 1);
        plan.maxLength = std::max(plan.maxLength, in.slot + 1);
        plan.tableStride = std::max(plan.tableStride, std::int64_t(table.size()));
        plan.ids.push_back(in.token);
        plan.kvRows.push_back(std::int64_t(table[std::size_t(in.slot / blockSize)]) * blockSize +
                              in.slot % blockSize);
        plan.lengths.push_back(std::int32_t(in.slot + 1));
        if (in.embedding != nullptr) plan.imageRows.push_back(std::int64_t(t));
    }
    plan.tables.assign(plan.runs.size() * std::size_t(plan.tableStride), 0);
    for (std::size_t r = 0; r < plan.runs.size(); ++r) {
        const std::span<const std::int32_t> table =
            cache.blockTable(batch[std::size_t(plan.runs[r].first)].sequence);
        std::copy(table.begin(), table.end(),
                  plan.tables.begin() + std::ptrdiff_t(r) * plan.tableStride);
    }
    plan.decode = std::all_of(plan.runs.begin(), plan.runs.end(),
                              [](const StepRun& run) { return run.tokens == 1; });
    return plan;
}

}  // namespace iris::inference
