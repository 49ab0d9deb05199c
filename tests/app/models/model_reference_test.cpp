#include "app/models/model_reference.h"

#include <gtest/gtest.h>

#include "app/models/hub_client.h"

namespace iris::app::models {
namespace {

TEST(ModelReference, ReadsCatalogueNamesRepositoriesAndFiles) {
    Result<ModelReference> name = parseModelReference("ui-tars-1.5-7b");
    ASSERT_TRUE(name);
    EXPECT_EQ(name->kind, ModelReference::Kind::Catalogue);
    EXPECT_EQ(name->name, "ui-tars-1.5-7b");
    EXPECT_EQ(name->quant, "");

    Result<ModelReference> quant = parseModelReference("ui-tars-1.5-7b:q8_0");
    ASSERT_TRUE(quant);
    EXPECT_EQ(quant->quant, "Q8_0");

    Result<ModelReference> repo =
        parseModelReference("ggml-org/Qwen2.5-VL-3B-Instruct-GGUF:Q4_K_M");
    ASSERT_TRUE(repo);
    EXPECT_EQ(repo->kind, ModelReference::Kind::Repository);
    EXPECT_EQ(repo->name, "ggml-org/Qwen2.5-VL-3B-Instruct-GGUF");
    EXPECT_EQ(repo->quant, "Q4_K_M");

    Result<ModelReference> file = parseModelReference("user/repo/sub/model-Q6_K.gguf");
    ASSERT_TRUE(file);
    EXPECT_EQ(file->kind, ModelReference::Kind::RepositoryFile);
    EXPECT_EQ(file->name, "user/repo");
    EXPECT_EQ(file->file, "sub/model-Q6_K.gguf");
}

TEST(ModelReference, RefusesWhatIsNoName) {
    for (const char* bad : {"", ":Q4_K_M", "a/../b", "user/repo/README.md", "name:", "a b",
                            "user/repo/x.gguf:Q4_K_M", "/repo"}) {
        EXPECT_FALSE(parseModelReference(bad)) << bad;
    }
}

TEST(ModelReference, FindsTheQuantizationInAFileName) {
    EXPECT_EQ(quantizationOfFile("ByteDance-Seed_UI-TARS-1.5-7B-Q4_K_M.gguf"), "Q4_K_M");
    EXPECT_EQ(quantizationOfFile("Qwen2.5-VL-7B-Instruct-f16.gguf"), "F16");
    EXPECT_EQ(quantizationOfFile("model.IQ3_XXS.gguf"), "IQ3_XXS");
    EXPECT_EQ(quantizationOfFile("dir/model-bf16.gguf"), "BF16");
    EXPECT_EQ(quantizationOfFile("model-Q8_0-00001-of-00002.gguf"), "Q8_0");
    EXPECT_EQ(quantizationOfFile("model.gguf"), "");
    EXPECT_EQ(quantizationOfFile("Qwen2.5-VL-7B.gguf"), "");  // 7B is no quantization
    EXPECT_TRUE(isProjectorFile("mmproj-model-f16.gguf"));
    EXPECT_FALSE(isProjectorFile("model-f16.gguf"));
}

std::vector<HubFile> repository(std::initializer_list<const char*> names) {
    std::vector<HubFile> files;
    for (const char* name : names)
        files.push_back({name, 1, std::string(64, 'a')});
    return files;
}

TEST(ModelReference, ChoosesQ4KMByDefaultAndTheF16Projector) {
    const auto files = repository(
        {"m-Q8_0.gguf", "m-Q4_K_M.gguf", "mmproj-m-Q8_0.gguf", "mmproj-m-f16.gguf", "README.md"});
    Result<ChosenFiles> chosen = chooseFiles(files, "u/r", "");
    ASSERT_TRUE(chosen) << chosen.status().message();
    EXPECT_EQ(chosen->model.path, "m-Q4_K_M.gguf");
    EXPECT_EQ(chosen->quant, "Q4_K_M");
    ASSERT_TRUE(chosen->mmproj);
    EXPECT_EQ(chosen->mmproj->path, "mmproj-m-f16.gguf");

    Result<ChosenFiles> q8 = chooseFiles(files, "u/r", "q8_0");
    ASSERT_TRUE(q8);
    EXPECT_EQ(q8->model.path, "m-Q8_0.gguf");
    Result<ChosenFiles> named = chooseFiles(files, "u/r", "", "mmproj-m-Q8_0.gguf");
    ASSERT_TRUE(named);
    EXPECT_EQ(named->mmproj->path, "mmproj-m-Q8_0.gguf");
}

TEST(ModelReference, AsksForAQuantizationWhenThereIsNoDefault) {
    const auto files = repository({"m-Q8_0.gguf", "m-Q5_K_M.gguf"});
    Result<ChosenFiles> chosen = chooseFiles(files, "u/r", "");
    ASSERT_FALSE(chosen);
    EXPECT_NE(chosen.status().message().find("u/r: has no Q4_K_M; name a quantization as "
                                             "u/r:QUANT (there: Q5_K_M, Q8_0)"),
              std::string::npos)
        << chosen.status().message();
    Result<ChosenFiles> only = chooseFiles(repository({"m-Q6_K.gguf"}), "u/r", "");
    ASSERT_TRUE(only);
    EXPECT_EQ(only->quant, "Q6_K");
    EXPECT_FALSE(only->mmproj);
    EXPECT_FALSE(chooseFiles(repository({"README.md"}), "u/r", ""));
    EXPECT_EQ(chooseFiles(repository({"m-Q4_K_M-00001-of-00002.gguf"}), "u/r", "").status().code(),
              StatusCode::Unsupported);
}

TEST(HubTree, ReadsFilesAndRefusesMalformedEntries) {
    Result<std::vector<HubFile>> files = parseHubTree(
        R"([{"type":"directory","path":"d","oid":"1"},
            {"type":"file","path":"a.gguf","size":134,"lfs":{"oid":")" +
            std::string(64, 'A') +
            R"(","size":5000}},
            {"type":"file","path":"b.txt","size":7}])",
        "page");
    ASSERT_TRUE(files) << files.status().message();
    ASSERT_EQ(files->size(), 2u);
    EXPECT_EQ((*files)[0].size, 5000u);
    EXPECT_EQ((*files)[0].sha256, std::string(64, 'a'));
    EXPECT_EQ((*files)[1].size, 7u);
    EXPECT_EQ(parseHubTree("{}", "p").status().message(), "p: expected a JSON array of files");
    EXPECT_EQ(parseHubTree(R"([{"type":"file"}])", "p").status().message(),
              "p: entry 0: field 'path': expected a string");
    EXPECT_EQ(
        parseHubTree(R"([{"type":"file","path":"x","lfs":{"oid":"12"}}])", "p").status().message(),
        "p: entry 0: field 'lfs.oid': not a SHA-256");
}

TEST(HubTree, FollowsTheNextLink) {
    EXPECT_EQ(nextPageUrl(R"(<https://h/api?cursor=2>; rel="next")"), "https://h/api?cursor=2");
    EXPECT_EQ(nextPageUrl(R"(<https://h/p1>; rel="prev", <https://h/p3>; rel="next")"),
              "https://h/p3");
    EXPECT_EQ(nextPageUrl(R"(<https://h/p1>; rel="prev")"), "");
    EXPECT_EQ(nextPageUrl(""), "");
}

}  // namespace
}  // namespace iris::app::models
