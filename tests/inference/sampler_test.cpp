#include "inference/sampler.h"

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "inference/engine.h"
#include "tests/inference/device_sampling.h"

namespace iris::inference {
namespace {

SamplingParams plain(float temperature) {
    return {.temperature = temperature, .topK = 0, .topP = 1.0f, .minP = 0.0f, .seed = 1};
}

std::map<std::int32_t, int> histogram(Sampler& sampler, const std::vector<float>& logits,
                                      int draws) {
    std::map<std::int32_t, int> counts;
    for (int i = 0; i < draws; ++i)
        ++counts[sampler.sample(logits, {})];
    return counts;
}

TEST(Sampler, GreedyPicksTheLargestLogitAndTheLowestIdOnTies) {
    Sampler sampler(plain(0.0f));
    EXPECT_EQ(sampler.sample(std::vector<float>{0.1f, 2.0f, -1.0f, 2.0f}, {}), 1);
    SamplingParams topK1 = plain(1.5f);
    topK1.topK = 1;
    Sampler one(topK1);
    for (int i = 0; i < 50; ++i)
        EXPECT_EQ(one.sample(std::vector<float>{0.0f, 0.5f, 0.4f}, {}), 1);
}

TEST(Sampler, DrawsFollowTheSoftmaxAtTemperatureOne) {
    const std::vector<float> logits = {1.0f, 2.0f, 0.0f, 1.5f};
    double sum = 0;
    for (float l : logits)
        sum += std::exp(double(l));
    Sampler sampler(plain(1.0f));
    const int draws = 40000;
    const auto counts = histogram(sampler, logits, draws);
    for (std::size_t i = 0; i < logits.size(); ++i) {
        const double expected = std::exp(double(logits[i])) / sum;
        const double seen =
            double(counts.count(std::int32_t(i)) ? counts.at(std::int32_t(i)) : 0) / draws;
        EXPECT_NEAR(seen, expected, 0.01)
            << "token " << i;  // 4 standard deviations at most ~0.0095
    }
}

TEST(Sampler, TemperatureSharpensAndFlattens) {
    const std::vector<float> logits = {0.0f, 1.0f};
    Sampler cold(plain(0.25f)), hot(plain(4.0f));
    const auto coldCounts = histogram(cold, logits, 10000),
               hotCounts = histogram(hot, logits, 10000);
    EXPECT_GT(coldCounts.at(1), 9700);  // p = 1 / (1 + e^-4) = 0.982
    EXPECT_NEAR(hotCounts.at(1) / 10000.0, 1.0 / (1.0 + std::exp(-0.25)), 0.02);
}

TEST(Sampler, TopPAndMinPCutTheTail) {
    // Probabilities 0.5, 0.3, 0.15, 0.05.
    const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f),
                                       std::log(0.05f)};
    SamplingParams nucleus = plain(1.0f);
    nucleus.topP = 0.75f;  // 0.5 + 0.3 passes 0.75
    Sampler top(nucleus);
    for (const auto& [id, count] : histogram(top, logits, 5000))
        EXPECT_LE(id, 1) << count;
    SamplingParams minimum = plain(1.0f);
    minimum.minP = 0.4f;  // keeps p >= 0.2
    Sampler min(minimum);
    const auto counts = histogram(min, logits, 5000);
    for (const auto& [id, count] : counts)
        EXPECT_LE(id, 1) << count;
    EXPECT_EQ(counts.size(), 2u);
}

