// The process-wide registry of loaded local models (sharedScheduler, makeModelClient): equal
// choices get the same scheduler while anyone holds it, a choice the loaded engine is too small
// for gets another, and once every holder is gone the next call loads the file again.
#include "app/session/model_choice.h"

#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "agent/clients/local_engine_client.h"
#include "app/models/catalogue.h"
#include "app/models/model_store.h"
#include "tests/inference/models/scratch_dir.h"
#include "tests/inference/models/tiny_model.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;

class ModelChoiceRegistryTest : public ::testing::Test {
protected:
    void SetUp() override {
        inference::testing::TinyModelSpec spec;
        spec.vocab = 288;
        spec.withTokenizer = true;
        m_model = m_scratch.write("tiny.gguf", inference::testing::makeTinyModel(spec));
    }

    ModelChoice choice() const {
        ModelChoice c;
        c.backend = ModelChoice::Backend::LocalEngine;
        c.modelPath = m_model;
        c.threads = 1;
        c.contextSize = 256;
        return c;
    }

    std::shared_ptr<inference::Scheduler> scheduler(const ModelChoice& c) {
        Result<std::shared_ptr<inference::Scheduler>> s = sharedScheduler(c);
        EXPECT_TRUE(s) << s.status().message();
        return s ? *s : nullptr;
    }

    inference::testing::ScratchDir m_scratch{"iris_model_registry"};
    fs::path m_model;
};

TEST_F(ModelChoiceRegistryTest, EqualChoicesShareOneScheduler) {
    const auto first = scheduler(choice());
    ASSERT_TRUE(first);
    EXPECT_EQ(scheduler(choice()), first);

    // The same file by another name, and other compute threads, are the same engine.
    ModelChoice other = choice();
    other.modelPath = m_model.parent_path() / "." / m_model.filename();
    other.threads = 2;
    EXPECT_EQ(scheduler(other), first);

    // Clients made by the factory are clients of it.
    Result<std::unique_ptr<agent::ModelClient>> client = makeModelClient(choice());
    ASSERT_TRUE(client) << client.status().message();
    auto* local = dynamic_cast<agent::LocalEngineClient*>(client->get());
    ASSERT_NE(local, nullptr);
    EXPECT_EQ(local->scheduler(), first);
    EXPECT_EQ((*client)->describe(), "local tiny.gguf");
}

TEST_F(ModelChoiceRegistryTest, ALargerContextOrPoolLoadsAnotherAndASmallerOneReusesIt) {
    const auto small = scheduler(choice());
    ASSERT_TRUE(small);
    EXPECT_EQ(small->engine().options().maxSessions, 1);

    ModelChoice parallel = choice();
    parallel.parallel = 3;
    const auto pool = scheduler(parallel);
    ASSERT_TRUE(pool);
    EXPECT_NE(pool, small);
    EXPECT_EQ(pool->engine().options().maxSessions, 3);

    ModelChoice longer = choice();
    longer.contextSize = 512;
    const auto wide = scheduler(longer);
    ASSERT_TRUE(wide);
    EXPECT_NE(wide, small);
    EXPECT_NE(wide, pool);
    EXPECT_EQ(wide->engine().options().contextSize, 512);

    // Two at a time fit in the pool of three; a context of 256 in one of 512.
    ModelChoice two = choice();
    two.parallel = 2;
    EXPECT_EQ(scheduler(two), pool);
    const auto any = scheduler(choice());
    EXPECT_TRUE(any == small || any == pool || any == wide);
}

TEST_F(ModelChoiceRegistryTest, AfterEveryHolderIsGoneTheNextCallLoadsAgain) {
    std::weak_ptr<inference::Scheduler> gone;
    {
        Result<std::unique_ptr<agent::ModelClient>> client = makeModelClient(choice());
        ASSERT_TRUE(client) << client.status().message();
        gone = dynamic_cast<agent::LocalEngineClient&>(**client).scheduler();
        EXPECT_EQ(scheduler(choice()), gone.lock());
    }
    // The registry held only a weak reference: the engine went with its last client.
    EXPECT_TRUE(gone.expired());
    const auto again = scheduler(choice());
    ASSERT_TRUE(again);
    EXPECT_EQ(again->stats().requests, 0);
}

TEST_F(ModelChoiceRegistryTest, CallsAtOnceLoadTheFileOnce) {
    constexpr int kCallers = 4;
    std::vector<std::shared_ptr<inference::Scheduler>> got(kCallers);
    std::vector<std::thread> threads;
    for (int i = 0; i < kCallers; ++i)
        threads.emplace_back([&, i] { got[i] = scheduler(choice()); });
    for (std::thread& thread : threads)
        thread.join();
    ASSERT_TRUE(got[0]);
    for (int i = 1; i < kCallers; ++i)
        EXPECT_EQ(got[i], got[0]) << "caller " << i;
}

TEST_F(ModelChoiceRegistryTest, LoadErrorsNameTheFile) {
    ModelChoice missing = choice();
    missing.modelPath = m_scratch.path() / "absent.gguf";
    Result<std::shared_ptr<inference::Scheduler>> s = sharedScheduler(missing);
    ASSERT_FALSE(s);
    EXPECT_NE(s.status().message().find("absent.gguf"), std::string::npos);
}

// A model chosen by its file (the GUI keeps paths) runs with its catalogue entry's image budget
// and template: a pulled blob's entry (tested with the store), or the bundled model's own files.
TEST(CatalogueDefaults, TheBundledModelsFileGetsItsEntrysBudgetAndTemplate) {
    const fs::path models = fs::path(IRIS_SOURCE_ROOT) / "resources/models";
    Result<models::Catalogue> catalogue = models::loadCatalogue(models / "catalogue.json");
    ASSERT_TRUE(catalogue) << catalogue.status().message();
    const inference::testing::ScratchDir scratch{"iris_catalogue_defaults"};
    const models::ModelStore store(scratch.path() / "store");
    ModelChoice bundled;
    bundled.backend = ModelChoice::Backend::LocalEngine;
    bundled.modelPath = models / "iris-tiny-cua" / "iris-tiny-cua-f16.gguf";
    applyCatalogueDefaults(bundled, store, *catalogue, models);
    EXPECT_EQ(bundled.imageMaxPixels, 313600);
    EXPECT_EQ(bundled.chatTemplate, inference::ChatTemplateKind::Qwen2Vl);
    // Another file gets nothing.
    ModelChoice other = bundled;
    other.imageMaxPixels = 0;
    other.chatTemplate.reset();
    other.modelPath = models / "catalogue.json";
    applyCatalogueDefaults(other, store, *catalogue, models);
    EXPECT_EQ(other.imageMaxPixels, 0);
    EXPECT_FALSE(other.chatTemplate);
}

}  // namespace
}  // namespace iris::app
