#include "app/gui/session_viewer.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <QDateTime>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QListWidget>
#include <QPainter>
#include <QSlider>
#include <QSplitter>
#include <QStyle>
#include <QTabWidget>
#include <QTextBrowser>
#include <QTextDocument>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include "app/gui/action_overlay.h"

namespace iris::app {

namespace {

constexpr int kThumbnailWidth = 128;
constexpr int kThumbnailHeight = 80;

QString fromStd(std::string_view text) {
    return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

QString escaped(std::string_view text) {
    return fromStd(text).toHtmlEscaped();
}

QString pre(const QString& escapedText) {
    return QStringLiteral("<pre style=\"white-space: pre-wrap\">") + escapedText +
           QStringLiteral("</pre>");
}

QString heading(const QString& text) {
    return QStringLiteral("<h4>%1</h4>").arg(text);
}

QString errorSpan(const QString& escapedText) {
    return QStringLiteral("<span style=\"color:#b00020\">%1</span>").arg(escapedText);
}

QImage decodePng(const std::vector<std::uint8_t>& bytes) {
    if (bytes.empty()) return {};
    return QImage::fromData(bytes.data(), static_cast<int>(bytes.size()), "PNG");
}

// The request's last user message, text parts only: what the model was asked this step.
std::string lastUserText(const agent::ChatRequest& request) {
    for (auto it = request.messages.rbegin(); it != request.messages.rend(); ++it) {
        if (it->role != "user") continue;
        std::string text;
        int images = 0;
        for (const agent::ContentPart& part : it->content) {
            if (part.isImage()) {
                ++images;
                continue;
            }
            if (!text.empty()) text += '\n';
            text += part.text;
        }
        if (images > 0) {
            text += "\n[" + std::to_string(images) + (images == 1 ? " image]" : " images]");
        }
        return text;
    }
    return {};
}

QString diffHtml(const std::vector<agent::FileEdit>& edits) {
    if (edits.empty()) return QStringLiteral("<p><i>No file changes in this step.</i></p>");
    QString html;
    for (const agent::FileEdit& edit : edits) {
        html +=
            heading(QStringLiteral("%1 (revision %2)").arg(escaped(edit.path)).arg(edit.revision));
        html += QStringLiteral("<pre style=\"font-family: monospace\">");
        const QStringList lines = fromStd(edit.diff).split(QLatin1Char('\n'));
        for (const QString& line : lines) {
            const QString text = line.toHtmlEscaped();
            if (line.startsWith(QLatin1String("+++")) || line.startsWith(QLatin1String("---"))) {
                html += QStringLiteral("<b>%1</b>\n").arg(text);
            } else if (line.startsWith(QLatin1Char('+'))) {
                html += QStringLiteral(
                            "<span style=\"color:#116329; background-color:#dafbe1\">%1</span>\n")
                            .arg(text);
            } else if (line.startsWith(QLatin1Char('-'))) {
                html += QStringLiteral(
                            "<span style=\"color:#82071e; background-color:#ffebe9\">%1</span>\n")
                            .arg(text);
            } else if (line.startsWith(QLatin1String("@@"))) {
                html += QStringLiteral("<span style=\"color:#0550ae\">%1</span>\n").arg(text);
            } else {
                html += text + QLatin1Char('\n');
            }
        }
        html += QStringLiteral("</pre>");
    }
    return html;
}

}  // namespace

// The screenshot scaled to fit, aspect kept, centred; sharp at any device pixel ratio since the
// painter maps logical coordinates onto the backing store's device pixels.
class ScreenshotView final : public QWidget {
public:
    explicit ScreenshotView(QWidget* parent) : QWidget(parent) {
        setMinimumSize(160, 100);
        setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    }

