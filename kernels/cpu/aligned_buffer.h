#pragma once
// A growable 64-byte aligned scratch buffer for the gemm kernels' packed operands, kept
// thread_local by its users: gemm stays reentrant, and threads working on disjoint column ranges
// never share packing space. No intrinsics here, so every ISA's translation unit can include it.

#include <cstddef>
#include <new>

namespace iris::kernels::cpu {

template <typename T>
class AlignedBuffer {
public:
    AlignedBuffer() = default;
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;
    ~AlignedBuffer() { release(); }

    // At least `count` values; the contents are not kept when it grows.
    T* get(std::size_t count) {
        if (count > m_size) {
            release();
            m_data = static_cast<T*>(::operator new(count * sizeof(T), kAlign));
            m_size = count;
        }
        return m_data;
    }

private:
    static constexpr std::align_val_t kAlign{64};
    void release() {
        if (m_data != nullptr) ::operator delete(m_data, kAlign);
        m_data = nullptr;
        m_size = 0;
    }
    T* m_data = nullptr;
    std::size_t m_size = 0;
};

}  // namespace iris::kernels::cpu
