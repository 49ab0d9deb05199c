#include "app/gui/grounding_dialog.h"

#include <thread>
#include <utility>

#include <QApplication>
#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMetaObject>
#include <QPlainTextEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "agent/grounding/grounding_report.h"
#include "app/session/grounding_check.h"
#include "app/session/model_choice.h"

namespace iris::app {

GroundingDialog::GroundingDialog(const AppSettings& settings, QWidget* parent)
    : QDialog(parent), m_settings(settings) {
    setWindowTitle(tr("Check Grounding"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(
        tr("Renders synthetic pages (buttons, links, text fields, checkboxes, labelled icons) and "
           "asks the model in one agent step each to click a described element. The same seed "
           "gives the same pages, so two quantizations of a model can be compared."),
        this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    auto* form = new QFormLayout;
    m_pages = new QSpinBox(this);
    m_pages->setRange(1, 10000);
    m_pages->setValue(20);
    m_seed = new QSpinBox(this);
    m_seed->setRange(0, 1 << 30);
    m_seed->setValue(1);
    form->addRow(tr("Pages:"), m_pages);
    form->addRow(tr("Seed:"), m_seed);
    layout->addLayout(form);

    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    layout->addWidget(m_status);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    layout->addWidget(m_progress);
    m_log = new QPlainTextEdit(this);
    m_log->setReadOnly(true);
    m_log->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_log->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_log->setMinimumSize(720, 320);
    layout->addWidget(m_log, 1);

    auto* buttons = new QDialogButtonBox(this);
    m_startButton = buttons->addButton(tr("&Start"), QDialogButtonBox::ActionRole);
    m_stopButton = buttons->addButton(tr("S&top"), QDialogButtonBox::ActionRole);
    m_stopButton->setEnabled(false);
    buttons->addButton(QDialogButtonBox::Close);
    connect(m_startButton, &QPushButton::clicked, this, &GroundingDialog::start);
    connect(m_stopButton, &QPushButton::clicked, this, &GroundingDialog::stop);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);

    const ModelChoice choice = modelChoiceOf(m_settings);
    if (choice.backend == ModelChoice::Backend::None) {
        m_status->setText(tr("No model is configured: choose one in File \u25b8 Settings."));
        m_startButton->setEnabled(false);
    } else {
        m_status->setText(tr("Model: %1, action format %2")
                              .arg(choice.backend == ModelChoice::Backend::Endpoint
                                       ? m_settings.endpointUrl
                                       : m_settings.modelPath,
                                   m_settings.actionFormat));
    }
}

GroundingDialog::~GroundingDialog() {
    stop();
}

QString GroundingDialog::logText() const {
    return m_log->toPlainText();
}

void GroundingDialog::setPages(int pages, int seed) {
    m_pages->setValue(pages);
    m_seed->setValue(seed);
}

void GroundingDialog::stop() {
    if (!m_run) return;
    m_run->stop = true;
    const std::lock_guard lock(m_run->mutex);
    if (m_run->client) m_run->client->cancel();
    m_status->setText(tr("Stopping after the page in flight..."));
}

void GroundingDialog::start() {
    if (m_run) return;
    Result<agent::ActionFormat> format =
        agent::actionFormatFromName(m_settings.actionFormat.toStdString());
    if (!format) return onDone(false, QString::fromStdString(format.status().message()));
    const ModelChoice choice = modelChoiceOf(m_settings);
    if (choice.backend == ModelChoice::Backend::None)
        return onDone(false, tr("no model is configured: choose one in File \u25b8 Settings."));
    GroundingCheckOptions options;
    options.pages = m_pages->value();
    options.seed = std::uint64_t(m_seed->value());
    options.format = *format;

    m_run = std::make_shared<Run>();
    m_log->clear();
    m_progress->setRange(0, options.pages);
    m_progress->setValue(0);
    m_startButton->setEnabled(false);
    m_stopButton->setEnabled(true);
    m_status->setText(tr("Loading the model..."));

    QPointer<GroundingDialog> self(this);
    std::shared_ptr<Run> run = m_run;
    // The browsers live on the GUI thread, anchored to the application (which outlives a closed
    // dialog); the worker drives them from its thread.
    QObject* browserThread = qApp;
    std::thread([self, run, choice, options, browserThread] {
        const auto post = [self](auto work) {
            QMetaObject::invokeMethod(
                qApp,
                [self, work] {
                    if (GroundingDialog* dialog = self.data()) work(*dialog);
                },
                Qt::QueuedConnection);
        };
        Result<std::unique_ptr<agent::ModelClient>> client = makeModelClient(choice);
        if (!client) {
            const QString error = QString::fromStdString(client.status().message());
            return post([error](GroundingDialog& d) { d.onDone(false, error); });
        }
        {
            const std::lock_guard lock(run->mutex);
            run->client = client->get();
        }
        Result<agent::grounding::GroundingReport> report = runGroundingCheck(
            **client, options,
            [post](const agent::grounding::PageOutcome& outcome, int done, int total) {
                const QString line = QString::fromStdString(agent::grounding::pageLine(outcome));
                post([line, done, total](GroundingDialog& d) { d.onPage(line, done, total); });
            },
            &run->stop, browserThread);
        {
            const std::lock_guard lock(run->mutex);
            run->client = nullptr;
        }
        const bool ok = report.isOk();
        const QString text = QString::fromStdString(
            ok ? agent::grounding::reportText(*report, false) : report.status().message());
        post([ok, text](GroundingDialog& d) { d.onDone(ok, text); });
    }).detach();
}

void GroundingDialog::onPage(const QString& line, int done, int total) {
    m_log->appendPlainText(line);
    m_progress->setValue(done);
    m_status->setText(tr("Page %1 of %2").arg(done).arg(total));
}

void GroundingDialog::onDone(bool ok, const QString& text) {
    m_run.reset();
    m_startButton->setEnabled(true);
    m_stopButton->setEnabled(false);
    if (ok) {
        m_log->appendPlainText(QString());
        m_log->appendPlainText(text);
        m_status->setText(tr("Done."));
    } else {
        m_status->setText(tr("The check could not run: %1").arg(text));
    }
    Q_EMIT finished(ok);
}

}  // namespace iris::app
