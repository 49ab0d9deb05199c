#pragma once
// Steps through one recorded session: a timeline (slider and thumbnails) to scrub, playback at
// one step a second, and for the current step the screenshot with its actions drawn on it, the
// model's answer and parsed actions, the request's last user text, results and errors, file
// diffs and timings, under a header describing the session. Keys: Left/Right, Home/End, Space.
#include <cstdint>
#include <memory>
#include <thread>

#include <QImage>
#include <QWidget>

#include "agent/recording/recording_types.h"

class QLabel;
class QListWidget;
class QSlider;
class QTabWidget;
class QTextBrowser;
class QTimer;
class QToolButton;

namespace iris::app {

class ScreenshotView;

class SessionViewerWidget final : public QWidget {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(SessionViewerWidget)

public:
    explicit SessionViewerWidget(QWidget* parent = nullptr);
    ~SessionViewerWidget() override;

    // Shows the session from its first step; stops playback. Thumbnails are made on a worker.
    void setSession(agent::SessionRecord session);
    const agent::SessionRecord& session() const { return m_session; }

    // 0-based; -1 when the session has no steps.
    int currentStep() const { return m_current; }
    // Clamped to the steps there are.
    void setCurrentStep(int step);

    bool isPlaying() const;
    void play();
    void pause();
    // Milliseconds per step while playing (1000 unless changed).
    void setPlaybackInterval(int ms);

    // The current step's screenshot with its actions drawn on it (null without a screenshot).
    const QImage& currentImage() const { return m_image; }
    // What the panes show, as plain text: the header, the step details, the diffs.
    QString headerText() const;
    QString stepText() const;
    QString diffText() const;

Q_SIGNALS:
    void currentStepChanged(int step);
    void playingChanged(bool playing);

protected:
    void keyPressEvent(QKeyEvent* event) override;

private:
    void showStep();
    void updateHeader();
    void startThumbnails();
    void onThumbnail(std::uint64_t generation, int step, const QImage& thumbnail);
    void advance();

    agent::SessionRecord m_session;
    int m_current = -1;
    QImage m_image;
    // Bumped by setSession so that thumbnails of an earlier session still queued are dropped.
    std::uint64_t m_generation = 0;
    // Decodes and scales the thumbnails; stopped and joined before the next session or the end.
    std::jthread m_thumbnailThread;

    QLabel* m_header = nullptr;
    ScreenshotView* m_screenshot = nullptr;
    QTabWidget* m_tabs = nullptr;
    QTextBrowser* m_details = nullptr;
    QTextBrowser* m_input = nullptr;
    QTextBrowser* m_diffs = nullptr;
    QSlider* m_slider = nullptr;
    QLabel* m_position = nullptr;
    QListWidget* m_thumbnails = nullptr;
    QToolButton* m_homeButton = nullptr;
    QToolButton* m_previousButton = nullptr;
    QToolButton* m_playButton = nullptr;
    QToolButton* m_nextButton = nullptr;
    QToolButton* m_endButton = nullptr;
    QTimer* m_timer = nullptr;
};

}  // namespace iris::app