TEST(Sampler, PenaltiesFollowLlamaCppArithmetic) {
    SamplingParams p = plain(0.0f);
    p.repetitionPenalty = 2.0f;
    Sampler repeat(p);
    const std::vector<std::int32_t> history = {0, 0};
    EXPECT_EQ(repeat.sample(std::vector<float>{1.0f, 0.6f}, history), 1);    // 1.0 / 2 < 0.6
    EXPECT_EQ(repeat.sample(std::vector<float>{-0.5f, -0.8f}, history), 1);  // -0.5 * 2 < -0.8
    SamplingParams f = plain(0.0f);
    f.frequencyPenalty = 0.3f;
    f.presencePenalty = 0.1f;
    Sampler frequency(f);
    // 1.0 - 2 * 0.3 - 0.1 = 0.3 < 0.35
    EXPECT_EQ(frequency.sample(std::vector<float>{1.0f, 0.35f}, history), 1);
    EXPECT_EQ(frequency.sample(std::vector<float>{1.0f, 0.25f}, history), 0);
    f.penaltyWindow = 0;  // nothing in the window: no penalty
    Sampler none(f);
    EXPECT_EQ(none.sample(std::vector<float>{1.0f, 0.35f}, history), 0);
}

TEST(Sampler, TheSameSeedGivesTheSameDraws) {
    const std::vector<float> logits = {0.2f, 0.1f, 0.3f, 0.0f, 0.25f};
    SamplingParams p = plain(1.0f);
    p.seed = 42;
    Sampler a(p), b(p);
    p.seed = 43;
    Sampler c(p);
    std::vector<std::int32_t> sa, sb, sc;
    for (int i = 0; i < 64; ++i) {
        sa.push_back(a.sample(logits, {}));
        sb.push_back(b.sample(logits, {}));
        sc.push_back(c.sample(logits, {}));
    }
    EXPECT_EQ(sa, sb);
    EXPECT_NE(sa, sc);
}

// Sampling split between a device and the host draws what sampling from all logits draws:
// random logits with ties, penalties from a history, every chain the device can shorten.
TEST(Sampler, CandidatesFromADeviceDrawWhatTheFullLogitsDraw) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 2.5f);
    std::uniform_int_distribution<std::int32_t> token(0, 49);  // a history of repeated tokens
    const SamplingParams chains[] = {
        {.temperature = 0.0f, .topK = 0, .topP = 1.0f, .minP = 0.0f},
        {.temperature = 0.0f, .topK = 40, .repetitionPenalty = 1.3f},
        {.temperature = 0.8f, .topK = 40, .topP = 0.95f, .minP = 0.05f},
        {.temperature = 1.0f, .topK = 1},
        {.temperature = 1.5f, .topK = 256, .topP = 1.0f, .minP = 0.0f},
        {.temperature = 0.7f,
         .topK = 20,
         .topP = 0.5f,
         .minP = 0.0f,
         .repetitionPenalty = 1.2f,
         .presencePenalty = 0.5f,
         .frequencyPenalty = 0.25f,
         .penaltyWindow = 16},
    };
    int draws = 0;
    for (const SamplingParams& chain : chains) {
        for (int trial = 0; trial < 20; ++trial) {
            SamplingParams p = chain;
            p.seed = std::uint64_t(trial);
            Sampler whole(p), split(p);
            ASSERT_GT(split.candidatesNeeded(), 0);
            std::vector<float> logits(1000);
            for (float& l : logits)  // rounded to a quarter: many ties
                l = std::round(normal(rng) * 4.0f) / 4.0f;
            std::vector<std::int32_t> history(40);
            for (std::int32_t& t : history)
                t = token(rng);
            Candidates best;
            testing::appendCandidates(logits, candidateRequest(split, history), best);
            for (int draw = 0; draw < 5; ++draw, ++draws)
                ASSERT_EQ(split.sampleCandidates(best.ids, best.logits),
                          whole.sample(logits, history))
                    << "chain " << &chain - chains << " trial " << trial << " draw " << draw;
        }
    }
    EXPECT_EQ(draws, 600);
    // Top-k off or beyond what a device keeps: the chain needs every logit.
    EXPECT_EQ(Sampler(plain(1.0f)).candidatesNeeded(), 0);
    EXPECT_EQ(Sampler({.temperature = 1.0f, .topK = 257}).candidatesNeeded(), 0);
}

}  // namespace
}  // namespace iris::inference
