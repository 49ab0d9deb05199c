#pragma once
// Pieces the session store's files share (internal to agent/recording): a prepared statement,
// the wall clock sessions are stamped with, and how a step's timings are stored.
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "agent/recording/recording_types.h"

namespace iris::agent::detail {

// One prepared statement. A failed prepare or bind is reported by the next step().
class SqliteStatement {
public:
    SqliteStatement(sqlite3* db, const char* sql) {
        m_rc = sqlite3_prepare_v2(db, sql, -1, &m_statement, nullptr);
    }
    ~SqliteStatement() { sqlite3_finalize(m_statement); }
    SqliteStatement(const SqliteStatement&) = delete;
    SqliteStatement& operator=(const SqliteStatement&) = delete;

    SqliteStatement& bind(int index, std::int64_t value) {
        return check(m_statement ? sqlite3_bind_int64(m_statement, index, value) : m_rc);
    }
    SqliteStatement& bind(int index, int value) { return bind(index, std::int64_t{value}); }
    SqliteStatement& bind(int index, double value) {
        return check(m_statement ? sqlite3_bind_double(m_statement, index, value) : m_rc);
    }
    SqliteStatement& bind(int index, std::string_view text) {
        return check(m_statement ? sqlite3_bind_text64(m_statement, index, text.data(), text.size(),
                                                       SQLITE_TRANSIENT, SQLITE_UTF8)
                                 : m_rc);
    }
    SqliteStatement& bindBlob(int index, std::span<const std::uint8_t> bytes) {
        // A zero-length blob from a null pointer would bind NULL.
        static constexpr std::uint8_t kNothing = 0;
        return check(m_statement ? sqlite3_bind_blob64(m_statement, index,
                                                       bytes.empty() ? &kNothing : bytes.data(),
                                                       bytes.size(), SQLITE_TRANSIENT)
                                 : m_rc);
    }
    SqliteStatement& bindNull(int index) {
        return check(m_statement ? sqlite3_bind_null(m_statement, index) : m_rc);
    }
    template <class T>
    SqliteStatement& bind(int index, const std::optional<T>& value) {
        return value ? bind(index, *value) : bindNull(index);
    }

    // SQLITE_ROW, SQLITE_DONE, or an error code.
    int step() {
        if (m_rc != SQLITE_OK) return m_rc;
        return sqlite3_step(m_statement);
    }

    bool isNull(int column) const {
        return sqlite3_column_type(m_statement, column) == SQLITE_NULL;
    }
    std::int64_t integer(int column) const { return sqlite3_column_int64(m_statement, column); }
    double real(int column) const { return sqlite3_column_double(m_statement, column); }
    std::string text(int column) const {
        const auto* data = sqlite3_column_text(m_statement, column);
        const int size = sqlite3_column_bytes(m_statement, column);
        if (data == nullptr) return {};
        return {reinterpret_cast<const char*>(data), static_cast<std::size_t>(size)};
    }
    std::vector<std::uint8_t> blob(int column) const {
        const auto* data =
            static_cast<const std::uint8_t*>(sqlite3_column_blob(m_statement, column));
        const int size = sqlite3_column_bytes(m_statement, column);
        if (data == nullptr) return {};
        return {data, data + size};
    }
    std::optional<std::int64_t> optionalInteger(int column) const {
        if (isNull(column)) return std::nullopt;
        return integer(column);
    }

private:
    SqliteStatement& check(int rc) {
        if (m_rc == SQLITE_OK && rc != SQLITE_OK) m_rc = rc;
        return *this;
    }

    sqlite3_stmt* m_statement = nullptr;
    int m_rc = SQLITE_OK;
};

// Wall-clock milliseconds since the epoch: what created_at, started_at and at hold.
inline std::int64_t nowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// The unsigned big-endian integer in `bytes` bytes at `p` (SQLite's header, PNG's IHDR).
inline std::uint32_t bigEndian(const unsigned char* p, int bytes) {
    std::uint32_t value = 0;
    for (int i = 0; i < bytes; ++i)
        value = value << 8 | p[i];
    return value;
}

// The steps.timings column: {"capture_ms", "encode_ms", ...}; a missing field reads as 0.
inline nlohmann::json timingsToJson(const StepTimings& t) {
    return {{"capture_ms", t.captureMs}, {"encode_ms", t.encodeMs},   {"model_ms", t.modelMs},
            {"parse_ms", t.parseMs},     {"execute_ms", t.executeMs}, {"record_ms", t.recordMs}};
}
inline StepTimings timingsFromJson(const nlohmann::json& j) {
    auto get = [&](const char* key) {
        const auto it = j.find(key);
        return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
    };
    return {get("capture_ms"), get("encode_ms"),  get("model_ms"),
            get("parse_ms"),   get("execute_ms"), get("record_ms")};
}

}  // namespace iris::agent::detail
