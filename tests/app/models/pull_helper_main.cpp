// A pull in a process of its own, for the test that kills one with SIGKILL and starts it again:
//   iris_models_pull_helper STORE_DIR ENDPOINT REFERENCE
// Exit status 0 when the model is in the store, 1 with the error on stderr.
#include <iostream>

#include "app/models/model_pull.h"

int main(int argc, char** argv) {
    using namespace iris::app::models;
    if (argc != 4) {
        std::cerr << "usage: iris_models_pull_helper STORE_DIR ENDPOINT REFERENCE\n";
        return 2;
    }
    const ModelStore store(argv[1]);
    PullOptions options;
    options.hub.endpoint = argv[2];
    options.connections = 1;
    const iris::Result<ModelReference> reference = parseModelReference(argv[3]);
    if (!reference) {
        std::cerr << reference.status().message() << '\n';
        return 2;
    }
    const iris::Result<Manifest> manifest = pullModel(store, Catalogue{}, *reference, options);
    if (!manifest) {
        std::cerr << manifest.status().message() << '\n';
        return 1;
    }
    std::cout << "pulled " << manifest->name << ':' << manifest->quant << '\n';
    return 0;
}
