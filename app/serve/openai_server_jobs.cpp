// The completion endpoints: a request parsed, turned into the engine's prompt, submitted to the
// scheduler, and answered whole or streamed as Server-Sent Events while the tokens come.
#include <httplib.h>

#include "agent/clients/local_engine_client.h"
#include "agent/clients/openai_protocol.h"
#include "app/serve/answer_stream.h"
#include "app/serve/client_connection.h"
#include "app/serve/openai_request.h"
#include "app/serve/openai_response.h"
#include "app/serve/openai_server.h"

namespace iris::app::serve {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPoll{100};  // how often a waiting stream checks its client

// The chat request's prompt: images prepared by the engine, then the same rendering and
// tokenisation as the in-process agent client (agent::promptRequest).
Result<inference::GenerateRequest> chatPrompt(const inference::Engine& engine,
                                              const agent::ChatRequest& chat) {
    std::vector<std::shared_ptr<const inference::ImagePatches>> images;
    for (std::size_t m = 0; m < chat.messages.size(); ++m) {
        for (std::size_t p = 0; p < chat.messages[m].content.size(); ++p) {
            const agent::ContentPart& part = chat.messages[m].content[p];
            if (!part.isImage()) continue;
            const std::string field =
                "messages[" + std::to_string(m) + "].content[" + std::to_string(p) + "]";
            if (!engine.hasVision()) {
                return Status::invalidArgument(
                    field + ": this model has no vision projector loaded (start with --mmproj)");
            }
            Result<std::shared_ptr<const inference::ImagePatches>> patches =
                engine.prepareImage(part.image->bytes);
            if (!patches) return Status::invalidArgument(field + ": " + patches.status().message());
            images.push_back(std::move(*patches));
        }
    }
    return agent::promptRequest(engine, chat, images);
}

Result<inference::GenerateRequest> completionPrompt(const inference::Engine& engine,
                                                    const CompletionRequest& completion) {
    inference::GenerateRequest request;
    if (completion.tokenPrompt) {
        request.prompt = completion.promptTokens;
        return request;
    }
    const inference::Tokenizer& tokenizer = engine.tokenizer();
    if (tokenizer.addBosToken() && tokenizer.bosId()) request.prompt.push_back(*tokenizer.bosId());
    const std::vector<std::int32_t> ids = tokenizer.encode(completion.promptText, true);
    request.prompt.insert(request.prompt.end(), ids.begin(), ids.end());
    if (request.prompt.empty()) return Status::invalidArgument("prompt: empty");
    return request;
}

bool writeEvent(httplib::DataSink& sink, std::string_view data) {
    const std::string event = "data: " + std::string(data) + "\n\n";
    return sink.write(event.data(), event.size());
}

// The events in order, then [DONE]; false when the client is gone.
bool finishStream(httplib::DataSink& sink, const std::vector<std::string>& events) {
    for (const std::string& event : events) {
        if (!writeEvent(sink, event)) return false;
    }
    if (!writeEvent(sink, "[DONE]")) return false;
    sink.done();
    return true;
}

// For an answer sent whole: whether its client is still there (see ClientConnection).
std::function<bool()> connectionWatch(const httplib::Request& request) {
    auto connection = std::make_shared<ClientConnection>(request.remote_addr, request.remote_port,
                                                         request.local_addr, request.local_port);
    return [connection] { return connection->connected(); };
}

Usage usageOf(const inference::GenerateResult& result) {
    return {result.promptTokens, std::int64_t(result.tokens.size()), result.reusedTokens};
}

}  // namespace

struct OpenAiServer::Job {
    std::shared_ptr<inference::GenerationHandle> handle;
    ResponseHead head;
    Clock::time_point submitted;
    bool includeUsage = false;
    bool clientGone = false;
    bool streamPending = false;  // counted in m_streamsStarting
    // Chat: how the answer is read back.
    bool parseToolCalls = false;
    bool miniMax = false;
    std::vector<std::string> toolsJson;
    // tool_choice required or named: the opening of a call, appended to the prompt, which the
    // answer is read as starting with.
    std::string forcedText;
};

inference::Scheduler* OpenAiServer::ready(httplib::Response& response) const {
    inference::Scheduler* scheduler = m_schedulerView.load();
    if (scheduler != nullptr && !m_stopping) return scheduler;
    response.status = 503;
    response.set_content(
        errorJson(m_stopping ? "the server is shutting down" : "the model is still loading",
                  "server_error", {}, m_stopping ? "shutting_down" : "loading"),
        "application/json");
    return nullptr;
}

