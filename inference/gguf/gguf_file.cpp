#include "inference/gguf/gguf_file.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <type_traits>

namespace iris::inference {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader maps little-endian files straight into memory");

namespace {

constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();

std::uint64_t alignUp(std::uint64_t value, std::uint64_t alignment) {
    return (value + alignment - 1) / alignment * alignment;
}

// Reads little-endian fields from a byte range, never past its end. Every error message starts
// with the byte offset of the field that failed.
class Cursor {
public:
    explicit Cursor(std::span<const std::byte> bytes) : m_bytes(bytes) {}

    std::uint64_t position() const { return m_position; }
    std::uint64_t remaining() const { return m_bytes.size() - m_position; }

    Status error(std::uint64_t at, const std::string& what) const {
        return Status::corrupt("byte " + std::to_string(at) + ": " + what);
    }

    template <class T>
    Status read(T& value, std::string_view field) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (remaining() < sizeof(T)) {
            return error(m_position, std::string(field) + ": file ends " +
                                         std::to_string(remaining()) + " bytes into a " +
                                         std::to_string(sizeof(T)) + "-byte field");
        }
        std::memcpy(&value, m_bytes.data() + m_position, sizeof(T));
        m_position += sizeof(T);
        return {};
    }

    Status readString(std::string& value, std::string_view field) {
        const std::uint64_t at = m_position;
        std::uint64_t length = 0;
        IRIS_RETURN_IF_ERROR(read(length, field));
        if (length > remaining()) {
            return error(at, std::string(field) + ": string length " + std::to_string(length) +
                                 " runs past the end of the file (" + std::to_string(remaining()) +
                                 " bytes left)");
        }
        value.assign(reinterpret_cast<const char*>(m_bytes.data() + m_position), length);
        m_position += length;
        return {};
    }

private:
    std::span<const std::byte> m_bytes;
    std::uint64_t m_position = 0;
};

// Smallest number of bytes one value of `type` takes in a file: a lower bound that lets a count
// be checked against the bytes left before anything is allocated for it.
std::uint64_t minimumEncodedSize(GgufType type) {
    switch (type) {
        case GgufType::Uint8:
        case GgufType::Int8:
        case GgufType::Bool:
            return 1;
        case GgufType::Uint16:
        case GgufType::Int16:
            return 2;
        case GgufType::Uint32:
        case GgufType::Int32:
        case GgufType::Float32:
            return 4;
        case GgufType::String:  // length
        case GgufType::Uint64:
        case GgufType::Int64:
        case GgufType::Float64:
            return 8;
        case GgufType::Array:
            return 12;  // element type + count
    }
    return 1;
}

}  // namespace

// Builds a GgufFile from bytes; a friend of GgufFile so that it can fill the private members.
class GgufParser {
public:
    GgufParser(std::span<const std::byte> bytes, GgufFile& file)
        : m_bytes(bytes), m_cursor(bytes), m_file(file) {}

    Status parse() {
        IRIS_RETURN_IF_ERROR(parseHeader());
        for (std::uint64_t i = 0; i < m_metadataCount; ++i)
            IRIS_RETURN_IF_ERROR(parseMetadataEntry(i));
        IRIS_RETURN_IF_ERROR(applyAlignment());
        for (std::uint64_t i = 0; i < m_tensorCount; ++i)
            IRIS_RETURN_IF_ERROR(parseTensorInfo(i));
        return placeTensorData();
    }

private:
    Status parseHeader() {
        std::array<char, 4> magic{};
        IRIS_RETURN_IF_ERROR(m_cursor.read(magic, "magic"));
        if (std::memcmp(magic.data(), "GGUF", 4) != 0) {
            return m_cursor.error(0, "not a GGUF file (the first 4 bytes are not \"GGUF\")");
        }
        std::uint32_t version = 0;
        IRIS_RETURN_IF_ERROR(m_cursor.read(version, "version"));
        if (version == 0x02000000u || version == 0x03000000u) {
            return Status::unsupported(
                "byte 4: version: a big-endian GGUF file; Iris reads little-endian files");
        }
        if (version == 1) {
            return Status::unsupported(
                "byte 4: version: GGUF version 1 (2023) is not supported; "
                "convert the model again with a current llama.cpp");
        }
        if (version != 2 && version != 3) {
            return Status::unsupported("byte 4: version: unknown GGUF version " +
                                       std::to_string(version) + " (Iris reads versions 2 and 3)");
        }
        m_file.m_version = version;
        IRIS_RETURN_IF_ERROR(m_cursor.read(m_tensorCount, "tensor count"));
        IRIS_RETURN_IF_ERROR(m_cursor.read(m_metadataCount, "metadata count"));
        // Each entry takes at least this many bytes, so larger counts cannot be honest.
        constexpr std::uint64_t kMinMetadataEntry = 8 + 4 + 1;
        constexpr std::uint64_t kMinTensorInfo = 8 + 4 + 4 + 8;
        if (m_metadataCount > m_cursor.remaining() / kMinMetadataEntry) {
            return m_cursor.error(16, "metadata count " + std::to_string(m_metadataCount) +
                                          " cannot fit in the " +
                                          std::to_string(m_cursor.remaining()) + " bytes left");
        }
        if (m_tensorCount > m_cursor.remaining() / kMinTensorInfo) {
            return m_cursor.error(8, "tensor count " + std::to_string(m_tensorCount) +
                                         " cannot fit in the " +
                                         std::to_string(m_cursor.remaining()) + " bytes left");
        }
        return {};
    }

