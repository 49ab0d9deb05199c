#pragma once
// Xlib and its extensions for this folder's .cpp files only (never a public header): Xlib defines
// macros such as Status, None and True that collide with Iris names, so Status is undefined here
// and X's own Status results are read as int.
#include <X11/XKBlib.h>
#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xproto.h>
#include <X11/Xutil.h>
#include <X11/extensions/XTest.h>
#include <X11/extensions/Xrandr.h>
#include <X11/keysym.h>

#undef Status
