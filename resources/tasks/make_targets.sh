#!/bin/sh
# Regenerates the mockup target images expected/<task-id>.png of the bundled task suite from the
# solution projects in solutions/<task-id>/ (each a copy of a sample project from projects/ with
# the task's edits applied), exactly as the agent's browser renders them: Qt WebEngine offscreen,
# 1280x800 viewport, one image pixel = one CSS pixel.
#
# Usage: resources/tasks/make_targets.sh [path/to/iris]
#   (default: $IRIS, else `iris` on PATH). Run it after changing a sample project or a solution;
#   targets must be re-rendered whenever Qt WebEngine or the system fonts change, because the
#   mockup tasks compare screenshots with these images (compare_images, SSIM).
set -eu

IRIS=${1:-${IRIS:-iris}}
here=$(cd "$(dirname "$0")" && pwd)

export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}
# Qt WebEngine refuses to start its sandbox as root (containers, CI).
if [ "$(id -u)" = 0 ]; then export QTWEBENGINE_DISABLE_SANDBOX=1; fi

for dir in "$here"/solutions/*/; do
    id=$(basename "$dir")
    "$IRIS" render "$dir/index.html" --viewport 1280x800 --out "$here/expected/$id.png"
done
