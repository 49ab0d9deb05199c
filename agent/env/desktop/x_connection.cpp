#include "agent/env/desktop/x_connection.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>

// libX11's per-connection error hook. Its only declaration is in <X11/Xlibint.h>, which also
// defines min/max macros and cannot be included next to the C++ library.
using XErrorHook = int (*)(Display*, xError*, XExtCodes*, int*);
extern "C" XErrorHook XESetError(Display* display, int extension, XErrorHook hook);

namespace iris::agent {
namespace {

// Xlib calls this for every X error on the connection before its process-wide handler; returning
// 1 marks the error handled. The connection's XErrorSlot hangs off the display's extension data.
int onXError(Display* display, xError* error, XExtCodes* codes, int* /*returnCode*/) {
    XEDataObject object;
    object.display = display;
    XExtData* data = XFindOnExtensionList(XEHeadOfExtensionList(object), codes->extension);
    if (data == nullptr) return 0;
    auto* slot = reinterpret_cast<XErrorSlot*>(data->private_data);
    if (!slot->set) {
        slot->set = true;
        slot->errorCode = error->errorCode;
        slot->majorCode = error->majorCode;
        slot->minorCode = error->minorCode;
        slot->resource = error->resourceID;
    }
    return 1;
}

// The slot belongs to the XConnection; Xlib must not free it when the display closes. Also the
// mark by which a display is known to be an XConnection's.
int keepPrivateData(XExtData* /*data*/) {
    return 0;
}

XErrorSlot* slotOf(Display* display) {
    XEDataObject object;
    object.display = display;
    for (XExtData* data = *XEHeadOfExtensionList(object); data != nullptr; data = data->next) {
        if (data->free_private == keepPrivateData) {
            return reinterpret_cast<XErrorSlot*>(data->private_data);
        }
    }
    return nullptr;
}

int onIoError(Display* display);

// Xlib's I/O error handler is process-wide and its default exits the process. It is replaced
// once, keeping whatever handler was there for displays that are not an XConnection's; set once
// and never changed after, so no connection sees another's state.
XIOErrorHandler previousIoErrorHandler() {
    static const XIOErrorHandler previous = XSetIOErrorHandler(onIoError);
    return previous;
}

int onIoError(Display* display) {
    XErrorSlot* slot = slotOf(display);
    if (slot == nullptr) {
        XIOErrorHandler previous = previousIoErrorHandler();
        return previous != nullptr ? previous(display) : 0;
    }
    slot->connectionLost = true;
    return 0;  // Xlib then calls the display's exit handler below, which returns too
}

void onIoErrorExit(Display* /*display*/, void* slot) {
    static_cast<XErrorSlot*>(slot)->connectionLost = true;
}

// One colour channel of a TrueColor pixel: where it sits and how many bits it has.
struct Channel {
    int shift = 0;
    int bits = 0;
    explicit Channel(unsigned long mask) {
        if (mask == 0) return;
        shift = std::countr_zero(mask);
        bits = std::popcount(mask);
    }
    std::uint8_t extract(std::uint32_t pixel) const {
        std::uint32_t value = (pixel >> shift) & ((1u << bits) - 1u);
        if (bits >= 8) return static_cast<std::uint8_t>(value >> (bits - 8));
        return static_cast<std::uint8_t>(value * 255u / ((1u << bits) - 1u));
    }
};

}  // namespace

Result<std::unique_ptr<XConnection>> XConnection::open(const std::string& name) {
    Display* display = XOpenDisplay(name.c_str());
    if (display == nullptr) {
        return Status::ioError("cannot open X display '" + name +
                               "' (is the X server running, and may this user connect?)");
    }
    return std::unique_ptr<XConnection>(new XConnection(display, name));
}

XConnection::XConnection(Display* display, std::string name)
    : m_display(display),
      m_name(std::move(name)),
      m_root(DefaultRootWindow(display)),
      m_errors(std::make_unique<XErrorSlot>()) {
    XExtCodes* codes = XAddExtension(m_display);
    auto* data = static_cast<XExtData*>(std::calloc(1, sizeof(XExtData)));
    data->number = codes->extension;
    data->private_data = reinterpret_cast<XPointer>(m_errors.get());
    data->free_private = keepPrivateData;
    XEDataObject object;
    object.display = m_display;
    XAddToExtensionList(XEHeadOfExtensionList(object), data);
    XESetError(m_display, codes->extension, onXError);
    previousIoErrorHandler();
    XSetIOErrorExitHandler(m_display, onIoErrorExit, m_errors.get());
}

XConnection::~XConnection() {
    XCloseDisplay(m_display);
}

Status XConnection::sync(std::string_view what) {
    XSync(m_display, False);
    if (m_errors->connectionLost) {
        return Status::ioError(std::string(what) + ": the connection to X display " + m_name +
                               " is lost");
    }
    if (!m_errors->set) return Status::ok();
    XErrorSlot error = *m_errors;
    m_errors->set = false;
    char text[256] = {};
    XGetErrorText(m_display, error.errorCode, text, sizeof(text));
    return Status::internal(
        std::string(what) + ": X error " + text + " (code " + std::to_string(error.errorCode) +
        ") in request " + std::to_string(error.majorCode) + "." + std::to_string(error.minorCode) +
        " on resource " + std::to_string(error.resource));
}

void XConnection::discardErrors() {
    XSync(m_display, False);
    bool lost = m_errors->connectionLost;
    *m_errors = XErrorSlot{};
    m_errors->connectionLost = lost;
}

Monitor XConnection::screen() const {
    int screenNumber = DefaultScreen(m_display);
    return {0, 0, DisplayWidth(m_display, screenNumber), DisplayHeight(m_display, screenNumber)};
}

std::vector<Monitor> XConnection::monitors() {
    std::vector<Monitor> result;
    int eventBase = 0;
    int errorBase = 0;
    int major = 0;
    int minor = 0;
    if (XRRQueryExtension(m_display, &eventBase, &errorBase) &&
        XRRQueryVersion(m_display, &major, &minor) && (major > 1 || (major == 1 && minor >= 5))) {
        int count = 0;
        XRRMonitorInfo* infos = XRRGetMonitors(m_display, m_root, True, &count);
        for (int i = 0; i < count; ++i) {
            result.push_back({infos[i].x, infos[i].y, infos[i].width, infos[i].height});
        }
        if (infos != nullptr) XRRFreeMonitors(infos);
        discardErrors();
    }
    if (result.empty()) return {screen()};
    std::stable_sort(result.begin(), result.end(), [](const Monitor& a, const Monitor& b) {
        return a.x != b.x ? a.x < b.x : a.y < b.y;
    });
    return result;
}

Result<cv::Mat> XConnection::capture(const Monitor& area) {
    Monitor whole = screen();
    if (area.width <= 0 || area.height <= 0 || area.x < 0 || area.y < 0 ||
        area.x + area.width > whole.width || area.y + area.height > whole.height) {
        return Status::outOfRange("capture: the rectangle " + std::to_string(area.width) + "x" +
                                  std::to_string(area.height) + "+" + std::to_string(area.x) + "+" +
                                  std::to_string(area.y) + " is not inside the " +
                                  std::to_string(whole.width) + "x" + std::to_string(whole.height) +
                                  " screen");
    }
    Visual* visual = DefaultVisual(m_display, DefaultScreen(m_display));
    if (visual->c_class != TrueColor && visual->c_class != DirectColor) {
        return Status::unsupported("capture: display " + m_name +
                                   " has no TrueColor visual (class " +
                                   std::to_string(visual->c_class) + ")");
    }
    XImage* image = XGetImage(m_display, m_root, area.x, area.y, static_cast<unsigned>(area.width),
                              static_cast<unsigned>(area.height), AllPlanes, ZPixmap);
    Status status = sync("capture: XGetImage");
    if (image == nullptr) {
        return status.isOk() ? Status::internal("capture: XGetImage returned no image") : status;
    }
    auto destroy = [](XImage* i) { XDestroyImage(i); };
    std::unique_ptr<XImage, decltype(destroy)> owner(image, destroy);
    IRIS_RETURN_IF_ERROR(status);

    int bytesPerPixel = image->bits_per_pixel / 8;
    if (image->bits_per_pixel % 8 != 0 || bytesPerPixel < 2 || bytesPerPixel > 4) {
        return Status::unsupported("capture: " + std::to_string(image->bits_per_pixel) +
                                   " bits per pixel");
    }
    // The image carries the visual's masks; read channels by mask, not by an assumed layout.
    Channel red(image->red_mask);
    Channel green(image->green_mask);
    Channel blue(image->blue_mask);
    if (red.bits == 0 || green.bits == 0 || blue.bits == 0) {
        return Status::unsupported("capture: the image has no colour masks");
    }
    bool msbFirst = image->byte_order == MSBFirst;

    cv::Mat result(area.height, area.width, CV_8UC3);
    for (int y = 0; y < area.height; ++y) {
        const auto* row = reinterpret_cast<const std::uint8_t*>(image->data) +
                          static_cast<std::ptrdiff_t>(y) * image->bytes_per_line;
        auto* out = result.ptr<std::uint8_t>(y);
        for (int x = 0; x < area.width; ++x) {
            const std::uint8_t* p = row + static_cast<std::ptrdiff_t>(x) * bytesPerPixel;
            std::uint32_t pixel = 0;
            for (int b = 0; b < bytesPerPixel; ++b) {
                int shift = msbFirst ? 8 * (bytesPerPixel - 1 - b) : 8 * b;
                pixel |= static_cast<std::uint32_t>(p[b]) << shift;
            }
            out[3 * x + 0] = blue.extract(pixel);
            out[3 * x + 1] = green.extract(pixel);
            out[3 * x + 2] = red.extract(pixel);
        }
    }
    return result;
}

std::string XConnection::windowTitle(Window window) {
    std::string title;
    Atom utf8 = XInternAtom(m_display, "UTF8_STRING", False);
    Atom netWmName = XInternAtom(m_display, "_NET_WM_NAME", False);
    Atom type = 0;
    int format = 0;
    unsigned long count = 0;
    unsigned long remaining = 0;
    unsigned char* data = nullptr;
    if (XGetWindowProperty(m_display, window, netWmName, 0, 4096, False, utf8, &type, &format,
                           &count, &remaining, &data) == Success &&
        data != nullptr) {
        if (type == utf8 && format == 8) title.assign(reinterpret_cast<char*>(data), count);
        XFree(data);
    }
    if (!title.empty()) return title;
    XTextProperty property{};
    if (XGetWMName(m_display, window, &property) != 0 && property.value != nullptr) {
        char** list = nullptr;
        int listCount = 0;
        if (Xutf8TextPropertyToTextList(m_display, &property, &list, &listCount) == Success &&
            list != nullptr) {
            if (listCount > 0) title = list[0];
            XFreeStringList(list);
        }
        XFree(property.value);
    }
    return title;
}

std::string XConnection::activeWindowTitle() {
    Window window = 0;
    Atom active = XInternAtom(m_display, "_NET_ACTIVE_WINDOW", True);
    if (active != 0) {
        Atom type = 0;
        int format = 0;
        unsigned long count = 0;
        unsigned long remaining = 0;
        unsigned char* data = nullptr;
        if (XGetWindowProperty(m_display, m_root, active, 0, 1, False, XA_WINDOW, &type, &format,
                               &count, &remaining, &data) == Success &&
            data != nullptr) {
            // Format-32 properties come back as an array of long, whatever long's size.
            if (type == XA_WINDOW && format == 32 && count == 1) {
                window = static_cast<Window>(*reinterpret_cast<long*>(data));
            }
            XFree(data);
        }
    }
    if (window == 0) {
        int revert = 0;
        XGetInputFocus(m_display, &window, &revert);
        if (window == PointerRoot) window = 0;
    }
    // Without a window manager the focus may sit on a child: the title is on its top level.
    std::string title;
    for (int depth = 0; window != 0 && window != m_root && depth < 32; ++depth) {
        title = windowTitle(window);
        if (!title.empty()) break;
        Window root = 0;
        Window parent = 0;
        Window* children = nullptr;
        unsigned count = 0;
        if (XQueryTree(m_display, window, &root, &parent, &children, &count) == 0) break;
        if (children != nullptr) XFree(children);
        window = parent;
    }
    discardErrors();  // the window may have closed meanwhile: no title then
    return title;
}

}  // namespace iris::agent
