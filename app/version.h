#pragma once

#include <string>

namespace iris::app {

// What `iris --version` and Help > About show: version, build type, compiler, CPU features and the
// kernel level they select, and whether CUDA was compiled in (with the devices it sees).
std::string versionText();

}  // namespace iris::app
