//===- IREvaluator.cpp - run attn-dialect IR in double precision ----------===//
//
// Each tensor value becomes a row-major double array; index values become
// integers. Weight arguments are filled from the storage-layout tensors by
// role (attn.weight / attn.concat_of), so the fused stage is checked
// together with its pack plan.
//
//===----------------------------------------------------------------------===//
#include "attnc/Eval/IREvaluator.h"
#include "attnc/Dialect/Attn/IR/AttnOps.h"
#include "attnc/Target/PackPlan.h"
#include "attnc/runtime/Interpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <random>

using namespace mlir;
using namespace attnc::attn;

namespace {
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// Row-major strides.
std::vector<int64_t> strides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// out[idx] = src[perm(idx)] for a 4-D permutation: out dims are src dims
/// permuted by `perm` (out dim i = src dim perm[i]).
Tensor permute4(const Tensor &src, std::array<int, 4> perm) {
  Tensor out;
  for (int i = 0; i < 4; ++i)
    out.shape.push_back(src.shape[perm[i]]);
  out.data.resize(out.numel());
  auto ss = strides(src.shape);
  int64_t n = 0;
  for (int64_t a = 0; a < out.shape[0]; ++a)
    for (int64_t b = 0; b < out.shape[1]; ++b)
      for (int64_t c = 0; c < out.shape[2]; ++c)
        for (int64_t d = 0; d < out.shape[3]; ++d) {
          int64_t idx[4] = {a, b, c, d}, off = 0;
          for (int i = 0; i < 4; ++i)
            off += idx[i] * ss[perm[i]];
          out.data[n++] = src.data[off];
        }
  return out;
}
} // namespace

attnc::EvalInputs attnc::randomInputs(const Spec &spec, int64_t batch,
                                      int64_t seq, uint64_t seed) {
  EvalInputs in;
  in.batch = batch;
  in.seq = seq;
  std::mt19937_64 rng(seed);
  in.storage = attnrt::randomWeights(storageTensors(spec), rng);
  in.x = attnrt::randomNormal(batch * seq * spec.dModel, rng);
  return in;
}

