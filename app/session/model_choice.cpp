#include "app/session/model_choice.h"

#include <utility>

#include "agent/clients/local_engine_client.h"
#include "agent/clients/openai_client.h"

namespace iris::app {

Result<std::unique_ptr<agent::ModelClient>> makeModelClient(const ModelChoice& choice,
                                                            LoadProgress onLoadProgress) {
    switch (choice.backend) {
        case ModelChoice::Backend::None:
            break;
        case ModelChoice::Backend::Endpoint: {
            agent::OpenAiSettings settings;
            settings.baseUrl = choice.endpoint;
            settings.model = choice.modelName;
            settings.apiKeyEnv = choice.apiKeyEnv;
            return std::unique_ptr<agent::ModelClient>(
                std::make_unique<agent::OpenAiClient>(std::move(settings)));
        }
        case ModelChoice::Backend::LocalEngine: {
            inference::EngineOptions options;
            options.threads = choice.threads;
            options.contextSize = choice.contextSize;
            options.mmprojPath = choice.mmprojPath;
            options.onLoadProgress = std::move(onLoadProgress);
            Result<std::unique_ptr<agent::LocalEngineClient>> client =
                agent::LocalEngineClient::open(choice.modelPath, options);
            if (!client) return client.status();
            return std::unique_ptr<agent::ModelClient>(std::move(*client));
        }
    }
    return std::unique_ptr<agent::ModelClient>();
}

}  // namespace iris::app
