#pragma once
// --device for the commands that load a model into Iris's own engine (generate, bench, run,
// serve, ...): auto | cpu | cuda | cuda:N (inference/backend/device.h decides what auto means).
#include <ostream>
#include <string_view>

#include "app/cli/arguments.h"
#include "base/status.h"
#include "inference/backend/device.h"
#include "inference/engine.h"

namespace iris::app {

inline constexpr OptionSpec kDeviceOption = {
    "device", "", true,
    "where the model runs: auto, cpu, cuda or cuda:N (default auto: CUDA when Iris was built "
    "with it and a usable GPU is present, else the CPU with a line saying why)"};

// The --device value (auto when absent); InvalidArgument naming --device and the text.
Result<inference::DeviceChoice> deviceFromArguments(const Arguments& args);

// With auto on the CPU, the engine's one line saying why not CUDA, as "<command>: <note>".
void reportDevice(const inference::Engine& engine, std::string_view command, std::ostream& out);

}  // namespace iris::app
