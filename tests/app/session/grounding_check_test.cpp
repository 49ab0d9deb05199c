// The grounding self-test end to end: the real offscreen browser renders the pages, and a
// scripted OpenAI-compatible endpoint on 127.0.0.1 (cpp-httplib in a thread) answers each step.
// The endpoint finds the page it is asked about from the prompt and answers from the page the
// test generated: its target's true centre, a fixed offset from it, or text that is no action.
#include "app/session/grounding_check.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <QCoreApplication>
#include <QEventLoop>

#include "app/session/model_choice.h"
#include "inference/vision/image_preprocess.h"

namespace iris::app {
namespace {

namespace gr = agent::grounding;

// The model's text for the page a request is about.
using Answer = std::function<std::string(const gr::GroundingPage& page)>;

std::string sseReply(const std::string& text) {
    const nlohmann::json chunk = {{"choices", {{{"index", 0}, {"delta", {{"content", text}}}}}}};
    const nlohmann::json end = {
        {"choices",
         {{{"index", 0}, {"delta", nlohmann::json::object()}, {"finish_reason", "stop"}}}}};
    return "data: " + chunk.dump() + "\n\ndata: " + end.dump() + "\n\ndata: [DONE]\n\n";
}

std::string clickAt(double x, double y) {
    return "<tool_call>" +
           nlohmann::json{{"name", "click"}, {"arguments", {{"x", x}, {"y", y}}}}.dump() +
           "</tool_call>";
}

class GroundingCheckTest : public ::testing::Test {
protected:
    void SetUp() override {
        ::setenv("NO_PROXY", "127.0.0.1", 1);  // a developer's proxy must not see test traffic
        ::setenv("no_proxy", "127.0.0.1", 1);
        m_options.seed = 20261203;
        m_options.pages = 6;
        m_options.screens = {{1024, 768}, {800, 600}};
        gr::PageSetOptions set;
        set.seed = m_options.seed;
        set.count = m_options.pages;
        set.screens = m_options.screens;
        m_pages = gr::generatePages(set);

        m_server.Post("/v1/chat/completions", [this](const httplib::Request& request,
                                                     httplib::Response& response) {
            const gr::GroundingPage* page = pageAskedAbout(request.body);
            if (page && page->index == m_failPage) {
                response.status = 400;
                response.set_content(R"({"error":{"message":"scripted failure"}})",
                                     "application/json");
                return;
            }
            if (!page) {
                response.status = 400;
                response.set_content(R"({"error":{"message":"which page?"}})", "application/json");
                return;
            }
            response.set_content(sseReply(m_answer(*page)), "text/event-stream");
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

    // The next page, in order, whose instruction the request carries (pages ask one after the
    // other, and two pages may share an instruction).
    const gr::GroundingPage* pageAskedAbout(const std::string& body) {
        const nlohmann::json request = nlohmann::json::parse(body, nullptr, false);
        if (request.is_discarded()) return nullptr;
        const std::string text = request.at("messages").dump();
        const std::lock_guard lock(m_mutex);
        for (std::size_t k = 0; k < m_pages.size(); ++k) {
            const std::size_t i = (m_next + k) % m_pages.size();
            const gr::GroundingPage& page = m_pages[i];
            if (text.find(page.instruction) == std::string::npos) continue;
            m_next = i + 1;
            return &page;
        }
        return nullptr;
    }

    std::unique_ptr<agent::ModelClient> client() {
        ModelChoice choice;
        choice.backend = ModelChoice::Backend::Endpoint;
        choice.endpoint = "http://127.0.0.1:" + std::to_string(m_port) + "/v1";
        choice.modelName = "scripted";
        choice.apiKeyEnv = "IRIS_GROUNDING_TEST_UNSET_KEY";
        Result<std::unique_ptr<agent::ModelClient>> made = makeModelClient(choice);
        EXPECT_TRUE(made.isOk()) << made.status().message();
        return made ? std::move(*made) : nullptr;
    }

    gr::GroundingReport check() {
        std::unique_ptr<agent::ModelClient> model = client();
        Result<gr::GroundingReport> report = runGroundingCheck(*model, m_options);
        EXPECT_TRUE(report.isOk()) << report.status().message();
        return report ? *report : gr::GroundingReport{};
    }

    // Every page ran, in order, on its screen, and the box measured in the browser is the box
    // the generator placed.
    void expectEveryPageMeasured(const gr::GroundingReport& report) {
        ASSERT_EQ(report.pages.size(), m_pages.size());
        for (std::size_t i = 0; i < m_pages.size(); ++i) {
            const gr::PageOutcome& o = report.pages[i];
            const gr::PageElement& target = m_pages[i].elements[std::size_t(m_pages[i].target)];
            EXPECT_EQ(o.page, int(i));
            EXPECT_EQ(o.screen, m_pages[i].screen);
            EXPECT_EQ(o.label, target.label);
            EXPECT_DOUBLE_EQ(o.target.left, target.box.left) << "page " << i;
            EXPECT_DOUBLE_EQ(o.target.top, target.box.top) << "page " << i;
            EXPECT_DOUBLE_EQ(o.target.width, target.box.width) << "page " << i;
            EXPECT_DOUBLE_EQ(o.target.height, target.box.height) << "page " << i;
        }
    }

    GroundingCheckOptions m_options;
    std::vector<gr::GroundingPage> m_pages;
    Answer m_answer;
    httplib::Server m_server;
    std::thread m_thread;
    int m_port = 0;
    std::mutex m_mutex;
    std::size_t m_next = 0;
    int m_failPage = -1;  // the page whose request gets an HTTP 400
};

TEST_F(GroundingCheckTest, TheTrueCentreHitsEveryTargetAtDistanceZero) {
    m_answer = [](const gr::GroundingPage& page) {
        const gr::Box& box = page.elements[std::size_t(page.target)].box;
        return clickAt(box.left + box.width / 2.0, box.top + box.height / 2.0);
    };
    const gr::GroundingReport report = check();
    expectEveryPageMeasured(report);
    const gr::GroupStats all = gr::overallStats(report);
    EXPECT_EQ(all.hits, 6);
    EXPECT_DOUBLE_EQ(all.hitRate, 1.0);
    EXPECT_EQ(all.parseErrors, 0);
    ASSERT_TRUE(all.medianDistance && all.p90Distance);
    EXPECT_DOUBLE_EQ(*all.medianDistance, 0.0);
    EXPECT_DOUBLE_EQ(*all.p90Distance, 0.0);
    ASSERT_TRUE(all.medianStepMs);
    EXPECT_GT(*all.medianStepMs, 0.0);
    EXPECT_EQ(gr::statsByScreen(report).size(), 2u);
    EXPECT_EQ(report.actionFormat, "tools");
    EXPECT_EQ(report.coordinateFrame, "pixels");
}

TEST_F(GroundingCheckTest, AFixedOffsetIsMeasuredExactly) {
    // (-24, -32) from the centre: 40 px away, inside only targets more than 48 x 64 px.
    m_answer = [](const gr::GroundingPage& page) {
        const gr::Box& box = page.elements[std::size_t(page.target)].box;
        return clickAt(box.left + box.width / 2.0 - 24, box.top + box.height / 2.0 - 32);
    };
    const gr::GroundingReport report = check();
    expectEveryPageMeasured(report);
    int expectedHits = 0;
    for (const gr::GroundingPage& page : m_pages) {
        const gr::Box& box = page.elements[std::size_t(page.target)].box;
        const double x = box.left + box.width / 2.0 - 24;
        const double y = box.top + box.height / 2.0 - 32;
        expectedHits += x >= box.left && y >= box.top;
    }
    for (const gr::PageOutcome& o : report.pages) {
        ASSERT_TRUE(o.click) << gr::pageLine(o);
        EXPECT_NEAR(gr::distanceToCentre(o.target, *o.click), 40.0, 1e-9) << gr::pageLine(o);
    }
    const gr::GroupStats all = gr::overallStats(report);
    EXPECT_EQ(all.hits, expectedHits);
    EXPECT_EQ(all.misses, 6 - expectedHits);
    EXPECT_NEAR(*all.medianDistance, 40.0, 1e-9);
    EXPECT_NEAR(*all.p90Distance, 40.0, 1e-9);
}

TEST_F(GroundingCheckTest, GarbageIsAParseErrorOnEveryPage) {
    m_answer = [](const gr::GroundingPage&) {
        return std::string("I would rather describe the page: it has some buttons.");
    };
    const gr::GroundingReport report = check();
    expectEveryPageMeasured(report);
    const gr::GroupStats all = gr::overallStats(report);
    EXPECT_EQ(all.hits, 0);
    EXPECT_DOUBLE_EQ(all.hitRate, 0.0);
    EXPECT_EQ(all.parseErrors, 6);
    EXPECT_FALSE(all.medianDistance);
    for (const gr::PageOutcome& o : report.pages) {
        EXPECT_EQ(o.verdict, gr::PageVerdict::ParseError);
        EXPECT_FALSE(o.problem.empty());
    }
}

// The 0..1000 frame: the endpoint answers the centre rounded to thousandths of the screen; the
// click lands within half a thousandth of each side of it.
TEST_F(GroundingCheckTest, TheRelative1000FrameIsWithinItsRounding) {
    m_options.frame = agent::CoordinateFrame{agent::CoordinateFrame::Kind::Relative1000, 0, 0};
    m_answer = [](const gr::GroundingPage& page) {
        const gr::Box& box = page.elements[std::size_t(page.target)].box;
        const double x = (box.left + box.width / 2.0) * 1000 / page.screen.width;
        const double y = (box.top + box.height / 2.0) * 1000 / page.screen.height;
        return clickAt(std::round(x), std::round(y));
    };
    const gr::GroundingReport report = check();
    expectEveryPageMeasured(report);
    const gr::GroupStats all = gr::overallStats(report);
    EXPECT_EQ(all.hits, 6);
    for (const gr::PageOutcome& o : report.pages) {
        ASSERT_TRUE(o.click);
        const double halfX = o.screen.width / 2000.0;
        const double halfY = o.screen.height / 2000.0;
        EXPECT_LE(gr::distanceToCentre(o.target, *o.click), std::hypot(halfX, halfY) + 1e-9);
    }
    EXPECT_EQ(report.coordinateFrame, "relative1000");
}

// UI-TARS syntax in the frame of each screen's smart resize (--coords resized): the endpoint
// answers the centre in whole pixels of the resized image, which maps back to within half a
// resized pixel of the centre on each axis.
TEST_F(GroundingCheckTest, TheResizedFrameFollowsEachScreenInUiTarsSyntax) {
    m_options.format = agent::ActionFormat::UiTars;
    m_options.resizedFramePerScreen = true;
    m_answer = [](const gr::GroundingPage& page) {
        const Result<inference::ImageSize> resized = inference::smartResize(
            page.screen.width, page.screen.height, inference::ImagePreprocessOptions{});
        EXPECT_TRUE(resized.isOk());
        const gr::Box& box = page.elements[std::size_t(page.target)].box;
        const double x = (box.left + box.width / 2.0) * resized->width / page.screen.width;
        const double y = (box.top + box.height / 2.0) * resized->height / page.screen.height;
        return "Thought: there it is.\nAction: click(start_box='(" +
               std::to_string(std::lround(x)) + "," + std::to_string(std::lround(y)) + ")')";
    };
    const gr::GroundingReport report = check();
    expectEveryPageMeasured(report);
    EXPECT_EQ(gr::overallStats(report).hits, 6);
    for (const gr::PageOutcome& o : report.pages) {
        ASSERT_TRUE(o.click) << gr::pageLine(o);
        const Result<inference::ImageSize> resized = inference::smartResize(
            o.screen.width, o.screen.height, inference::ImagePreprocessOptions{});
        const double halfX = 0.5 * o.screen.width / resized->width;
        const double halfY = 0.5 * o.screen.height / resized->height;
        EXPECT_LE(std::abs(o.click->x - (o.target.left + o.target.width / 2)), halfX + 1e-9);
        EXPECT_LE(std::abs(o.click->y - (o.target.top + o.target.height / 2)), halfY + 1e-9);
    }
    EXPECT_EQ(report.actionFormat, "uitars");
    EXPECT_EQ(report.coordinateFrame, "resized");
}

// A model call that fails after the first page is that page's model error; the check goes on.
TEST_F(GroundingCheckTest, ALaterModelErrorIsCountedAndTheCheckGoesOn) {
    m_failPage = 2;
    m_answer = [](const gr::GroundingPage& page) {
        const gr::Box& box = page.elements[std::size_t(page.target)].box;
        return clickAt(box.left + box.width / 2.0, box.top + box.height / 2.0);
    };
    const gr::GroundingReport report = check();
    ASSERT_EQ(report.pages.size(), 6u);
    EXPECT_EQ(report.pages[2].verdict, gr::PageVerdict::ModelError);
    EXPECT_NE(report.pages[2].problem.find("scripted failure"), std::string::npos)
        << report.pages[2].problem;
    const gr::GroupStats all = gr::overallStats(report);
    EXPECT_EQ(all.hits, 5);
    EXPECT_EQ(all.modelErrors, 1);
}

// A first model call that fails is an error of the check, not a model that never clicks.
TEST_F(GroundingCheckTest, AFirstModelCallThatFailsEndsTheCheck) {
    m_failPage = 0;
    m_answer = [](const gr::GroundingPage&) { return std::string("unused"); };
    std::unique_ptr<agent::ModelClient> model = client();
    const Result<gr::GroundingReport> report = runGroundingCheck(*model, m_options);
    ASSERT_FALSE(report.isOk());
    EXPECT_NE(report.status().message().find("the first page's model call failed"),
              std::string::npos)
        << report.status().message();
    EXPECT_NE(report.status().message().find("scripted failure"), std::string::npos)
        << report.status().message();
}

// As the GUI runs it: the check on a worker thread, the browsers on this (the Qt) thread, and a
// stop request after the second page.
TEST_F(GroundingCheckTest, RunsFromAWorkerThreadAndStopsBetweenPages) {
    m_answer = [](const gr::GroundingPage& page) {
        const gr::Box& box = page.elements[std::size_t(page.target)].box;
        return clickAt(box.left + box.width / 2.0, box.top + box.height / 2.0);
    };
    std::unique_ptr<agent::ModelClient> model = client();
    std::atomic<bool> stop{false};
    std::atomic<bool> finished{false};
    std::optional<Result<gr::GroundingReport>> report;
    std::vector<int> progress;
    std::thread worker([&] {
        report = runGroundingCheck(
            *model, m_options,
            [&](const gr::PageOutcome&, int done, int total) {
                progress.push_back(done);
                EXPECT_EQ(total, 6);
                if (done == 2) stop = true;
            },
            &stop, QCoreApplication::instance());
        finished = true;
    });
    while (!finished)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    worker.join();
    ASSERT_TRUE(report && report->isOk()) << (report ? report->status().message() : "no report");
    EXPECT_TRUE((*report)->stopped);
    EXPECT_EQ((*report)->pages.size(), 2u);
    EXPECT_EQ(progress, (std::vector<int>{1, 2}));
    EXPECT_EQ(gr::overallStats(**report).hits, 2);
}

}  // namespace
}  // namespace iris::app