    Status parseMetadataEntry(std::uint64_t index) {
        const std::uint64_t at = m_cursor.position();
        const std::string field = "metadata entry " + std::to_string(index);
        std::string key;
        IRIS_RETURN_IF_ERROR(m_cursor.readString(key, field + " key"));
        const std::string context = field + " ('" + key + "')";
        if (auto it = m_file.m_metadataIndex.find(key); it != m_file.m_metadataIndex.end()) {
            return m_cursor.error(
                at, context + ": duplicate key (also entry " + std::to_string(it->second) + ")");
        }
        GgufValue value;
        IRIS_RETURN_IF_ERROR(readTypedValue(value, context, 0));
        m_file.m_metadataIndex.emplace(key, m_file.m_metadata.size());
        m_file.m_metadata.emplace_back(std::move(key), std::move(value));
        return {};
    }

    Status readType(GgufType& type, const std::string& context) {
        const std::uint64_t at = m_cursor.position();
        std::uint32_t id = 0;
        IRIS_RETURN_IF_ERROR(m_cursor.read(id, context + " type"));
        if (id >= kGgufTypeCount) {
            return m_cursor.error(at, context + ": unknown value type " + std::to_string(id));
        }
        type = GgufType(id);
        return {};
    }

    Status readTypedValue(GgufValue& value, const std::string& context, int depth) {
        GgufType type{};
        IRIS_RETURN_IF_ERROR(readType(type, context));
        return readValue(type, value, context, depth);
    }

    template <class T>
    Status readScalar(GgufValue& value, const std::string& context) {
        T v{};
        IRIS_RETURN_IF_ERROR(m_cursor.read(v, context));
        value = v;
        return {};
    }

    Status readValue(GgufType type, GgufValue& value, const std::string& context, int depth) {
        switch (type) {
            case GgufType::Uint8:
                return readScalar<std::uint8_t>(value, context);
            case GgufType::Int8:
                return readScalar<std::int8_t>(value, context);
            case GgufType::Uint16:
                return readScalar<std::uint16_t>(value, context);
            case GgufType::Int16:
                return readScalar<std::int16_t>(value, context);
            case GgufType::Uint32:
                return readScalar<std::uint32_t>(value, context);
            case GgufType::Int32:
                return readScalar<std::int32_t>(value, context);
            case GgufType::Float32:
                return readScalar<float>(value, context);
            case GgufType::Uint64:
                return readScalar<std::uint64_t>(value, context);
            case GgufType::Int64:
                return readScalar<std::int64_t>(value, context);
            case GgufType::Float64:
                return readScalar<double>(value, context);
            case GgufType::Bool: {
                const std::uint64_t at = m_cursor.position();
                std::uint8_t b = 0;
                IRIS_RETURN_IF_ERROR(m_cursor.read(b, context));
                if (b > 1)
                    return m_cursor.error(
                        at, context + ": bool value " + std::to_string(b) + " is not 0 or 1");
                value = b == 1;
                return {};
            }
            case GgufType::String: {
                std::string s;
                IRIS_RETURN_IF_ERROR(m_cursor.readString(s, context));
                value = std::move(s);
                return {};
            }
            case GgufType::Array: {
                GgufArray array;
                IRIS_RETURN_IF_ERROR(readArray(array, context, depth + 1));
                value = std::move(array);
                return {};
            }
        }
        return Status::internal(context + ": unhandled value type");
    }

