#include "app/cli/command_line.h"

#include <array>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "app/version.h"

namespace iris::app {
namespace {

// app/main.cpp passes app/gui's runGui; no test here names the gui subcommand.
int noGui(int /*argc*/, char** /*argv*/) {
    ADD_FAILURE() << "the GUI was started";
    return 1;
}

int run(std::initializer_list<const char*> args, std::string& out, std::string& err) {
    std::vector<std::string> storage(args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : storage)
        argv.push_back(s.data());
    argv.push_back(nullptr);
    std::ostringstream o, e;
    const int code = runCommandLine(int(storage.size()), argv.data(), o, e, noGui);
    out = o.str();
    err = e.str();
    return code;
}

TEST(CommandLine, HelpListsEverySubcommand) {
    std::string out, err;
    ASSERT_EQ(run({"iris", "--help"}, out, err), 0);
    for (const Subcommand& command : subcommands()) {
        EXPECT_NE(out.find("  " + std::string(command.name) + " "), std::string::npos)
            << command.name;
    }
    EXPECT_TRUE(err.empty());
}

TEST(CommandLine, VersionNamesBuildCpuAndCuda) {
    std::string out, err;
    ASSERT_EQ(run({"iris", "--version"}, out, err), 0);
    EXPECT_EQ(out, versionText());
    for (const char* field : {"iris ", "build: ", "cpu features: ", "cpu kernels: ", "cuda: "}) {
        EXPECT_NE(out.find(field), std::string::npos) << field;
    }
}

TEST(CommandLine, UnknownSubcommandIsAnErrorNamingIt) {
    std::string out, err;
    EXPECT_EQ(run({"iris", "frobnicate"}, out, err), 2);
    EXPECT_NE(err.find("'frobnicate'"), std::string::npos) << err;
    EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace iris::app
