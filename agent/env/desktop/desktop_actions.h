#pragma once
// What every desktop (X11 here, Wayland in agent/env/wayland) does alike with an action: the
// checks on clicks and scrolls, Wait, Done, Fail and the actions a desktop does not have, the
// mapping from observation pixels to device pixels, and the observation's size. Pure functions.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "agent/actions/action.h"
#include "agent/env/desktop/key_names.h"
#include "agent/env/desktop/monitor.h"
#include "base/status.h"

namespace iris::agent {

// InvalidArgument for a click count other than 1-3, or a scroll of more than 200 notches.
Status checkClick(const Click& click);
Status checkScroll(const Scroll& scroll);

// Wait (sleeps), Done and Fail (nothing), Navigate and the file actions (Unsupported): the
// status they end with; nullopt for the pointer and keyboard actions, which are the desktop's.
std::optional<Status> runCommonDesktopAction(const Action& action);

// `point` of an observation of `area` shrunk by `observationScale`, as the device pixel of
// `area` it shows (rounded; the far edge is the last pixel). InvalidArgument naming `what` and
// the screenshot's size when it is outside.
Result<Point> observationToDevice(Point point, const Monitor& area, double observationScale,
                                  const char* what);

// `captured` (the whole of `area`) as the observation's screenshot: shrunk by observationScale
// (area averaging) when it is below 1.
cv::Mat shrinkForObservation(cv::Mat captured, const Monitor& area, double observationScale);

// The keysyms that type `utf8`, one per character ("\r\n" is one Return). InvalidArgument for
// text that is not UTF-8 or holds a control character without a key.
Result<std::vector<KeySymbol>> keysymsForText(std::string_view utf8);

}  // namespace iris::agent