    void setImage(const QImage& image, const QString& placeholder) {
        m_image = image;
        m_placeholder = placeholder;
        setAccessibleDescription(image.isNull() ? placeholder : tr("Screenshot of the step"));
        update();
    }

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter painter(this);
        painter.fillRect(rect(), palette().color(QPalette::Dark));
        if (m_image.isNull()) {
            painter.setPen(palette().color(QPalette::BrightText));
            painter.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, m_placeholder);
            return;
        }
        const QSizeF size =
            QSizeF(m_image.size()).scaled(QSizeF(this->size()), Qt::KeepAspectRatio);
        const QRectF target(QPointF((width() - size.width()) / 2, (height() - size.height()) / 2),
                            size);
        painter.setRenderHint(QPainter::SmoothPixmapTransform);
        painter.drawImage(target, m_image);
    }

private:
    QImage m_image;
    QString m_placeholder;
};

SessionViewerWidget::SessionViewerWidget(QWidget* parent) : QWidget(parent) {
    setFocusPolicy(Qt::StrongFocus);

    m_header = new QLabel(this);
    m_header->setWordWrap(true);
    m_header->setTextFormat(Qt::RichText);
    m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_screenshot = new ScreenshotView(this);
    m_screenshot->setAccessibleName(tr("Step screenshot"));

    const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    m_details = new QTextBrowser(this);
    m_details->setOpenLinks(false);
    m_input = new QTextBrowser(this);
    m_input->setFont(mono);
    m_diffs = new QTextBrowser(this);
    m_diffs->setFont(mono);
    m_tabs = new QTabWidget(this);
    m_tabs->addTab(m_details, tr("S&tep"));
    m_tabs->addTab(m_input, tr("Model &input"));
    m_tabs->addTab(m_diffs, tr("File &diffs"));

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(m_screenshot);
    splitter->addWidget(m_tabs);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 2);

    auto makeButton = [this](QStyle::StandardPixmap icon, const QString& text, const QString& tip) {
        auto* button = new QToolButton(this);
        button->setIcon(style()->standardIcon(icon));
        button->setText(text);
        button->setToolTip(tip);
        button->setAccessibleName(text);
        button->setFocusPolicy(Qt::TabFocus);
        return button;
    };
    m_homeButton =
        makeButton(QStyle::SP_MediaSkipBackward, tr("First step"), tr("First step (Home)"));
    m_previousButton =
        makeButton(QStyle::SP_MediaSeekBackward, tr("Previous step"), tr("Previous step (Left)"));
    m_playButton = makeButton(QStyle::SP_MediaPlay, tr("Play"), tr("Play / pause (Space)"));
    m_nextButton =
        makeButton(QStyle::SP_MediaSeekForward, tr("Next step"), tr("Next step (Right)"));
    m_endButton = makeButton(QStyle::SP_MediaSkipForward, tr("Last step"), tr("Last step (End)"));

    m_slider = new QSlider(Qt::Horizontal, this);
    m_slider->setAccessibleName(tr("Timeline"));
    m_slider->setPageStep(5);
    m_position = new QLabel(this);
    m_position->setMinimumWidth(
        m_position->fontMetrics().horizontalAdvance(QStringLiteral("Step 0000 / 0000")));

    m_thumbnails = new QListWidget(this);
    m_thumbnails->setViewMode(QListView::IconMode);
    m_thumbnails->setFlow(QListView::LeftToRight);
    m_thumbnails->setWrapping(false);
    m_thumbnails->setMovement(QListView::Static);
    m_thumbnails->setIconSize(QSize(kThumbnailWidth, kThumbnailHeight));
    m_thumbnails->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    m_thumbnails->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_thumbnails->setFixedHeight(kThumbnailHeight + m_thumbnails->fontMetrics().height() + 28);
    m_thumbnails->setAccessibleName(tr("Step thumbnails"));

    m_timer = new QTimer(this);
    m_timer->setInterval(1000);

    auto* controls = new QHBoxLayout;
    for (QToolButton* button :
         {m_homeButton, m_previousButton, m_playButton, m_nextButton, m_endButton}) {
        controls->addWidget(button);
    }
    controls->addWidget(m_slider, 1);
    controls->addWidget(m_position);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_header);
    layout->addWidget(splitter, 1);
    layout->addLayout(controls);
    layout->addWidget(m_thumbnails);

    connect(m_slider, &QSlider::valueChanged, this, &SessionViewerWidget::setCurrentStep);
    connect(m_thumbnails, &QListWidget::currentRowChanged, this, [this](int row) {
        if (row >= 0) setCurrentStep(row);
    });
    connect(m_homeButton, &QToolButton::clicked, this, [this] { setCurrentStep(0); });
    connect(m_previousButton, &QToolButton::clicked, this,
            [this] { setCurrentStep(m_current - 1); });
    connect(m_nextButton, &QToolButton::clicked, this, [this] { setCurrentStep(m_current + 1); });
    connect(m_endButton, &QToolButton::clicked, this,
            [this] { setCurrentStep(static_cast<int>(m_session.steps.size()) - 1); });
    connect(m_playButton, &QToolButton::clicked, this, [this] { isPlaying() ? pause() : play(); });
    connect(m_timer, &QTimer::timeout, this, &SessionViewerWidget::advance);

    setSession({});
}

