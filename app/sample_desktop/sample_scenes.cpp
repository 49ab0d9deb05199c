#include "app/sample_desktop/sample_scenes.h"

#include <memory>
#include <vector>

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSlider>
#include <QSpinBox>

namespace iris::sample {
namespace {

// A widget of type T at (x, y, w, h) in `root`.
template <typename T, typename... Args>
T* place(QWidget* root, int x, int y, int w, int h, Args&&... args) {
    T* widget = new T(std::forward<Args>(args)..., root);
    widget->setGeometry(x, y, w, h);
    return widget;
}

void heading(QWidget* root, const QString& text) {
    QLabel* title = place<QLabel>(root, 40, 20, 900, 40, text);
    QFont font = title->font();
    font.setPixelSize(24);
    font.setBold(true);
    title->setFont(font);
}

// Name and email fields, a plan (radio buttons), a newsletter box and Submit.
void buildForm(QWidget* root, const StateReport& report) {
    heading(root, QStringLiteral("Club sign-up"));
    place<QLabel>(root, 40, 90, 150, 40, QStringLiteral("Name"));
    auto* name = place<QLineEdit>(root, 200, 90, 400, 40);
    place<QLabel>(root, 40, 150, 150, 40, QStringLiteral("Email"));
    auto* email = place<QLineEdit>(root, 200, 150, 400, 40);
    auto* plans = new QButtonGroup(root);
    const QStringList names = {QStringLiteral("Basic"), QStringLiteral("Plus"),
                               QStringLiteral("Pro")};
    for (int i = 0; i < names.size(); ++i)
        plans->addButton(place<QRadioButton>(root, 200 + 160 * i, 220, 150, 30, names[i]), i);
    plans->button(0)->setChecked(true);
    auto* newsletter = place<QCheckBox>(root, 200, 280, 300, 30, QStringLiteral("Newsletter"));
    auto* submit = place<QPushButton>(root, 200, 340, 160, 44, QStringLiteral("Submit"));
    auto submitted = std::make_shared<bool>(false);
    auto send = [=] {
        report({{QStringLiteral("name"), name->text()},
                {QStringLiteral("email"), email->text()},
                {QStringLiteral("plan"), plans->checkedButton()->text().toLower()},
                {QStringLiteral("newsletter"), newsletter->isChecked()},
                {QStringLiteral("submitted"), *submitted}});
    };
    QObject::connect(name, &QLineEdit::textChanged, root, send);
    QObject::connect(email, &QLineEdit::textChanged, root, send);
    QObject::connect(plans, &QButtonGroup::idClicked, root, send);
    QObject::connect(newsletter, &QCheckBox::toggled, root, send);
    QObject::connect(submit, &QPushButton::clicked, root, [=] {
        *submitted = true;
        send();
    });
    send();
}

// A text editor and Save: "saved" is the text as it was at the last Save.
void buildNotes(QWidget* root, const StateReport& report) {
    heading(root, QStringLiteral("Notes"));
    auto* editor = place<QPlainTextEdit>(root, 40, 80, 800, 400);
    auto* save = place<QPushButton>(root, 40, 500, 160, 44, QStringLiteral("Save"));
    auto saved = std::make_shared<QString>();
    auto send = [=] {
        report(
            {{QStringLiteral("text"), editor->toPlainText()}, {QStringLiteral("saved"), *saved}});
    };
    QObject::connect(editor, &QPlainTextEdit::textChanged, root, send);
    QObject::connect(save, &QPushButton::clicked, root, [=] {
        *saved = editor->toPlainText();
        send();
    });
    send();
}

// A number with +, - and Reset; it starts at 10.
void buildCounter(QWidget* root, const StateReport& report) {
    heading(root, QStringLiteral("Counter"));
    auto* shown = place<QLabel>(root, 40, 80, 300, 60);
    QFont font = shown->font();
    font.setPixelSize(40);
    shown->setFont(font);
    auto* plus = place<QPushButton>(root, 40, 160, 120, 60, QStringLiteral("+"));
    auto* minus = place<QPushButton>(root, 180, 160, 120, 60, QStringLiteral("-"));
    auto* reset = place<QPushButton>(root, 320, 160, 120, 60, QStringLiteral("Reset"));
    auto count = std::make_shared<int>(10);
    auto change = [=](int to) {
        *count = to;
        shown->setText(QString::number(to));
        report({{QStringLiteral("count"), to}});
    };
    QObject::connect(plus, &QPushButton::clicked, root, [=] { change(*count + 1); });
    QObject::connect(minus, &QPushButton::clicked, root, [=] { change(*count - 1); });
    QObject::connect(reset, &QPushButton::clicked, root, [=] { change(0); });
    change(10);
}

// A list with fixed 40-pixel rows, the name of the current row.
QListWidget* fixedRowList(QWidget* root, int x, int y, int w, int h, const QStringList& items) {
    auto* list = place<QListWidget>(root, x, y, w, h);
    for (const QString& text : items) {
        auto* item = new QListWidgetItem(text, list);
        item->setSizeHint(QSize(w - 20, 40));
    }
    return list;
}

QJsonArray itemsOf(const QListWidget* list) {
    QJsonArray items;
    for (int i = 0; i < list->count(); ++i)
        items.append(list->item(i)->text());
    return items;
}

// A shopping list: select a row, Remove deletes it.
void buildList(QWidget* root, const StateReport& report) {
    heading(root, QStringLiteral("Shopping list"));
    const QStringList items = {QStringLiteral("Apples"), QStringLiteral("Bread"),
                               QStringLiteral("Cheese"), QStringLiteral("Dates"),
                               QStringLiteral("Eggs")};
    QListWidget* list = fixedRowList(root, 40, 80, 400, 240, items);
    auto* remove = place<QPushButton>(root, 480, 80, 160, 44, QStringLiteral("Remove"));
    auto send = [=] { report({{QStringLiteral("items"), itemsOf(list)}}); };
    QObject::connect(remove, &QPushButton::clicked, root, [=] {
        delete list->currentItem();
        send();
    });
    send();
}

// A volume slider (0-100, page step 10) that has the keyboard focus; it starts at 20.
void buildSlider(QWidget* root, const StateReport& report) {
    heading(root, QStringLiteral("Volume"));
    auto* slider = place<QSlider>(root, 40, 120, 600, 40, Qt::Horizontal);
    slider->setRange(0, 100);
    slider->setPageStep(10);
    slider->setValue(20);
    auto* shown = place<QLabel>(root, 680, 120, 120, 40, QStringLiteral("20"));
    QObject::connect(slider, &QSlider::valueChanged, root, [=](int value) {
        shown->setText(QString::number(value));
        report({{QStringLiteral("volume"), value}});
    });
    slider->setFocus();
    report({{QStringLiteral("volume"), slider->value()}});
}

// Theme, font size and autosave, applied with Apply; the theme box has the focus.
void buildSettings(QWidget* root, const StateReport& report) {
    heading(root, QStringLiteral("Settings"));
    place<QLabel>(root, 40, 90, 150, 40, QStringLiteral("Theme"));
    auto* theme = place<QComboBox>(root, 200, 90, 240, 40);
    theme->addItems({QStringLiteral("Light"), QStringLiteral("Dark"), QStringLiteral("System")});
    place<QLabel>(root, 40, 150, 150, 40, QStringLiteral("Font size"));
    auto* size = place<QSpinBox>(root, 200, 150, 120, 40);
    size->setRange(8, 32);
    size->setValue(12);
    auto* autosave = place<QCheckBox>(root, 200, 210, 240, 30, QStringLiteral("Autosave"));
    auto* apply = place<QPushButton>(root, 200, 260, 160, 44, QStringLiteral("Apply"));
    auto applied = std::make_shared<QJsonObject>();
    auto send = [=] { report({{QStringLiteral("applied"), *applied}}); };
    QObject::connect(apply, &QPushButton::clicked, root, [=] {
        *applied = {{QStringLiteral("theme"), theme->currentText().toLower()},
                    {QStringLiteral("font_size"), size->value()},
                    {QStringLiteral("autosave"), autosave->isChecked()}};
        send();
    });
    theme->setFocus();
    send();
}

// Five chores with check boxes.
void buildChecklist(QWidget* root, const StateReport& report) {
    heading(root, QStringLiteral("Chores"));
    const QStringList chores = {QStringLiteral("Water the plants"), QStringLiteral("Pay rent"),
                                QStringLiteral("Call mom"), QStringLiteral("Buy milk"),
                                QStringLiteral("Back up photos")};
    auto boxes = std::make_shared<std::vector<QCheckBox*>>();
    for (int i = 0; i < chores.size(); ++i)
        boxes->push_back(place<QCheckBox>(root, 40, 90 + 50 * i, 400, 36, chores[i]));
    auto send = [=] {
        QJsonArray done;
        for (QCheckBox* box : *boxes)
            if (box->isChecked()) done.append(box->text());
        report({{QStringLiteral("done"), done}});
    };
    for (QCheckBox* box : *boxes)
        QObject::connect(box, &QCheckBox::toggled, root, send);
    send();
}

// Sixty numbered rows, ten visible at a time; Choose takes the current row.
void buildScroll(QWidget* root, const StateReport& report) {
    heading(root, QStringLiteral("Pick a seat"));
    QStringList seats;
    for (int i = 1; i <= 60; ++i)
        seats << QStringLiteral("Seat %1").arg(i);
    QListWidget* list = fixedRowList(root, 40, 80, 400, 404, seats);
    list->setVerticalScrollMode(QAbstractItemView::ScrollPerItem);
    auto* choose = place<QPushButton>(root, 480, 80, 160, 44, QStringLiteral("Choose"));
    auto chosen = std::make_shared<QString>();
    auto send = [=] { report({{QStringLiteral("chosen"), *chosen}}); };
    QObject::connect(choose, &QPushButton::clicked, root, [=] {
        if (list->currentItem()) *chosen = list->currentItem()->text();
        send();
    });
    send();
}

struct Scene {
    const char* name;
    void (*build)(QWidget*, const StateReport&);
};

constexpr Scene kScenes[] = {
    {"form", buildForm},           {"notes", buildNotes},   {"counter", buildCounter},
    {"list", buildList},           {"slider", buildSlider}, {"settings", buildSettings},
    {"checklist", buildChecklist}, {"scroll", buildScroll},
};

}  // namespace

bool buildScene(const QString& name, QWidget* root, const StateReport& report) {
    for (const Scene& scene : kScenes) {
        if (name == QLatin1String(scene.name)) {
            scene.build(root, report);
            return true;
        }
    }
    return false;
}

QString sceneNames() {
    QStringList names;
    for (const Scene& scene : kScenes)
        names << QLatin1String(scene.name);
    return names.join(QStringLiteral(", "));
}

}  // namespace iris::sample
