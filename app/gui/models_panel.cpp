#include "app/gui/models_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "app/models/model_pull.h"
#include "app/session/data_paths.h"
#include "base/strings.h"

namespace iris::app {
namespace {

// Columns of the list; the name column's item keeps the row's data.
enum Column { Name, Quant, Size, State };
constexpr int kModelRole = Qt::UserRole;       // pulled: "name:quant"; catalogue: "name"
constexpr int kPulledRole = Qt::UserRole + 1;  // bool

QString qs(const std::string& text) {
    return QString::fromStdString(text);
}

}  // namespace

ModelsPanel::ModelsPanel(ModelsPanelOptions options, QWidget* parent)
    : QWidget(parent), m_options(std::move(options)), m_store(m_options.storeDirectory) {
    setObjectName(QStringLiteral("modelsPanel"));
    if (m_options.cataloguePath.empty())
        m_options.cataloguePath = dataDirectory() / "models" / "catalogue.json";
    if (Result<models::Catalogue> catalogue = models::loadCatalogue(m_options.cataloguePath))
        m_catalogue = *catalogue;

    m_list = new QTreeWidget;
    m_list->setObjectName(QStringLiteral("modelsList"));
    m_list->setRootIsDecorated(false);
    m_list->setHeaderLabels({tr("Model"), tr("Quantization"), tr("Size"), tr("State")});
    m_list->header()->setSectionResizeMode(Name, QHeaderView::Stretch);
    m_list->setMinimumHeight(120);
    connect(m_list, &QTreeWidget::itemSelectionChanged, this, &ModelsPanel::selectionChanged);
    connect(m_list, &QTreeWidget::itemDoubleClicked, this, [this] { useSelected(); });

    m_reference = new QLineEdit;
    m_reference->setObjectName(QStringLiteral("modelReference"));
    m_reference->setPlaceholderText(tr("ui-tars-1.5-7b[:QUANT] or user/repo[:QUANT]"));
    m_pull = new QPushButton(tr("&Pull"));
    m_pull->setObjectName(QStringLiteral("pullModel"));
    m_cancel = new QPushButton(tr("Cancel"));
    m_cancel->setObjectName(QStringLiteral("cancelPull"));
    m_cancel->setEnabled(false);
    m_use = new QPushButton(tr("&Use"));
    m_use->setObjectName(QStringLiteral("useModel"));
    m_use->setToolTip(tr("Use the selected model and its vision projector"));
    m_use->setEnabled(false);
    connect(m_pull, &QPushButton::clicked, this, &ModelsPanel::startPull);
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        m_cancelRequested = true;
        m_status->setText(tr("Stopping ..."));
    });
    connect(m_use, &QPushButton::clicked, this, &ModelsPanel::useSelected);
    connect(m_reference, &QLineEdit::returnPressed, this, &ModelsPanel::startPull);

    m_progress = new QProgressBar;
    m_progress->setObjectName(QStringLiteral("pullProgress"));
    m_progress->setRange(0, 1000);
    m_progress->setVisible(false);
    m_status = new QLabel;
    m_status->setObjectName(QStringLiteral("pullStatus"));
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* row = new QHBoxLayout;
    row->addWidget(m_reference, 1);
    row->addWidget(m_pull);
    row->addWidget(m_cancel);
    row->addWidget(m_use);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_list);
    layout->addLayout(row);
    layout->addWidget(m_progress);
    layout->addWidget(m_status);
    refresh();
}

ModelsPanel::~ModelsPanel() {
    m_cancelRequested = true;
    if (m_thread.joinable()) m_thread.join();
}

void ModelsPanel::refresh() {
    m_list->clear();
    Result<std::vector<models::Manifest>> pulled = m_store.list();
    if (!pulled) m_status->setText(qs(pulled.status().message()));
    const std::vector<models::Manifest> manifests =
        pulled ? *pulled : std::vector<models::Manifest>{};
    for (const models::Manifest& m : manifests) {
        auto* item = new QTreeWidgetItem(m_list);
        item->setText(Name, qs(m.name));
        item->setText(Quant, qs(m.quant));
        item->setText(Size, qs(humanBytes(m.model.size + (m.mmproj ? m.mmproj->size : 0))));
        item->setText(State, m.mmproj ? tr("pulled, with vision") : tr("pulled, text only"));
        item->setData(Name, kModelRole, qs(m.name + ":" + m.quant));
        item->setData(Name, kPulledRole, true);
    }
    for (const models::CatalogueEntry& entry : m_catalogue.entries) {
        const bool have =
            std::any_of(manifests.begin(), manifests.end(),
                        [&](const models::Manifest& m) { return m.name == entry.name; });
        if (have) continue;
        auto* item = new QTreeWidgetItem(m_list);
        item->setText(Name, qs(entry.name));
        item->setText(Quant, qs(entry.defaultQuant));
        item->setText(State, entry.bundled ? tr("bundled with Iris") : tr("in the catalogue"));
        item->setToolTip(Name, qs(entry.description +
                                  (entry.bundled ? std::string() : " (" + entry.repo + ")")));
        item->setData(Name, kModelRole, qs(entry.name));
        item->setData(Name, kPulledRole, entry.bundled);  // usable as it is
    }
    selectionChanged();
}