void OpenAiServer::fail(httplib::Response& response, const Status& status) const {
    int http = 500;
    std::string type = "server_error", code;
    switch (status.code()) {
        case StatusCode::InvalidArgument:
        case StatusCode::Corrupt:
        case StatusCode::NotFound:
            http = 400, type = "invalid_request_error";
            break;
        case StatusCode::Unsupported:
            http = 400, type = "invalid_request_error", code = "unsupported";
            break;
        case StatusCode::OutOfRange:
            http = 400, type = "invalid_request_error", code = "context_length_exceeded";
            break;
        case StatusCode::Unavailable:
        case StatusCode::Cancelled:
            if (m_stopping) {
                http = 503, code = "shutting_down";
            } else {
                http = 429, type = "rate_limit_error", code = "rate_limit_exceeded";
                response.set_header("Retry-After", std::to_string(m_options.retryAfterSeconds));
            }
            break;
        default:
            break;
    }
    response.status = http;
    const std::string param = http == 400 ? errorField(status.message()) : std::string();
    response.set_content(errorJson(status.message(), type, param, code), "application/json");
}

std::shared_ptr<OpenAiServer::Job> OpenAiServer::submit(httplib::Response& response,
                                                        inference::GenerateRequest request,
                                                        const GenerationSettings& settings,
                                                        const char* idPrefix) {
    inference::Scheduler& scheduler = *m_schedulerView.load();
    const std::int64_t context = scheduler.engine().options().contextSize;
    request.sampling = settings.sampling;
    request.stopStrings = settings.stop;
    request.maxTokens = settings.maxTokens.value_or(
        std::max<std::int64_t>(1, context - std::int64_t(request.prompt.size())));
    auto job = std::make_shared<Job>();
    job->includeUsage = settings.includeUsage;
    job->head = {std::string(idPrefix) + "-" + m_idSalt + std::to_string(++m_nextId),
                 m_options.modelName,
                 std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count()};
    job->submitted = Clock::now();
    if (settings.stream) {
        std::lock_guard lock(m_streamsMutex);
        ++m_streamsStarting;
        job->streamPending = true;
    }
    // Counted first: a stop() that did not see this stream has set m_stopping already.
    Result<std::shared_ptr<inference::GenerationHandle>> handle =
        m_stopping ? Status::unavailable("the server is shutting down")
                   : scheduler.submit(std::move(request));
    if (!handle) {
        streamStarted(*job);
        fail(response, handle.status());
        return nullptr;
    }
    job->handle = std::move(*handle);
    return job;
}

void OpenAiServer::streamStarted(Job& job) {
    if (!job.streamPending) return;
    job.streamPending = false;
    {
        std::lock_guard lock(m_streamsMutex);
        --m_streamsStarting;
    }
    m_streamsChanged.notify_all();
}

void OpenAiServer::stream(httplib::Response& response, std::shared_ptr<Job> job,
                          bool (OpenAiServer::*write)(Job&, httplib::DataSink&)) {
    // httplib calls the provider once (it writes the whole stream), then the releaser when the
    // response goes, provider called or not; both on this connection's thread.
    response.set_chunked_content_provider(
        "text/event-stream",
        [this, job, write](std::size_t, httplib::DataSink& sink) {
            streamStarted(*job);
            return (this->*write)(*job, sink);
        },
        [this, job](bool) {
            streamStarted(*job);
            job->handle->cancel();  // a no-op once it has finished
        });
}

Result<inference::GenerateResult> OpenAiServer::follow(
    Job& job, const std::function<bool(std::string_view)>& onText,
    const std::function<bool()>& connected) {
    std::optional<Clock::time_point> last;
    Clock::time_point asked = Clock::now();  // when `connected` was last asked
    auto leave = [&] {
        job.clientGone = true;
        job.handle->cancel();
        m_metrics.countDisconnect();
    };
    for (inference::TokenEvent event;;) {
        const inference::GenerationHandle::Poll poll = job.handle->next(event, kPoll);
        // A stream learns of a client that left from its writes, and asks only while no token
        // comes (asking blocks while the socket's buffer is full); an answer sent whole has no
        // writes until the end, so it asks every kPoll.
        const bool ask = poll == inference::GenerationHandle::Poll::Timeout ||
                         (!onText && poll == inference::GenerationHandle::Poll::Token);
        // Stopping over a shared scheduler, which stop() leaves running: end this generation.
        if (m_stopping && !m_options.shutdownSchedulerOnStop) job.handle->cancel();
        if (!job.clientGone && ask && Clock::now() - asked >= kPoll) {
            asked = Clock::now();
            if (!connected()) leave();
        }
        switch (poll) {
            case inference::GenerationHandle::Poll::Token: {
                const Clock::time_point now = Clock::now();
                const double seconds =
                    std::chrono::duration<double>(now - last.value_or(job.submitted)).count();
                if (last)
                    m_metrics.observeInterTokenLatency(seconds);
                else
                    m_metrics.observeTimeToFirstToken(seconds);
                last = now;
                if (!job.clientGone && onText && !event.text.empty() && !onText(event.text))
                    leave();
                break;
            }
            case inference::GenerationHandle::Poll::Timeout:
                break;
            case inference::GenerationHandle::Poll::Finished:
                return job.handle->result();
        }
    }
}