bool attnc::evaluateAttnIR(ModuleOp module, const Spec &spec,
                           const EvalInputs &in, std::vector<double> &out,
                           std::string &error, const std::string &function) {
  std::string name = function.empty() ? spec.name : function;
  auto fn = module.lookupSymbol<func::FuncOp>(name);
  if (!fn || fn.isExternal()) {
    error = "no function @" + name;
    return false;
  }
  DenseMap<Value, Tensor> t;
  DenseMap<Value, int64_t> ix;
  auto storage = storageTensors(spec);

  // Arguments.
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    Value a = fn.getArgument(i);
    auto ty = dyn_cast<RankedTensorType>(a.getType());
    if (!ty) {
      error = "argument " + std::to_string(i) + " is not a ranked tensor";
      return false;
    }
    Tensor v;
    if (fn.getArgAttr(i, "attn.input")) {
      v.shape = {in.batch, in.seq, spec.dModel};
      v.data.assign(in.x.begin(), in.x.end());
      t[a] = std::move(v);
      continue;
    }
    auto role = fn.getArgAttrOfType<StringAttr>(i, "attn.weight");
    if (!role) {
      error = "argument " + std::to_string(i) + " has neither attn.input nor attn.weight";
      return false;
    }
    std::vector<std::string> parts;
    if (auto p = fn.getArgAttrOfType<ArrayAttr>(i, "attn.concat_of"))
      for (Attribute s : p)
        parts.push_back(cast<StringAttr>(s).str());
    else
      parts.push_back(role.str());
    v.shape.assign(ty.getShape().begin(), ty.getShape().end());
    v.data.assign(v.numel(), 0.0);
    int64_t n = v.shape.back(), rows = v.shape.size() == 2 ? v.shape[0] : 1;
    int64_t start = 0;
    for (const std::string &p : parts) {
      RoleSource src;
      if (!sourceOf(spec, p, src)) {
        error = "unknown weight role '" + p + "'";
        return false;
      }
      const std::vector<float> &s = in.storage[src.tensor];
      int64_t sc = storage[src.tensor].shape.back();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < src.cols; ++c) {
          double x = src.isBias       ? s[src.colOff + c]
                     : src.transposed ? s[(src.rowOff + c) * sc + src.colOff + r]
                                      : s[(src.rowOff + r) * sc + src.colOff + c];
          v.data[r * n + start + c] = x;
        }
      start += src.cols;
    }
    t[a] = std::move(v);
  }

  for (Operation &op : fn.getBody().front()) {
    if (auto c = dyn_cast<arith::ConstantIndexOp>(op)) {
      ix[c] = c.value();
    } else if (auto d = dyn_cast<tensor::DimOp>(op)) {
      auto c = d.getConstantIndex();
      if (!c) {
        error = "tensor.dim with a dynamic index";
        return false;
      }
      ix[d] = t[d.getSource()].shape[*c];
    } else if (auto m = dyn_cast<arith::MulIOp>(op)) {
      ix[m] = ix[m.getLhs()] * ix[m.getRhs()];
    } else if (auto a = dyn_cast<arith::AddIOp>(op)) {
      ix[a] = ix[a.getLhs()] + ix[a.getRhs()];
    } else if (auto l = dyn_cast<LinearOp>(op)) {
      const Tensor &x = t[l.getInput()], &w = t[l.getWeight()];
      Tensor y;
      y.shape = x.shape;
      y.shape.back() = w.shape[1];
      y.data.resize(y.numel());
      int64_t k = x.shape.back(), m = x.numel() / k;
      attnrt::naive::linear(x.data.data(), w.data.data(),
                            l.getBias() ? t[l.getBias()].data.data() : nullptr,
                            y.data.data(), m, k, w.shape[1]);
      t[l] = std::move(y);
    } else if (auto s = dyn_cast<SliceOp>(op)) {
      const Tensor &x = t[s.getInput()];
      Tensor y;
      y.shape = x.shape;
      y.shape.back() = s.getSize();
      int64_t n = x.shape.back(), rows = x.numel() / n;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < static_cast<int64_t>(s.getSize()); ++c)
          y.data.push_back(x.data[r * n + s.getOffset() + c]);
      t[s] = std::move(y);
    } else if (auto s = dyn_cast<SplitHeadsOp>(op)) {
      Tensor x = t[s.getInput()]; // [B, T, H*D] -> [B, T, H, D] -> [B, H, T, D]
      int64_t h = s.getHeads();
      x.shape = {x.shape[0], x.shape[1], h, x.shape[2] / h};
      t[s] = permute4(x, {0, 2, 1, 3});
    } else if (auto m = dyn_cast<MergeHeadsOp>(op)) {
      Tensor y = permute4(t[m.getInput()], {0, 2, 1, 3}); // [B, T, H, D]
      y.shape = {y.shape[0], y.shape[1], y.shape[2] * y.shape[3]};
      t[m] = std::move(y);
    } else if (auto s = dyn_cast<SdpaOp>(op)) {
      if (s.getMask() != attn::MaskKind::none && s.getMask() != attn::MaskKind::causal) {
        error = "the evaluator supports masks none and causal only";
        return false;
      }
      const Tensor &q = t[s.getQuery()], &k = t[s.getKey()], &v = t[s.getValue()];
      Tensor o;
      o.shape = q.shape;
      o.data.resize(o.numel());
      attnrt::naive::sdpa(q.data.data(), k.data.data(), v.data.data(),
                          o.data.data(), q.shape[0], q.shape[1], k.shape[1],
                          q.shape[2], k.shape[2], q.shape[3],
                          s.getScale().convertToDouble(),
                          s.getMask() == attn::MaskKind::causal ? ATTNC_MASK_CAUSAL
                                                          : ATTNC_MASK_NONE,
                          s.getCausalAlign() == attn::CausalAlign::top_left);
      t[s] = s.getLayout() == attn::HeadLayout::bthd ? permute4(o, {0, 2, 1, 3}) : o;
    } else if (auto s = dyn_cast<ScaleOp>(op)) {
      Tensor y = t[s.getInput()];
      for (double &d : y.data)
        d *= s.getFactor().convertToDouble();
      t[s] = std::move(y);
    } else if (auto v = dyn_cast<ViewOp>(op)) {
      const Tensor &src = t[v.getSource()];
      std::vector<int64_t> sizes, st;
      for (OpFoldResult f : v.getMixedSizes())
        sizes.push_back(isa<Value>(f) ? ix[cast<Value>(f)] : *getConstantIntValue(f));
      for (OpFoldResult f : v.getMixedStrides())
        st.push_back(isa<Value>(f) ? ix[cast<Value>(f)] : *getConstantIntValue(f));
      Tensor y;
      y.shape = sizes;
      int64_t n = y.numel();
      y.data.resize(n);
      auto ys = strides(sizes);
      for (int64_t e = 0; e < n; ++e) {
        int64_t off = v.getOffset(), rem = e;
        for (size_t d = 0; d < sizes.size(); ++d) {
          off += (rem / ys[d]) * st[d];
          rem %= ys[d];
        }
        if (off < 0 || off >= static_cast<int64_t>(src.data.size())) {
          error = "attn.view reads outside its source";
          return false;
        }
        y.data[e] = src.data[off];
      }
      t[v] = std::move(y);
    } else if (auto c = dyn_cast<tensor::ConcatOp>(op)) {
      int64_t dim = c.getDim();
      Tensor y;
      y.shape = t[c.getInputs()[0]].shape;
      y.shape[dim] = 0;
      for (Value v : c.getInputs())
        y.shape[dim] += t[v].shape[dim];
      y.data.resize(y.numel());
      auto ys = strides(y.shape);
      int64_t start = 0;
      for (Value v : c.getInputs()) {
        const Tensor &x = t[v];
        auto xs = strides(x.shape);
        for (int64_t e = 0; e < x.numel(); ++e) {
          int64_t off = 0, rem = e;
          for (size_t d = 0; d < x.shape.size(); ++d) {
            int64_t i = rem / xs[d];
            rem %= xs[d];
            off += (d == static_cast<size_t>(dim) ? i + start : i) * ys[d];
          }
          y.data[off] = x.data[e];
        }
        start += x.shape[dim];
      }
      t[c] = std::move(y);
    } else if (auto r = dyn_cast<func::ReturnOp>(op)) {
      out = t[r.getOperand(0)].data;
      return true;
    } else {
      error = "the evaluator does not support '" +
              op.getName().getStringRef().str() + "'";
      return false;
    }
  }
  error = "function has no return";
  return false;
}
