#pragma once
// A ModelClient over an EndpointPool (agent/clients/endpoint_pool.h): each request goes to the
// endpoint the pool picks; when that server fails the way a down or overloaded server fails
// (OpenAiClient::lastFailureWasServer) it is taken out of rotation and the same request goes to
// the next pick, until one answers or every endpoint has failed it. One client per task (like
// OpenAiClient it runs one request at a time); many clients share one pool.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/clients/endpoint_pool.h"
#include "agent/clients/openai_client.h"

namespace iris::agent {

class PooledClient final : public ModelClient {
public:
    // `settings` for every endpoint, with baseUrl replaced by the endpoint's. Each endpoint gets
    // one attempt per request (maxRetries 0): failing over replaces retrying.
    PooledClient(std::shared_ptr<EndpointPool> pool, OpenAiSettings settings);
    ~PooledClient() override;

    // Errors: the answering endpoint's own (a bad request, a broken reply, Cancelled), or, when
    // every endpoint failed, IoError naming each endpoint and its failure. Text that reached
    // `onText` is not sent again: a server that fails after that fails the request.
    Result<ChatResponse> complete(const ChatRequest& request,
                                  const TextStream& onText = {}) override;
    void cancel() override;
    // "openai pool http://a:8000/v1, http://b:8000/v1 model=ui-tars" (labels, no secret).
    std::string describe() const override;
    std::vector<std::string> endpointsUsed() const override;

private:
    OpenAiClient& clientFor(std::size_t index);
    // Sends `request` to endpoint `index`; `failedOver` says whether another may take it.
    Result<ChatResponse> ask(std::size_t index, const ChatRequest& request,
                             const TextStream& onText, bool& failedOver);

    std::shared_ptr<EndpointPool> m_pool;
    OpenAiSettings m_settings;
    std::vector<std::unique_ptr<OpenAiClient>> m_clients;  // per endpoint, made when first used

    mutable std::mutex m_mutex;         // guards m_current and m_used
    OpenAiClient* m_current = nullptr;  // the request in flight, for cancel()
    std::atomic<bool> m_cancelled{false};
    std::vector<std::string> m_used;  // endpoint labels in first-answer order
};

}  // namespace iris::agent
