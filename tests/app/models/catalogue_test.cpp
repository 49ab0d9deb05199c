#include "app/models/catalogue.h"

#include <gtest/gtest.h>

#include "agent/actions/action_format.h"

namespace iris::app::models {
namespace {

constexpr const char* kEntry = R"({"models":[{
    "name":"m","description":"d","repo":"u/r","verified":false,"default_quant":"Q4_K_M",
    "files":{"Q4_K_M":"m-Q4_K_M.gguf"},"mmproj":"mmproj-m-f16.gguf","action_format":"uitars",
    "coords":"auto","max_pixels":0,"chat_template":"qwen2-vl"}]})";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
}

// Every entry of the shipped catalogue parses, and what it asks of Iris exists.
TEST(Catalogue, EveryShippedEntryIsValid) {
    Result<Catalogue> catalogue =
        loadCatalogue(std::filesystem::path(IRIS_SOURCE_ROOT) / "resources/models/catalogue.json");
    ASSERT_TRUE(catalogue) << catalogue.status().message();
    ASSERT_GE(catalogue->entries.size(), 3u);
    for (const CatalogueEntry& entry : catalogue->entries) {
        SCOPED_TRACE(entry.name);
        EXPECT_TRUE(agent::actionFormatFromName(entry.actionFormat));
        EXPECT_TRUE(isCoordinateFrameName(entry.coords));
        EXPECT_TRUE(entry.files.contains(entry.defaultQuant));
        EXPECT_FALSE(entry.description.empty());
    }
    const CatalogueEntry* uiTars = catalogue->find("ui-tars-1.5-7b");
    ASSERT_NE(uiTars, nullptr);
    EXPECT_EQ(uiTars->actionFormat, "uitars");
    EXPECT_EQ(uiTars->defaultQuant, "Q4_K_M");
    EXPECT_NE(catalogue->find("qwen2.5-vl-7b"), nullptr);
    EXPECT_NE(catalogue->find("qwen2.5-vl-3b"), nullptr);
    // The bundled model's files are in the tree, where the installed share/iris/models has them.
    const CatalogueEntry* tiny = catalogue->find("iris-tiny-cua");
    ASSERT_NE(tiny, nullptr);
    EXPECT_TRUE(tiny->bundled);
    EXPECT_EQ(tiny->history, 1);
    Result<BundledFiles> files =
        bundledModelFiles(*tiny, std::filesystem::path(IRIS_SOURCE_ROOT) / "resources/models");
    ASSERT_TRUE(files) << files.status().message();
    EXPECT_EQ(files->model.filename(), "iris-tiny-cua-f16.gguf");
}

TEST(Catalogue, ABundledEntryHasNoRepositoryAndNamesAMissingFile) {
    const std::string bundled =
        replaced(replaced(kEntry, "\"repo\":\"u/r\",\"verified\":false,", "\"bundled\":true,"),
                 "\"chat_template\":\"qwen2-vl\"", "\"chat_template\":\"qwen2-vl\",\"history\":1");
    Result<Catalogue> catalogue = parseCatalogue(bundled, "c.json");
    ASSERT_TRUE(catalogue) << catalogue.status().message();
    const CatalogueEntry& entry = catalogue->entries.at(0);
    EXPECT_TRUE(entry.bundled);
    EXPECT_TRUE(entry.repo.empty());
    EXPECT_FALSE(entry.verified);
    EXPECT_EQ(entry.history, 1);
    EXPECT_EQ(
        parseCatalogue(replaced(bundled, "\"bundled\":true,", "\"bundled\":true,\"repo\":\"u/r\","),
                       "c.json")
            .status()
            .message(),
        "c.json: models[0] ('m'): field 'repo': a bundled model has none");
    EXPECT_EQ(parseCatalogue(replaced(bundled, "\"history\":1", "\"history\":0"), "c.json")
                  .status()
                  .message(),
              "c.json: models[0] ('m'): field 'history': expected screenshots, 1-100");
    EXPECT_EQ(parseCatalogue(replaced(bundled, "\"bundled\":true", "\"bundled\":\"yes\""), "c.json")
                  .status()
                  .message(),
              "c.json: models[0]: field 'bundled': expected true or false");
    const Result<BundledFiles> files = bundledModelFiles(entry, "/nonexistent/models");
    EXPECT_EQ(files.status().message(),
              "/nonexistent/models/m/m-Q4_K_M.gguf: a file of the bundled model 'm' is missing; "
              "reinstall Iris");
    // A catalogue entry that is not bundled has no installed files to find.
    const Result<Catalogue> hub = parseCatalogue(kEntry, "c.json");
    ASSERT_TRUE(hub);
    EXPECT_FALSE(bundledModelFiles(hub->entries.at(0), "/nonexistent/models"));
}

TEST(Catalogue, NamesTheEntryAndFieldThatIsWrong) {
    ASSERT_TRUE(parseCatalogue(kEntry, "c.json"))
        << parseCatalogue(kEntry, "c.json").status().message();
    const auto error = [](const std::string& json) {
        return parseCatalogue(json, "c.json").status().message();
    };
    EXPECT_EQ(error(replaced(kEntry, "\"uitars\"", "\"clicks\"")),
              "c.json: models[0] ('m'): field 'action_format': 'clicks' (expected tools, "
              "computer13, pyautogui or uitars)");
    EXPECT_EQ(error(replaced(kEntry, "\"auto\"", "\"inches\"")),
              "c.json: models[0] ('m'): field 'coords': 'inches' (expected auto, pixels, "
              "relative1000, resized, resized:WxH)");
    EXPECT_EQ(error(replaced(kEntry, "\"default_quant\":\"Q4_K_M\"", "\"default_quant\":\"Q8_0\"")),
              "c.json: models[0] ('m'): field 'default_quant': not one of 'files'");
    EXPECT_EQ(error(replaced(kEntry, "\"m-Q4_K_M.gguf\"", "\"m-Q8_0.gguf\"")),
              "c.json: models[0] ('m'): files.Q4_K_M: 'm-Q8_0.gguf' does not name that "
              "quantization");
    EXPECT_EQ(error(replaced(kEntry, "\"u/r\"", "\"nobody\"")),
              "c.json: models[0] ('m'): field 'repo': expected user/repo");
    EXPECT_EQ(error(replaced(kEntry, "\"qwen2-vl\"", "\"llama3\"")),
              "c.json: models[0] ('m'): field 'chat_template': 'llama3' (expected qwen2, "
              "qwen2-vl, qwen3 or minimax-m3)");
    EXPECT_EQ(error(replaced(kEntry, "\"verified\":false,", "")),
              "c.json: models[0] ('m'): field 'verified': expected true or false");
    EXPECT_EQ(error(replaced(kEntry, "\"mmproj-m-f16.gguf\"", "\"m-f16.gguf\"")),
              "c.json: models[0] ('m'): field 'mmproj': expected an mmproj .gguf file name");
    EXPECT_EQ(error("[]"), "c.json: not a JSON object");
    EXPECT_TRUE(isCoordinateFrameName("resized:1280x720"));
    EXPECT_FALSE(isCoordinateFrameName("resized:1280"));
}

}  // namespace
}  // namespace iris::app::models
