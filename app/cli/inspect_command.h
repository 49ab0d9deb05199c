#pragma once

#include <ostream>

#include "inference/gguf/gguf_file.h"

namespace iris::app {

// `iris inspect FILE.gguf`: header, metadata and the tensor table of a GGUF file.
int runInspect(int argc, char** argv);

// The report runInspect prints for an opened file.
void printGgufReport(const inference::GgufFile& file, std::ostream& out);

}  // namespace iris::app
