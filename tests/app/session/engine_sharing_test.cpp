// Engine sharing across processes (app/session/engine_sharing.h): entry files and their
// permissions, stale entries cleaned by readers, the reuse rule across processes, and a real
// second process (iris_engine_publisher) whose engine this process attaches to, gets the same
// greedy answers from as from an engine loaded here, and falls back from when it exits.
#include "app/session/engine_sharing.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/clients/local_engine_client.h"
#include "app/session/json_file.h"
#include "app/session/model_choice.h"
#include "tests/inference/models/scratch_dir.h"
#include "tests/inference/models/tiny_model.h"
#include "tests/inference/vision/tiny_mmproj.h"

extern char** environ;

namespace iris::app {
namespace {

namespace fs = std::filesystem;

unsigned modeOf(const fs::path& path) {
    struct stat info {};
    EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
    return unsigned(info.st_mode & 07777);
}

// A pid that no process has any more: a child that has exited and been reaped.
pid_t deadPid() {
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    int status = 0;
    ::waitpid(child, &status, 0);
    return child;
}

// A loopback port nothing listens on: bound, then closed.
int closedPort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    socklen_t size = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
    ::close(fd);
    return ntohs(address.sin_port);
}

EngineEntry sampleEntry(const FileIdentity& model) {
    EngineEntry entry;
    entry.pid = ::getppid();  // alive while the test runs
    entry.processKind = "gui";
    entry.model = model;
    entry.contextSize = 4096;
    entry.maxSessions = 2;
    entry.chatTemplate = "";
    entry.imageMaxPixels = 0;
    entry.port = 1234;
    entry.apiKey = "k";
    entry.modelName = "tiny.gguf";
    return entry;
}

class EngineEntryTest : public ::testing::Test {
protected:
    void SetUp() override {
        m_model = m_scratch.write("model.gguf", {std::byte{1}, std::byte{2}});
        Result<FileIdentity> id = fileIdentity(m_model);
        ASSERT_TRUE(id) << id.status().message();
        m_id = *id;
    }
    inference::testing::ScratchDir m_scratch{"iris_engine_entries"};
    fs::path m_model;
    FileIdentity m_id;
};

TEST_F(EngineEntryTest, EntriesAreWrittenOwnerOnlyAndReadBack) {
    EngineEntry entry = sampleEntry(m_id);
    inference::ImagePreprocessOptions image;
    image.maxPixels = 12345 * 28;
    entry.image = image;
    const fs::path directory = m_scratch.path() / "iris" / "engines";
    Result<fs::path> file = writeEngineEntry(directory, entry);
    ASSERT_TRUE(file) << file.status().message();
    EXPECT_EQ(*file, directory / (std::to_string(entry.pid) + "-1234.json"));
    EXPECT_EQ(modeOf(directory), 0700u);
    EXPECT_EQ(modeOf(*file), 0600u);
    EXPECT_FALSE(fs::exists(file->string() + ".tmp"));

    Result<nlohmann::json> json = readJsonFile(*file, "missing");
    ASSERT_TRUE(json);
    Result<EngineEntry> back = engineEntryFromJson(*json, file->string());
    ASSERT_TRUE(back) << back.status().message();
    EXPECT_EQ(back->pid, entry.pid);
    EXPECT_EQ(back->processKind, "gui");
    EXPECT_EQ(back->model, m_id);
    EXPECT_EQ(back->model.size, 2u);
    EXPECT_EQ(back->model.path, fs::canonical(m_model));
    EXPECT_TRUE(back->mmproj.path.empty());
    EXPECT_EQ(back->contextSize, 4096);
    EXPECT_EQ(back->maxSessions, 2);
    ASSERT_TRUE(back->image);
    EXPECT_EQ(back->image->maxPixels, 12345 * 28);
    EXPECT_EQ(back->port, 1234);
    EXPECT_EQ(back->apiKey, "k");

    nlohmann::json broken = *json;
    broken.erase("port");
    Result<EngineEntry> missing = engineEntryFromJson(broken, "e.json");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.status().message().find("e.json"), std::string::npos);
    EXPECT_NE(missing.status().message().find("port"), std::string::npos);
}

