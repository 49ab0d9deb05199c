#include "inference/gguf/gguf_writer.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>
#include <type_traits>

namespace iris::inference {
namespace {

class ByteSink {
public:
    explicit ByteSink(std::vector<std::byte>& out) : m_out(out) {}

    template <class T>
    void put(const T& value) {
        static_assert(std::is_trivially_copyable_v<T>);
        append(&value, sizeof(T));
    }
    void putString(const std::string& s) {
        put(std::uint64_t(s.size()));
        append(s.data(), s.size());
    }
    void putBytes(std::span<const std::byte> bytes) { append(bytes.data(), bytes.size()); }
    void padTo(std::uint64_t alignment) {
        while (m_out.size() % alignment != 0)
            m_out.push_back(std::byte{0});
    }

    void putArray(const GgufArray& array) {
        put(std::uint32_t(array.elementType()));
        put(std::uint64_t(array.size()));
        std::visit(
            [&](const auto& elements) {
                for (const auto& e : elements)
                    putElement(e);
            },
            array.elements);
    }

    void putValue(const GgufValue& value) {
        std::visit([&](const auto& v) { putElement(v); }, value);
    }

private:
    void append(const void* data, std::size_t size) {
        if (size == 0) return;
        const std::size_t at = m_out.size();
        m_out.resize(at + size);
        std::memcpy(m_out.data() + at, data, size);
    }

    template <class T>
    void putElement(const T& v) {
        if constexpr (std::is_same_v<T, std::string>) {
            putString(v);
        } else if constexpr (std::is_same_v<T, GgufArray>) {
            putArray(v);
        } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, char>) {
            put(std::uint8_t(v ? 1 : 0));
        } else {
            put(v);
        }
    }

    std::vector<std::byte>& m_out;
};

}  // namespace

GgufWriter::GgufWriter(std::uint32_t alignment) : m_alignment(alignment) {
    assert(alignment != 0 && std::has_single_bit(alignment));
    if (alignment != kGgufDefaultAlignment) set("general.alignment", alignment);
}

void GgufWriter::set(std::string key, GgufValue value) {
    for (auto& [k, v] : m_metadata) {
        if (k == key) {
            v = std::move(value);
            return;
        }
    }
    m_metadata.emplace_back(std::move(key), std::move(value));
}

Status GgufWriter::addTensor(std::string name, kernels::TensorType type,
                             std::vector<std::int64_t> shape, std::span<const std::byte> data) {
    if (shape.size() > std::size_t(kGgufMaxDims)) {
        return Status::invalidArgument("tensor '" + name + "': more than 4 dimensions");
    }
    for (const Tensor& t : m_tensors) {
        if (t.name == name) return Status::invalidArgument("tensor '" + name + "' added twice");
    }
    const kernels::TensorTypeInfo& info = kernels::tensorTypeInfo(type);
    std::int64_t rows = 1;
    for (std::size_t d = 1; d < shape.size(); ++d)
        rows *= shape[d];
    const std::int64_t rowLength = shape.empty() ? 1 : shape[0];
    if (rowLength % info.blockElements != 0) {
        return Status::invalidArgument("tensor '" + name + "': row length " +
                                       std::to_string(rowLength) + " is not a multiple of the " +
                                       std::string(info.name) + " block size");
    }
    const std::int64_t expected = kernels::rowBytes(type, rowLength) * rows;
    if (std::int64_t(data.size()) != expected) {
        return Status::invalidArgument("tensor '" + name + "': " + std::to_string(data.size()) +
                                       " bytes of data, expected " + std::to_string(expected));
    }
    m_tensors.push_back({std::move(name), type, std::move(shape), {data.begin(), data.end()}});
    return {};
}

Status GgufWriter::addTensor(std::string name, std::vector<std::int64_t> shape,
                             std::span<const float> values) {
    return addTensor(std::move(name), kernels::TensorType::F32, std::move(shape),
                     std::as_bytes(values));
}

std::vector<std::byte> GgufWriter::serialize() const {
    std::vector<std::byte> out;
    ByteSink sink(out);
    sink.putBytes(std::as_bytes(std::span("GGUF", 4)));
    sink.put(std::uint32_t(3));
    sink.put(std::uint64_t(m_tensors.size()));
    sink.put(std::uint64_t(m_metadata.size()));
    for (const auto& [key, value] : m_metadata) {
        sink.putString(key);
        sink.put(std::uint32_t(ggufTypeOf(value)));
        sink.putValue(value);
    }
    std::uint64_t offset = 0;
    for (const Tensor& t : m_tensors) {
        sink.putString(t.name);
        sink.put(std::uint32_t(t.shape.size()));
        for (std::int64_t extent : t.shape)
            sink.put(std::uint64_t(extent));
        sink.put(std::uint32_t(t.type));
        sink.put(offset);
        offset += (t.data.size() + m_alignment - 1) / m_alignment * m_alignment;
    }
    if (!m_tensors.empty()) sink.padTo(m_alignment);
    for (const Tensor& t : m_tensors) {
        sink.putBytes(t.data);
        sink.padTo(m_alignment);
    }
    return out;
}

Status GgufWriter::writeFile(const std::filesystem::path& path) const {
    const std::vector<std::byte> bytes = serialize();
    std::filesystem::path temporary = path;
    temporary += ".partial";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        if (!out)
            return Status::ioError(temporary.string() + ": cannot create: " + std::strerror(errno));
        out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        out.flush();
        if (!out) {
            const Status error =
                Status::ioError(temporary.string() + ": write failed: " + std::strerror(errno));
            out.close();
            std::error_code ignored;
            std::filesystem::remove(temporary, ignored);
            return error;
        }
    }
    std::error_code ec;
    std::filesystem::rename(temporary, path, ec);
    if (ec)
        return Status::ioError(path.string() + ": cannot rename from " + temporary.string() + ": " +
                               ec.message());
    return {};
}

}  // namespace iris::inference
