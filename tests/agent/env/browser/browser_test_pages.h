#pragma once
// A small web project for the browser tests, written to a temporary folder: a coloured block at
// known coordinates, a button, a form with an input, a textarea, a slider, a drag area that logs
// mouse events, and a 3000 px tall body for scrolling and full-page capture.
#include <string>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

namespace iris::agent::testing {

inline constexpr int kDocumentHeight = 3000;

inline bool writeFile(const QString& path, const std::string& content) {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
    const auto size = static_cast<qint64>(content.size());
    return file.write(content.data(), size) == size;
}

// The block's colour as CSS rgb() components, so a test can rewrite the stylesheet.
inline std::string stylesheet(int r, int g, int b) {
    return "body { margin: 0; font-family: sans-serif; background: #ffffff; }\n"
           "#block { position: absolute; left: 100px; top: 50px; width: 80px; height: 60px;"
           " background: rgb(" +
           std::to_string(r) + ", " + std::to_string(g) + ", " + std::to_string(b) + "); }\n";
}

inline const char* kIndexHtml = R"html(<!doctype html>
<html><head><meta charset="utf-8"><title>Start</title>
<link rel="stylesheet" href="style.css"></head>
<body>
<div id="block"></div>
<button id="button" style="position:absolute; left:300px; top:50px; width:120px; height:40px"
  onclick="document.title = 'Clicked'">Press me</button>
<div id="dbl" style="position:absolute; left:450px; top:50px; width:100px; height:40px;
  background:#dddddd">double</div>
<form id="form" style="position:absolute; left:100px; top:150px; margin:0"
  onsubmit="document.title = 'Submitted:' + document.getElementById('name').value; return false;">
  <input id="name" style="width:200px; height:24px; margin:0">
</form>
<textarea id="area" style="position:absolute; left:100px; top:200px; width:300px;
  height:80px; margin:0"></textarea>
<input type="range" id="slider" min="0" max="100" value="0"
  style="position:absolute; left:100px; top:320px; width:200px; height:20px; margin:0">
<div id="pad" style="position:absolute; left:500px; top:300px; width:200px; height:100px;
  background:#eeeeff"></div>
<div style="position:absolute; left:0; top:0; width:1px; height:3000px"></div>
<p style="position:absolute; left:100px; top:450px; margin:0">Visible words</p>
<button id="dialogs" style="position:absolute; left:300px; top:500px; width:120px; height:30px"
  onclick="alert('hi'); const ok = confirm('sure?'); document.title = 'After dialogs ' + ok">dialogs</button>
<a id="popup" href="second.html" target="_blank"
  style="position:absolute; left:450px; top:500px; width:120px; height:30px">new window</a>
<script>
  window.clicks = 0;
  window.dblclicks = 0;
  window.padEvents = [];
  window.pressDetails = [];
  window.menus = [];
  document.addEventListener('contextmenu', (e) => { window.menus.push([e.clientX, e.clientY]); });
  document.addEventListener('mousedown', (e) => { window.pressDetails.push(e.detail); });
  const dbl = document.getElementById('dbl');
  dbl.addEventListener('click', () => { window.clicks += 1; });
  dbl.addEventListener('dblclick', () => { window.dblclicks += 1; });
  const pad = document.getElementById('pad');
  for (const type of ['mousedown', 'mousemove', 'mouseup']) {
    document.addEventListener(type, (e) => {
      if (type !== 'mousemove' || e.buttons !== 0) window.padEvents.push([type, e.clientX, e.clientY]);
    });
  }
</script>
</body></html>
)html";

inline const char* kSecondHtml = R"html(<!doctype html>
<html><head><meta charset="utf-8"><title>Second</title></head>
<body><p>The second page</p></body></html>
)html";

// Writes the project into `dir`; false if a file could not be written.
inline bool writeTestSite(const QTemporaryDir& dir) {
    const QDir root(dir.path());
    return writeFile(root.filePath(QStringLiteral("index.html")), kIndexHtml) &&
           writeFile(root.filePath(QStringLiteral("style.css")), stylesheet(200, 30, 60)) &&
           writeFile(root.filePath(QStringLiteral("second.html")), kSecondHtml);
}

}  // namespace iris::agent::testing
