// Not part of the Iris build: a small program against llama.cpp's C API (include/llama.h) that
// made fixtures/*.logits.txt; make_fixtures.sh builds and runs it (see ../README.md).
//
//   llama_parity_driver MODEL.gguf N_DECODE f16|f32 ID ID ...
//
// Loads MODEL on the CPU backend (2 threads, flash attention on, KV cache of the given type),
// evaluates the ids in one llama_decode with logits for every position and prints them, one row
// per position (%.9g), then decodes N_DECODE tokens greedily, one llama_decode each, and prints
// their ids ("# greedy") and the top-1 minus top-2 logit each was chosen by ("# margins").
// DRIVER_NO_FA=1 turns flash attention off; DRIVER_VERBOSE=1 shows llama.cpp's log.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ggml.h"
#include "llama.h"

// top1 - top2 of a row
static float margin(const float* l, int V) {
    float a = -1e30f, b = -1e30f;
    for (int v = 0; v < V; ++v) {
        if (l[v] > a) {
            b = a;
            a = l[v];
        } else if (l[v] > b) {
            b = l[v];
        }
    }
    return a - b;
}

static void quiet(ggml_log_level level, const char* text, void*) {
    if (level >= GGML_LOG_LEVEL_WARN || getenv("DRIVER_VERBOSE")) fputs(text, stderr);
}

int main(int argc, char** argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s model.gguf n_decode f32|f16 ids...\n", argv[0]);
        return 2;
    }
    const char* path = argv[1];
    const int nDecode = atoi(argv[2]);
    const bool f32 = strcmp(argv[3], "f32") == 0;
    std::vector<llama_token> ids;
    for (int i = 4; i < argc; ++i)
        ids.push_back(atoi(argv[i]));
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model* model = llama_model_load_from_file(path, mp);
    if (!model) {
        fprintf(stderr, "load failed: %s\n", path);
        return 1;
    }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = 256;
    cp.n_ubatch = 256;
    cp.n_seq_max = 1;
    cp.n_threads = 2;
    cp.n_threads_batch = 2;
    cp.flash_attn_type =
        getenv("DRIVER_NO_FA") ? LLAMA_FLASH_ATTN_TYPE_DISABLED : LLAMA_FLASH_ATTN_TYPE_ENABLED;
    cp.type_k = f32 ? GGML_TYPE_F32 : GGML_TYPE_F16;
    cp.type_v = f32 ? GGML_TYPE_F32 : GGML_TYPE_F16;
    cp.no_perf = true;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "context failed\n");
        return 1;
    }
    const int V = llama_vocab_n_tokens(llama_model_get_vocab(model));
    const int n = (int)ids.size();
    llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; ++i) {
        b.token[i] = ids[i];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = n;
    if (llama_decode(ctx, b) != 0) {
        fprintf(stderr, "decode failed\n");
        return 1;
    }
    printf("# vocab %d tokens %d kv %s\n# ids", V, n, f32 ? "f32" : "f16");
    for (int id : ids)
        printf(" %d", id);
    printf("\n");
    int next = 0;
    float nextMargin = 0;
    for (int i = 0; i < n; ++i) {
        const float* l = llama_get_logits_ith(ctx, i);
        int best = 0;
        for (int v = 0; v < V; ++v) {
            printf(v ? " %.9g" : "%.9g", l[v]);
            if (l[v] > l[best]) best = v;
        }
        printf("\n");
        next = best;
        nextMargin = margin(l, V);
    }
    // greedy decoding, one token per call
    std::vector<int> greedy;
    std::vector<float> margins;
    for (int s = 0; s < nDecode; ++s) {
        greedy.push_back(next);
        margins.push_back(nextMargin);
        llama_batch one = llama_batch_init(1, 0, 1);
        one.token[0] = next;
        one.pos[0] = n + s;
        one.n_seq_id[0] = 1;
        one.seq_id[0][0] = 0;
        one.logits[0] = 1;
        one.n_tokens = 1;
        if (llama_decode(ctx, one) != 0) {
            fprintf(stderr, "decode step failed\n");
            return 1;
        }
        const float* l = llama_get_logits_ith(ctx, 0);
        int best = 0;
        for (int v = 1; v < V; ++v)
            if (l[v] > l[best]) best = v;
        next = best;
        nextMargin = margin(l, V);
        llama_batch_free(one);
    }
    printf("# greedy");
    for (int id : greedy)
        printf(" %d", id);
    printf("\n# margins");
    for (float m : margins)
        printf(" %.9g", m);
    printf("\n");
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
