#include "agent/workspace/workspace.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

#include "agent/workspace/line_diff.h"
#include "base/utf8.h"

namespace iris::agent {
namespace fs = std::filesystem;
namespace {

// Paths in messages: quoted, with control bytes (a NUL in particular) made visible.
std::string quotedPath(std::string_view path) {
    std::string out = "\"";
    for (char c : path) {
        if (static_cast<unsigned char>(c) < 0x20) {
            static constexpr char kHex[] = "0123456789abcdef";
            const auto byte = static_cast<unsigned char>(c);
            out += "\\x";
            out += kHex[byte >> 4];
            out += kHex[byte & 0xf];
        } else {
            out += c;
        }
    }
    return out + "\"";
}

bool isInside(const fs::path& canonicalPath, const fs::path& canonicalRoot) {
    auto [rootIt, pathIt] = std::mismatch(canonicalRoot.begin(), canonicalRoot.end(),
                                          canonicalPath.begin(), canonicalPath.end());
    return rootIt == canonicalRoot.end();
}

// 1-based line numbers of every (overlapping) occurrence of `needle`.
std::vector<std::size_t> occurrenceLines(std::string_view haystack, std::string_view needle) {
    std::vector<std::size_t> lines;
    std::size_t line = 1;
    std::size_t counted = 0;  // haystack[0, counted) has been scanned for newlines
    for (std::size_t pos = haystack.find(needle); pos != std::string_view::npos;
         pos = haystack.find(needle, pos + 1)) {
        line += static_cast<std::size_t>(
            std::count(haystack.begin() + static_cast<std::ptrdiff_t>(counted),
                       haystack.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
        counted = pos;
        lines.push_back(line);
    }
    return lines;
}

std::string joinLines(const std::vector<std::size_t>& lines, std::size_t limit) {
    std::string out;
    for (std::size_t i = 0; i < lines.size() && i < limit; ++i) {
        if (i > 0) out += ", ";
        out += std::to_string(lines[i]);
    }
    if (lines.size() > limit) out += ", ...";
    return out;
}

Status checkText(std::string_view relative, std::string_view content, std::uintmax_t limit) {
    if (content.size() > limit) {
        return Status::outOfRange(quotedPath(relative) + ": " + std::to_string(content.size()) +
                                  " bytes is over the " + std::to_string(limit) +
                                  "-byte limit for a project file");
    }
    if (auto bad = utf8::firstInvalid(content)) {
        return Status::invalidArgument(
            quotedPath(relative) + ": content is not valid UTF-8 at byte " + std::to_string(*bad));
    }
    return Status::ok();
}

}  // namespace

std::string fileDiff(std::string_view path, const std::optional<std::string>& before,
                     const std::optional<std::string>& after) {
    const std::string oldLabel = before ? "a/" + std::string(path) : "/dev/null";
    const std::string newLabel = after ? "b/" + std::string(path) : "/dev/null";
    return unifiedDiff(before.value_or(""), after.value_or(""), oldLabel, newLabel);
}

Result<Workspace> Workspace::open(const fs::path& projectRoot, WorkspaceOptions options) {
    std::error_code ec;
    fs::path root = fs::canonical(projectRoot, ec);
    if (ec) {
        return Status::notFound("project folder " + quotedPath(projectRoot.string()) + ": " +
                                ec.message());
    }
    if (!fs::is_directory(root, ec)) {
        return Status::invalidArgument("project folder " + quotedPath(projectRoot.string()) +
                                       " is not a directory");
    }
    return Workspace(std::move(root), options);
}

Result<fs::path> Workspace::resolve(std::string_view relativePath) const {
    const std::string name = quotedPath(relativePath);
    if (relativePath.empty()) {
        return Status::invalidArgument("empty path: name a file inside the project");
    }
    if (relativePath.find('\0') != std::string_view::npos) {
        return Status::invalidArgument("path " + name + " contains a NUL byte");
    }
    if (relativePath.front() == '/') {
        return Status::invalidArgument("path " + name +
                                       " is absolute; use a path relative to the project root");
    }
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (start <= relativePath.size()) {
        std::size_t end = relativePath.find('/', start);
        if (end == std::string_view::npos) end = relativePath.size();
        const std::string_view part = relativePath.substr(start, end - start);
        if (part == "..") {
            if (parts.empty()) {
                return Status::invalidArgument("path " + name + " leads outside the project root");
            }
            parts.pop_back();
        } else if (!part.empty() && part != ".") {
            parts.push_back(part);
        }
        start = end + 1;
    }
    if (parts.empty()) {
        return Status::invalidArgument("path " + name +
                                       " names the project root itself, not a file in it");
    }

    fs::path current = m_root;
    std::string walked;  // the components checked so far, as the caller would write them
    for (std::string_view part : parts) {
        current /= fs::path(std::string(part));
        walked += (walked.empty() ? "" : "/") + std::string(part);
        std::error_code ec;
        const fs::file_status status = fs::symlink_status(current, ec);
        if (status.type() == fs::file_type::not_found) break;  // nothing below it exists either
        if (ec) {
            return Status::ioError("path " + name + ": cannot inspect " +
                                   quotedPath(current.string()) + ": " + ec.message());
        }
        if (status.type() != fs::file_type::symlink) continue;
        const fs::path target = fs::canonical(current, ec);
        if (ec) {
            return Status::invalidArgument("path " + name + ": " + quotedPath(walked) +
                                           " is a symlink that resolves to nothing");
        }
        if (!isInside(target, m_root)) {
            return Status::invalidArgument("path " + name + ": " + quotedPath(walked) +
                                           " is a symlink to " + quotedPath(target.string()) +
                                           ", outside the project root");
        }
    }
    fs::path resolved = m_root;
    for (std::string_view part : parts)
        resolved /= fs::path(std::string(part));
    return resolved;
}

Result<std::optional<std::string>> Workspace::readExisting(const fs::path& absolute,
                                                           std::string_view relative) const {
    std::error_code ec;
    const fs::file_status status = fs::status(absolute, ec);
    if (status.type() == fs::file_type::not_found) return std::optional<std::string>();
    if (ec) return Status::ioError(quotedPath(relative) + ": " + ec.message());
    if (status.type() == fs::file_type::directory) {
        return Status::invalidArgument(quotedPath(relative) + " is a directory, not a file");
    }
    if (status.type() != fs::file_type::regular) {
        return Status::invalidArgument(quotedPath(relative) + " is not a regular file");
    }
    const std::uintmax_t size = fs::file_size(absolute, ec);
    if (ec) return Status::ioError(quotedPath(relative) + ": " + ec.message());
    if (size > m_options.maxFileBytes) {
        return Status::outOfRange(quotedPath(relative) + ": " + std::to_string(size) +
                                  " bytes is over the " + std::to_string(m_options.maxFileBytes) +
                                  "-byte limit for a project file");
    }
    std::ifstream in(absolute, std::ios::binary);
    if (!in) return Status::ioError(quotedPath(relative) + ": cannot open for reading");
    std::string content(static_cast<std::size_t>(size), '\0');
    in.read(content.data(), static_cast<std::streamsize>(size));
    if (in.bad()) return Status::ioError(quotedPath(relative) + ": read failed");
    content.resize(static_cast<std::size_t>(in.gcount()));  // shorter if it shrank meanwhile
    return std::optional<std::string>(std::move(content));
}

Status Workspace::store(const fs::path& absolute, std::string_view relative,
                        const std::optional<std::string>& content) {
    std::error_code ec;
    if (!content) {
        fs::remove(absolute, ec);
        if (ec) return Status::ioError(quotedPath(relative) + ": cannot delete: " + ec.message());
        return Status::ok();
    }
    // Write through a symlink (resolve() has checked it stays inside) instead of replacing it.
    fs::path target = absolute;
    if (fs::is_symlink(fs::symlink_status(absolute, ec))) {
        target = fs::canonical(absolute, ec);
        if (ec) return Status::ioError(quotedPath(relative) + ": " + ec.message());
    }
    ec.clear();  // not_found from symlink_status: a new file

    fs::create_directories(target.parent_path(), ec);
    if (ec) {
        return Status::ioError(quotedPath(relative) +
                               ": cannot create its folder: " + ec.message());
    }
    // Write a sibling and rename it over the file so that a crash never leaves half a file.
    const fs::path temporary =
        target.parent_path() / ("." + target.filename().string() + ".iris-tmp");
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        out.write(content->data(), static_cast<std::streamsize>(content->size()));
        out.close();
        if (!out) {
            fs::remove(temporary, ec);
            return Status::ioError(quotedPath(relative) + ": write failed");
        }
    }
    fs::rename(temporary, target, ec);
    if (ec) {
        std::error_code ignored;
        fs::remove(temporary, ignored);
        return Status::ioError(quotedPath(relative) + ": cannot replace the file: " + ec.message());
    }
    return Status::ok();
}

void Workspace::record(std::string description, std::vector<FileChange> changes) {
    Revision revision;
    revision.number = static_cast<int>(m_history.size()) + 1;
    revision.description = std::move(description);
    revision.changes = std::move(changes);
    m_history.push_back(std::move(revision));
}

Result<std::string> Workspace::readFile(std::string_view path) const {
    Result<fs::path> absolute = resolve(path);
    if (!absolute) return absolute.status();
    Result<std::optional<std::string>> content = readExisting(*absolute, path);
    if (!content) return content.status();
    if (!content->has_value()) return Status::notFound(quotedPath(path) + ": no such file");
    if (auto bad = utf8::firstInvalid(**content)) {
        return Status::unsupported(quotedPath(path) +
                                   " is not UTF-8 text (invalid byte at offset " +
                                   std::to_string(*bad) + "); binary files cannot be read");
    }
    return std::move(**content);
}

Status Workspace::writeFile(std::string_view path, std::string_view content) {
    Result<fs::path> absolute = resolve(path);
    if (!absolute) return absolute.status();
    IRIS_RETURN_IF_ERROR(checkText(path, content, m_options.maxFileBytes));
    Result<std::optional<std::string>> before = readExisting(*absolute, path);
    if (!before) return before.status();
    if (*before == content) return Status::ok();

    std::optional<std::string> after{std::string(content)};
    IRIS_RETURN_IF_ERROR(store(*absolute, path, after));
    FileChange change{std::string(path), std::move(*before), std::move(after), {}};
    change.diff = fileDiff(change.path, change.before, change.after);
    record("write_file " + std::string(path), {std::move(change)});
    return Status::ok();
}

Status Workspace::replaceInFile(std::string_view path, std::string_view oldText,
                                std::string_view newText) {
    if (oldText.empty()) {
        return Status::invalidArgument(quotedPath(path) + ": the text to replace is empty");
    }
    Result<fs::path> absolute = resolve(path);
    if (!absolute) return absolute.status();
    Result<std::optional<std::string>> before = readExisting(*absolute, path);
    if (!before) return before.status();
    if (!before->has_value()) return Status::notFound(quotedPath(path) + ": no such file");

    const std::string& current = **before;
    const std::vector<std::size_t> lines = occurrenceLines(current, oldText);
    if (lines.size() != 1) {
        std::string message = quotedPath(path) + ": the text to replace occurs " +
                              std::to_string(lines.size()) + " times";
        if (!lines.empty()) message += " (lines " + joinLines(lines, 8) + ")";
        message += "; it must occur exactly once";
        if (!lines.empty()) message += " (include more surrounding text)";
        return Status::invalidArgument(std::move(message));
    }
    std::string after = current;
    after.replace(current.find(oldText), oldText.size(), newText);
    IRIS_RETURN_IF_ERROR(checkText(path, after, m_options.maxFileBytes));
    if (after == current) return Status::ok();

    std::optional<std::string> afterContent{std::move(after)};
    IRIS_RETURN_IF_ERROR(store(*absolute, path, afterContent));
    FileChange change{std::string(path), std::move(*before), std::move(afterContent), {}};
    change.diff = fileDiff(change.path, change.before, change.after);
    record("replace_in_file " + std::string(path), {std::move(change)});
    return Status::ok();
}

ActionResult Workspace::execute(const Action& action) {
    const int revisionBefore = revision();
    ActionResult result;
    std::visit(
        [&](const auto& a) {
            using T = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<T, ReadFile>) {
                Result<std::string> content = readFile(a.path);
                if (content) {
                    result.output = std::move(*content);
                } else {
                    result.status = content.status();
                }
            } else if constexpr (std::is_same_v<T, WriteFile>) {
                result.status = writeFile(a.path, a.content);
            } else if constexpr (std::is_same_v<T, ReplaceInFile>) {
                result.status = replaceInFile(a.path, a.oldText, a.newText);
            } else {
                result.status = Status::unsupported(
                    "the workspace carries out file actions only (read_file, write_file, "
                    "replace_in_file)");
            }
        },
        action);
    if (revision() != revisionBefore) {
        for (const FileChange& change : m_history.back().changes) {
            result.changedFiles.push_back(change.path);
        }
        result.output = m_history.back().changes.front().diff;
    }
    return result;
}

Status Workspace::revertTo(int target) {
    if (target < 0 || target > revision()) {
        return Status::outOfRange("revision " + std::to_string(target) + " does not exist (0.." +
                                  std::to_string(revision()) + ")");
    }
    // A file's state at `target` is the "before" of the first later revision that changed it.
    std::map<std::string, std::optional<std::string>> wanted;
    for (std::size_t r = static_cast<std::size_t>(target); r < m_history.size(); ++r) {
        for (const FileChange& change : m_history[r].changes) {
            wanted.try_emplace(change.path, change.before);
        }
    }
    std::vector<FileChange> changes;
    Status failure;
    for (auto& [path, content] : wanted) {
        Result<fs::path> absolute = resolve(path);
        if (!absolute) {
            failure = absolute.status();
            break;
        }
        Result<std::optional<std::string>> current = readExisting(*absolute, path);
        if (!current) {
            failure = current.status();
            break;
        }
        if (*current == content) continue;
        Status stored = store(*absolute, path, content);
        if (!stored.isOk()) {
            failure = stored;
            break;
        }
        FileChange change{path, std::move(*current), content, {}};
        change.diff = fileDiff(change.path, change.before, change.after);
        changes.push_back(std::move(change));
    }
    if (!changes.empty()) record("revert to " + std::to_string(target), std::move(changes));
    return failure.withContext("revert to " + std::to_string(target) + ": ");
}

Result<std::vector<ProjectFile>> Workspace::snapshot() const {
    std::vector<ProjectFile> files;
    std::error_code ec;
    fs::recursive_directory_iterator it(m_root, fs::directory_options::skip_permission_denied, ec);
    if (ec)
        return Status::ioError("project folder " + quotedPath(m_root.string()) + ": " +
                               ec.message());
    for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
        if (ec) {
            return Status::ioError("listing " + quotedPath(m_root.string()) + ": " + ec.message());
        }
        const fs::directory_entry& entry = *it;
        std::error_code entryError;
        if (entry.is_symlink(entryError)) continue;
        if (entry.is_directory(entryError)) {
            const std::string folder = entry.path().filename().string();
            if (folder == ".git" || folder == "node_modules") it.disable_recursion_pending();
            continue;
        }
        if (!entry.is_regular_file(entryError)) continue;
        const std::uintmax_t size = entry.file_size(entryError);
        if (entryError || size > m_options.maxFileBytes) continue;

        ProjectFile file;
        file.path = fs::relative(entry.path(), m_root).generic_string();
        file.size = size;
        std::ifstream in(entry.path(), std::ios::binary);
        char head[8192];
        in.read(head, sizeof head);
        const std::string_view read(head, static_cast<std::size_t>(in.gcount()));
        file.text = read.find('\0') == std::string_view::npos;
        files.push_back(std::move(file));
    }
    std::sort(files.begin(), files.end(),
              [](const ProjectFile& a, const ProjectFile& b) { return a.path < b.path; });
    return files;
}

}  // namespace iris::agent