SessionViewerWidget::~SessionViewerWidget() = default;

void SessionViewerWidget::setSession(agent::SessionRecord session) {
    pause();
    m_session = std::move(session);
    m_current = -1;
    ++m_generation;
    const int count = static_cast<int>(m_session.steps.size());

    {
        const QSignalBlocker blockSlider(m_slider);
        const QSignalBlocker blockList(m_thumbnails);
        m_slider->setRange(0, std::max(0, count - 1));
        m_slider->setValue(0);
        m_thumbnails->clear();
        QPixmap blank(kThumbnailWidth, kThumbnailHeight);
        blank.fill(palette().color(QPalette::Mid));
        for (int i = 0; i < count; ++i) {
            auto* item = new QListWidgetItem(QIcon(blank), tr("Step %1").arg(i + 1));
            item->setToolTip(tr("Step %1").arg(i + 1));
            m_thumbnails->addItem(item);
        }
    }
    const bool any = count > 0;
    for (QWidget* w :
         std::initializer_list<QWidget*>{m_slider, m_thumbnails, m_homeButton, m_previousButton,
                                         m_playButton, m_nextButton, m_endButton}) {
        w->setEnabled(any);
    }
    updateHeader();
    startThumbnails();
    if (any) {
        setCurrentStep(0);
    } else {
        m_image = QImage();
        m_screenshot->setImage(m_image, tr("No steps recorded."));
        m_details->clear();
        m_input->clear();
        m_diffs->clear();
        m_position->setText(tr("No steps"));
    }
}

void SessionViewerWidget::startThumbnails() {
    if (m_thumbnailThread.joinable()) {
        m_thumbnailThread.request_stop();
        m_thumbnailThread.join();
    }
    if (m_session.steps.empty()) return;
    std::vector<std::vector<std::uint8_t>> pngs;
    pngs.reserve(m_session.steps.size());
    for (const agent::StepRecord& step : m_session.steps)
        pngs.push_back(step.observationPng);
    const qreal ratio = devicePixelRatioF();
    m_thumbnailThread = std::jthread(
        [this, pngs = std::move(pngs), generation = m_generation, ratio](std::stop_token stop) {
            for (std::size_t i = 0; i < pngs.size() && !stop.stop_requested(); ++i) {
                QImage image = decodePng(pngs[i]);
                if (image.isNull()) continue;
                QImage thumbnail = image.scaled(QSize(kThumbnailWidth, kThumbnailHeight) * ratio,
                                                Qt::KeepAspectRatio, Qt::SmoothTransformation);
                thumbnail.setDevicePixelRatio(ratio);
                QMetaObject::invokeMethod(
                    this,
                    [this, generation, i, thumbnail = std::move(thumbnail)] {
                        onThumbnail(generation, static_cast<int>(i), thumbnail);
                    },
                    Qt::QueuedConnection);
            }
        });
}

void SessionViewerWidget::onThumbnail(std::uint64_t generation, int step, const QImage& thumbnail) {
    if (generation != m_generation) return;
    if (QListWidgetItem* item = m_thumbnails->item(step)) {
        item->setIcon(QIcon(QPixmap::fromImage(thumbnail)));
    }
}

