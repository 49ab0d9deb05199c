// Settings ▸ Models (app/gui/models_panel.h) against the fake hub on loopback
// (tests/app/models/fake_hub.h): a pull with progress, a cancel that leaves a resumable partial
// file, and "Use" handing over the model with its projector.
#include "app/gui/models_panel.h"

#include <gtest/gtest.h>

#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>
#include <QTreeWidget>

#include "base/temporary_folder.h"
#include "tests/app/models/fake_hub.h"

namespace iris::app {
namespace {
using models::testing::FakeHub;
using models::testing::fileContent;

class ModelsPanelTest : public ::testing::Test {
protected:
    void SetUp() override {
        Result<TemporaryFolder> folder = TemporaryFolder::create("iris-models-panel");
        ASSERT_TRUE(folder);
        m_folder.emplace(std::move(*folder));
        hub.files = {{"tiny-Q4_K_M.gguf", fileContent(400000, 1), ""},
                     {"mmproj-tiny-f16.gguf", fileContent(50000, 2), ""}};
    }
    ModelsPanelOptions options() const {
        ModelsPanelOptions o;
        o.storeDirectory = m_folder->path() / "store";
        o.cataloguePath =
            std::filesystem::path(IRIS_SOURCE_ROOT) / "resources/models/catalogue.json";
        o.hub.endpoint = hub.endpoint();
        o.hub.token.clear();
        return o;
    }
    static QString rowText(QTreeWidget* list, int column) {
        QStringList rows;
        for (int i = 0; i < list->topLevelItemCount(); ++i)
            rows << list->topLevelItem(i)->text(column);
        return rows.join(QLatin1Char('|'));
    }

    FakeHub hub;
    std::optional<TemporaryFolder> m_folder;
};

TEST_F(ModelsPanelTest, ListsTheCataloguePullsAndUsesTheModelWithItsProjector) {
    ModelsPanel panel(options());
    auto* list = panel.findChild<QTreeWidget*>(QStringLiteral("modelsList"));
    ASSERT_NE(list, nullptr);
    EXPECT_TRUE(rowText(list, 0).contains(QStringLiteral("ui-tars-1.5-7b")));

    panel.findChild<QLineEdit*>(QStringLiteral("modelReference"))
        ->setText(QStringLiteral("test/tiny-GGUF"));
    QTest::mouseClick(panel.findChild<QPushButton*>(QStringLiteral("pullModel")), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!panel.pulling(), 20000);
    auto* status = panel.findChild<QLabel*>(QStringLiteral("pullStatus"));
    QTRY_COMPARE_WITH_TIMEOUT(status->text(), QStringLiteral("Pulled test/tiny-GGUF:Q4_K_M"), 5000);
    ASSERT_TRUE(rowText(list, 0).startsWith(QStringLiteral("test/tiny-GGUF|")));
    EXPECT_EQ(list->topLevelItem(0)->text(3), QStringLiteral("pulled, with vision"));

    QSignalSpy chosen(&panel, &ModelsPanel::modelChosen);
    list->setCurrentItem(list->topLevelItem(0));
    QTest::mouseClick(panel.findChild<QPushButton*>(QStringLiteral("useModel")), Qt::LeftButton);
    ASSERT_EQ(chosen.count(), 1);
    const models::ModelStore store(options().storeDirectory);
    EXPECT_EQ(chosen[0][0].toString().toStdString(),
              store.blobPath(FakeHub::sha256Hex(hub.files[0].content)).string());
    EXPECT_EQ(chosen[0][1].toString().toStdString(),
              store.blobPath(FakeHub::sha256Hex(hub.files[1].content)).string());
}

// The model bundled with Iris needs no pull: its row can be used at once, with its own files.
TEST_F(ModelsPanelTest, TheBundledModelIsUsableWithoutAPull) {
    ModelsPanel panel(options());
    auto* list = panel.findChild<QTreeWidget*>(QStringLiteral("modelsList"));
    ASSERT_NE(list, nullptr);
    QTreeWidgetItem* bundled = nullptr;
    for (int i = 0; i < list->topLevelItemCount(); ++i)
        if (list->topLevelItem(i)->text(0) == QStringLiteral("iris-tiny-cua"))
            bundled = list->topLevelItem(i);
    ASSERT_NE(bundled, nullptr) << rowText(list, 0).toStdString();
    EXPECT_EQ(bundled->text(3), QStringLiteral("bundled with Iris"));
    QSignalSpy chosen(&panel, &ModelsPanel::modelChosen);
    list->setCurrentItem(bundled);
    QTest::mouseClick(panel.findChild<QPushButton*>(QStringLiteral("useModel")), Qt::LeftButton);
    ASSERT_EQ(chosen.count(), 1);
    const std::filesystem::path folder =
        std::filesystem::path(IRIS_SOURCE_ROOT) / "resources/models/iris-tiny-cua";
    EXPECT_EQ(chosen[0][0].toString().toStdString(), (folder / "iris-tiny-cua-f16.gguf").string());
    EXPECT_EQ(chosen[0][1].toString().toStdString(),
              (folder / "mmproj-iris-tiny-cua-f16.gguf").string());
    EXPECT_EQ(chosen[0][2].toString(), QStringLiteral("uitars"));
}

TEST_F(ModelsPanelTest, CancelKeepsThePartialFileAndTheNextPullResumesIt) {
    hub.sleepPerChunkUs = 5000;
    ModelsPanel panel(options());
    panel.findChild<QLineEdit*>(QStringLiteral("modelReference"))
        ->setText(QStringLiteral("test/tiny-GGUF"));
    QTest::mouseClick(panel.findChild<QPushButton*>(QStringLiteral("pullModel")), Qt::LeftButton);
    auto* progress = panel.findChild<QProgressBar*>(QStringLiteral("pullProgress"));
    QTRY_VERIFY_WITH_TIMEOUT(progress->value() > 0, 20000);
    QTest::mouseClick(panel.findChild<QPushButton*>(QStringLiteral("cancelPull")), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!panel.pulling(), 20000);
    auto* status = panel.findChild<QLabel*>(QStringLiteral("pullStatus"));
    QTRY_COMPARE_WITH_TIMEOUT(
        status->text(), QStringLiteral("Stopped; pull again to resume where it stopped."), 5000);
    const models::ModelStore store(options().storeDirectory);
    const std::string sha = FakeHub::sha256Hex(hub.files[0].content);
    ASSERT_TRUE(std::filesystem::exists(store.blobPath(sha).string() + ".part"));
    const std::uint64_t kept = std::filesystem::file_size(store.blobPath(sha).string() + ".part");

    hub.sleepPerChunkUs = 0;
    QTest::qWait(100);  // the cancelled connection's last chunk
    const std::uint64_t before = hub.bytesServed;
    QTest::mouseClick(panel.findChild<QPushButton*>(QStringLiteral("pullModel")), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(status->text(), QStringLiteral("Pulled test/tiny-GGUF:Q4_K_M"),
                              20000);
    EXPECT_EQ(hub.bytesServed - before, (400000u - kept) + 50000u);
    EXPECT_TRUE(store.hasBlob(sha));
}

}  // namespace
}  // namespace iris::app