TEST_F(EngineEntryTest, ReadersRemoveEntriesOfDeadProcessesAndGoneServers) {
    const fs::path directory = m_scratch.path() / "engines";
    EngineEntry dead = sampleEntry(m_id);
    dead.pid = deadPid();
    EngineEntry refused = sampleEntry(m_id);  // a live process, but no server on its port
    refused.port = closedPort();
    EngineEntry own = sampleEntry(m_id);  // this process's: its registry serves those
    own.pid = ::getpid();
    own.port = closedPort();
    Result<fs::path> deadFile = writeEngineEntry(directory, dead);
    Result<fs::path> refusedFile = writeEngineEntry(directory, refused);
    Result<fs::path> ownFile = writeEngineEntry(directory, own);
    ASSERT_TRUE(deadFile && refusedFile && ownFile);
    std::ofstream(directory / "garbage.json") << "{not json";
    std::ofstream(directory / "9-9.json.tmp") << "{}";  // a writer's temporary: not an entry

    EXPECT_TRUE(liveEngineEntries(directory).empty());
    EXPECT_FALSE(fs::exists(*deadFile));
    EXPECT_FALSE(fs::exists(*refusedFile));
    EXPECT_FALSE(fs::exists(directory / "garbage.json"));
    EXPECT_TRUE(fs::exists(*ownFile));
    EXPECT_TRUE(fs::exists(directory / "9-9.json.tmp"));
}

TEST_F(EngineEntryTest, TheReuseRuleHoldsAcrossProcesses) {
    const EngineEntry entry = sampleEntry(m_id);  // context 4096, pool 2, the file's template
    ModelChoice choice;
    choice.backend = ModelChoice::Backend::LocalEngine;
    choice.modelPath = m_model;
    choice.contextSize = 4096;
    choice.parallel = 2;
    EXPECT_TRUE(entryServes(entry, choice, m_id, {}));
    ModelChoice smaller = choice;
    smaller.contextSize = 1024;
    smaller.parallel = 1;
    EXPECT_TRUE(entryServes(entry, smaller, m_id, {}));

    ModelChoice longer = choice;
    longer.contextSize = 8192;
    EXPECT_FALSE(entryServes(entry, longer, m_id, {}));
    ModelChoice wider = choice;
    wider.parallel = 3;
    EXPECT_FALSE(entryServes(entry, wider, m_id, {}));
    ModelChoice templated = choice;
    templated.chatTemplate = inference::ChatTemplateKind::Qwen3;
    EXPECT_FALSE(entryServes(entry, templated, m_id, {}));
    ModelChoice budget = choice;
    budget.imageMaxPixels = 1000 * 28 * 28;
    EXPECT_FALSE(entryServes(entry, budget, m_id, {}));

    FileIdentity rewritten = m_id;  // the same path, rewritten since
    rewritten.modifiedNs += 1;
    EXPECT_FALSE(entryServes(entry, choice, rewritten, {}));
    Result<FileIdentity> projector = fileIdentity(m_model);  // a projector the entry lacks
    EXPECT_FALSE(entryServes(entry, choice, m_id, *projector));
}

TEST(EngineSharingDirectory, OffWithoutAProcessKindOrXdgRuntimeDir) {
    const char* saved = std::getenv("XDG_RUNTIME_DIR");
    const std::string restore = saved ? saved : "";
    configureEngineSharing({});
    ::setenv("XDG_RUNTIME_DIR", "/run/user/test", 1);
    EXPECT_EQ(engineSharingDirectory(), std::nullopt);
    configureEngineSharing({"run", {}});
    EXPECT_EQ(engineSharingDirectory(), fs::path("/run/user/test/iris/engines"));
    ::unsetenv("XDG_RUNTIME_DIR");
    EXPECT_EQ(engineSharingDirectory(), std::nullopt);
    if (saved) ::setenv("XDG_RUNTIME_DIR", restore.c_str(), 1);
    configureEngineSharing({});
}

