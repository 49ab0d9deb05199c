#pragma once
// Errors as values, for every layer from inference/ up: Status (ok, or a code and a message) and
// Result<T> (a value or a non-ok Status). It lives in the lowest layer that reports errors so that
// agent/ and app/ share it; kernels/ have no failure modes beyond their contracts.
// Messages name what failed and where: the file, the field, the byte offset.

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace iris {

enum class StatusCode {
    Ok,
    InvalidArgument,  // the caller asked for something impossible
    NotFound,         // a file, key or name that is not there
    IoError,          // the operating system refused (open, read, write, map)
    Corrupt,          // input data breaks its format's rules
    Unsupported,      // valid input that Iris cannot handle (yet)
    OutOfRange,       // a size or index past a limit (context length, pixel budget)
    Cancelled,        // stopped on request
    Unavailable,      // busy or shutting down: the same request may succeed later
    Internal,         // a broken invariant in Iris itself
};

class [[nodiscard]] Status {
public:
    Status() = default;  // ok

    static Status ok() { return {}; }
    static Status invalidArgument(std::string m) {
        return {StatusCode::InvalidArgument, std::move(m)};
    }
    static Status notFound(std::string m) { return {StatusCode::NotFound, std::move(m)}; }
    static Status ioError(std::string m) { return {StatusCode::IoError, std::move(m)}; }
    static Status corrupt(std::string m) { return {StatusCode::Corrupt, std::move(m)}; }
    static Status unsupported(std::string m) { return {StatusCode::Unsupported, std::move(m)}; }
    static Status outOfRange(std::string m) { return {StatusCode::OutOfRange, std::move(m)}; }
    static Status cancelled(std::string m) { return {StatusCode::Cancelled, std::move(m)}; }
    static Status unavailable(std::string m) { return {StatusCode::Unavailable, std::move(m)}; }
    static Status internal(std::string m) { return {StatusCode::Internal, std::move(m)}; }

    bool isOk() const { return m_code == StatusCode::Ok; }
    StatusCode code() const { return m_code; }
    const std::string& message() const { return m_message; }

    // The same error with `context` in front: "model.gguf: " + "byte 24: ...".
    Status withContext(std::string_view context) const {
        if (isOk()) return *this;
        return {m_code, std::string(context) + m_message};
    }

private:
    Status(StatusCode code, std::string message) : m_code(code), m_message(std::move(message)) {
        assert(code != StatusCode::Ok);
    }

    StatusCode m_code = StatusCode::Ok;
    std::string m_message;
};

// A T, or the Status saying why there is none. Construct from either; a Result never holds an ok
// Status.
template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : m_state(std::move(value)) {}      // NOLINT(google-explicit-constructor)
    Result(Status error) : m_state(std::move(error)) {  // NOLINT(google-explicit-constructor)
        assert(!std::get<Status>(m_state).isOk());
    }

    bool isOk() const { return std::holds_alternative<T>(m_state); }
    explicit operator bool() const { return isOk(); }

    // The error; Status::ok() when there is a value.
    Status status() const { return isOk() ? Status::ok() : std::get<Status>(m_state); }

    // The value; only valid when isOk().
    T& value() & { return std::get<T>(m_state); }
    const T& value() const& { return std::get<T>(m_state); }
    T&& value() && { return std::get<T>(std::move(m_state)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T&& operator*() && { return std::move(*this).value(); }

private:
    std::variant<T, Status> m_state;
};

}  // namespace iris

// Returns the Status of `expr` from the enclosing function when it is not ok.
#define IRIS_RETURN_IF_ERROR(expr)                   \
    do {                                             \
        ::iris::Status irisStatus_ = (expr);         \
        if (!irisStatus_.isOk()) return irisStatus_; \
    } while (false)
