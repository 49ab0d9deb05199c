// The "Check Grounding" dialog: without a model it cannot start; with an endpoint (a scripted
// server on 127.0.0.1 that answers no action) it runs the check off the GUI thread, shows a line
// per page and then the report.
#include "app/gui/grounding_dialog.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include <QPixmap>
#include <QPushButton>
#include <QSignalSpy>

namespace iris::app {
namespace {

TEST(GroundingDialogTest, WithoutAModelItCannotStart) {
    AppSettings settings;
    settings.backend = AppSettings::Backend::Local;
    settings.modelPath.clear();
    GroundingDialog dialog(settings);
    QSignalSpy finished(&dialog, &GroundingDialog::finished);
    dialog.start();  // no model: the check fails at once and says why
    ASSERT_TRUE(finished.count() == 1 || finished.wait(60000));
    EXPECT_FALSE(finished.at(0).at(0).toBool());
    EXPECT_FALSE(dialog.isRunning());
}

TEST(GroundingDialogTest, RunsTheCheckAndShowsTheReport) {
    ::setenv("NO_PROXY", "127.0.0.1", 1);
    ::setenv("no_proxy", "127.0.0.1", 1);
    httplib::Server server;
    server.Post("/v1/chat/completions", [](const httplib::Request&, httplib::Response& response) {
        response.set_content(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"no idea\"}}]}\n\n"
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
            "data: [DONE]\n\n",
            "text/event-stream");
    });
    const int port = server.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    std::thread thread([&] { server.listen_after_bind(); });
    while (!server.is_running())
        std::this_thread::sleep_for(std::chrono::milliseconds(1));

    AppSettings settings;
    settings.backend = AppSettings::Backend::Endpoint;
    settings.endpointUrl = QStringLiteral("http://127.0.0.1:%1/v1").arg(port);
    settings.endpointModelName = QStringLiteral("scripted");
    settings.apiKeyEnv = QStringLiteral("IRIS_GROUNDING_DIALOG_TEST_UNSET_KEY");
    GroundingDialog dialog(settings);
    dialog.setPages(2, 7);
    QSignalSpy finished(&dialog, &GroundingDialog::finished);
    dialog.start();
    EXPECT_TRUE(dialog.isRunning());
    ASSERT_TRUE(finished.wait(120000));
    EXPECT_TRUE(finished.at(0).at(0).toBool());
    const QString log = dialog.logText();
    EXPECT_TRUE(log.contains(QStringLiteral("page 1 "))) << log.toStdString();
    EXPECT_TRUE(log.contains(QStringLiteral("page 2 "))) << log.toStdString();
    EXPECT_TRUE(log.contains(QStringLiteral("hit rate: 0.0% (0/2)"))) << log.toStdString();
    EXPECT_TRUE(log.contains(QStringLiteral("parse errors: 2"))) << log.toStdString();
    dialog.resize(900, 600);
    EXPECT_TRUE(dialog.grab().save(QStringLiteral(IRIS_TEST_ARTIFACTS "/grounding_dialog.png")));
    server.stop();
    thread.join();
}

}  // namespace
}  // namespace iris::app
