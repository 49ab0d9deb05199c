#pragma once
// What the CUDA kernel tests share: a device buffer that frees itself, host <-> device copies,
// and a fixture that skips (with the reason) where no GPU can be used, so that the CUDA tests
// compile and report themselves on machines without one.

#include <cstddef>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

namespace iris::kernels::cuda_test {

class DeviceBuffer {
public:
    explicit DeviceBuffer(std::size_t bytes) {
        if (cudaMalloc(&m_data, bytes == 0 ? 1 : bytes) != cudaSuccess) m_data = nullptr;
    }
    ~DeviceBuffer() { cudaFree(m_data); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    void* get() const { return m_data; }
    float* floats() const { return static_cast<float*>(m_data); }

private:
    void* m_data = nullptr;
};

template <class T>
cudaError_t upload(const std::vector<T>& host, const DeviceBuffer& device) {
    return cudaMemcpy(device.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
}

template <class T>
cudaError_t download(const DeviceBuffer& device, std::vector<T>& host) {
    return cudaMemcpy(host.data(), device.get(), host.size() * sizeof(T), cudaMemcpyDeviceToHost);
}

class CudaTest : public ::testing::Test {
protected:
    void SetUp() override {
        int count = 0;
        const cudaError_t err = cudaGetDeviceCount(&count);
        if (err != cudaSuccess || count == 0) {
            GTEST_SKIP() << "no CUDA device here ("
                         << (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices")
                         << "); the CUDA kernel was compiled but not run";
        }
    }
};

}  // namespace iris::kernels::cuda_test