    template <class T>
    Status readArrayElements(GgufArray& array, std::uint64_t count, const std::string& context,
                             int depth) {
        std::vector<T> elements;
        elements.reserve(count);  // count was checked against the bytes left
        for (std::uint64_t i = 0; i < count; ++i) {
            const std::string element = context + "[" + std::to_string(i) + "]";
            if constexpr (std::is_same_v<T, std::string>) {
                IRIS_RETURN_IF_ERROR(m_cursor.readString(elements.emplace_back(), element));
            } else if constexpr (std::is_same_v<T, GgufArray>) {
                IRIS_RETURN_IF_ERROR(readArray(elements.emplace_back(), element, depth + 1));
            } else if constexpr (std::is_same_v<T, char>) {  // bool
                const std::uint64_t at = m_cursor.position();
                std::uint8_t b = 0;
                IRIS_RETURN_IF_ERROR(m_cursor.read(b, element));
                if (b > 1)
                    return m_cursor.error(
                        at, element + ": bool value " + std::to_string(b) + " is not 0 or 1");
                elements.push_back(char(b));
            } else {
                IRIS_RETURN_IF_ERROR(m_cursor.read(elements.emplace_back(), element));
            }
        }
        array.elements = std::move(elements);
        return {};
    }

    Status readArray(GgufArray& array, const std::string& context, int depth) {
        if (depth > kGgufMaxArrayNesting) {
            return m_cursor.error(m_cursor.position(), context + ": arrays nested deeper than " +
                                                           std::to_string(kGgufMaxArrayNesting) +
                                                           " levels");
        }
        GgufType elementType{};
        IRIS_RETURN_IF_ERROR(readType(elementType, context + " element"));
        const std::uint64_t at = m_cursor.position();
        std::uint64_t count = 0;
        IRIS_RETURN_IF_ERROR(m_cursor.read(count, context + " count"));
        if (count > m_cursor.remaining() / minimumEncodedSize(elementType)) {
            return m_cursor.error(at, context + ": " + std::to_string(count) + " " +
                                          std::string(ggufTypeName(elementType)) +
                                          " values cannot fit in the " +
                                          std::to_string(m_cursor.remaining()) + " bytes left");
        }
        switch (elementType) {
            case GgufType::Uint8:
                return readArrayElements<std::uint8_t>(array, count, context, depth);
            case GgufType::Int8:
                return readArrayElements<std::int8_t>(array, count, context, depth);
            case GgufType::Uint16:
                return readArrayElements<std::uint16_t>(array, count, context, depth);
            case GgufType::Int16:
                return readArrayElements<std::int16_t>(array, count, context, depth);
            case GgufType::Uint32:
                return readArrayElements<std::uint32_t>(array, count, context, depth);
            case GgufType::Int32:
                return readArrayElements<std::int32_t>(array, count, context, depth);
            case GgufType::Float32:
                return readArrayElements<float>(array, count, context, depth);
            case GgufType::Bool:
                return readArrayElements<char>(array, count, context, depth);
            case GgufType::String:
                return readArrayElements<std::string>(array, count, context, depth);
            case GgufType::Array:
                return readArrayElements<GgufArray>(array, count, context, depth);
            case GgufType::Uint64:
                return readArrayElements<std::uint64_t>(array, count, context, depth);
            case GgufType::Int64:
                return readArrayElements<std::int64_t>(array, count, context, depth);
            case GgufType::Float64:
                return readArrayElements<double>(array, count, context, depth);
        }
        return Status::internal(context + ": unhandled element type");
    }

    Status applyAlignment() {
        const GgufValue* value = m_file.find("general.alignment");
        if (value == nullptr) return {};
        const auto* alignment = std::get_if<std::uint32_t>(value);
        if (alignment == nullptr) {
            return Status::corrupt("metadata 'general.alignment' has type " +
                                   std::string(ggufTypeName(ggufTypeOf(*value))) +
                                   ", expected uint32");
        }
        if (*alignment == 0 || !std::has_single_bit(*alignment)) {
            return Status::corrupt("metadata 'general.alignment' is " + std::to_string(*alignment) +
                                   ", expected a power of two");
        }
        m_file.m_alignment = *alignment;
        return {};
    }

