// `iris serve`'s server in process on a tiny random model: answers equal the engine's own for
// the prompt written out by hand (greedy), streams add up to the same text and end with usage
// and [DONE], and every error has its status and OpenAI-style body.
#include "app/serve/openai_server.h"

#include <chrono>
#include <regex>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/clients/openai_protocol.h"
#include "inference/chat_template.h"
#include "tests/app/serve/serve_fixture.h"

namespace iris::app::serve {
namespace {

using Json = nlohmann::json;
using testing::asJsonText;
using testing::qwenChatPrompt;
using testing::sseData;

class OpenAiServerTest : public ::testing::Test, public testing::ServeFixture {};

std::string chatBody(const std::string& user, int maxTokens, bool stream = false) {
    Json body = {{"model", "tiny.gguf"},
                 {"messages", {{{"role", "user"}, {"content", user}}}},
                 {"max_tokens", maxTokens},
                 {"temperature", 0},
                 {"stream", stream}};
    if (stream) body["stream_options"] = {{"include_usage", true}};
    return body.dump();
}

// Waits (without a time limit of its own: ctest's applies) until the scheduler has finished
// every request it accepted.
void waitUntilIdle(const inference::Scheduler& scheduler) {
    for (;;) {
        const inference::SchedulerStats stats = scheduler.stats();
        if (stats.finished == stats.requests && stats.running == 0 && stats.waiting == 0) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

TEST_F(OpenAiServerTest, ChatCompletionEqualsTheEnginesGreedyAnswer) {
    start();
    const inference::GenerateResult expected = reference(qwenChatPrompt("hello"), 12);
    auto result = client().Post("/v1/chat/completions", chatBody("hello", 12), "application/json");
    ASSERT_TRUE(result);
    ASSERT_EQ(result->status, 200) << result->body;
    const Json json = Json::parse(result->body);
    EXPECT_EQ(json["object"], "chat.completion");
    EXPECT_EQ(json["model"], "tiny.gguf");
    EXPECT_EQ(json["choices"][0]["message"]["role"], "assistant");
    EXPECT_EQ(json["choices"][0]["message"]["content"], asJsonText(expected.text));
    EXPECT_EQ(json["usage"]["prompt_tokens"], expected.promptTokens);
    EXPECT_EQ(json["usage"]["completion_tokens"], expected.tokens.size());
    EXPECT_EQ(json["choices"][0]["finish_reason"],
              expected.stop == inference::StopReason::MaxTokens ? "length" : "stop");
    // The same request again: its prompt's full KV blocks come from the prefix cache.
    auto again = client().Post("/v1/chat/completions", chatBody("hello", 12), "application/json");
    ASSERT_TRUE(again);
    const Json second = Json::parse(again->body);
    EXPECT_EQ(second["choices"][0]["message"]["content"], asJsonText(expected.text));
    EXPECT_GT(second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
}

TEST_F(OpenAiServerTest, StreamedChunksAddUpToTheSameTextThenUsageAndDone) {
    start();
    const inference::GenerateResult expected = reference(qwenChatPrompt("stream it"), 16);
    auto result =
        client().Post("/v1/chat/completions", chatBody("stream it", 16, true), "application/json");
    ASSERT_TRUE(result);
    ASSERT_EQ(result->status, 200);
    EXPECT_NE(result->get_header_value("Content-Type").find("text/event-stream"),
              std::string::npos);
    const std::vector<std::string> events = sseData(result->body);
    ASSERT_GE(events.size(), 4u) << result->body;
    EXPECT_EQ(events.back(), "[DONE]");
    std::string text;
    std::optional<std::string> finish;
    for (std::size_t i = 0; i + 2 < events.size(); ++i) {
        const Json chunk = Json::parse(events[i]);
        EXPECT_EQ(chunk["object"], "chat.completion.chunk");
        const Json& choice = chunk["choices"][0];
        if (i == 0) {
            EXPECT_EQ(choice["delta"]["role"], "assistant");
        }
        if (choice["delta"].contains("content")) text += choice["delta"]["content"];
        if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
    }
    EXPECT_EQ(text, asJsonText(expected.text));
    ASSERT_TRUE(finish.has_value());
    const Json usage = Json::parse(events[events.size() - 2]);
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_EQ(usage["usage"]["prompt_tokens"], expected.promptTokens);
    EXPECT_EQ(usage["usage"]["completion_tokens"], expected.tokens.size());
    EXPECT_TRUE(usage["usage"]["prompt_tokens_details"]["cached_tokens"].is_number());
}

// tool_choice naming a function: the prompt goes on with the opening of that call, written
// out here by hand, and the answer is read as starting with it. The random model does not
// finish the call, so the answer is that text, whole or streamed.
TEST_F(OpenAiServerTest, ANamedToolChoiceOpensTheAnswerWithThatCall) {
    contextSize = 1024;  // the tools' instructions, byte by byte
    start();
    const agent::ToolDefinition click{"click", "Click.", R"({"type": "object"})"};
    Result<std::string> toolJson = agent::openAiToolJson(click);
    ASSERT_TRUE(toolJson);
    inference::ChatOptions options;
    options.toolsJson = {*toolJson};
    Result<std::string> prompt = inference::ChatTemplate(inference::ChatTemplateKind::Qwen2)
                                     .render({{"user", "hello", {}}}, options);
    ASSERT_TRUE(prompt);
    const std::string opening = "<tool_call>\n{\"name\": \"click\", \"arguments\": ";
    const inference::GenerateResult expected = reference(*prompt + opening, 12);
    for (const bool stream : {false, true}) {
        Json body = Json::parse(chatBody("hello", 12, stream));
        body["tools"] = Json::array({Json::parse(*toolJson)});
        body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "click"}}}};
        auto result = client().Post("/v1/chat/completions", body.dump(), "application/json");
        ASSERT_TRUE(result);
        ASSERT_EQ(result->status, 200) << result->body;
        std::string content;
        if (!stream) {
            const Json json = Json::parse(result->body);
            EXPECT_EQ(json["usage"]["prompt_tokens"], expected.promptTokens);
            content = json["choices"][0]["message"]["content"];
        } else {
            for (const std::string& event : sseData(result->body)) {
                if (event == "[DONE]") continue;
                const Json chunk = Json::parse(event);
                if (!chunk["choices"].empty() && chunk["choices"][0]["delta"].contains("content"))
                    content += chunk["choices"][0]["delta"]["content"];
                if (chunk.contains("usage")) {
                    EXPECT_EQ(chunk["usage"]["prompt_tokens"], expected.promptTokens);
                }
            }
        }
        EXPECT_EQ(content, asJsonText(opening + expected.text)) << (stream ? "streamed" : "whole");
    }
}

TEST_F(OpenAiServerTest, CompletionsTakeTextAndTokenPrompts) {
    start();
    const inference::GenerateResult expected = reference("Once upon a time", 10);
    auto text = client().Post("/v1/completions",
                              R"({"prompt": "Once upon a time", "max_tokens": 10, "temperature": 0})",
                              "application/json");
    ASSERT_TRUE(text);
    ASSERT_EQ(text->status, 200) << text->body;
    EXPECT_EQ(Json::parse(text->body)["choices"][0]["text"], asJsonText(expected.text));
    // The same prompt as byte-level token ids: 'O' 'n' 'c' 'e'... are ids 0-255.
    Json ids = Json::array();
    for (unsigned char c : std::string("Once upon a time"))
        ids.push_back(int(c));
    auto tokens = client().Post(
        "/v1/completions",
        Json{{"prompt", ids}, {"max_tokens", 10}, {"temperature", 0}, {"stream", true}}.dump(),
        "application/json");
    ASSERT_TRUE(tokens);
    std::string streamed;
    for (const std::string& event : sseData(tokens->body)) {
        if (event != "[DONE]") streamed += Json::parse(event)["choices"][0]["text"];
    }
    EXPECT_EQ(streamed, asJsonText(expected.text));
}

TEST_F(OpenAiServerTest, AnApiKeyIsRequiredWhenSet) {
    ServerOptions options;
    options.apiKey = "sesame-123";
    start(options);
    auto none = client().Get("/v1/models");
    ASSERT_TRUE(none);
    EXPECT_EQ(none->status, 401);
    EXPECT_EQ(Json::parse(none->body)["error"]["code"], "invalid_api_key");
    auto wrong = client().Get("/v1/models", {{"Authorization", "Bearer sesame-124"}});
    EXPECT_EQ(wrong->status, 401);
    auto shorter = client().Post("/v1/chat/completions", {{"Authorization", "Bearer sesame"}},
                                 chatBody("hi", 2), "application/json");
    EXPECT_EQ(shorter->status, 401);
    auto right = client().Get("/v1/models", {{"Authorization", "Bearer sesame-123"}});
    ASSERT_EQ(right->status, 200);
    EXPECT_EQ(Json::parse(right->body)["data"][0]["id"], "tiny.gguf");
    auto chat = client().Post("/v1/chat/completions", {{"Authorization", "Bearer sesame-123"}},
                              chatBody("hi", 2), "application/json");
    EXPECT_EQ(chat->status, 200) << chat->body;
}

TEST_F(OpenAiServerTest, ErrorsHaveTheirStatusAndNameTheProblem) {
    contextSize = 64;
    ServerOptions options;
    options.maxBodyBytes = 4096;
    start(options);
    auto malformed = client().Post("/v1/chat/completions", "{\"messages\": [", "application/json");
    ASSERT_TRUE(malformed);
    EXPECT_EQ(malformed->status, 400);
    EXPECT_EQ(Json::parse(malformed->body)["error"]["param"], "body");
    auto wrongType = client().Post(
        "/v1/chat/completions",
        R"({"messages": [{"role": "user", "content": "x"}], "temperature": "warm"})",
        "application/json");
    EXPECT_EQ(wrongType->status, 400);
    const Json typeError = Json::parse(wrongType->body)["error"];
    EXPECT_EQ(typeError["param"], "temperature");
    EXPECT_EQ(typeError["type"], "invalid_request_error");
    // A prompt over the 64-token context: both numbers in the message.
    auto tooLong = client().Post("/v1/completions",
                                 Json{{"prompt", std::string(100, 'a')}, {"max_tokens", 4}}.dump(),
                                 "application/json");
    EXPECT_EQ(tooLong->status, 400);
    const std::string message = Json::parse(tooLong->body)["error"]["message"];
    EXPECT_NE(message.find("100"), std::string::npos) << message;
    EXPECT_NE(message.find("64"), std::string::npos) << message;
    EXPECT_EQ(Json::parse(tooLong->body)["error"]["code"], "context_length_exceeded");
    auto missing = client().Get("/v1/nothing");
    EXPECT_EQ(missing->status, 404);
    EXPECT_EQ(Json::parse(missing->body)["error"]["code"], "not_found");
    auto large = client().Post("/v1/chat/completions", std::string(8192, ' '), "application/json");
    ASSERT_TRUE(large);
    EXPECT_EQ(large->status, 413);
    EXPECT_EQ(Json::parse(large->body)["error"]["code"], "request_too_large");
}

TEST_F(OpenAiServerTest, AFullQueueGets429WithRetryAfter) {
    useEndlessModel();
    maxSessions = 1;
    start({}, {.maxRunning = 1, .maxWaiting = 1});
    const std::string endless = "Once upon a time";
    inference::Scheduler& scheduler = *server->scheduler();
    std::vector<std::shared_ptr<inference::GenerationHandle>> held;
    for (int i = 0; i < 2; ++i) {  // one running, then one waiting
        inference::GenerateRequest request;
        request.prompt = scheduler.engine().tokenizer().encode(endless, true);
        request.sampling.temperature = 0;
        request.maxTokens = kEndlessTokens;
        Result<std::shared_ptr<inference::GenerationHandle>> handle = scheduler.submit(request);
        ASSERT_TRUE(handle) << handle.status().message();
        held.push_back(*handle);
        while (i == 0 && scheduler.stats().running == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    auto refused = client().Post("/v1/completions", R"({"prompt": "x", "max_tokens": 2})",
                                 "application/json");
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 429);
    EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
    EXPECT_EQ(Json::parse(refused->body)["error"]["code"], "rate_limit_exceeded");
    for (const auto& handle : held)
        handle->cancel();
}

TEST_F(OpenAiServerTest, AClientThatLeavesCancelsItsGeneration) {
    useEndlessModel();
    start();
    const std::string endless = "Once upon a time";
    httplib::Request request;
    request.method = "POST";
    request.path = "/v1/completions";
    request.body = Json{{"prompt", endless}, {"max_tokens", kEndlessTokens}, {"temperature", 0},
                        {"stream", true}}
                       .dump();
    request.set_header("Content-Type", "application/json");
    int chunks = 0;
    request.content_receiver = [&](const char*, std::size_t, std::uint64_t, std::uint64_t) {
        return ++chunks < 2;  // false: the client closes the connection
    };
    client().send(request);
    inference::Scheduler& scheduler = *server->scheduler();
    waitUntilIdle(scheduler);
    EXPECT_LT(scheduler.stats().generatedTokens, kEndlessTokens);
    auto metrics = client().Get("/metrics");
    EXPECT_NE(metrics->body.find("iris_client_disconnects_total 1"), std::string::npos)
        << metrics->body;
}

// A client waiting for a whole answer gives up (its read timeout) and closes the connection:
// the server sees the hang-up while the model is still generating and cancels it.
TEST_F(OpenAiServerTest, AClientThatLeavesCancelsAWholeAnswerToo) {
    useEndlessModel();
    start();
    httplib::Client impatient = client();
    impatient.set_read_timeout(std::chrono::milliseconds(200));
    const std::string body =
        Json{{"prompt", "Once upon a time"}, {"max_tokens", kEndlessTokens}, {"temperature", 0}}.dump();
    EXPECT_FALSE(impatient.Post("/v1/completions", body, "application/json"));
    impatient.stop();
    inference::Scheduler& scheduler = *server->scheduler();
    waitUntilIdle(scheduler);
    EXPECT_LT(scheduler.stats().generatedTokens, kEndlessTokens);
    auto metrics = client().Get("/metrics");
    EXPECT_NE(metrics->body.find("iris_client_disconnects_total 1"), std::string::npos)
        << metrics->body;
}

TEST_F(OpenAiServerTest, HealthSaysLoadingUntilTheSchedulerArrives) {
    start({}, {}, /*load=*/false);
    auto loading = client().Get("/health");
    ASSERT_TRUE(loading);
    EXPECT_EQ(loading->status, 503);
    EXPECT_EQ(Json::parse(loading->body)["status"], "loading");
    auto early = client().Post("/v1/chat/completions", chatBody("hi", 2), "application/json");
    EXPECT_EQ(early->status, 503);
    load();
    auto ok = client().Get("/health");
    EXPECT_EQ(ok->status, 200);
    EXPECT_EQ(Json::parse(ok->body)["status"], "ok");
}

TEST_F(OpenAiServerTest, ASecondServerOnTheSamePortIsRefused) {
    start({}, {}, /*load=*/false);
    ServerOptions options;
    options.host = "127.0.0.1";
    options.port = port;
    OpenAiServer second(options);
    Result<int> started = second.start();
    ASSERT_FALSE(started) << "a second server took port " << port;
    EXPECT_NE(started.status().message().find("in use"), std::string::npos)
        << started.status().message();
    EXPECT_EQ(client().Get("/health")->status, 503);  // the first one still answers
}

TEST_F(OpenAiServerTest, MetricsAreValidPrometheusText) {
    start();
    ASSERT_EQ(client().Post("/v1/chat/completions", chatBody("count me", 4), "application/json")
                  ->status,
              200);
    ASSERT_EQ(client().Get("/v1/nothing-here")->status, 404);  // httplib's own routing error
    auto metrics = client().Get("/metrics");
    ASSERT_TRUE(metrics);
    ASSERT_EQ(metrics->status, 200);
    const std::regex sample(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_]+="[^"]*"\})? [-+0-9.eEInf]+$)");
    const std::regex comment(R"(^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$)");
    std::istringstream lines(metrics->body);
    int samples = 0;
    for (std::string line; std::getline(lines, line);) {
        const bool ok = std::regex_match(line, sample) || std::regex_match(line, comment);
        EXPECT_TRUE(ok) << "not Prometheus text: " << line;
        samples += line.starts_with("#") ? 0 : 1;
    }
    EXPECT_GT(samples, 30);
    for (const char* name :
         {"iris_time_to_first_token_seconds_count 1", "iris_requests_total 1",
          "iris_http_responses_total{code=\"200\"} 1",
          "iris_http_responses_total{code=\"404\"} 1", "iris_prefix_cache_hit_tokens_total",
          "iris_prefix_cache_lookups_total", "iris_kv_evictions_total", "iris_preemptions_total",
          "iris_kv_blocks_used", "iris_kv_blocks_cached", "iris_kv_blocks ",
          "iris_requests_waiting", "iris_requests_running",
          "iris_inter_token_latency_seconds_bucket{le=\"+Inf\"} 3"}) {
        EXPECT_NE(metrics->body.find(name), std::string::npos) << name;
    }
}