void OpenAiServer::chatCompletions(const httplib::Request& request, httplib::Response& response) {
    inference::Scheduler* scheduler = ready(response);
    if (scheduler == nullptr) return;
    Result<ChatCompletionRequest> parsed = parseChatCompletionRequest(request.body);
    if (!parsed) return fail(response, parsed.status());
    const inference::Engine& engine = scheduler->engine();
    Result<inference::GenerateRequest> prompt = chatPrompt(engine, parsed->chat);
    if (!prompt) return fail(response, prompt.status());
    std::string forcedText;
    if (parsed->forcedToolCall) {
        forcedText = engine.chatTemplate().toolCallOpening(*parsed->forcedToolCall);
        const std::vector<std::int32_t> opening =
            engine.tokenizer().encode(forcedText, /*parseSpecial=*/true);
        prompt->prompt.insert(prompt->prompt.end(), opening.begin(), opening.end());
    }
    std::vector<std::string> toolsJson;
    for (const agent::ToolDefinition& tool : parsed->chat.tools) {
        Result<std::string> json = agent::openAiToolJson(tool);
        if (!json) return fail(response, json.status());
        toolsJson.push_back(std::move(*json));
    }
    std::shared_ptr<Job> job = submit(response, std::move(*prompt), parsed->settings, "chatcmpl");
    if (job == nullptr) return;
    job->parseToolCalls = parsed->parseToolCalls;
    job->miniMax = engine.chatTemplate().kind() == inference::ChatTemplateKind::MiniMaxM3;
    job->toolsJson = std::move(toolsJson);
    job->forcedText = std::move(forcedText);
    if (!parsed->settings.stream) return answerChat(*job, request, response);
    stream(response, std::move(job), &OpenAiServer::streamChat);
}

void OpenAiServer::completions(const httplib::Request& request, httplib::Response& response) {
    inference::Scheduler* scheduler = ready(response);
    if (scheduler == nullptr) return;
    Result<CompletionRequest> parsed = parseCompletionRequest(request.body);
    if (!parsed) return fail(response, parsed.status());
    Result<inference::GenerateRequest> prompt = completionPrompt(scheduler->engine(), *parsed);
    if (!prompt) return fail(response, prompt.status());
    std::shared_ptr<Job> job = submit(response, std::move(*prompt), parsed->settings, "cmpl");
    if (job == nullptr) return;
    if (!parsed->settings.stream) return answerCompletion(*job, request, response);
    stream(response, std::move(job), &OpenAiServer::streamCompletion);
}

void OpenAiServer::answerChat(Job& job, const httplib::Request& request,
                              httplib::Response& response) {
    Result<inference::GenerateResult> result = follow(job, nullptr, connectionWatch(request));
    if (result && result->stop == inference::StopReason::Cancelled)
        result = Status::cancelled("the generation was cancelled");
    if (!result) return fail(response, result.status());
    noteTokens(result->promptTokens, std::int64_t(result->tokens.size()));
    const ChatAnswer answer = readChatAnswer(job.forcedText + result->text, job.parseToolCalls,
                                             job.miniMax, job.toolsJson, job.head.id);
    response.set_content(chatCompletionJson(job.head, answer,
                                            finishReason(result->stop, !answer.toolCalls.empty()),
                                            usageOf(*result)),
                         "application/json");
}

void OpenAiServer::answerCompletion(Job& job, const httplib::Request& request,
                                    httplib::Response& response) {
    Result<inference::GenerateResult> result = follow(job, nullptr, connectionWatch(request));
    if (result && result->stop == inference::StopReason::Cancelled)
        result = Status::cancelled("the generation was cancelled");
    if (!result) return fail(response, result.status());
    noteTokens(result->promptTokens, std::int64_t(result->tokens.size()));
    response.set_content(completionJson(job.head, result->text,
                                        finishReason(result->stop, false), usageOf(*result)),
                         "application/json");
}

