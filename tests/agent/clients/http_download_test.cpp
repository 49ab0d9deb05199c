#include "agent/clients/http_download.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "tests/inference/models/scratch_dir.h"

namespace iris::agent {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// A real HTTP server on 127.0.0.1 with a file, a redirect, a 404 and a flaky 503.
class HttpDownloadTest : public ::testing::Test {
protected:
    void SetUp() override {
        m_body.assign(300'000, '\0');
        for (std::size_t i = 0; i < m_body.size(); ++i)
            m_body[i] = char((i * 131) % 251);  // binary, not text
        m_server.Get("/gold.bin", [this](const httplib::Request&, httplib::Response& r) {
            r.set_content(m_body, "application/octet-stream");
        });
        m_server.Get("/moved", [](const httplib::Request&, httplib::Response& r) {
            r.set_redirect("/gold.bin");
        });
        m_server.Get("/flaky", [this](const httplib::Request&, httplib::Response& r) {
            if (m_flakyCalls++ == 0) {
                r.status = 503;
                return;
            }
            r.set_content("second time lucky", "text/plain");
        });
        m_port = m_server.bind_to_any_port("127.0.0.1");
        ASSERT_GT(m_port, 0);
        m_thread = std::thread([this] { m_server.listen_after_bind(); });
        while (!m_server.is_running())
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    void TearDown() override {
        m_server.stop();
        if (m_thread.joinable()) m_thread.join();
    }
    std::string url(const std::string& path) const {
        return "http://127.0.0.1:" + std::to_string(m_port) + path;
    }

    httplib::Server m_server;
    std::thread m_thread;
    int m_port = 0;
    std::string m_body;
    std::atomic<int> m_flakyCalls{0};
    inference::testing::ScratchDir m_scratch{"iris_download"};
    const fs::path m_dir = m_scratch.path();
};

TEST_F(HttpDownloadTest, WritesTheBytesAndFollowsRedirects) {
    const fs::path dest = m_dir / "nested" / "gold.bin";
    ASSERT_TRUE(downloadFile(url("/moved"), dest).isOk());
    EXPECT_EQ(readFile(dest), m_body);
    EXPECT_FALSE(fs::exists(dest.string() + ".part"));
}

TEST_F(HttpDownloadTest, RetriesAServerErrorOnce) {
    const fs::path dest = m_dir / "flaky.txt";
    const Status status = downloadFile(url("/flaky"), dest);
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(readFile(dest), "second time lucky");
    EXPECT_EQ(m_flakyCalls.load(), 2);
}

TEST_F(HttpDownloadTest, A404NamesTheUrlAndLeavesNoFile) {
    const fs::path dest = m_dir / "missing.bin";
    const Status status = downloadFile(url("/missing"), dest);
    EXPECT_EQ(status.code(), StatusCode::NotFound);
    EXPECT_NE(status.message().find(url("/missing")), std::string::npos) << status.message();
    EXPECT_FALSE(fs::exists(dest));
    EXPECT_FALSE(fs::exists(dest.string() + ".part"));
}

TEST_F(HttpDownloadTest, RefusesOtherSchemesAndNamesAClosedPort) {
    EXPECT_EQ(downloadFile("file:///etc/passwd", m_dir / "x").code(), StatusCode::InvalidArgument);
    m_server.stop();
    m_thread.join();
    DownloadOptions once;
    once.attempts = 1;
    const Status status = downloadFile(url("/gold.bin"), m_dir / "y", once);
    EXPECT_EQ(status.code(), StatusCode::IoError);
    EXPECT_NE(status.message().find(url("/gold.bin")), std::string::npos) << status.message();
}

}  // namespace
}  // namespace iris::agent