    Status parseTensorInfo(std::uint64_t index) {
        GgufTensor tensor;
        tensor.infoOffset = m_cursor.position();
        const std::string field = "tensor " + std::to_string(index);
        IRIS_RETURN_IF_ERROR(m_cursor.readString(tensor.name, field + " name"));
        const std::string context = field + " ('" + tensor.name + "')";
        if (m_file.m_tensorIndex.contains(tensor.name)) {
            return m_cursor.error(tensor.infoOffset, context + ": duplicate tensor name");
        }

        const std::uint64_t dimsAt = m_cursor.position();
        std::uint32_t dims = 0;
        IRIS_RETURN_IF_ERROR(m_cursor.read(dims, context + " dimension count"));
        if (dims > std::uint32_t(kGgufMaxDims)) {
            return m_cursor.error(dimsAt, context + ": " + std::to_string(dims) +
                                              " dimensions (at most " +
                                              std::to_string(kGgufMaxDims) + ")");
        }
        std::uint64_t elements = 1;
        for (std::uint32_t d = 0; d < dims; ++d) {
            const std::uint64_t at = m_cursor.position();
            std::uint64_t extent = 0;
            IRIS_RETURN_IF_ERROR(
                m_cursor.read(extent, context + " dimension " + std::to_string(d)));
            if (extent > std::uint64_t(std::numeric_limits<std::int64_t>::max()) ||
                (extent != 0 &&
                 elements > std::uint64_t(std::numeric_limits<std::int64_t>::max()) / extent)) {
                return m_cursor.error(at, context + ": dimension " + std::to_string(d) + " = " +
                                              std::to_string(extent) +
                                              " overflows the element count");
            }
            elements *= extent;
            tensor.shape.push_back(std::int64_t(extent));
        }

        const std::uint64_t typeAt = m_cursor.position();
        std::uint32_t typeId = 0;
        IRIS_RETURN_IF_ERROR(m_cursor.read(typeId, context + " type"));
        const std::optional<kernels::TensorTypeInfo> info = kernels::tensorTypeInfo(typeId);
        if (!info) {
            return Status::unsupported("byte " + std::to_string(typeAt) + ": " + context +
                                       ": unknown tensor type " + std::to_string(typeId));
        }
        tensor.type = info->type;
        const std::int64_t rowLength = tensor.shape.empty() ? 1 : tensor.shape[0];
        if (rowLength % info->blockElements != 0) {
            return m_cursor.error(typeAt, context + ": row length " + std::to_string(rowLength) +
                                              " is not a multiple of the " +
                                              std::string(info->name) + " block size " +
                                              std::to_string(info->blockElements));
        }
        // elements / blockElements * blockBytes cannot overflow: blockBytes <= 8 * blockElements.
        tensor.bytes =
            elements / std::uint64_t(info->blockElements) * std::uint64_t(info->blockBytes);

        const std::uint64_t offsetAt = m_cursor.position();
        IRIS_RETURN_IF_ERROR(m_cursor.read(tensor.offset, context + " offset"));
        if (tensor.offset % m_file.m_alignment != 0) {
            return m_cursor.error(offsetAt, context + ": data offset " +
                                                std::to_string(tensor.offset) +
                                                " is not a multiple of the alignment " +
                                                std::to_string(m_file.m_alignment));
        }
        if (tensor.bytes > kMaxU64 - tensor.offset) {
            return m_cursor.error(offsetAt, context + ": data offset " +
                                                std::to_string(tensor.offset) +
                                                " plus size overflows");
        }
        m_file.m_tensorIndex.emplace(tensor.name, m_file.m_tensors.size());
        m_file.m_tensors.push_back(std::move(tensor));
        return {};
    }