void SessionViewerWidget::setCurrentStep(int step) {
    const int count = static_cast<int>(m_session.steps.size());
    if (count == 0) return;
    step = std::clamp(step, 0, count - 1);
    if (step == m_current) return;
    m_current = step;
    {
        const QSignalBlocker blockSlider(m_slider);
        const QSignalBlocker blockList(m_thumbnails);
        m_slider->setValue(step);
        m_thumbnails->setCurrentRow(step);
    }
    m_thumbnails->scrollToItem(m_thumbnails->item(step));
    showStep();
    Q_EMIT currentStepChanged(step);
}

bool SessionViewerWidget::isPlaying() const {
    return m_timer->isActive();
}

void SessionViewerWidget::play() {
    const int count = static_cast<int>(m_session.steps.size());
    if (count == 0 || isPlaying()) return;
    if (m_current >= count - 1) setCurrentStep(0);  // played to the end: start over
    m_timer->start();
    m_playButton->setIcon(style()->standardIcon(QStyle::SP_MediaPause));
    m_playButton->setText(tr("Pause"));
    Q_EMIT playingChanged(true);
}

void SessionViewerWidget::pause() {
    if (!isPlaying()) return;
    m_timer->stop();
    m_playButton->setIcon(style()->standardIcon(QStyle::SP_MediaPlay));
    m_playButton->setText(tr("Play"));
    Q_EMIT playingChanged(false);
}

void SessionViewerWidget::setPlaybackInterval(int ms) {
    m_timer->setInterval(std::max(1, ms));
}

void SessionViewerWidget::advance() {
    const int last = static_cast<int>(m_session.steps.size()) - 1;
    if (m_current >= last) {
        pause();
        return;
    }
    setCurrentStep(m_current + 1);
    if (m_current >= last) pause();
}

void SessionViewerWidget::keyPressEvent(QKeyEvent* event) {
    switch (event->key()) {
        case Qt::Key_Left:
            setCurrentStep(m_current - 1);
            break;
        case Qt::Key_Right:
            setCurrentStep(m_current + 1);
            break;
        case Qt::Key_Home:
            setCurrentStep(0);
            break;
        case Qt::Key_End:
            setCurrentStep(static_cast<int>(m_session.steps.size()) - 1);
            break;
        case Qt::Key_Space:
            isPlaying() ? pause() : play();
            break;
        default:
            QWidget::keyPressEvent(event);
            return;
    }
    event->accept();
}

void SessionViewerWidget::updateHeader() {
    const agent::SessionSummary& s = m_session.summary;
    if (s.id == 0 && m_session.steps.empty()) {
        m_header->setText(tr("<i>No session open.</i>"));
        return;
    }
    QString facts = tr("Session %1 · status <b>%2</b>")
                        .arg(s.id)
                        .arg(escaped(agent::sessionStatusName(s.status)));
    if (s.score) facts += tr(" · score %1").arg(*s.score, 0, 'f', 2);
    facts += tr(" · %n step(s)", nullptr, static_cast<int>(m_session.steps.size()));
    if (s.createdAtMs > 0) {
        facts += tr(" · started %1")
                     .arg(QDateTime::fromMSecsSinceEpoch(s.createdAtMs)
                              .toString(QStringLiteral("yyyy-MM-dd hh:mm:ss")));
    }
    if (s.forkedFrom) {
        facts += tr(" · forked from session %1 at step %2")
                     .arg(*s.forkedFrom)
                     .arg(s.forkedAtStep.value_or(0));
    }
    QString html = QStringLiteral("<b>%1</b><br>%2<br>").arg(escaped(s.instruction), facts);
    html += tr("Model: %1 · Environment: %2 · Actions: %3")
                .arg(escaped(s.model), escaped(s.environment), escaped(s.actionFormat));
    m_header->setText(html);
}

