#include "agent/clients/local_engine_client.h"

#include <algorithm>
#include <chrono>

#include "agent/clients/openai_protocol.h"
#include "base/clock.h"

namespace iris::agent {
namespace {

const char* finishReason(inference::StopReason reason) {
    switch (reason) {
        case inference::StopReason::EndOfGeneration:
        case inference::StopReason::StopString:
            return "stop";
        case inference::StopReason::MaxTokens:
        case inference::StopReason::ContextFull:
            return "length";
        case inference::StopReason::Cancelled:
            return "cancelled";
    }
    return "stop";
}

}  // namespace

Result<std::string> renderPrompt(const inference::ChatTemplate& chatTemplate,
                                 const ChatRequest& request) {
    std::vector<inference::ChatMessage> messages;
    messages.reserve(request.messages.size());
    for (const ChatMessage& message : request.messages) {
        inference::ChatMessage out;
        out.role = message.role;
        for (const ContentPart& part : message.content)
            out.content += part.isImage() ? std::string(inference::kImageMarker) : part.text;
        for (const ToolCall& call : message.toolCalls)
            out.toolCalls.push_back({call.name, call.arguments});
        messages.push_back(std::move(out));
    }
    inference::ChatOptions options;
    for (const ToolDefinition& tool : request.tools) {
        Result<std::string> json = openAiToolJson(tool);
        if (!json) return json.status();
        options.toolsJson.push_back(std::move(*json));
    }
    return chatTemplate.render(messages, options);
}

Result<inference::GenerateRequest> promptRequest(
    const inference::Engine& engine, const ChatRequest& request,
    std::span<const std::shared_ptr<const inference::ImagePatches>> images) {
    Result<std::string> prompt = renderPrompt(engine.chatTemplate(), request);
    if (!prompt) return prompt.status();
    // The template writes the special tokens as text; message text goes through it too, so a
    // message that spells "<|im_end|>" is read as that token (as llama.cpp's server does).
    std::vector<std::int32_t> tokens = engine.tokenizer().encode(*prompt, /*parseSpecial=*/true);
    if (images.empty()) {
        inference::GenerateRequest generate;
        generate.prompt = std::move(tokens);
        return generate;
    }
    const std::string_view placeholder = engine.chatTemplate().imagePlaceholder();
    const std::optional<std::int32_t> id = engine.tokenizer().findToken(placeholder);
    if (!id) {
        return Status::unsupported("the vocabulary has no " + std::string(placeholder) +
                                   " token for images");
    }
    return inference::Engine::splitAtPlaceholders(tokens, *id, images);
}

LocalEngineClient::LocalEngineClient(std::shared_ptr<inference::Scheduler> scheduler,
                                     std::string name, LocalEngineSettings settings)
    : m_scheduler(std::move(scheduler)), m_name(std::move(name)), m_settings(settings) {}

LocalEngineClient::~LocalEngineClient() = default;

Result<std::unique_ptr<LocalEngineClient>> LocalEngineClient::open(
    const std::filesystem::path& modelPath, const inference::EngineOptions& options,
    LocalEngineSettings settings) {
    Result<std::unique_ptr<inference::Engine>> engine = inference::Engine::load(modelPath, options);
    if (!engine) return engine.status();
    return create(std::move(*engine), modelPath.filename().string(), settings);
}

Result<std::unique_ptr<LocalEngineClient>> LocalEngineClient::create(
    std::unique_ptr<inference::Engine> engine, std::string name, LocalEngineSettings settings) {
    if (engine == nullptr) return Status::invalidArgument("no engine");
    Result<std::unique_ptr<inference::Scheduler>> scheduler =
        inference::Scheduler::start(std::move(engine));
    if (!scheduler) return scheduler.status().withContext(name + ": ");
    return attach(std::move(*scheduler), std::move(name), settings);
}

std::unique_ptr<LocalEngineClient> LocalEngineClient::attach(
    std::shared_ptr<inference::Scheduler> scheduler, std::string name,
    LocalEngineSettings settings) {
    return std::unique_ptr<LocalEngineClient>(
        new LocalEngineClient(std::move(scheduler), std::move(name), settings));
}

std::string LocalEngineClient::describe() const {
    return "local " + m_name;
}

std::optional<inference::ImageSize> LocalEngineClient::imageSizeFor(int width, int height) const {
    if (!engine().hasVision()) return std::nullopt;
    Result<inference::ImageSize> size =
        inference::smartResize(width, height, engine().imageOptions());
    if (!size) return std::nullopt;
    return *size;
}

Result<std::vector<std::shared_ptr<const inference::ImagePatches>>>
LocalEngineClient::prepareImages(const std::vector<std::shared_ptr<const EncodedImage>>& images) {
    std::erase_if(m_prepared, [](const PreparedImage& p) { return p.source.expired(); });
    std::vector<std::shared_ptr<const inference::ImagePatches>> out;
    for (std::size_t i = 0; i < images.size(); ++i) {
        const auto known = std::find_if(m_prepared.begin(), m_prepared.end(), [&](const auto& p) {
            return p.source.lock() == images[i];
        });
        if (known != m_prepared.end()) {
            out.push_back(known->patches);
            continue;
        }
        Result<std::shared_ptr<const inference::ImagePatches>> patches =
            engine().prepareImage(images[i]->bytes);
        if (!patches) return patches.status().withContext("image " + std::to_string(i + 1) + ": ");
        m_prepared.push_back({images[i], *patches});
        out.push_back(*patches);
    }
    return out;
}

void LocalEngineClient::cancel() {
    m_cancelled = true;
}

Result<ChatResponse> LocalEngineClient::complete(const ChatRequest& request,
                                                 const TextStream& onText) {
    m_cancelled = false;
    const Clock::time_point start = Clock::now();
    std::vector<std::shared_ptr<const EncodedImage>> images;
    for (const ChatMessage& message : request.messages) {
        for (const ContentPart& part : message.content) {
            if (part.isImage()) images.push_back(part.image);
        }
    }
    if (!images.empty() && !engine().hasVision()) {
        return Status::unsupported(m_name +
                                   ": this model has no vision tower loaded (pass --mmproj)");
    }
    if (request.maxTokens <= 0)
        return Status::invalidArgument("maxTokens must be positive, not " +
                                       std::to_string(request.maxTokens));
    Result<std::vector<std::shared_ptr<const inference::ImagePatches>>> patches =
        prepareImages(images);
    if (!patches) return patches.status().withContext(m_name + ": ");
    Result<inference::GenerateRequest> prompt = promptRequest(engine(), request, *patches);
    if (!prompt) return prompt.status().withContext(m_name + ": ");
    inference::GenerateRequest generate = std::move(*prompt);
    generate.sampling = m_settings.sampling;
    generate.sampling.temperature = float(request.temperature);
    generate.sampling.topP = float(request.topP);
    if (request.seed) generate.sampling.seed = *request.seed;
    generate.maxTokens = request.maxTokens;
    generate.stopStrings = request.stop;

    std::string text;  // what the pieces add up to; a prefix of it has been streamed
    std::size_t streamed = 0;
    std::optional<Clock::time_point> firstText;
    bool callerStopped = false;
    auto deliver = [&](std::string_view delta) {
        if (delta.empty()) return true;
        if (!firstText) firstText = Clock::now();
        return onText(delta);
    };
    generate.onToken = [&](std::int32_t, std::string_view piece) {
        if (m_cancelled) return false;
        if (!onText) return true;
        text += piece;
        const std::size_t ready = text.size() - inference::stopStringHoldback(text, request.stop);
        if (ready > streamed) {
            const std::string_view delta =
                std::string_view(text).substr(streamed, ready - streamed);
            streamed = ready;
            if (!deliver(delta)) {
                callerStopped = true;
                return false;
            }
        }
        return true;
    };

    // The scheduler calls onToken on this thread; m_cancelled also stops a wait with no token
    // coming (a prompt still being read).
    Result<inference::GenerateResult> result = m_scheduler->generate(generate, &m_cancelled);
    if (!result) return result.status().withContext(m_name + ": ");
    m_lastReused = result->reusedTokens;
    m_lastImagesEncoded = result->imagesEncoded;
    // The caller's "stop" wins even when the scheduler, decoding ahead of the stream, had already
    // finished the answer by the time the callback said it (the last piece can be the one refused).
    if (callerStopped) return Status::cancelled(m_name + ": cancelled by the text callback");
    if (result->stop == inference::StopReason::Cancelled)
        return Status::cancelled(m_name + ": cancelled");
    if (onText && result->text.size() > streamed &&
        !deliver(std::string_view(result->text).substr(streamed))) {
        return Status::cancelled(m_name + ": cancelled by the text callback");
    }

    ChatResponse response;
    response.text = std::move(result->text);
    response.finishReason = finishReason(result->stop);
    response.model = m_name;
    response.promptTokens = int(result->promptTokens);
    response.completionTokens = int(result->tokens.size());
    const Clock::time_point end = Clock::now();
    response.latencyMs = millisecondsBetween(start, end);
    if (firstText) response.timeToFirstTokenMs = millisecondsBetween(start, *firstText);
    return response;
}

}  // namespace iris::agent
