// kPageInspectionScript (app/cli/eval/hygiene.h) in the real browser: every way of hiding a text
// is named, text below the fold is not hidden, and media report their share of the viewport.
#include <cstring>
#include <memory>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include "agent/env/browser/browser_environment.h"
#include "app/cli/eval/hygiene.h"

namespace iris::app::eval {
namespace {

constexpr int kWidth = 800;
constexpr int kHeight = 600;

// Media are placed absolutely so that their coverage of the 800 x 600 viewport is exact.
constexpr const char* kPage = R"HTML(<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>
  body { margin: 0; font: 16px sans-serif; }
  .sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  .box { width: 100px; height: 20px; overflow: hidden; }
  .box span { display: block; margin-top: 50px; }
  .abs { position: absolute; }
</style></head><body>
<p>Shown text</p>
<p style="display: none">Display none</p>
<p style="visibility: hidden">Visibility hidden</p>
<div style="opacity: 0"><p>Faded parent</p></div>
<p style="font-size: 0">Zero font</p>
<p style="color: transparent">Clear ink</p>
<p class="abs" style="left: -5000px">Far left</p>
<p class="abs" style="left: 2000px">Far right</p>
<span class="sr">Screen reader only</span>
<div class="box"><span>Clipped away</span></div>
<p class="abs" style="top: 2000px">Below the fold</p>
<img class="abs" src="pic.svg" style="left: 0; top: 0; width: 640px; height: 400px">
<img src="gone.svg" style="display: none; width: 800px; height: 600px">
<div class="abs" style="left: 400px; top: 300px; width: 400px; height: 300px;
     background-image: url('bg.svg')"></div>
<canvas class="abs" width="80" height="60" style="left: 0; top: 540px"></canvas>
</body></html>
)HTML";

constexpr const char* kSvg =
    R"(<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>)";

bool write(const QTemporaryDir& dir, const char* name, const char* text) {
    QFile file(QDir(dir.path()).filePath(QString::fromUtf8(name)));
    return file.open(QIODevice::WriteOnly) && file.write(text) == qint64(std::strlen(text));
}

TEST(PageInspectionScript, NamesEveryWayOfHidingTextAndMeasuresMedia) {
    QTemporaryDir site;
    ASSERT_TRUE(site.isValid());
    ASSERT_TRUE(write(site, "index.html", kPage));
    ASSERT_TRUE(write(site, "pic.svg", kSvg));
    ASSERT_TRUE(write(site, "bg.svg", kSvg));
    agent::BrowserOptions options;
    options.startUrl = QDir(site.path()).filePath("index.html").toStdString();
    options.viewportWidth = kWidth;
    options.viewportHeight = kHeight;
    options.settleTimeoutMs = 20000;
    Result<std::unique_ptr<agent::BrowserEnvironment>> browser =
        agent::BrowserEnvironment::create(options);
    ASSERT_TRUE(browser) << browser.status().message();
    ASSERT_TRUE((*browser)->reset().isOk());
    ASSERT_TRUE((*browser)->observe());  // loaded and settled

    Result<std::string> value = (*browser)->evaluateJavaScript(std::string(kPageInspectionScript));
    ASSERT_TRUE(value) << value.status().message();
    Result<PageInspection> page = pageInspectionFromJson(nlohmann::json::parse(*value));
    ASSERT_TRUE(page) << page.status().message();

    std::vector<std::pair<std::string, std::string>> texts;
    for (const PageText& text : page->texts)
        texts.emplace_back(text.text, text.hidden);
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"Shown text", ""},
        {"Display none", "display:none"},
        {"Visibility hidden", "visibility:hidden"},
        {"Faded parent", "opacity:0"},
        {"Zero font", "zero size"},
        {"Clear ink", "transparent text"},
        {"Far left", "off-screen"},
        {"Far right", "off-screen"},
        {"Screen reader only", "clip"},
        {"Clipped away", "clipped"},
        {"Below the fold", ""},
    };
    EXPECT_EQ(texts, expected);

    // 640 x 400, 400 x 300 and 80 x 60 of 800 x 600; the hidden image is not listed.
    ASSERT_EQ(page->media.size(), 3u);
    EXPECT_EQ(page->media[0].kind, "img");
    EXPECT_TRUE(page->media[0].source.ends_with("/pic.svg")) << page->media[0].source;
    EXPECT_NEAR(page->media[0].coverage, 256000.0 / 480000, 1e-9);
    EXPECT_EQ(page->media[1].kind, "background-image");
    EXPECT_TRUE(page->media[1].source.ends_with("/bg.svg")) << page->media[1].source;
    EXPECT_NEAR(page->media[1].coverage, 0.25, 1e-9);
    EXPECT_EQ(page->media[2].kind, "canvas");
    EXPECT_NEAR(page->media[2].coverage, 0.01, 1e-9);
}

}  // namespace
}  // namespace iris::app::eval