// A stream stopped in flight ends with the shutting_down error event, then [DONE]: once tokens
// flow, or as soon as its request has been submitted (before httplib has called the stream's
// provider, which it never does once its listening socket is closed).
class StoppingAStream : public OpenAiServerTest, public ::testing::WithParamInterface<bool> {};

TEST_P(StoppingAStream, EndsItWithAnErrorEvent) {
    const bool afterFirstToken = GetParam();
    useEndlessModel();
    start();
    std::string body;
    std::thread reader([&] {
        httplib::Request request;
        request.method = "POST";
        request.path = "/v1/completions";
        request.body = Json{{"prompt", "Once upon a time"}, {"max_tokens", kEndlessTokens},
                            {"temperature", 0}, {"stream", true}}
                           .dump();
        request.set_header("Content-Type", "application/json");
        request.content_receiver = [&](const char* data, std::size_t size, std::uint64_t,
                                       std::uint64_t) {
            body.append(data, size);
            return true;
        };
        client().send(request);
    });
    const inference::Scheduler& scheduler = *server->scheduler();
    while ((afterFirstToken ? scheduler.stats().generatedTokens : scheduler.stats().requests) == 0)
        std::this_thread::yield();  // the submitted request's window is microseconds long
    server->stop();
    reader.join();
    const std::vector<std::string> events = sseData(body);
    ASSERT_GE(events.size(), 2u) << body;
    EXPECT_EQ(events.back(), "[DONE]");
    EXPECT_EQ(Json::parse(events[events.size() - 2])["error"]["code"], "shutting_down") << body;
}

INSTANTIATE_TEST_SUITE_P(OpenAiServerTest, StoppingAStream, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                             return param.param ? "OnceTokensFlow" : "AsSoonAsItIsSubmitted";
                         });

}  // namespace
}  // namespace iris::app::serve