// iris_engine_publisher as a child: started, it has published once start() returns; stop()
// closes its input, so that it exits cleanly, and reaps it.
class Publisher {
public:
    void start(const std::vector<std::string>& args) {
        int in[2], out[2];
        ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
        ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, in[0], 0);
        posix_spawn_file_actions_adddup2(&actions, out[1], 1);
        std::vector<std::string> all{IRIS_ENGINE_PUBLISHER};
        all.insert(all.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (std::string& a : all)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        ASSERT_EQ(::posix_spawn(&m_pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
        posix_spawn_file_actions_destroy(&actions);
        ::close(in[0]);
        ::close(out[1]);
        m_input = in[1];
        FILE* output = ::fdopen(out[0], "r");
        char line[64] = {};
        const bool said = std::fgets(line, sizeof line, output) != nullptr;
        std::fclose(output);
        ASSERT_TRUE(said) << "the publisher exited before publishing";
        ASSERT_EQ(std::string(line), "published\n");
    }
    // The exit status.
    int stop() {
        if (m_pid <= 0) return -1;
        ::close(m_input);
        int status = 0;
        ::waitpid(m_pid, &status, 0);
        m_pid = 0;
        return status;
    }
    ~Publisher() { stop(); }
    pid_t pid() const { return m_pid; }

private:
    pid_t m_pid = 0;
    int m_input = -1;
};

std::vector<std::uint8_t> randomPng(int width, int height) {
    cv::Mat bgr(height, width, CV_8UC3);
    cv::randu(bgr, cv::Scalar::all(0), cv::Scalar::all(256));
    std::vector<std::uint8_t> bytes;
    cv::imencode(".png", bgr, bytes);
    return bytes;
}

// `text` as it arrives through JSON: invalid UTF-8 (a random model writes some) becomes U+FFFD.
std::string asJsonText(const std::string& text) {
    const std::string dumped =
        nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return nlohmann::json::parse(dumped).get<std::string>();
}

class SharedEngineTest : public ::testing::Test {
protected:
    void SetUp() override {
        const inference::testing::TinyModelSpec spec = inference::testing::tinyQwen2VlSpec();
        m_model = m_scratch.write("tiny-vl.gguf", inference::testing::makeTinyModel(spec));
        inference::testing::TinyMmprojOptions projector;
        projector.projection = 64;
        m_mmproj =
            m_scratch.write("mmproj.gguf", inference::testing::makeTinyMmproj(projector).bytes);
        m_directory = m_scratch.path() / "engines";
        configureEngineSharing({"eval", m_directory});
    }
    void TearDown() override { configureEngineSharing({}); }

    ModelChoice choice(std::int64_t context = 1024) const {
        ModelChoice c;
        c.backend = ModelChoice::Backend::LocalEngine;
        c.modelPath = m_model;
        c.mmprojPath = m_mmproj;
        c.threads = 1;
        c.contextSize = context;
        return c;
    }
    std::vector<std::string> publisherArgs(std::int64_t context, int parallel) const {
        return {m_directory.string(), m_model.string(), m_mmproj.string(), std::to_string(context),
                std::to_string(parallel)};
    }

    // A conversation with a screenshot, answered greedily.
    agent::ChatRequest request() const {
        agent::ChatRequest r;
        agent::ChatMessage user;
        user.role = "user";
        auto image = std::make_shared<agent::EncodedImage>();
        image->mimeType = "image/png";
        image->bytes = randomPng(112, 84);
        image->width = 112;
        image->height = 84;
        user.content.push_back({"", image});
        user.content.push_back({"where is the button?", nullptr});
        r.messages.push_back(std::move(user));
        r.maxTokens = 8;
        r.temperature = 0;
        return r;
    }

    // The answer of an engine loaded here on its own (not through the registry).
    agent::ChatResponse loadedHere(const agent::ChatRequest& r) const {
        inference::EngineOptions options;
        options.threads = 1;
        options.contextSize = 1024;
        options.mmprojPath = m_mmproj;
        Result<std::unique_ptr<agent::LocalEngineClient>> client =
            agent::LocalEngineClient::open(m_model, options);
        EXPECT_TRUE(client) << client.status().message();
        if (!client) return {};
        Result<agent::ChatResponse> answer = (*client)->complete(r);
        EXPECT_TRUE(answer) << answer.status().message();
        return answer ? *answer : agent::ChatResponse{};
    }

    static void expectSameAnswer(const agent::ChatResponse& got,
                                 const agent::ChatResponse& expected) {
        // Both sides through JSON: over HTTP invalid UTF-8 arrives as U+FFFD (see asJsonText).
        EXPECT_EQ(asJsonText(got.text), asJsonText(expected.text));
        EXPECT_EQ(got.promptTokens, expected.promptTokens);
        EXPECT_EQ(got.completionTokens, expected.completionTokens);
        EXPECT_EQ(got.finishReason, expected.finishReason);
        EXPECT_EQ(got.model, "tiny-vl.gguf");
    }

    inference::testing::ScratchDir m_scratch{"iris_shared_engine"};
    fs::path m_model, m_mmproj, m_directory;
};

TEST_F(SharedEngineTest, AnotherProcesssEngineAnswersAsOneLoadedHere) {
    Publisher publisher;
    ASSERT_NO_FATAL_FAILURE(publisher.start(publisherArgs(2048, 2)));
    const std::vector<EngineEntry> live = liveEngineEntries(m_directory);
    ASSERT_EQ(live.size(), 1u);
    EXPECT_EQ(live[0].pid, publisher.pid());
    EXPECT_EQ(live[0].processKind, "run");
    EXPECT_EQ(live[0].apiKey.size(), 64u);  // 256 bits in hex
    EXPECT_EQ(modeOf(m_directory), 0700u);

    Result<std::unique_ptr<agent::ModelClient>> client = makeModelClient(choice());
    ASSERT_TRUE(client) << client.status().message();
    auto* shared = dynamic_cast<SharedEngineClient*>(client->get());
    ASSERT_NE(shared, nullptr) << "loaded here instead of attaching";
    EXPECT_EQ(engineUseSummary(**client),
              "shared with iris run (pid " + std::to_string(publisher.pid()) + ")");
    EXPECT_EQ((*client)->describe(), "local tiny-vl.gguf");

    const agent::ChatRequest r = request();
    Result<agent::ChatResponse> answer = (*client)->complete(r);
    ASSERT_TRUE(answer) << answer.status().message();
    const agent::ChatResponse expected = loadedHere(r);
    EXPECT_GT(expected.promptTokens, 12);  // the image's 12 merged tokens and the text
    expectSameAnswer(*answer, expected);
    EXPECT_FALSE(shared->fellBack());

    // Coordinates come back in the image the engine saw: the same resize as the engine's.
    Result<std::unique_ptr<agent::LocalEngineClient>> local =
        agent::LocalEngineClient::open(m_model, [&] {
            inference::EngineOptions o;
            o.threads = 1;
            o.contextSize = 1024;
            o.mmprojPath = m_mmproj;
            return o;
        }());
    ASSERT_TRUE(local);
    EXPECT_EQ((*client)->imageSizeFor(1920, 1080), (*local)->imageSizeFor(1920, 1080));
    ASSERT_TRUE((*client)->imageSizeFor(1920, 1080));
    EXPECT_EQ(publisher.stop(), 0);
    EXPECT_TRUE(liveEngineEntries(m_directory).empty());
    EXPECT_TRUE(fs::is_empty(m_directory));  // the publisher removed its entry on exit
}

TEST_F(SharedEngineTest, WhenThePublisherExitsTheClientLoadsItsOwnAndAnswersTheSame) {
    Publisher publisher;
    ASSERT_NO_FATAL_FAILURE(publisher.start(publisherArgs(1024, 1)));
    Result<std::unique_ptr<agent::ModelClient>> client = makeModelClient(choice());
    ASSERT_TRUE(client) << client.status().message();
    auto* shared = dynamic_cast<SharedEngineClient*>(client->get());
    ASSERT_NE(shared, nullptr);
    const agent::ChatRequest r = request();
    Result<agent::ChatResponse> first = (*client)->complete(r);
    ASSERT_TRUE(first) << first.status().message();

    // The publisher goes (the GUI closed during the evaluation): the next request is answered
    // by an engine this process loads, the same answer.
    EXPECT_EQ(publisher.stop(), 0);
    Result<agent::ChatResponse> second = (*client)->complete(r);
    ASSERT_TRUE(second) << second.status().message();
    EXPECT_TRUE(shared->fellBack());
    expectSameAnswer(*second, loadedHere(r));
    EXPECT_EQ(asJsonText(second->text), first->text);
    EXPECT_NE(engineUseSummary(**client).find("went away"), std::string::npos);
}

// The publisher goes in the middle of an answer: a scripted server streams one chunk, drops the
// connection, and says it is shutting down on /health, as a stopping publisher does. The client
// loads its engine (loadHere) and the request is answered whole there, its text streamed again.
TEST_F(SharedEngineTest, APublisherGoneMidAnswerIsAskedAgainHere) {
    httplib::Server server;
    server.Get("/health", [](const httplib::Request&, httplib::Response& response) {
        response.status = 503;
        response.set_content(R"({"status":"shutting_down"})", "application/json");
    });
    server.Post("/v1/chat/completions", [](const httplib::Request&, httplib::Response& response) {
        response.set_chunked_content_provider("text/event-stream", [](std::size_t,
                                                                      httplib::DataSink& sink) {
            const std::string chunk =
                R"(data: {"id":"x","object":"chat.completion.chunk","created":1,)"
                R"("model":"tiny-vl.gguf","choices":[{"index":0,"delta":{"content":"partial"}}]})"
                "\n\n";
            sink.write(chunk.data(), chunk.size());
            return false;  // the connection drops before the answer ends
        });
    });
    const int port = server.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    std::thread serving([&] { server.listen_after_bind(); });
    // Bound already: the request waits in the backlog until the loop accepts it.

    EngineEntry entry;
    entry.pid = ::getppid();
    entry.processKind = "gui";
    entry.port = port;
    entry.modelName = "tiny-vl.gguf";
    int loads = 0;
    SharedEngineClient client(entry, "tiny-vl.gguf", [&] {
        ++loads;
        ModelChoice c = choice();
        c.shareEngine = false;
        return makeModelClient(c);
    });
    std::string streamed;
    const agent::ChatRequest r = request();
    Result<agent::ChatResponse> answer = client.complete(r, [&](std::string_view text) {
        streamed += text;
        return true;
    });
    server.stop();
    serving.join();
    ASSERT_TRUE(answer) << answer.status().message();
    EXPECT_EQ(loads, 1);
    EXPECT_TRUE(client.fellBack());
    const agent::ChatResponse expected = loadedHere(r);
    expectSameAnswer(*answer, expected);
    EXPECT_EQ(streamed, "partial" + expected.text);
}

TEST_F(SharedEngineTest, AKilledPublishersEntryIsCleanedAndTheEngineLoadedHere) {
    Publisher publisher;
    ASSERT_NO_FATAL_FAILURE(publisher.start(publisherArgs(1024, 1)));
    const std::vector<EngineEntry> live = liveEngineEntries(m_directory);
    ASSERT_EQ(live.size(), 1u);
    ::kill(publisher.pid(), SIGKILL);  // no clean exit: the entry stays behind
    publisher.stop();
    EXPECT_FALSE(fs::is_empty(m_directory));
    Result<std::unique_ptr<agent::ModelClient>> client = makeModelClient(choice());
    ASSERT_TRUE(client) << client.status().message();
    EXPECT_NE(dynamic_cast<agent::LocalEngineClient*>(client->get()), nullptr);
    // The stale entry is gone, and this process published its own engine instead.
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(m_directory))
        files.push_back(e.path());
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(files[0].filename().string().rfind(std::to_string(::getpid()) + "-", 0), 0u);
    EXPECT_EQ(modeOf(files[0]), 0600u);
    EXPECT_EQ(engineUseSummary(**client), "loaded here (published for other Iris processes)");
    client->reset();  // the last holder here: the engine and its entry go
    EXPECT_TRUE(fs::is_empty(m_directory));
}

TEST_F(SharedEngineTest, ASmallerEngineOfAnotherProcessIsNotAttached) {
    Publisher publisher;
    ASSERT_NO_FATAL_FAILURE(publisher.start(publisherArgs(512, 1)));
    // A longer context than the published engine's, or a larger pool: loaded here.
    for (const auto& [context, parallel] : {std::pair{1024, 1}, std::pair{512, 2}}) {
        ModelChoice c = choice(context);
        c.parallel = parallel;
        Result<std::unique_ptr<agent::ModelClient>> client = makeModelClient(c);
        ASSERT_TRUE(client) << client.status().message();
        EXPECT_NE(dynamic_cast<agent::LocalEngineClient*>(client->get()), nullptr)
            << "context " << context << ", parallel " << parallel;
    }
    // As small or smaller: attached.
    Result<std::unique_ptr<agent::ModelClient>> client = makeModelClient(choice(512));
    ASSERT_TRUE(client);
    EXPECT_NE(dynamic_cast<SharedEngineClient*>(client->get()), nullptr);
}

TEST_F(SharedEngineTest, NoSharedEngineNeitherAttachesNorPublishes) {
    Publisher publisher;
    ASSERT_NO_FATAL_FAILURE(publisher.start(publisherArgs(1024, 1)));
    ModelChoice c = choice();
    c.shareEngine = false;  // --no-shared-engine
    Result<std::unique_ptr<agent::ModelClient>> client = makeModelClient(c);
    ASSERT_TRUE(client) << client.status().message();
    EXPECT_NE(dynamic_cast<agent::LocalEngineClient*>(client->get()), nullptr);
    EXPECT_EQ(engineUseSummary(**client), "loaded here (not shared: turned off)");
    const std::vector<EngineEntry> live = liveEngineEntries(m_directory);
    ASSERT_EQ(live.size(), 1u);  // the publisher's only; none of this process
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(m_directory))
        ++files;
    EXPECT_EQ(files, 1u);
}

}  // namespace
}  // namespace iris::app
