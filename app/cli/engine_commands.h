#pragma once
// Subcommands that load a model: generate, tokenize, bench, serve. Each returns the process exit code:
// 0 on success, 1 when the work failed (bad model file, prompt too long), 2 for bad usage.

namespace iris::app {

int runGenerate(int argc, char** argv);  // generate_command.cpp
int runTokenize(int argc, char** argv);  // tokenize_command.cpp
int runBench(int argc, char** argv);     // bench_command.cpp
int runServe(int argc, char** argv);     // serve/serve_command.cpp
int runKv(int argc, char** argv);        // kv_command.cpp: iris kv du | gc

}  // namespace iris::app
