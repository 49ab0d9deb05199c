#include "app/gui/action_overlay.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <type_traits>

#include <QFont>
#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>
#include <QPen>
#include <QStringList>

namespace iris::app {
namespace {

// Saturated colours with a dark outline read on light and dark pages alike.
const QColor kMarker(255, 64, 32);
const QColor kDrag(32, 160, 255);
const QColor kScroll(40, 200, 90);
const QColor kOutline(0, 0, 0, 200);

// Sizes follow the screenshot so that a 4K capture and a 640x400 one look alike.
struct Metrics {
    double unit;  // ~1/80 of the smaller side, at least 6 px
    double pen;
    double ring;
    QFont font;
};

Metrics metricsFor(const QImage& image) {
    const double side = std::min(image.width(), image.height());
    Metrics m{};
    m.unit = std::max(6.0, side / 80.0);
    m.pen = std::max(2.0, m.unit / 4.0);
    m.ring = m.unit * 1.6;
    m.font.setPixelSize(static_cast<int>(std::lround(std::max(11.0, m.unit * 1.5))));
    m.font.setBold(true);
    return m;
}

QPointF toQt(const agent::Point& p) {
    return {p.x, p.y};
}

// A stroke drawn twice, dark and wide below the colour, so it stands out on any background.
void strokeOutlined(QPainter& painter, const QPainterPath& path, const QColor& colour,
                    double width) {
    painter.setBrush(Qt::NoBrush);
    painter.setPen(QPen(kOutline, width + 2.5, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
    painter.drawPath(path);
    painter.setPen(QPen(colour, width, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
    painter.drawPath(path);
}

// A label in a filled rounded box with its top-left corner near `anchor`, kept inside the image.
void drawTag(QPainter& painter, const Metrics& m, QPointF anchor, const QString& text,
             const QColor& fill) {
    painter.setFont(m.font);
    const QFontMetricsF fm(m.font);
    const double pad = m.unit * 0.35;
    QRectF box(anchor, QSizeF(fm.horizontalAdvance(text) + 2 * pad, fm.height() + pad));
    const QRectF bounds(QPointF(0, 0),
                        QSizeF(painter.device()->width(), painter.device()->height()));
    if (box.right() > bounds.right()) box.moveRight(bounds.right());
    if (box.bottom() > bounds.bottom()) box.moveBottom(bounds.bottom());
    if (box.left() < 0) box.moveLeft(0);
    if (box.top() < 0) box.moveTop(0);
    painter.setPen(QPen(kOutline, 1.0));
    painter.setBrush(fill);
    painter.drawRoundedRect(box, pad, pad);
    painter.setPen(Qt::white);
    painter.drawText(box, Qt::AlignCenter, text);
}

void drawArrowHead(QPainter& painter, const Metrics& m, QPointF from, QPointF to,
                   const QColor& colour) {
    const double angle = std::atan2(to.y() - from.y(), to.x() - from.x());
    const double length = m.unit * 1.4;
    const double spread = std::numbers::pi / 7.0;
    QPainterPath head;
    head.moveTo(to);
    head.lineTo(to - QPointF(std::cos(angle - spread), std::sin(angle - spread)) * length);
    head.lineTo(to - QPointF(std::cos(angle + spread), std::sin(angle + spread)) * length);
    head.closeSubpath();
    painter.setPen(QPen(kOutline, 1.5));
    painter.setBrush(colour);
    painter.drawPath(head);
}

void drawArrow(QPainter& painter, const Metrics& m, QPointF from, QPointF to,
               const QColor& colour) {
    QPainterPath line;
    line.moveTo(from);
    line.lineTo(to);
    strokeOutlined(painter, line, colour, m.pen);
    drawArrowHead(painter, m, from, to, colour);
}

// A ring with a crosshair through it whose centre stays clear, so the target stays visible.
void drawTarget(QPainter& painter, const Metrics& m, QPointF at, const QColor& colour, int rings) {
    QPainterPath path;
    for (int i = 0; i < rings; ++i) {
        const double r = m.ring + i * m.unit * 0.6;
        path.addEllipse(at, r, r);
    }
    const double inner = m.unit * 0.5;
    const double outer = m.ring + (rings - 1) * m.unit * 0.6 + m.unit * 0.8;
    for (const QPointF dir : {QPointF(1, 0), QPointF(-1, 0), QPointF(0, 1), QPointF(0, -1)}) {
        path.moveTo(at + dir * inner);
        path.lineTo(at + dir * outer);
    }
    strokeOutlined(painter, path, colour, m.pen);
}

QString buttonLabel(agent::MouseButton button) {
    switch (button) {
        case agent::MouseButton::Left:
            return QStringLiteral("L");
        case agent::MouseButton::Right:
            return QStringLiteral("R");
        case agent::MouseButton::Middle:
            return QStringLiteral("M");
    }
    return {};
}

QString numbered(const QString& prefix, const QString& text) {
    return prefix.isEmpty() ? text : prefix + QStringLiteral(" ") + text;
}

// Whether the action is drawn at its point; the rest go into the caption.
bool hasPlaceOnScreen(const agent::Action& action) {
    if (const auto* click = std::get_if<agent::Click>(&action)) return click->at.has_value();
    if (const auto* scroll = std::get_if<agent::Scroll>(&action)) {
        return scroll->at.has_value() && (scroll->dx != 0 || scroll->dy != 0);
    }
    return std::holds_alternative<agent::MoveTo>(action) ||
           std::holds_alternative<agent::Drag>(action);
}

// Draws an action for which hasPlaceOnScreen() holds.
bool drawOnScreen(QPainter& painter, const Metrics& m, const agent::Action& action,
                  const QString& number) {
    return std::visit(
        [&](const auto& a) -> bool {
            using T = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<T, agent::Click>) {
                if (!a.at) return false;
                const QPointF at = toQt(*a.at);
                drawTarget(painter, m, at, kMarker, std::clamp(a.count, 1, 3));
                QString label = buttonLabel(a.button);
                if (a.count > 1) label += QStringLiteral("×%1").arg(a.count);
                const double offset = m.ring + m.unit;
                drawTag(painter, m, at + QPointF(offset * 0.7, offset * 0.7),
                        numbered(number, label), kMarker.darker(130));
                return true;
            } else if constexpr (std::is_same_v<T, agent::MoveTo>) {
                const QPointF at = toQt(a.to);
                QPainterPath path;
                path.addEllipse(at, m.unit * 0.6, m.unit * 0.6);
                strokeOutlined(painter, path, kMarker, m.pen);
                drawTag(painter, m, at + QPointF(m.unit, m.unit),
                        numbered(number, QStringLiteral("move")), kMarker.darker(130));
                return true;
            } else if constexpr (std::is_same_v<T, agent::Drag>) {
                const QPointF to = toQt(a.to);
                if (a.from) {
                    const QPointF from = toQt(*a.from);
                    QPainterPath start;
                    start.addEllipse(from, m.unit * 0.6, m.unit * 0.6);
                    strokeOutlined(painter, start, kDrag, m.pen);
                    drawArrow(painter, m, from, to, kDrag);
                } else {
                    drawTarget(painter, m, to, kDrag, 1);
                }
                drawTag(painter, m, to + QPointF(m.unit, m.unit),
                        numbered(number, QStringLiteral("drag")), kDrag.darker(140));
                return true;
            } else if constexpr (std::is_same_v<T, agent::Scroll>) {
                if (!a.at || (a.dx == 0 && a.dy == 0)) return false;
                const QPointF at = toQt(*a.at);
                // Positive dy scrolls the content down: the arrow points down.
                const QPointF dir = QPointF(a.dx, a.dy) / std::hypot(a.dx, a.dy);
                const double length = m.unit * 4.0;
                QPainterPath dot;
                dot.addEllipse(at, m.unit * 0.4, m.unit * 0.4);
                strokeOutlined(painter, dot, kScroll, m.pen);
                drawArrow(painter, m, at, at + dir * length, kScroll);
                drawTag(painter, m, at + QPointF(m.unit, -m.unit * 2.5),
                        numbered(number, QStringLiteral("scroll %1,%2").arg(a.dx).arg(a.dy)),
                        kScroll.darker(150));
                return true;
            } else {
                return false;
            }
        },
        action);
}

void drawCaption(QPainter& painter, const Metrics& m, const QImage& image,
                 const QStringList& lines) {
    if (lines.isEmpty()) return;
    QFont font = m.font;
    font.setBold(false);
    painter.setFont(font);
    const QFontMetricsF fm(font);
    const double pad = m.unit * 0.6;
    const double maxWidth = image.width() - 4 * pad;
    QStringList shown;
    for (const QString& line : lines)
        shown << fm.elidedText(line, Qt::ElideRight, maxWidth);
    const double height = fm.lineSpacing() * static_cast<double>(shown.size()) + 2 * pad;
    const QRectF box(pad, image.height() - height - pad, image.width() - 2 * pad, height);
    painter.setPen(QPen(kOutline, 1.0));
    painter.setBrush(QColor(0, 0, 0, 180));
    painter.drawRoundedRect(box, pad, pad);
    painter.setPen(Qt::white);
    double y = box.top() + pad + fm.ascent();
    for (const QString& line : shown) {
        painter.drawText(QPointF(box.left() + pad, y), line);
        y += fm.lineSpacing();
    }
}

}  // namespace

QImage renderActionOverlay(const QImage& screenshot, const std::vector<agent::Action>& actions) {
    if (screenshot.isNull()) return {};
    QImage out = screenshot.convertToFormat(QImage::Format_ARGB32_Premultiplied);
    out.setDevicePixelRatio(1.0);  // action coordinates are image pixels
    if (actions.empty()) return out;

    QPainter painter(&out);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setRenderHint(QPainter::TextAntialiasing);
    const Metrics m = metricsFor(out);
    const bool several = actions.size() > 1;
    // The caption first, so that a mark near the bottom edge stays visible on top of it.
    QStringList caption;
    for (std::size_t i = 0; i < actions.size(); ++i) {
        if (hasPlaceOnScreen(actions[i])) continue;
        caption << numbered(several ? QString::number(i + 1) + QStringLiteral(".") : QString(),
                            QString::fromStdString(agent::describe(actions[i])));
    }
    drawCaption(painter, m, out, caption);
    for (std::size_t i = 0; i < actions.size(); ++i) {
        if (!hasPlaceOnScreen(actions[i])) continue;
        drawOnScreen(painter, m, actions[i], several ? QString::number(i + 1) : QString());
    }
    return out;
}

}  // namespace iris::app
