// Not part of the Iris build: a small program against llama.cpp's C API (include/llama.h,
// tools/mtmd/mtmd.h, mtmd-helper.h) that made fixtures/*.embd.txt; make_vision_fixtures.sh
// builds and runs it (see ../README.md).
//
//   llama_vision_driver MODEL.gguf MMPROJ.gguf IMAGE...
//
// Loads the text model (only so that libmtmd can check the projector's output width against it)
// and the projector on the CPU backend (2 threads, flash attention off: with it on, clip.cpp
// casts K and V to f16), then for each image: reads it with mtmd_helper_bitmap_init_from_file,
// tokenizes "<__media__>" with it, encodes the image chunk and prints (after one line
// "# system ..." with llama_print_system_info())
//   # image FILE width W height H
//   # tokens N embd E nx NX ny NY
// (NX x NY: the merged-token grid) and N rows of E embeddings (%.9g). DRIVER_FA=1 turns flash
// attention on; DRIVER_VERBOSE=1 shows llama.cpp's log.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ggml.h"
#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

static void quiet(ggml_log_level level, const char* text, void*) {
    if (level >= GGML_LOG_LEVEL_WARN || getenv("DRIVER_VERBOSE")) fputs(text, stderr);
}

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

int main(int argc, char** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s model.gguf mmproj.gguf image...\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet, nullptr);
    mtmd_helper_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "load failed: %s\n", argv[1]);
        return 1;
    }
    mtmd_context_params cp = mtmd_context_params_default();
    cp.use_gpu = false;
    cp.print_timings = false;
    cp.n_threads = 2;
    cp.warmup = false;
    cp.flash_attn_type =
        getenv("DRIVER_FA") ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    mtmd_context* ctx = mtmd_init_from_file(argv[2], model, cp);
    if (!ctx) {
        fprintf(stderr, "mtmd_init_from_file failed: %s\n", argv[2]);
        return 1;
    }
    const int embd = llama_model_n_embd_inp(model);
    printf("# system %s\n", llama_print_system_info());
    for (int i = 3; i < argc; ++i) {
        mtmd_helper_bitmap_wrapper image = mtmd_helper_bitmap_init_from_file(ctx, argv[i], false);
        if (!image.bitmap) {
            fprintf(stderr, "cannot read image %s\n", argv[i]);
            return 1;
        }
        const std::string prompt = mtmd_default_marker();
        mtmd_input_text text = {prompt.c_str(), prompt.size(), false, true};
        mtmd_input_chunks* chunks = mtmd_input_chunks_init();
        const mtmd_bitmap* bitmaps[] = {image.bitmap};
        if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) {
            fprintf(stderr, "mtmd_tokenize failed for %s\n", argv[i]);
            return 1;
        }
        const mtmd_input_chunk* chunk = nullptr;
        for (size_t c = 0; c < mtmd_input_chunks_size(chunks); ++c) {
            const mtmd_input_chunk* k = mtmd_input_chunks_get(chunks, c);
            if (mtmd_input_chunk_get_type(k) == MTMD_INPUT_CHUNK_TYPE_IMAGE) chunk = k;
        }
        if (!chunk) {
            fprintf(stderr, "no image chunk for %s\n", argv[i]);
            return 1;
        }
        const mtmd_image_tokens* tokens = mtmd_input_chunk_get_tokens_image(chunk);
        const size_t n = mtmd_input_chunk_get_n_tokens(chunk);
        if (mtmd_encode_chunk(ctx, chunk) != 0) {
            fprintf(stderr, "mtmd_encode_chunk failed for %s\n", argv[i]);
            return 1;
        }
        const float* out = mtmd_get_output_embd(ctx);
        const char* name = strrchr(argv[i], '/');
        printf("# image %s width %u height %u\n", name ? name + 1 : argv[i],
               mtmd_bitmap_get_nx(image.bitmap), mtmd_bitmap_get_ny(image.bitmap));
        printf("# tokens %zu embd %d nx %zu ny %zu\n", n, embd, mtmd_image_tokens_get_nx(tokens),
               mtmd_image_tokens_get_ny(tokens));
        for (size_t t = 0; t < n; ++t) {
            for (int e = 0; e < embd; ++e)
                printf(e ? " %.9g" : "%.9g", out[t * size_t(embd) + size_t(e)]);
            printf("\n");
        }
        mtmd_input_chunks_free(chunks);
        mtmd_bitmap_free(image.bitmap);
    }
    mtmd_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
