// Downloads and pulls against FakeHub (tests/app/models/fake_hub.h) on loopback: every case ends
// in a complete verified file, or a clear error and a partial file the next pull resumes.
#include "app/models/model_download.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app/models/model_pull.h"
#include "base/temporary_folder.h"
#include "tests/app/models/fake_hub.h"

namespace iris::app::models {
namespace {
namespace fs = std::filesystem;
using testing::FakeFile;
using testing::FakeHub;
using testing::fileContent;

std::string readFile(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

class ModelDownload : public ::testing::Test {
protected:
    void SetUp() override {
        Result<TemporaryFolder> folder = TemporaryFolder::create("iris-models-test");
        ASSERT_TRUE(folder) << folder.status().message();
        m_folder.emplace(std::move(*folder));
        hub.files = {
            {"README.md", "# tiny\n", ""},
            {"tiny-Q4_K_M.gguf", fileContent(300000, 1), ""},
            {"tiny-Q8_0.gguf", fileContent(500000, 2), ""},
            {"mmproj-tiny-f16.gguf", fileContent(70000, 3), ""},
            {"config.json", "{}", ""},
        };
    }

    fs::path dir() const { return m_folder->path(); }
    const FakeFile& file(const std::string& path) const {
        for (const FakeFile& f : hub.files)
            if (f.path == path) return f;
        throw std::runtime_error(path);
    }

    DownloadRequest request(const std::string& path) const {
        DownloadRequest r;
        r.url = hub.endpoint() + "/" + hub.repo + "/resolve/main/" + path;
        r.target = dir() / "blob";
        r.expectedSize = file(path).content.size();
        r.expectedSha256 = FakeHub::sha256Hex(file(path).content);
        r.firstRetryWaitS = 0.01;
        r.connections = 1;
        return r;
    }

    PullOptions pullOptions() const {
        PullOptions options;
        options.hub.endpoint = hub.endpoint();
        options.firstRetryWaitS = 0.01;
        options.connections = 1;
        return options;
    }

    FakeHub hub;
    std::optional<TemporaryFolder> m_folder;
};

TEST_F(ModelDownload, ListsEveryPageWithLfsSizesAndHashes) {
    HubOptions options;
    options.endpoint = hub.endpoint();
    Result<std::vector<HubFile>> files = listRepositoryFiles(options, hub.repo);
    ASSERT_TRUE(files) << files.status().message();
    ASSERT_EQ(files->size(), 5u);  // three pages of two, the folder skipped
    EXPECT_EQ((*files)[2].path, "tiny-Q8_0.gguf");
    EXPECT_EQ((*files)[2].size, 500000u);
    EXPECT_EQ((*files)[2].sha256, FakeHub::sha256Hex(hub.files[2].content));
    EXPECT_TRUE((*files)[0].sha256.empty());  // README.md is not an LFS file
}

TEST_F(ModelDownload, ListingAnUnknownRepositoryNamesIt) {
    HubOptions options;
    options.endpoint = hub.endpoint();
    Result<std::vector<HubFile>> files = listRepositoryFiles(options, "nobody/nothing");
    ASSERT_FALSE(files);
    EXPECT_EQ(files.status().code(), StatusCode::NotFound);
    EXPECT_NE(files.status().message().find("nobody/nothing: no such repository"),
              std::string::npos);
}

TEST_F(ModelDownload, PullFetchesTheDefaultQuantizationAndItsProjector) {
    const ModelStore store(dir() / "store");
    PullOptions options = pullOptions();
    options.hub.token = "secret-token";
    Result<Manifest> manifest =
        pullModel(store, Catalogue{}, *parseModelReference(hub.repo), options);
    ASSERT_TRUE(manifest) << manifest.status().message();
    EXPECT_EQ(manifest->quant, "Q4_K_M");
    EXPECT_EQ(manifest->model.file, "tiny-Q4_K_M.gguf");
    ASSERT_TRUE(manifest->mmproj);
    EXPECT_EQ(manifest->mmproj->file, "mmproj-tiny-f16.gguf");
    EXPECT_EQ(readFile(store.blobPath(manifest->model.sha256)), hub.files[1].content);
    EXPECT_EQ(readFile(store.blobPath(manifest->mmproj->sha256)), hub.files[3].content);
    EXPECT_EQ(hub.bytesServed, 300000u + 70000u);
    // The token went to the hub, never to the host the hub redirected to.
    EXPECT_FALSE(hub.hubAuthorizations().empty());
    EXPECT_EQ(hub.hubAuthorizations().front(), "Bearer secret-token");
    EXPECT_TRUE(hub.cdnAuthorizations().empty());

    Result<Manifest> found = store.find(hub.repo);
    ASSERT_TRUE(found) << found.status().message();
    EXPECT_EQ(found->model.sha256, manifest->model.sha256);

    // A second pull finds both files in the store.
    Result<Manifest> again = pullModel(store, Catalogue{}, *parseModelReference(hub.repo), options);
    ASSERT_TRUE(again) << again.status().message();
    EXPECT_EQ(hub.bytesServed, 300000u + 70000u);
}

TEST_F(ModelDownload, PullTakesAQuantizationOrAFileByName) {
    const ModelStore store(dir() / "store");
    Result<Manifest> q8 =
        pullModel(store, Catalogue{}, *parseModelReference(hub.repo + ":q8_0"), pullOptions());
    ASSERT_TRUE(q8) << q8.status().message();
    EXPECT_EQ(q8->model.file, "tiny-Q8_0.gguf");
    Result<Manifest> file = pullModel(
        store, Catalogue{}, *parseModelReference(hub.repo + "/tiny-Q8_0.gguf"), pullOptions());
    ASSERT_TRUE(file) << file.status().message();
    EXPECT_EQ(file->quant, "Q8_0");
    Result<Manifest> missing =
        pullModel(store, Catalogue{}, *parseModelReference(hub.repo + ":Q2_K"), pullOptions());
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.status().message().find("no Q2_K file (quantizations there: Q4_K_M, Q8_0)"),
              std::string::npos)
        << missing.status().message();
}

// A catalogue name pulls its repository's file of that name; a name the repository does not
// have (publishers rename files) falls back to the file the listing names with the quantization.
TEST_F(ModelDownload, ACatalogueNameTakesItsFileOrTheListingsOfThatQuantization) {
    const ModelStore store(dir() / "store");
    CatalogueEntry entry;
    entry.name = "tiny";
    entry.repo = hub.repo;
    entry.defaultQuant = "Q8_0";
    entry.files = {{"Q8_0", "tiny-Q8_0.gguf"}, {"Q4_K_M", "renamed.Q4_K_M.gguf"}};
    entry.mmproj = "mmproj-tiny-f16.gguf";
    const Catalogue catalogue{{entry}};
    Result<Manifest> byName =
        pullModel(store, catalogue, *parseModelReference("tiny"), pullOptions());
    ASSERT_TRUE(byName) << byName.status().message();
    EXPECT_EQ(byName->name, "tiny");
    EXPECT_EQ(byName->model.file, "tiny-Q8_0.gguf");
    ASSERT_TRUE(byName->mmproj);
    EXPECT_EQ(byName->mmproj->file, "mmproj-tiny-f16.gguf");
    Result<Manifest> renamed =
        pullModel(store, catalogue, *parseModelReference("tiny:Q4_K_M"), pullOptions());
    ASSERT_TRUE(renamed) << renamed.status().message();
    EXPECT_EQ(renamed->model.file, "tiny-Q4_K_M.gguf");
}

TEST_F(ModelDownload, ResumesAfterADroppedConnection) {
    hub.drops = 1;
    hub.dropAfter = 100000;
    const Status status = downloadModelFile(request("tiny-Q8_0.gguf"));
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(readFile(dir() / "blob"), file("tiny-Q8_0.gguf").content);
    EXPECT_EQ(hub.bytesServed, 500000u);  // nothing fetched twice
    EXPECT_EQ(hub.fileRequests, 2);
    EXPECT_FALSE(fs::exists(dir() / "blob.part"));
}

TEST_F(ModelDownload, GivesUpWithAResumablePartialWhenTheConnectionKeepsDropping) {
    hub.drops = 100;
    hub.dropAfter = 50000;
    DownloadRequest r = request("tiny-Q8_0.gguf");
    r.attempts = 2;
    const Status status = downloadModelFile(r);
    ASSERT_FALSE(status.isOk());
    EXPECT_EQ(status.code(), StatusCode::IoError) << status.message();
    EXPECT_FALSE(fs::exists(dir() / "blob"));
    EXPECT_EQ(fs::file_size(dir() / "blob.part"), 100000u);
    hub.drops = 0;
    const std::uint64_t before = hub.bytesServed;
    ASSERT_TRUE(downloadModelFile(r).isOk());
    EXPECT_EQ(hub.bytesServed - before, 400000u);
    EXPECT_EQ(readFile(dir() / "blob"), file("tiny-Q8_0.gguf").content);
}

TEST_F(ModelDownload, AWrongSha256DeletesThePartialFileAndSaysSo) {
    DownloadRequest r = request("tiny-Q4_K_M.gguf");
    r.expectedSha256 = std::string(64, 'a');
    const Status status = downloadModelFile(r);
    ASSERT_FALSE(status.isOk());
    EXPECT_EQ(status.code(), StatusCode::Corrupt);
    EXPECT_NE(status.message().find("SHA-256 mismatch: expected aaaa"), std::string::npos);
    EXPECT_NE(status.message().find("deleted the partial file"), std::string::npos);
    EXPECT_FALSE(fs::exists(dir() / "blob"));
    EXPECT_FALSE(fs::exists(dir() / "blob.part"));
}

TEST_F(ModelDownload, APullWithAWrongListedHashStoresNothing) {
    hub.files[1].listedSha256 = std::string(64, 'b');
    const ModelStore store(dir() / "store");
    Result<Manifest> manifest =
        pullModel(store, Catalogue{}, *parseModelReference(hub.repo), pullOptions());
    ASSERT_FALSE(manifest);
    EXPECT_NE(manifest.status().message().find("tiny-Q4_K_M.gguf"), std::string::npos);
    EXPECT_NE(manifest.status().message().find("SHA-256 mismatch"), std::string::npos);
    EXPECT_FALSE(store.hasBlob(std::string(64, 'b')));
    EXPECT_FALSE(store.find(hub.repo));
}

TEST_F(ModelDownload, A404NamesTheRepositoryAndFile) {
    DownloadRequest r = request("tiny-Q4_K_M.gguf");
    r.url = hub.endpoint() + "/" + hub.repo + "/resolve/main/missing-Q4_K_M.gguf";
    const Status status = downloadModelFile(r);
    ASSERT_FALSE(status.isOk());
    EXPECT_EQ(status.code(), StatusCode::NotFound);
    EXPECT_NE(status.message().find("test/tiny-GGUF/resolve/main/missing-Q4_K_M.gguf: HTTP 404"),
              std::string::npos)
        << status.message();
}

TEST_F(ModelDownload, WaitsAsRetryAfterSaysOnA429) {
    hub.tooManyRequests = 1;
    hub.retryAfter = "1";
    const Status status = downloadModelFile(request("tiny-Q4_K_M.gguf"));
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(hub.fileRequests, 2);  // the 429, then the file
    EXPECT_EQ(readFile(dir() / "blob"), file("tiny-Q4_K_M.gguf").content);
}

TEST_F(ModelDownload, ATooLongRetryAfterIsAnError) {
    hub.tooManyRequests = 10;
    hub.retryAfter = "3600";
    const Status status = downloadModelFile(request("tiny-Q4_K_M.gguf"));
    ASSERT_FALSE(status.isOk());
    EXPECT_EQ(status.code(), StatusCode::Unavailable);
    EXPECT_NE(status.message().find("HTTP 429, try again in 3600 s"), std::string::npos);
}

TEST(RetryAfter, ReadsSecondsAndHttpDates) {
    EXPECT_EQ(parseRetryAfter("7", 0), 7);
    EXPECT_EQ(parseRetryAfter(" 0 ", 0), 0);
    // 784111777 is Sun, 06 Nov 1994 08:49:37 GMT (RFC 9110's example).
    EXPECT_EQ(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", 784111777 - 30), 30);
    EXPECT_EQ(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", 784111777 + 30), 0);
    EXPECT_EQ(parseRetryAfter("soon", 0), -1);
    EXPECT_EQ(parseRetryAfter("", 0), -1);
}

TEST_F(ModelDownload, AServerWithoutRangeStartsOverAndEndsVerified) {
    hub.ranges = false;
    // A partial file from an earlier try: the server cannot resume it.
    std::ofstream(dir() / "blob.part", std::ios::binary)
        << file("tiny-Q4_K_M.gguf").content.substr(0, 1000);
    DownloadRequest r = request("tiny-Q4_K_M.gguf");
    r.connections = 4;
    r.parallelThreshold = 1;
    const Status status = downloadModelFile(r);
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(readFile(dir() / "blob"), file("tiny-Q4_K_M.gguf").content);
}

TEST_F(ModelDownload, LargeFilesComeInParallelRanges) {
    DownloadRequest r = request("tiny-Q8_0.gguf");
    r.connections = 4;
    r.parallelThreshold = 64 * 1024;
    const Status status = downloadModelFile(r);
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(readFile(dir() / "blob"), file("tiny-Q8_0.gguf").content);
    EXPECT_EQ(hub.fileRequests, 5);  // the probe and four ranges
    EXPECT_EQ(hub.bytesServed, 500000u + 1u);
    EXPECT_FALSE(fs::exists(dir() / "blob.part.ranges"));
}

TEST_F(ModelDownload, AnInterruptedParallelDownloadResumesItsRanges) {
    DownloadRequest r = request("tiny-Q8_0.gguf");
    r.connections = 4;
    r.parallelThreshold = 64 * 1024;
    r.attempts = 1;
    hub.drops = 100;
    hub.dropAfter = 30000;
    ASSERT_FALSE(downloadModelFile(r).isOk());
    EXPECT_TRUE(fs::exists(dir() / "blob.part.ranges"));
    EXPECT_FALSE(fs::exists(dir() / "blob"));
    // "total T", then "begin end done" per range: the bytes the record vouches for.
    std::istringstream record(readFile(dir() / "blob.part.ranges"));
    std::string word;
    std::uint64_t total = 0, begin = 0, end = 0, done = 0, kept = 0;
    record >> word >> total;
    while (record >> begin >> end >> done)
        kept += done;
    EXPECT_GT(kept, 0u);  // the first failure stops the other ranges, at least it kept its own
    hub.drops = 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::uint64_t before = hub.bytesServed;
    const Status status = downloadModelFile(r);
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(readFile(dir() / "blob"), file("tiny-Q8_0.gguf").content);
    EXPECT_EQ(hub.bytesServed - before, 500000u - kept);
}

TEST_F(ModelDownload, ARecordOfRangesWhenTheServerStoppedAllowingRangesStartsOver) {
    DownloadRequest r = request("tiny-Q8_0.gguf");
    r.connections = 4;
    r.parallelThreshold = 64 * 1024;
    r.attempts = 1;
    hub.drops = 100;
    hub.dropAfter = 30000;
    ASSERT_FALSE(downloadModelFile(r).isOk());
    ASSERT_TRUE(fs::exists(dir() / "blob.part.ranges"));
    hub.drops = 0;
    hub.ranges = false;
    const Status status = downloadModelFile(r);
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(readFile(dir() / "blob"), file("tiny-Q8_0.gguf").content);
    EXPECT_FALSE(fs::exists(dir() / "blob.part.ranges"));
}

TEST_F(ModelDownload, CancelKeepsAPartialThatTheNextDownloadResumes) {
    std::atomic<bool> cancel = false;
    hub.sleepPerChunkUs = 5000;  // about 0.6 s for the file; progress comes every 0.25 s
    DownloadRequest r = request("tiny-Q8_0.gguf");
    r.cancel = &cancel;
    r.onProgress = [&](const DownloadProgress& p) {
        if (p.done >= 20000) cancel = true;
    };
    const Status status = downloadModelFile(r);
    ASSERT_EQ(status.code(), StatusCode::Cancelled) << status.message();
    const std::uint64_t kept = fs::file_size(dir() / "blob.part");
    EXPECT_GE(kept, 20000u);
    EXPECT_LT(kept, 500000u);
    hub.sleepPerChunkUs = 0;
    r.cancel = nullptr;
    r.onProgress = {};
    // The cancelled connection's server thread may write one more chunk into the closed socket.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::uint64_t before = hub.bytesServed;
    ASSERT_TRUE(downloadModelFile(r).isOk());
    EXPECT_EQ(hub.bytesServed - before, 500000u - kept);
    EXPECT_EQ(readFile(dir() / "blob"), file("tiny-Q8_0.gguf").content);
}

TEST_F(ModelDownload, TwoPullsOfOneModelAtOnceFetchItOnce) {
    const ModelStore store(dir() / "store");
    hub.sleepPerChunkUs = 100;
    Result<Manifest> first = Status::internal("unset"), second = Status::internal("unset");
    std::thread a([&] {
        first = pullModel(store, Catalogue{}, *parseModelReference(hub.repo), pullOptions());
    });
    std::thread b([&] {
        second = pullModel(store, Catalogue{}, *parseModelReference(hub.repo), pullOptions());
    });
    a.join();
    b.join();
    ASSERT_TRUE(first) << first.status().message();
    ASSERT_TRUE(second) << second.status().message();
    EXPECT_EQ(hub.bytesServed, 300000u + 70000u);
    int blobs = 0;
    for (const auto& entry : fs::directory_iterator(store.root() / "blobs"))
        blobs += entry.path().extension().empty() ? 1 : 0;
    EXPECT_EQ(blobs, 2);
}

// A pull killed with SIGKILL mid-file and started again fetches only the bytes it lacked.
TEST_F(ModelDownload, APullKilledWithSigkillResumesWhereItStopped) {
    hub.sleepPerChunkUs = 10000;  // about 1.2 s for the file: the kill lands mid-file
    const fs::path storeDir = dir() / "store";
    const auto spawn = [&] {
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::execl(IRIS_PULL_HELPER, IRIS_PULL_HELPER, storeDir.c_str(), hub.endpoint().c_str(),
                    (hub.repo + ":Q8_0").c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        return pid;
    };
    const pid_t first = spawn();
    ASSERT_GT(first, 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (hub.bytesServed < 150000 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ::kill(first, SIGKILL);
    int status = 0;
    ::waitpid(first, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));

    const ModelStore store(storeDir);
    const std::string sha = FakeHub::sha256Hex(file("tiny-Q8_0.gguf").content);
    const fs::path part = store.blobPath(sha).string() + ".part";
    ASSERT_TRUE(fs::exists(part));
    EXPECT_FALSE(store.hasBlob(sha));  // never mistaken for a complete file
    const std::uint64_t kept = fs::file_size(part);
    EXPECT_GT(kept, 0u);
    EXPECT_LT(kept, 500000u);

    hub.sleepPerChunkUs = 0;
    std::this_thread::sleep_for(
        std::chrono::milliseconds(50));  // the killed connection's last chunk
    const std::uint64_t before = hub.bytesServed;
    const pid_t second = spawn();
    ::waitpid(second, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
    // The model's missing bytes and the projector, nothing more.
    EXPECT_EQ(hub.bytesServed - before, (500000u - kept) + 70000u);
    EXPECT_EQ(readFile(store.blobPath(sha)), file("tiny-Q8_0.gguf").content);
}

}  // namespace
}  // namespace iris::app::models
