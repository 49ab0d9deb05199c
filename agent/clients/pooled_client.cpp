#include "agent/clients/pooled_client.h"

#include <algorithm>
#include <utility>

namespace iris::agent {

PooledClient::PooledClient(std::shared_ptr<EndpointPool> pool, OpenAiSettings settings)
    : m_pool(std::move(pool)), m_settings(std::move(settings)), m_clients(m_pool->size()) {
    m_settings.maxRetries = 0;
}

PooledClient::~PooledClient() = default;

OpenAiClient& PooledClient::clientFor(std::size_t index) {
    if (!m_clients[index]) {
        OpenAiSettings settings = m_settings;
        settings.baseUrl = m_pool->baseUrl(index);
        m_clients[index] = std::make_unique<OpenAiClient>(std::move(settings));
    }
    return *m_clients[index];
}

Result<ChatResponse> PooledClient::complete(const ChatRequest& request, const TextStream& onText) {
    m_cancelled = false;
    std::vector<bool> tried(m_pool->size(), false);
    std::vector<std::string> failures;
    while (std::optional<std::size_t> index = m_pool->pick(tried)) {
        tried[*index] = true;
        bool failedOver = false;
        Result<ChatResponse> answer = ask(*index, request, onText, failedOver);
        if (!failedOver) return answer;
        failures.push_back(answer.status().message());
    }
    std::string message = "every endpoint failed (" + std::to_string(failures.size()) + "): ";
    for (std::size_t i = 0; i < failures.size(); ++i)
        message += (i ? "; " : "") + failures[i];
    return Status::ioError(std::move(message));
}

Result<ChatResponse> PooledClient::ask(std::size_t index, const ChatRequest& request,
                                       const TextStream& onText, bool& failedOver) {
    OpenAiClient& client = clientFor(index);
    {
        const std::lock_guard lock(m_mutex);
        m_current = &client;
    }
    bool shown = false;
    const TextStream counted = onText ? TextStream([&](std::string_view delta) {
        shown = true;
        return onText(delta);
    })
                                      : TextStream();
    // A cancel() before m_current was set finds nothing to cancel: look once more.
    Result<ChatResponse> answer =
        m_cancelled
            ? Result<ChatResponse>(Status::cancelled(
                  "POST " + endpointLabel(m_pool->baseUrl(index)) + "/chat/completions: cancelled"))
            : client.complete(request, counted);
    {
        const std::lock_guard lock(m_mutex);
        m_current = nullptr;
        if (answer) {
            const std::string label = endpointLabel(m_pool->baseUrl(index));
            if (std::find(m_used.begin(), m_used.end(), label) == m_used.end())
                m_used.push_back(label);
        }
    }
    if (answer) {
        m_pool->release(index, EndpointPool::Outcome::Answered);
        return answer;
    }
    const bool serverFailed = client.lastFailureWasServer();
    m_pool->release(index,
                    serverFailed ? EndpointPool::Outcome::Down : EndpointPool::Outcome::Failed,
                    answer.status().message());
    failedOver = serverFailed && !shown && !m_cancelled;
    return answer;
}

void PooledClient::cancel() {
    m_cancelled = true;
    const std::lock_guard lock(m_mutex);
    if (m_current != nullptr) m_current->cancel();
}

std::string PooledClient::describe() const {
    std::string text = "openai pool ";
    for (std::size_t i = 0; i < m_pool->size(); ++i)
        text += (i ? ", " : "") + endpointLabel(m_pool->baseUrl(i));
    return text + " model=" + m_settings.model;
}

std::vector<std::string> PooledClient::endpointsUsed() const {
    const std::lock_guard lock(m_mutex);
    return m_used;
}

}  // namespace iris::agent
