#include "inference/models/tensor_binder.h"

#include "kernels/matmul.h"
#include "kernels/quant.h"

namespace iris::inference {

using kernels::TensorType;

Result<const GgufTensor*> TensorBinder::tensor(const std::string& name,
                                               const std::vector<std::int64_t>& shape) const {
    Result<const GgufTensor*> found = m_file.requireTensor(name, shape);
    if (!found) return found.status();
    const GgufTensor* t = *found;
    if (!kernels::tensorTypeInfo(t->type).computable) {
        return Status::unsupported(m_file.name() + ": tensor '" + name + "' has type " +
                                   std::string(kernels::tensorTypeInfo(t->type).name) +
                                   ", which Iris cannot compute with yet");
    }
    return t;
}

Result<const float*> TensorBinder::vector(const std::string& name, std::int64_t size) const {
    Result<const GgufTensor*> t = m_file.requireTensor(name, {size});
    if (!t) return t.status();
    if ((*t)->type == TensorType::F32) return reinterpret_cast<const float*>((*t)->data.data());
    if (m_options.f32Copies == nullptr) return unsupportedType(**t, "f32");
    Result<std::vector<float>> values = floats(name, {size});
    if (!values) return values.status();
    return m_options.f32Copies->emplace_back(std::move(*values)).data();
}

Result<std::vector<float>> TensorBinder::floats(const std::string& name,
                                                const std::vector<std::int64_t>& shape) const {
    Result<const GgufTensor*> t = m_file.requireTensor(name, shape);
    if (!t) return t.status();
    if (!isFloatType((*t)->type)) return unsupportedType(**t, "f32, f16 or bf16");
    std::int64_t count = 1;
    for (const std::int64_t n : shape)
        count *= n;
    std::vector<float> values(static_cast<std::size_t>(count));
    kernels::dequantizeRow((*t)->type, (*t)->data.data(), values.data(), count);
    return values;
}

Result<Linear> TensorBinder::linear(const std::string& prefix, std::int64_t in, std::int64_t out,
                                    bool bias) const {
    const std::string name = prefix + ".weight";
    Result<const GgufTensor*> w = tensor(name, {in, out});
    if (!w) return w.status();
    const TensorType type = (*w)->type;
    if (m_options.wholeBlockRows && !isFloatType(type)) {
        const std::int64_t block =
            kernels::activationFormat(type) == kernels::ActivationFormat::Q8PerBlock256 ? 256 : 32;
        if (in % block != 0 || in % kernels::tensorTypeInfo(type).blockElements != 0) {
            return Status::unsupported(m_file.name() + ": tensor '" + name + "' has type " +
                                       std::string(kernels::tensorTypeInfo(type).name) +
                                       " with rows of " + std::to_string(in) +
                                       " values (not a multiple of " + std::to_string(block) +
                                       "), which Iris cannot compute with yet");
        }
    }
    Linear linear{type, (*w)->data.data(), in, out, nullptr, nullptr};
    if (bias) {
        Result<const float*> b = vector(prefix + ".bias", out);
        if (!b) return b.status();
        linear.bias = *b;
    }
    return linear;
}

Result<ExpertStack> TensorBinder::experts(const std::string& name, std::int64_t in,
                                          std::int64_t out, std::int64_t count) const {
    Result<const GgufTensor*> t = tensor(name, {in, out, count});
    if (!t) return t.status();
    return ExpertStack{(*t)->type, (*t)->data.data(), in, out, count};
}

Status TensorBinder::unsupportedType(const GgufTensor& t, const std::string& wanted) const {
    return Status::unsupported(m_file.name() + ": tensor '" + t.name + "' has type " +
                               std::string(kernels::tensorTypeInfo(t.type).name) + ", expected " +
                               wanted);
}

}  // namespace iris::inference