    Status placeTensorData() {
        const std::uint64_t infoEnd = m_cursor.position();
        const std::uint64_t fileSize = m_cursor.position() + m_cursor.remaining();
        m_file.m_fileSize = fileSize;
        m_file.m_dataOffset = alignUp(infoEnd, m_file.m_alignment);
        if (m_file.m_tensors.empty())
            return {};  // the data section (and its padding) may be absent
        if (m_file.m_dataOffset > fileSize) {
            return Status::corrupt("byte " + std::to_string(infoEnd) +
                                   ": file ends before its data section (at byte " +
                                   std::to_string(m_file.m_dataOffset) + ")");
        }
        const std::uint64_t dataSize = fileSize - m_file.m_dataOffset;

        std::vector<const GgufTensor*> byOffset;
        for (GgufTensor& tensor : m_file.m_tensors) {
            if (tensor.offset > dataSize || tensor.bytes > dataSize - tensor.offset) {
                return Status::corrupt("byte " + std::to_string(tensor.infoOffset) + ": tensor '" +
                                       tensor.name + "': data [" + std::to_string(tensor.offset) +
                                       ", " + std::to_string(tensor.offset + tensor.bytes) +
                                       ") runs past the end of the data section (" +
                                       std::to_string(dataSize) + " bytes)");
            }
            tensor.data = m_bytes.subspan(m_file.m_dataOffset + tensor.offset, tensor.bytes);
            byOffset.push_back(&tensor);
        }
        std::sort(byOffset.begin(), byOffset.end(),
                  [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
        for (std::size_t i = 1; i < byOffset.size(); ++i) {
            const GgufTensor& previous = *byOffset[i - 1];
            const GgufTensor& current = *byOffset[i];
            if (current.bytes > 0 && previous.offset + previous.bytes > current.offset) {
                return Status::corrupt(
                    "byte " + std::to_string(current.infoOffset) + ": tensor '" + current.name +
                    "' (data offset " + std::to_string(current.offset) + ") overlaps tensor '" +
                    previous.name + "' (data [" + std::to_string(previous.offset) + ", " +
                    std::to_string(previous.offset + previous.bytes) + "))");
            }
        }
        return {};
    }

    std::span<const std::byte> m_bytes;
    Cursor m_cursor;
    GgufFile& m_file;
    std::uint64_t m_tensorCount = 0;
    std::uint64_t m_metadataCount = 0;
};

std::int64_t GgufTensor::elements() const {
    std::int64_t n = 1;
    for (std::int64_t extent : shape)
        n *= extent;
    return n;
}

Result<GgufFile> GgufFile::parse(std::span<const std::byte> bytes, std::string_view name) {
    GgufFile file;
    file.m_name = std::string(name);
    GgufParser parser(bytes, file);
    const Status status = parser.parse();
    if (!status.isOk()) return status.withContext(std::string(name) + ": ");
    return file;
}

Result<GgufFile> GgufFile::open(const std::filesystem::path& path) {
    Result<std::shared_ptr<const MappedFile>> mapping = MappedFile::open(path);
    if (!mapping) return mapping.status();
    Result<GgufFile> file = parse((*mapping)->bytes(), path.string());
    if (file) file->m_mapping = std::move(*mapping);
    return file;
}

std::span<const std::byte> GgufFile::mappedBytes() const {
    if (m_mapping == nullptr) return {};
    return m_mapping->bytes();
}

const GgufValue* GgufFile::find(std::string_view key) const {
    const auto it = m_metadataIndex.find(key);
    return it == m_metadataIndex.end() ? nullptr : &m_metadata[it->second].second;
}

const GgufTensor* GgufFile::findTensor(std::string_view name) const {
    const auto it = m_tensorIndex.find(name);
    return it == m_tensorIndex.end() ? nullptr : &m_tensors[it->second];
}

Result<const GgufTensor*> GgufFile::requireTensor(std::string_view name,
                                                  const std::vector<std::int64_t>& shape) const {
    const GgufTensor* t = findTensor(name);
    if (t == nullptr)
        return Status::notFound(m_name + ": missing tensor '" + std::string(name) + "'");
    if (t->shape != shape) {
        return Status::corrupt(m_name + ": tensor '" + std::string(name) + "' has shape " +
                               shapeText(t->shape) + ", expected " + shapeText(shape));
    }
    return t;
}

std::string shapeText(const std::vector<std::int64_t>& shape) {
    std::string text;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i > 0) text.append(" x ");
        text.append(std::to_string(shape[i]));
    }
    return text;
}

Result<const GgufValue*> GgufFile::require(std::string_view key) const {
    const GgufValue* value = find(key);
    if (value == nullptr)
        return Status::notFound(m_name + ": missing metadata key '" + std::string(key) + "'");
    return value;
}

Status GgufFile::wrongType(std::string_view key, const GgufValue& value,
                           std::string_view wanted) const {
    return Status::corrupt(m_name + ": metadata '" + std::string(key) + "' has type " +
                           std::string(ggufTypeName(ggufTypeOf(value))) + ", expected " +
                           std::string(wanted));
}

Result<std::int64_t> GgufFile::getInteger(std::string_view key) const {
    Result<const GgufValue*> value = require(key);
    if (!value) return value.status();
    if (std::optional<std::int64_t> n = ggufInteger(**value)) return *n;
    return wrongType(key, **value, "an integer");
}

Result<double> GgufFile::getFloat(std::string_view key) const {
    Result<const GgufValue*> value = require(key);
    if (!value) return value.status();
    if (const auto* f = std::get_if<float>(*value)) return double(*f);
    if (const auto* d = std::get_if<double>(*value)) return *d;
    return wrongType(key, **value, "float32 or float64");
}

Result<std::string> GgufFile::getString(std::string_view key) const {
    Result<const GgufValue*> value = require(key);
    if (!value) return value.status();
    if (const auto* s = std::get_if<std::string>(*value)) return *s;
    return wrongType(key, **value, "string");
}

Result<const GgufArray*> GgufFile::getArray(std::string_view key) const {
    Result<const GgufValue*> value = require(key);
    if (!value) return value.status();
    if (const auto* a = std::get_if<GgufArray>(*value)) return a;
    return wrongType(key, **value, "array");
}

}  // namespace iris::inference
