#include "app/gui/action_overlay.h"

#include <gtest/gtest.h>

#include <QDir>
#include <QLinearGradient>
#include <QPainter>

namespace iris::app {
namespace {

using agent::Action;

QImage blank(int width = 400, int height = 300) {
    QImage image(width, height, QImage::Format_RGB32);
    image.fill(Qt::white);
    return image;
}

// Pixels inside `box` that differ from the same pixels of `before`.
int changedIn(const QImage& before, const QImage& after, QRect box) {
    const QImage a = before.convertToFormat(QImage::Format_ARGB32);
    const QImage b = after.convertToFormat(QImage::Format_ARGB32);
    box = box.intersected(a.rect());
    int changed = 0;
    for (int y = box.top(); y <= box.bottom(); ++y) {
        for (int x = box.left(); x <= box.right(); ++x) {
            if (a.pixel(x, y) != b.pixel(x, y)) ++changed;
        }
    }
    return changed;
}

QRect around(int x, int y, int radius) {
    return {x - radius, y - radius, 2 * radius + 1, 2 * radius + 1};
}

void saveArtifact(const QImage& image, const QString& name) {
    const QString path = QDir(QStringLiteral(IRIS_TEST_ARTIFACTS)).filePath(name);
    EXPECT_TRUE(image.save(path)) << path.toStdString();
}

TEST(ActionOverlay, DrawsAClickAtItsPointAndNowhereFar) {
    const QImage before = blank();
    const QImage after = renderActionOverlay(before, {agent::Click{agent::Point{120, 90}}});
    ASSERT_EQ(after.size(), before.size());
    EXPECT_GT(changedIn(before, after, around(120, 90, 16)), 40);
    // The far corners and the other half of the image are untouched.
    EXPECT_EQ(changedIn(before, after, QRect(250, 0, 150, 300)), 0);
    EXPECT_EQ(changedIn(before, after, QRect(0, 200, 400, 100)), 0);
    // The source is not drawn on.
    EXPECT_EQ(changedIn(before, blank(), before.rect()), 0);
}

TEST(ActionOverlay, DrawsADragAlongItsPath) {
    const QImage before = blank();
    const QImage after = renderActionOverlay(
        before, {agent::Drag{agent::Point{50, 50}, agent::Point{300, 200}, {}}});
    EXPECT_GT(changedIn(before, after, around(50, 50, 8)), 10);
    EXPECT_GT(changedIn(before, after, around(175, 125, 4)), 5);  // the middle of the line
    EXPECT_GT(changedIn(before, after, around(300, 200, 10)), 10);
    EXPECT_EQ(changedIn(before, after, QRect(300, 0, 100, 100)), 0);
}

TEST(ActionOverlay, DrawsAScrollArrowPointingTheWayTheContentMoves) {
    const QImage before = blank();
    const QImage after = renderActionOverlay(before, {agent::Scroll{agent::Point{100, 100}, 0, 3}});
    // Positive dy scrolls down: the arrow runs below the point, not above it.
    EXPECT_GT(changedIn(before, after, QRect(95, 110, 11, 14)), 5);
    EXPECT_EQ(changedIn(before, after, QRect(90, 40, 12, 40)), 0);
}

TEST(ActionOverlay, PutsTypingAndHotkeysInACaptionAtTheBottom) {
    const QImage before = blank();
    const QImage after = renderActionOverlay(
        before, {agent::TypeText{"hello world"}, agent::PressKeys{{"ctrl", "s"}}});
    EXPECT_GT(changedIn(before, after, QRect(0, 240, 400, 60)), 500);
    EXPECT_EQ(changedIn(before, after, QRect(0, 0, 400, 150)), 0);
}

TEST(ActionOverlay, NumbersSeveralActionsAndDrawsEach) {
    const QImage before = blank();
    const QImage one = renderActionOverlay(before, {agent::Click{agent::Point{60, 60}}});
    const QImage two = renderActionOverlay(
        before, {agent::Click{agent::Point{60, 60}}, agent::Click{agent::Point{300, 60}}});
    EXPECT_GT(changedIn(before, two, around(300, 60, 16)), 40);
    // The first click's label now carries its number: the pictures differ near it.
    EXPECT_GT(changedIn(one, two, around(80, 80, 20)), 0);
}

TEST(ActionOverlay, LeavesAnImageWithoutActionsAsItWasAndANullImageNull) {
    const QImage before = blank();
    EXPECT_EQ(changedIn(before, renderActionOverlay(before, {}), before.rect()), 0);
    EXPECT_TRUE(renderActionOverlay(QImage(), {agent::Click{}}).isNull());
}

TEST(ActionOverlay, WritesAnArtifactWithEveryKindOfMark) {
    QImage page(640, 400, QImage::Format_RGB32);
    QPainter painter(&page);
    QLinearGradient gradient(0, 0, 640, 400);
    gradient.setColorAt(0, QColor(240, 240, 250));
    gradient.setColorAt(1, QColor(40, 40, 60));
    painter.fillRect(page.rect(), gradient);
    painter.end();
    const std::vector<Action> actions = {
        agent::Click{agent::Point{120, 100}, agent::MouseButton::Left, 2},
        agent::Drag{agent::Point{200, 300}, agent::Point{450, 180}, {}},
        agent::Scroll{agent::Point{560, 120}, 0, 5},
        agent::Click{agent::Point{600, 380}, agent::MouseButton::Right, 1},
        agent::TypeText{"hello from the overlay test"},
        agent::PressKeys{{"ctrl", "s"}},
    };
    const QImage out = renderActionOverlay(page, actions);
    EXPECT_GT(changedIn(page, out, around(120, 100, 20)), 40);
    saveArtifact(out, QStringLiteral("action_overlay.png"));
}

}  // namespace
}  // namespace iris::app
