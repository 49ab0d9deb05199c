#pragma once
// A step's actions drawn on the screenshot the model saw, for the session viewer and exports:
// clicks as rings with a crosshair, drags as arrows, scrolls as arrows at the point, and what has
// no place on the screen (typing, hotkeys, waits, file edits, navigation) in a caption at the
// bottom. With several actions each is numbered in order.
#include <vector>

#include <QImage>

#include "agent/actions/action.h"

namespace iris::app {

// Action coordinates are the screenshot's pixels. Returns a copy (ARGB32 premultiplied) of the
// same size; a null screenshot gives a null image.
QImage renderActionOverlay(const QImage& screenshot, const std::vector<agent::Action>& actions);

}  // namespace iris::app
