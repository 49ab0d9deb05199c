#include "app/models/model_store.h"

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "app/models/model_pull.h"
#include "base/temporary_folder.h"

namespace iris::app::models {
namespace {
namespace fs = std::filesystem;

Manifest manifest(const std::string& name, const std::string& quant, char model, char mmproj) {
    Manifest m;
    m.name = name;
    m.quant = quant;
    m.repo = "u/r";
    m.model = {name + "-" + quant + ".gguf", std::string(64, model), 5};
    if (mmproj) m.mmproj = StoredFile{"mmproj.gguf", std::string(64, mmproj), 3};
    return m;
}

void writeBlob(const ModelStore& store, char hex, std::size_t size) {
    fs::create_directories(store.root() / "blobs");
    std::ofstream(store.blobPath(std::string(64, hex))) << std::string(size, 'x');
}

TEST(ModelStore, ManifestsRoundTripAndAreFoundByNameAndQuantization) {
    Result<TemporaryFolder> folder = TemporaryFolder::create("iris-store-test");
    ASSERT_TRUE(folder);
    const ModelStore store(folder->path());
    ASSERT_TRUE(store.writeManifest(manifest("u/r", "Q8_0", 'a', 'c')).isOk());
    ASSERT_TRUE(store.writeManifest(manifest("u/r", "Q4_K_M", 'b', 'c')).isOk());
    ASSERT_TRUE(store.writeManifest(manifest("other", "F16", 'd', 0)).isOk());
    EXPECT_TRUE(fs::exists(folder->path() / "manifests/u/r/Q4_K_M.json"));
    Result<std::vector<Manifest>> all = store.list();
    ASSERT_TRUE(all);
    ASSERT_EQ(all->size(), 3u);
    EXPECT_EQ((*all)[0].name, "other");
    EXPECT_FALSE((*all)[0].mmproj);
    Result<Manifest> chosen = store.find("u/r");
    ASSERT_TRUE(chosen);
    EXPECT_EQ(chosen->quant, "Q4_K_M");  // the default among several
    EXPECT_EQ(store.find("u/r", "q8_0")->model.sha256, std::string(64, 'a'));
    EXPECT_EQ(store.find("u/r", "Q2_K").status().message(),
              "model 'u/r' has no quantization Q2_K in the store (there: Q4_K_M, Q8_0)");
    EXPECT_EQ(store.find("nope").status().code(), StatusCode::NotFound);
    EXPECT_FALSE(store.writeManifest(manifest("../evil", "Q4_K_M", 'a', 0)).isOk());
}

TEST(ModelStore, RemoveDeletesOnlyBlobsNothingElseUses) {
    Result<TemporaryFolder> folder = TemporaryFolder::create("iris-store-test");
    ASSERT_TRUE(folder);
    const ModelStore store(folder->path());
    ASSERT_TRUE(store.writeManifest(manifest("u/r", "Q8_0", 'a', 'c')).isOk());
    ASSERT_TRUE(store.writeManifest(manifest("u/r", "Q4_K_M", 'b', 'c')).isOk());
    writeBlob(store, 'a', 5);
    writeBlob(store, 'b', 5);
    writeBlob(store, 'c', 3);
    Result<std::uint64_t> freed = store.remove("u/r", "Q8_0");
    ASSERT_TRUE(freed) << freed.status().message();
    EXPECT_EQ(*freed, 5u);
    EXPECT_FALSE(store.hasBlob(std::string(64, 'a')));
    EXPECT_TRUE(store.hasBlob(std::string(64, 'c')));  // Q4_K_M still uses the projector
    freed = store.remove("u/r");
    ASSERT_TRUE(freed);
    EXPECT_EQ(*freed, 8u);
    EXPECT_FALSE(fs::exists(folder->path() / "manifests/u"));
    EXPECT_EQ(store.remove("u/r").status().code(), StatusCode::NotFound);
}

TEST(ModelStore, APulledModelIsFoundOfflineWithItsCatalogueEntry) {
    Result<TemporaryFolder> folder = TemporaryFolder::create("iris-store-test");
    ASSERT_TRUE(folder);
    const ModelStore store(folder->path());
    Manifest m = manifest("ui-tars-1.5-7b", "Q4_K_M", 'a', 'b');
    ASSERT_TRUE(store.writeManifest(m).isOk());
    Catalogue catalogue;
    CatalogueEntry entry;
    entry.name = "ui-tars-1.5-7b";
    entry.actionFormat = "uitars";
    catalogue.entries.push_back(entry);
    EXPECT_EQ(findPulledModel(store, catalogue, "ui-tars-1.5-7b").status().code(),
              StatusCode::NotFound);  // the blobs are missing
    writeBlob(store, 'a', 5);
    writeBlob(store, 'b', 3);
    Result<PulledModel> pulled = findPulledModel(store, catalogue, "ui-tars-1.5-7b");
    ASSERT_TRUE(pulled) << pulled.status().message();
    EXPECT_EQ(pulled->modelPath, store.blobPath(std::string(64, 'a')));
    EXPECT_EQ(pulled->mmprojPath, store.blobPath(std::string(64, 'b')));
    ASSERT_TRUE(pulled->entry);
    EXPECT_EQ(pulled->entry->actionFormat, "uitars");
    EXPECT_GT(store.find("ui-tars-1.5-7b")->lastUsed, 0);
}

TEST(ModelStore, AFileOfTheStoreFindsItsModelsCatalogueEntry) {
    Result<TemporaryFolder> folder = TemporaryFolder::create("iris-store-test");
    ASSERT_TRUE(folder);
    const ModelStore store(folder->path() / "store");
    ASSERT_TRUE(store.writeManifest(manifest("ui-tars-1.5-7b", "Q4_K_M", 'a', 'b')).isOk());
    ASSERT_TRUE(store.writeManifest(manifest("someone/else", "Q8_0", 'c', 0)).isOk());
    for (char blob : {'a', 'b', 'c'})
        writeBlob(store, blob, 4);
    Catalogue catalogue;
    CatalogueEntry entry;
    entry.name = "ui-tars-1.5-7b";
    entry.maxPixels = 2116800;
    entry.chatTemplate = "qwen2-vl";
    catalogue.entries.push_back(entry);

    const fs::path model = store.blobPath(std::string(64, 'a'));
    std::optional<CatalogueEntry> found = catalogueEntryOfFile(store, catalogue, model);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->maxPixels, 2116800);
    // The same file through another spelling of its path.
    found = catalogueEntryOfFile(store, catalogue,
                                 folder->path() / "store" / "." / "blobs" / model.filename());
    EXPECT_TRUE(found);
    // Not a language model the catalogue knows: the projector, a model it does not list, a copy
    // of the file outside the store, a file that is not there.
    EXPECT_FALSE(catalogueEntryOfFile(store, catalogue, store.blobPath(std::string(64, 'b'))));
    EXPECT_FALSE(catalogueEntryOfFile(store, catalogue, store.blobPath(std::string(64, 'c'))));
    fs::copy_file(model, folder->path() / model.filename());
    EXPECT_FALSE(catalogueEntryOfFile(store, catalogue, folder->path() / model.filename()));
    EXPECT_FALSE(catalogueEntryOfFile(store, catalogue, folder->path() / "missing.gguf"));
}

TEST(ModelStore, TheDirectoryComesFromTheEnvironment) {
    // The variables as they were, put back at the end: other tests in this process read them.
    std::vector<std::pair<const char*, std::optional<std::string>>> saved;
    for (const char* name : {"IRIS_MODELS_DIR", "XDG_CACHE_HOME", "HOME"}) {
        const char* value = std::getenv(name);
        saved.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
    }
    ::setenv("IRIS_MODELS_DIR", "/somewhere/models", 1);
    EXPECT_EQ(defaultModelsDirectory(), fs::path("/somewhere/models"));
    ::unsetenv("IRIS_MODELS_DIR");
    ::setenv("XDG_CACHE_HOME", "/cache", 1);
    EXPECT_EQ(defaultModelsDirectory(), fs::path("/cache/iris/models"));
    ::unsetenv("XDG_CACHE_HOME");
    ::setenv("HOME", "/home/someone", 1);
    EXPECT_EQ(defaultModelsDirectory(), fs::path("/home/someone/.cache/iris/models"));
    for (const auto& [name, value] : saved) {
        if (value)
            ::setenv(name, value->c_str(), 1);
        else
            ::unsetenv(name);
    }
}

}  // namespace
}  // namespace iris::app::models