// After a streamed generation: false when the client is gone; an error event when it failed or
// the server is stopping; else true, and `events` are to be sent.
bool OpenAiServer::streamFailed(Job& job, httplib::DataSink& sink,
                                const Result<inference::GenerateResult>& result) {
    if (job.clientGone) return true;
    Status status = result.status();
    if (result && result->stop == inference::StopReason::Cancelled) {
        status = Status::cancelled(m_stopping ? "the server is shutting down"
                                              : "the generation was cancelled");
    }
    if (status.isOk()) return false;
    noteTokens(0, 0);
    finishStream(sink, {errorJson(status.message(), "server_error", {},
                                  m_stopping ? "shutting_down" : std::string_view())});
    return true;
}

bool OpenAiServer::streamChat(Job& job, httplib::DataSink& sink) {
    if (!writeEvent(sink, chatChunkJson(job.head, roleDeltaJson()))) {
        job.handle->cancel();
        return false;
    }
    // Answers read for tool calls (or MiniMax-M3's reasoning) go through an AnswerStream: text
    // as it comes, each call once its block is complete.
    std::optional<AnswerStream> reader;
    if (job.parseToolCalls || job.miniMax) {
        reader.emplace(job.parseToolCalls, job.toolsJson, job.head.id);
        reader->push(job.forcedText);  // opens a block: nothing to send yet
    }
    const auto send = [&](const std::vector<AnswerDelta>& deltas) {
        for (const AnswerDelta& delta : deltas) {
            const std::string json =
                delta.kind == AnswerDelta::Kind::ToolCall  ? toolCallDeltaJson(delta.call, delta.index)
                : delta.kind == AnswerDelta::Kind::Reasoning ? reasoningDeltaJson(delta.text)
                                                             : contentDeltaJson(delta.text);
            if (!writeEvent(sink, chatChunkJson(job.head, json))) return false;
        }
        return true;
    };
    std::size_t streamed = 0;
    auto onText = [&](std::string_view text) {
        streamed += text.size();
        if (reader) return send(reader->push(text));
        return writeEvent(sink, chatChunkJson(job.head, contentDeltaJson(text)));
    };
    const Result<inference::GenerateResult> result =
        follow(job, onText, [&sink] { return sink.is_writable(); });
    if (streamFailed(job, sink, result)) return !job.clientGone;
    noteTokens(result->promptTokens, std::int64_t(result->tokens.size()));
    // What the generation ended with and was held back from the token events (a stop string's
    // possible start), then what the reader held back.
    const std::string_view rest =
        std::string_view(result->text).substr(std::min(streamed, result->text.size()));
    std::vector<AnswerDelta> deltas;
    if (reader) {
        deltas = reader->push(rest);
        for (AnswerDelta& delta : reader->finish()) deltas.push_back(std::move(delta));
    } else if (!rest.empty()) {
        deltas.push_back({AnswerDelta::Kind::Content, std::string(rest), {}, 0});
    }
    if (!send(deltas)) return false;
    const bool calls = reader && reader->toolCalls() > 0;
    std::vector<std::string> events = {
        chatChunkJson(job.head, "{}", finishReason(result->stop, calls))};
    if (job.includeUsage)
        events.push_back(usageChunkJson(job.head, "chat.completion.chunk", usageOf(*result)));
    return finishStream(sink, events);
}

bool OpenAiServer::streamCompletion(Job& job, httplib::DataSink& sink) {
    std::size_t streamed = 0;
    auto onText = [&](std::string_view text) {
        streamed += text.size();
        return writeEvent(sink, completionChunkJson(job.head, text));
    };
    const Result<inference::GenerateResult> result =
        follow(job, onText, [&sink] { return sink.is_writable(); });
    if (streamFailed(job, sink, result)) return !job.clientGone;
    noteTokens(result->promptTokens, std::int64_t(result->tokens.size()));
    std::vector<std::string> events;
    if (result->text.size() > streamed)
        events.push_back(completionChunkJson(job.head, std::string_view(result->text).substr(streamed)));
    events.push_back(completionChunkJson(job.head, "", finishReason(result->stop, false)));
    if (job.includeUsage)
        events.push_back(usageChunkJson(job.head, "text_completion", usageOf(*result)));
    return finishStream(sink, events);
}

}  // namespace iris::app::serve