void SessionViewerWidget::showStep() {
    const agent::StepRecord& step = m_session.steps.at(static_cast<std::size_t>(m_current));
    const int count = static_cast<int>(m_session.steps.size());
    m_position->setText(tr("Step %1 / %2").arg(m_current + 1).arg(count));

    const QImage screenshot = decodePng(step.observationPng);
    m_image = renderActionOverlay(screenshot, step.actions);
    m_screenshot->setImage(m_image, step.observationPng.empty()
                                        ? tr("No screenshot in this step.")
                                        : tr("The screenshot could not be decoded."));

    QString html;
    if (!step.url.empty() || !step.title.empty()) {
        html += QStringLiteral("<p>%1<br><small>%2</small></p>")
                    .arg(escaped(step.title), escaped(step.url));
    }
    html += heading(tr("Model answer"));
    if (step.response) {
        html += pre(escaped(step.response->text));
        for (const agent::ToolCall& call : step.response->toolCalls) {
            html += pre(escaped(call.name + "(" + call.arguments + ")"));
        }
        html += QStringLiteral("<p><small>%1</small></p>")
                    .arg(tr("%1 prompt + %2 completion tokens, %3 ms, finish: %4")
                             .arg(step.response->promptTokens)
                             .arg(step.response->completionTokens)
                             .arg(step.response->latencyMs, 0, 'f', 0)
                             .arg(escaped(step.response->finishReason)));
    } else {
        html += QStringLiteral("<p>%1</p>")
                    .arg(errorSpan(tr("No response: %1").arg(escaped(step.modelError))));
    }

    html += heading(tr("Actions"));
    if (!step.parseError.empty()) {
        html += QStringLiteral("<p>%1</p>")
                    .arg(errorSpan(tr("Parse error: %1").arg(escaped(step.parseError))));
    }
    if (step.actions.empty()) html += tr("<p><i>None.</i></p>");
    html += QStringLiteral("<ol>");
    for (std::size_t i = 0; i < step.actions.size(); ++i) {
        QString line =
            QStringLiteral("<code>%1</code>").arg(escaped(agent::describe(step.actions[i])));
        if (i < step.results.size()) {
            const agent::ActionOutcome& result = step.results[i];
            line += result.ok ? QStringLiteral(" — ok")
                              : QStringLiteral(" — ") +
                                    errorSpan(tr("failed: %1").arg(escaped(result.error)));
            if (!result.output.empty()) line += pre(escaped(result.output));
        } else {
            line += tr(" — <i>not executed</i>");
        }
        html += QStringLiteral("<li>%1</li>").arg(line);
    }
    html += QStringLiteral("</ol>");

    std::vector<const agent::SessionEvent*> events;
    for (const agent::SessionEvent& event : m_session.events) {
        if (event.stepIndex == m_current) events.push_back(&event);
    }
    if (!events.empty()) {
        html += heading(tr("Events"));
        for (const agent::SessionEvent* event : events) {
            const QString text = escaped(event->kind + ": " + event->message);
            html += QStringLiteral("<p>%1</p>")
                        .arg(event->kind == "error" || event->kind == "warning" ? errorSpan(text)
                                                                                : text);
        }
    }

    const agent::StepTimings& t = step.timings;
    html += heading(tr("Timings"));
    html += QStringLiteral("<p>%1</p>")
                .arg(tr("capture %1 ms · encode %2 ms · model %3 ms · parse %4 ms · execute %5 ms "
                        "· record %6 ms")
                         .arg(t.captureMs, 0, 'f', 1)
                         .arg(t.encodeMs, 0, 'f', 1)
                         .arg(t.modelMs, 0, 'f', 1)
                         .arg(t.parseMs, 0, 'f', 1)
                         .arg(t.executeMs, 0, 'f', 1)
                         .arg(t.recordMs, 0, 'f', 1));
    m_details->setHtml(html);

    m_input->setPlainText(fromStd(lastUserText(step.request)));
    m_diffs->setHtml(diffHtml(step.edits));
    m_tabs->setTabText(
        2, step.edits.empty() ? tr("File &diffs") : tr("File &diffs (%1)").arg(step.edits.size()));
}

QString SessionViewerWidget::headerText() const {
    QTextDocument document;
    document.setHtml(m_header->text());
    return document.toPlainText();
}

QString SessionViewerWidget::stepText() const {
    return m_details->toPlainText() + QLatin1Char('\n') + m_input->toPlainText();
}

QString SessionViewerWidget::diffText() const {
    return m_diffs->toPlainText();
}

}  // namespace iris::app
