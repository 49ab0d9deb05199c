#pragma once
// The scenes of iris-sample-desktop: one small window each, every widget at a fixed position so
// that a task's demonstration clicks the same pixels on X11 and on Wayland. Each scene reports its
// state (a JSON object) through `report` whenever it changes; the program writes it to the task's
// state file, which the evaluator reads (resources/desktop-tasks/README.md lists the positions).
#include <functional>

#include <QJsonObject>
#include <QString>
#include <QWidget>

namespace iris::sample {

using StateReport = std::function<void(const QJsonObject&)>;

// Builds scene `name`'s widgets inside `root` (its geometry is the window's); false for an
// unknown name.
bool buildScene(const QString& name, QWidget* root, const StateReport& report);

// The scene names, for --help.
QString sceneNames();

}  // namespace iris::sample
