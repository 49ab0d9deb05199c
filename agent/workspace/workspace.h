#pragma once
// The web project the agent edits: a folder it may read and write and nothing outside it, with a
// revision for every change so that the loop can keep an edit or revert it.
//
// Confinement guards against a model's mistakes (and a prompt-injected page asking for
// ../../.ssh), not against another process racing to swap directories for symlinks between the
// check and the write. Not thread-safe: one session drives one workspace.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/actions/action.h"
#include "agent/environment.h"
#include "base/status.h"

namespace iris::agent {

struct WorkspaceOptions {
    std::uintmax_t maxFileBytes = 4u << 20;  // reads, writes and results of replacements
};

// One file as a prompt lists it.
struct ProjectFile {
    std::string path;  // relative to the root, '/'-separated
    std::uintmax_t size = 0;
    bool text = true;  // false: binary (a NUL byte in its first 8 KiB, git's rule)
};

// One file's change within a revision: enough to show it (diff) and to undo it exactly.
struct FileChange {
    std::string path;
    std::optional<std::string> before;  // nullopt: the file did not exist
    std::optional<std::string> after;   // nullopt: the file was deleted
    std::string diff;                   // unified diff ("--- a/path", or /dev/null when absent)
};

struct Revision {
    int number = 0;           // 1, 2, ...; revision 0 is the project as opened
    std::string description;  // "write_file index.html", "revert to 3"
    std::vector<FileChange> changes;
};

class Workspace {
public:
    // `projectRoot` must be an existing directory; it is made canonical (symlinks resolved).
    static Result<Workspace> open(const std::filesystem::path& projectRoot,
                                  WorkspaceOptions options = {});

    const std::filesystem::path& root() const { return m_root; }

    // The absolute path of `relativePath` inside the root. Refused: empty, absolute, NUL bytes,
    // the root itself, ".." that climbs above the root, and any existing component (the last
    // included) that is a symlink resolving outside the root or to nothing.
    Result<std::filesystem::path> resolve(std::string_view relativePath) const;

    // ReadFile, WriteFile and ReplaceInFile; other actions are Unsupported. A successful change
    // lists the file in changedFiles, adds a revision and puts its diff in output (ReadFile: the
    // content); writing identical content adds none.
    ActionResult execute(const Action& action);

    // Text must be valid UTF-8 and at most maxFileBytes: the project is HTML/CSS/JS that goes
    // into prompts and diffs. WriteFile creates missing parent folders inside the root.
    Result<std::string> readFile(std::string_view path) const;
    Status writeFile(std::string_view path, std::string_view content);
    // `oldText` must occur exactly once (overlapping matches count).
    Status replaceInFile(std::string_view path, std::string_view oldText, std::string_view newText);

    // The current revision number (0 before any change) and every revision after 0, in order.
    int revision() const { return static_cast<int>(m_history.size()); }
    const std::vector<Revision>& history() const { return m_history; }

    // Puts every file the workspace changed since `revision` back as it was then (deleting files
    // created later). The revert is itself recorded as a new revision rather than truncating the
    // history: revision numbers stay unique in recordings, rejected attempts stay inspectable, and
    // a revert can be reverted. Reverting to the current state adds nothing; folders created on the
    // way stay. On an I/O error the files already restored are recorded and the error returned.
    Status revertTo(int revision);

    // Files for a prompt, sorted by path: skips .git and node_modules, symlinks, and files larger
    // than maxFileBytes.
    Result<std::vector<ProjectFile>> snapshot() const;

private:
    Workspace(std::filesystem::path root, WorkspaceOptions options)
        : m_root(std::move(root)), m_options(options) {}

    // Reads the file at `absolute`; nullopt content when it does not exist.
    Result<std::optional<std::string>> readExisting(const std::filesystem::path& absolute,
                                                    std::string_view relative) const;
    Status store(const std::filesystem::path& absolute, std::string_view relative,
                 const std::optional<std::string>& content);
    void record(std::string description, std::vector<FileChange> changes);

    std::filesystem::path m_root;
    WorkspaceOptions m_options;
    std::vector<Revision> m_history;
};

// The unified diff of one file's change, labelled a/<path> and b/<path> (or /dev/null).
std::string fileDiff(std::string_view path, const std::optional<std::string>& before,
                     const std::optional<std::string>& after);

}  // namespace iris::agent