void ModelsPanel::selectionChanged() {
    const QList<QTreeWidgetItem*> selected = m_list->selectedItems();
    const bool pulled = !selected.isEmpty() && selected.front()->data(Name, kPulledRole).toBool();
    m_use->setEnabled(pulled);
    if (!selected.isEmpty() && !pulling())
        m_reference->setText(selected.front()->data(Name, kModelRole).toString());
}

void ModelsPanel::useSelected() {
    const QList<QTreeWidgetItem*> selected = m_list->selectedItems();
    if (selected.isEmpty() || !selected.front()->data(Name, kPulledRole).toBool()) return;
    const std::string name = selected.front()->data(Name, kModelRole).toString().toStdString();
    if (const models::CatalogueEntry* entry = m_catalogue.find(name); entry && entry->bundled) {
        Result<models::BundledFiles> files =
            models::bundledModelFiles(*entry, m_options.cataloguePath.parent_path());
        if (!files) return m_status->setText(qs(files.status().message()));
        m_status->setText(tr("Using %1").arg(qs(name)));
        Q_EMIT modelChosen(qs(files->model.string()), qs(files->mmproj.string()),
                           qs(entry->actionFormat));
        return;
    }
    Result<models::PulledModel> model = models::findPulledModel(m_store, m_catalogue, name);
    if (!model) {
        m_status->setText(qs(model.status().message()));
        return;
    }
    m_status->setText(tr("Using %1").arg(selected.front()->data(Name, kModelRole).toString()));
    Q_EMIT modelChosen(qs(model->modelPath.string()), qs(model->mmprojPath.string()),
                       model->entry ? qs(model->entry->actionFormat) : QString());
}

void ModelsPanel::startPull() {
    if (pulling()) return;
    if (m_thread.joinable()) m_thread.join();  // the last pull's thread, already done
    const QString text = m_reference->text().trimmed();
    Result<models::ModelReference> reference = models::parseModelReference(text.toStdString());
    if (!reference) {
        m_status->setText(qs(reference.status().message()));
        return;
    }
    m_cancelRequested = false;
    m_finished = false;
    m_pull->setEnabled(false);
    m_cancel->setEnabled(true);
    m_progress->setValue(0);
    m_progress->setVisible(true);
    m_status->setText(tr("Listing the files of %1 ...").arg(text));

    models::PullOptions options;
    options.hub = m_options.hub;
    options.cancel = &m_cancelRequested;
    // Queued to the GUI thread; a QPointer so that late reports after the panel is gone are
    // dropped (the destructor joins the thread, but queued calls may still be pending).
    const QPointer<ModelsPanel> self(this);
    options.onProgress = [self](const std::string& file, const models::DownloadProgress& p) {
        const QString name = qs(file);
        QMetaObject::invokeMethod(
            self,
            [self, name, p] {
                if (!self) return;
                self->m_progress->setValue(p.total ? int(1000.0 * double(p.done) / double(p.total))
                                                   : 0);
                QString line = name + QStringLiteral("  ") + qs(humanBytes(p.done));
                if (p.total) line += QStringLiteral(" / ") + qs(humanBytes(p.total));
                if (p.bytesPerSecond > 0)
                    line += QStringLiteral("  ") + qs(humanBytes(std::uint64_t(p.bytesPerSecond))) +
                            QStringLiteral("/s");
                if (p.resumed) line += self->tr("  (resumed)");
                self->m_status->setText(line);
            },
            Qt::QueuedConnection);
    };
    options.onMessage = [self](const std::string& message) {
        const QString line = qs(message);
        QMetaObject::invokeMethod(
            self,
            [self, line] {
                if (self) self->m_status->setText(line);
            },
            Qt::QueuedConnection);
    };
    m_thread = std::thread([this, self, store = m_store, catalogue = m_catalogue,
                            reference = *reference, options]() {
        Result<models::Manifest> manifest = models::pullModel(store, catalogue, reference, options);
        const bool ok = manifest.isOk();
        const QString message = ok ? tr("Pulled %1:%2").arg(qs(manifest->name), qs(manifest->quant))
                                   : qs(manifest.status().message());
        m_finished = true;
        QMetaObject::invokeMethod(
            self,
            [self, ok, message] {
                if (self) self->finishPull(ok, message);
            },
            Qt::QueuedConnection);
    });
}

void ModelsPanel::finishPull(bool ok, const QString& message) {
    m_pull->setEnabled(true);
    m_cancel->setEnabled(false);
    m_progress->setVisible(false);
    m_status->setText(
        ok || !m_cancelRequested ? message : tr("Stopped; pull again to resume where it stopped."));
    refresh();
}

}  // namespace iris::app
