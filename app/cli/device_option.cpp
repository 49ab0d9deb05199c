#include "app/cli/device_option.h"

namespace iris::app {

Result<inference::DeviceChoice> deviceFromArguments(const Arguments& args) {
    return inference::parseDevice(args.value("device").value_or("auto"));
}

void reportDevice(const inference::Engine& engine, std::string_view command, std::ostream& out) {
    if (!engine.deviceNote().empty()) out << command << ": " << engine.deviceNote() << '\n';
}

}  // namespace iris::app
