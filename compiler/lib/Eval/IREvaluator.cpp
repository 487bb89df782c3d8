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
#include "llvm/ADT/TypeSwitch.h"

#include <array>
#include <optional>
#include <random>

using namespace mlir;
using namespace attnc::attn;
using attnc::attn::AttnDialect;

namespace {
/// a * b, or nullopt when it overflows int64 or either is negative. The one
/// helper every size product of the evaluator goes through.
std::optional<int64_t> mulSize(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// Product of `dims`, or nullopt when one is negative or it overflows.
std::optional<int64_t> numelOf(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    std::optional<int64_t> m = mulSize(n, d);
    if (!m)
      return std::nullopt;
    n = *m;
  }
  return n;
}

std::string shapeStr(const std::vector<int64_t> &s) {
  std::string r;
  for (int64_t d : s)
    r += (r.empty() ? "" : "x") + std::to_string(d);
  return "[" + r + "]";
}

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;
  /// Valid only for a tensor built by allocate() (or with a checked shape).
  int64_t numel() const { return static_cast<int64_t>(data.size()); }
};

/// Sets `t.shape` and allocates its elements (zeroed); false with `error`
/// when the shape is negative, overflows or exceeds kMaxEvalElements.
bool allocate(Tensor &t, std::vector<int64_t> shape, std::string &error) {
  std::optional<int64_t> n = numelOf(shape);
  if (!n || *n > attnc::kMaxEvalElements) {
    error = "a tensor of shape " + shapeStr(shape) +
            (n ? " has " + std::to_string(*n) + " elements"
               : std::string(" has more elements than int64 counts")) +
            ", more than the evaluator's limit of 2^27";
    return false;
  }
  t.shape = std::move(shape);
  t.data.assign(static_cast<size_t>(*n), 0.0);
  return true;
}

/// v rounded to float32 and then to a storage type (ATTNC_DTYPE_*).
double roundTo(uint32_t dtype, double v) {
  float f = static_cast<float>(v), r;
  unsigned char bits[4];
  attnrt::fromFloat(dtype, &f, bits, 1);
  attnrt::toFloat(dtype, bits, &r, 1);
  return r;
}

/// Row-major strides of a shape whose product fits (checked by allocate).
std::vector<int64_t> strides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// out[idx] = src[perm(idx)] for a 4-D permutation: out dims are src dims
/// permuted by `perm` (out dim i = src dim perm[i]).
bool permute4(const Tensor &src, std::array<int, 4> perm, Tensor &out,
              std::string &error) {
  if (src.shape.size() != 4) {
    error = "expected a rank-4 tensor, found " + shapeStr(src.shape);
    return false;
  }
  std::vector<int64_t> shape;
  for (int i = 0; i < 4; ++i)
    shape.push_back(src.shape[perm[i]]);
  if (!allocate(out, shape, error))
    return false;
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
  return true;
}
} // namespace

/// The interpreter's mask code for an attn mask: the same numbers, with
/// the lengths given to it as valid lengths, so a padding kind reads as
/// its base kind (padding -> none, causal_padding -> causal, ...).
static uint32_t interpreterMask(attnc::attn::MaskKind m) {
  using attnc::attn::MaskKind;
  static_assert(uint32_t(MaskKind::none) == ATTNC_MASK_NONE &&
                    uint32_t(MaskKind::causal) == ATTNC_MASK_CAUSAL &&
                    uint32_t(MaskKind::padding) == ATTNC_MASK_PADDING &&
                    uint32_t(MaskKind::causal_padding) == ATTNC_MASK_CAUSAL_PADDING &&
                    uint32_t(MaskKind::sliding_window) == ATTNC_MASK_SLIDING_WINDOW &&
                    uint32_t(MaskKind::chunked) == ATTNC_MASK_CHUNKED &&
                    uint32_t(MaskKind::sliding_window_padding) ==
                        ATTNC_MASK_SLIDING_WINDOW_PADDING &&
                    uint32_t(MaskKind::chunked_padding) == ATTNC_MASK_CHUNKED_PADDING &&
                    uint32_t(MaskKind::bidirectional_window) ==
                        ATTNC_MASK_BIDIRECTIONAL_WINDOW &&
                    uint32_t(MaskKind::bidirectional_window_padding) ==
                        ATTNC_MASK_BIDIRECTIONAL_WINDOW_PADDING,
                "attn's mask kinds are numbered as the ABI's");
  return static_cast<uint32_t>(attnc::attn::maskWithoutLengths(m));
}

bool attnc::randomInputs(const Spec &spec, int64_t batch, int64_t seq,
                         uint64_t seed, EvalInputs &in, std::string &error) {
  if (batch < 1 || seq < 1) {
    error = "batch and seq_len must be >= 1";
    return false;
  }
  auto fits = [&](const char *what, std::vector<int64_t> dims) {
    std::optional<int64_t> n = numelOf(dims);
    if (n && *n <= kMaxEvalElements)
      return true;
    std::string prod;
    for (int64_t d : dims)
      prod += (prod.empty() ? "" : " * ") + std::to_string(d);
    error = std::string(what) + " has " + prod +
            (n ? " = " + std::to_string(*n) : std::string(" (overflows int64)")) +
            " elements, more than the evaluator's limit of 2^27 (134217728); "
            "use a smaller batch or seq_len";
    return false;
  };
  int64_t qkv = spec.qWidth() + 2 * spec.kvWidth();
  if (!fits("the input [batch, seq_len, d_model]", {batch, seq, spec.dModel}) ||
      !fits("the widest activation [batch, seq_len, max(d_model, q+k+v width)]",
            {batch, seq, std::max(spec.dModel, qkv)}) ||
      !fits("the attention [batch, heads, seq_len, head_dim]",
            {batch, spec.heads, seq, spec.headDim}))
    return false;
  int64_t weights = 0;
  for (const attnrt::TensorShape &t : storageTensors(spec)) {
    std::optional<int64_t> n = numelOf(t.shape);
    if (!n || __builtin_add_overflow(weights, *n, &weights) ||
        weights > kMaxEvalElements) {
      error = "the weights have more than the evaluator's limit of 2^27 "
              "(134217728) elements";
      return false;
    }
  }
  in.batch = batch;
  in.seq = seq;
  std::mt19937_64 rng(seed);
  in.storage = attnrt::randomWeights(storageTensors(spec), rng);
  in.x = attnrt::randomNormal(batch * seq * spec.dModel, rng);
  in.xKv.clear();
  in.lengths.clear();
  in.kvLengths.clear();
  in.kvSeq = seq;
  if (spec.crossAttention) {
    in.kvSeq = seq + 2;
    if (!fits("the second input [batch, kv_seq_len, d_model]",
              {batch, in.kvSeq, std::max(spec.dModel, qkv)}))
      return false;
    in.xKv = attnrt::randomNormal(batch * in.kvSeq * spec.dModel, rng);
  }
  // A bf16/f16 block reads its inputs in that type: every stage and the
  // compiled kernel get the same (rounded, so exactly representable) x.
  if (spec.dtype != DType::F32) {
    const uint32_t dt = spec.dtype == DType::BF16 ? ATTNC_DTYPE_BF16 : ATTNC_DTYPE_F16;
    for (std::vector<float> *v : {&in.x, &in.xKv})
      for (float &f : *v)
        f = static_cast<float>(roundTo(dt, f));
  }
  if (spec.paddingMask()) {
    for (int64_t b = 0; b < batch; ++b) {
      in.lengths.push_back(static_cast<int32_t>(seq - (b * (seq + 1)) / batch));
      if (spec.crossAttention)
        in.kvLengths.push_back(
            static_cast<int32_t>(in.kvSeq - (b * (in.kvSeq - 1)) / batch));
    }
  }
  return true;
}

attnrt::VariantInputs attnc::variantInputs(const Spec &spec,
                                           const EvalInputs &in) {
  attnrt::VariantInputs v;
  v.lengths = in.lengths.empty() ? nullptr : in.lengths.data();
  v.positions = in.positions.empty() ? nullptr : in.positions.data();
  if (spec.crossAttention) {
    v.xKv = in.xKv.data();
    v.kvSeqLen = in.kvSeq;
    v.kvLengths = in.kvLengths.empty() ? nullptr : in.kvLengths.data();
  }
  return v;
}

namespace {
/// Runs one function of attn-dialect IR: tensors become row-major double
/// arrays, index values integers. One method per op kind; each returns
/// false with `error` set.
class Evaluator {
public:
  Evaluator(const attnc::Spec &spec, const attnc::EvalInputs &in, std::string &error)
      : spec(spec), in(in), error(error), layout(attnc::storageLayout(spec)),
        storage(layout.tensors) {}

  /// Evaluates `fn` and copies its first result into `out`.
  bool run(func::FuncOp fn, std::vector<double> &out);

private:
  bool bindArguments(func::FuncOp fn);
  bool bindInput(func::FuncOp fn, Value a, const std::string &what);
  bool bindWeight(func::FuncOp fn, unsigned i, RankedTensorType ty);
  bool step(Operation &op);

  bool constantIndex(Operation &op, arith::ConstantIndexOp c);
  bool dim(Operation &op, tensor::DimOp d);
  bool indexArith(Operation &op);
  bool linear(Operation &op, LinearOp l);
  bool slice(Operation &op, SliceOp s);
  bool splitHeads(Operation &op, SplitHeadsOp s);
  bool mergeHeads(Operation &op, MergeHeadsOp m);
  bool attention(Operation &op);
  bool cacheAppend(Operation &op, CacheAppendOp a);
  bool clip(Operation &op, ClipOp cl);
  bool rmsNorm(Operation &op, RmsNormOp r);
  bool rope(Operation &op, RopeOp r);
  /// The first position of each sequence of x [B, H, T, D] from an
  /// optional positions operand (empty without one: every sequence at 0).
  bool startsOf(Operation &op, Value positions, const Tensor &x, std::vector<int64_t> &start);
  bool temperature(Operation &op, TemperatureOp r);
  bool maskRows(Operation &op, MaskRowsOp m);
  bool scale(Operation &op, ScaleOp s);
  bool truncF(Operation &op, arith::TruncFOp tr);
  bool view(Operation &op, ViewOp v);
  bool concat(Operation &op, tensor::ConcatOp c);

  /// A computed tensor; nullptr (with `error`) when the IR uses a value the
  /// evaluator has not computed (a block argument of a nested region, ...).
  const Tensor *tensorOf(Value v) {
    auto it = t.find(v);
    if (it == t.end()) {
      error = "an operand is not a tensor the evaluator computed";
      return nullptr;
    }
    return &it->second;
  }
  bool indexOf(Value v, int64_t &r) {
    auto it = ix.find(v);
    if (it == ix.end()) {
      error = "an index operand is not a value the evaluator computed";
      return false;
    }
    r = it->second;
    return true;
  }
  bool fail(Operation &op, const std::string &why) {
    error = "'" + op.getName().getStringRef().str() + "': " + why;
    return false;
  }

  const attnc::Spec &spec;
  const attnc::EvalInputs &in;
  std::string &error;
  const attnrt::StorageLayout layout;
  const std::vector<attnrt::TensorShape> &storage;
  DenseMap<Value, Tensor> t;
  DenseMap<Value, int64_t> ix;
};

bool Evaluator::bindArguments(func::FuncOp fn) {
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    Value a = fn.getArgument(i);
    auto ty = dyn_cast<RankedTensorType>(a.getType());
    if (!ty) {
      error = "argument " + std::to_string(i) + " is not a ranked tensor";
      return false;
    }
    if (auto inName = fn.getArgAttrOfType<StringAttr>(i, AttnDialect::InputAttrHelper::getNameStr())) {
      if (!bindInput(fn, a, inName.str()))
        return false;
    } else if (!bindWeight(fn, i, ty)) {
      return false;
    }
  }
  return true;
}

/// An attn.input argument: x, x_kv, the lengths, the positions or an
/// empty cache.
bool Evaluator::bindInput(func::FuncOp fn, Value a, const std::string &what) {
  Tensor v;
  if (what == "k_cache" || what == "v_cache") {
    // An empty cache of seq rows (forward fills rows [0, seq)).
    if (!allocate(v, {in.batch, spec.kvHeads, in.seq, spec.headDim}, error))
      return false;
    t[a] = std::move(v);
    return true;
  }
  if (what == "positions") {
    if (fn->getAttr(AttnDialect::EntryAttrHelper::getNameStr())) {
      error = "the evaluator runs the forward function, not the decode entry";
      return false;
    }
    if (!allocate(v, {in.batch}, error))
      return false;
    for (int64_t b = 0; b < in.batch; ++b)
      v.data[b] = in.positions.empty() ? 0.0 : double(in.positions.at(size_t(b)));
    t[a] = std::move(v);
    return true;
  }
  if (what == "lengths" || what == "kv_lengths") {
    const std::vector<int32_t> &l = what == "lengths" ? in.lengths : in.kvLengths;
    int64_t full = what == "lengths" ? in.seq : in.kvSeq;
    if (!allocate(v, {in.batch}, error))
      return false;
    for (int64_t b = 0; b < in.batch; ++b) {
      int64_t len = l.empty() ? full : b < (int64_t)l.size() ? l[b] : -1;
      if (len < 0 || len > full) {
        error = "the " + what + " do not fit batch " + std::to_string(in.batch);
        return false;
      }
      v.data[b] = static_cast<double>(len);
    }
    t[a] = std::move(v);
    return true;
  }
  bool kv = what == "x_kv";
  const std::vector<float> &src = kv ? in.xKv : in.x;
  if (!allocate(v, {in.batch, kv ? in.kvSeq : in.seq, spec.dModel}, error))
    return false;
  if (static_cast<int64_t>(src.size()) != v.numel()) {
    error = "the input " + what + " has " + std::to_string(src.size()) +
            " elements, expected " + shapeStr(v.shape);
    return false;
  }
  v.data.assign(src.begin(), src.end());
  t[a] = std::move(v);
  return true;
}

/// An attn.weight argument, filled from the storage-layout tensors by role
/// (attn.concat_of: several roles side by side), so the fused stage is
/// checked together with its pack plan.
bool Evaluator::bindWeight(func::FuncOp fn, unsigned i, RankedTensorType ty) {
  Value a = fn.getArgument(i);
  Tensor v;
  auto role = fn.getArgAttrOfType<StringAttr>(i, AttnDialect::WeightAttrHelper::getNameStr());
  if (!role) {
    error = "argument " + std::to_string(i) + " has neither attn.input nor attn.weight";
    return false;
  }
  std::vector<std::string> parts;
  if (auto p = fn.getArgAttrOfType<ArrayAttr>(i, AttnDialect::ConcatOfAttrHelper::getNameStr())) {
    for (Attribute s : p) {
      auto str = dyn_cast<StringAttr>(s);
      if (!str) {
        error = "argument " + std::to_string(i) + ": attn.concat_of must list strings";
        return false;
      }
      parts.push_back(str.str());
    }
  } else {
    parts.push_back(role.str());
  }
  if (!ty.hasStaticShape() || ty.getRank() < 1 || ty.getRank() > 2) {
    error = "weight argument " + std::to_string(i) +
            " must have a static 1-D or 2-D shape";
    return false;
  }
  if (!allocate(v, {ty.getShape().begin(), ty.getShape().end()}, error))
    return false;
  int64_t n = v.shape.back(), rows = v.shape.size() == 2 ? v.shape[0] : 1;
  int64_t start = 0;
  for (const std::string &p : parts) {
    const attnrt::RoleRect *found = layout.find(p);
    if (!found) {
      error = "unknown weight role '" + p + "'";
      return false;
    }
    const attnrt::RoleRect &src = *found;
    const std::vector<float> &s = in.storage[src.tensor];
    int64_t sc = storage[src.tensor].shape.back();
    // The role's columns must fit the argument, its rows must match.
    if (src.cols > n - start || (!src.vector && src.rows != rows) ||
        (src.vector && rows != 1)) {
      error = "weight argument " + std::to_string(i) + " of shape " +
              shapeStr(v.shape) + " does not fit its roles";
      return false;
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < src.cols; ++c) {
        double x = src.vector       ? s[src.colOff + c]
                   : src.transposed ? s[(src.rowOff + c) * sc + src.colOff + r]
                                    : s[(src.rowOff + r) * sc + src.colOff + c];
        v.data[r * n + start + c] = x;
      }
    start += src.cols;
  }
  t[a] = std::move(v);
  return true;
}

/// An index constant.
bool Evaluator::constantIndex(Operation &op, arith::ConstantIndexOp c) {
  ix[c] = c.value();
  return true;
}

/// tensor.dim of a computed tensor (a constant dimension).
bool Evaluator::dim(Operation &op, tensor::DimOp d) {
  auto c = d.getConstantIndex();
  if (!c)
    return fail(op, "a dynamic index is not supported");
  const Tensor *src = tensorOf(d.getSource());
  if (!src)
    return false;
  if (*c < 0 || *c >= static_cast<int64_t>(src->shape.size()))
    return fail(op, "index " + std::to_string(*c) + " is out of range for a "
                    "tensor of rank " + std::to_string(src->shape.size()));
  ix[d] = src->shape[*c];
  return true;
}

/// arith.muli / addi of index values (overflow is an error).
bool Evaluator::indexArith(Operation &op) {
  int64_t l, r, v;
  if (!indexOf(op.getOperand(0), l) || !indexOf(op.getOperand(1), r))
    return false;
  bool ovf = isa<arith::MulIOp>(op) ? __builtin_mul_overflow(l, r, &v)
                                    : __builtin_add_overflow(l, r, &v);
  if (ovf)
    return fail(op, "overflows int64");
  ix[op.getResult(0)] = v;
  return true;
}

/// attn.linear: x W (+ b) over the last dimension.
bool Evaluator::linear(Operation &op, LinearOp l) {
  const Tensor *x = tensorOf(l.getInput()), *w = tensorOf(l.getWeight());
  const Tensor *b = l.getBias() ? tensorOf(l.getBias()) : nullptr;
  if (!x || !w || (l.getBias() && !b))
    return false;
  if (x->shape.empty() || w->shape.size() != 2 ||
      x->shape.back() != w->shape[0] ||
      (b && (b->shape.size() != 1 || b->shape[0] != w->shape[1])))
    return fail(op, "shapes " + shapeStr(x->shape) + " and " +
                    shapeStr(w->shape) + " do not fit");
  Tensor y;
  std::vector<int64_t> shape = x->shape;
  shape.back() = w->shape[1];
  if (!allocate(y, shape, error))
    return false;
  int64_t k = x->shape.back(), m = k ? x->numel() / k : 0;
  if (m > 0 && k > 0)
    attnrt::naive::linear(x->data.data(), w->data.data(),
                          b ? b->data.data() : nullptr, y.data.data(), m, k,
                          w->shape[1]);
  t[l] = std::move(y);
  return true;
}

/// attn.slice: columns [offset, offset + size) of the last dimension.
bool Evaluator::slice(Operation &op, SliceOp s) {
  const Tensor *x = tensorOf(s.getInput());
  if (!x)
    return false;
  int64_t off = s.getOffset(), size = s.getSize();
  int64_t n = x->shape.empty() ? 0 : x->shape.back();
  if (x->shape.empty() || off < 0 || size < 0 || off > n || size > n - off)
    return fail(op, "[" + std::to_string(off) + ", +" + std::to_string(size) +
                    ") does not fit " + shapeStr(x->shape));
  std::vector<int64_t> shape = x->shape;
  shape.back() = size;
  Tensor y;
  if (!allocate(y, shape, error))
    return false;
  int64_t rows = n ? x->numel() / n : 0, e = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < size; ++c)
      y.data[e++] = x->data[r * n + off + c];
  t[s] = std::move(y);
  return true;
}

/// attn.split_heads: [B, T, H*D] -> [B, H, T, D].
bool Evaluator::splitHeads(Operation &op, SplitHeadsOp s) {
  const Tensor *xp = tensorOf(s.getInput());
  if (!xp)
    return false;
  int64_t h = s.getHeads();
  if (xp->shape.size() != 3 || h < 1 || xp->shape[2] % h != 0)
    return fail(op, std::to_string(h) + " heads do not split " +
                    shapeStr(xp->shape));
  Tensor x = *xp; // [B, T, H*D] -> [B, T, H, D] -> [B, H, T, D]
  x.shape = {x.shape[0], x.shape[1], h, x.shape[2] / h};
  Tensor y;
  if (!permute4(x, {0, 2, 1, 3}, y, error))
    return false;
  t[s] = std::move(y);
  return true;
}

/// attn.merge_heads: [B, H, T, D] -> [B, T, H*D].
bool Evaluator::mergeHeads(Operation &op, MergeHeadsOp m) {
  const Tensor *x = tensorOf(m.getInput());
  if (!x)
    return false;
  Tensor y; // [B, H, T, D] -> [B, T, H, D]
  if (!permute4(*x, {0, 2, 1, 3}, y, error))
    return false;
  y.shape = {y.shape[0], y.shape[1], y.shape[2] * y.shape[3]};
  t[m] = std::move(y);
  return true;
}

/// attn.sdpa's output (bhtd, then permuted for bthd) or attn.probs'
/// weights, from the interpreter's attention with per-sequence valid
/// lengths (rows past q_len are zero) and the op's score modifiers.
bool Evaluator::attention(Operation &op) {
  auto sdpa = dyn_cast<SdpaOp>(op);
  auto pr = dyn_cast<ProbsOp>(op);
  auto operand = [&](Value v) -> const Tensor * {
    return v ? tensorOf(v) : nullptr;
  };
  const Tensor *q = operand(sdpa ? sdpa.getQuery() : pr.getQuery());
  const Tensor *k = operand(sdpa ? sdpa.getKey() : pr.getKey());
  const Tensor *v = sdpa ? operand(sdpa.getValue()) : k;
  Value qLensV = sdpa ? sdpa.getQLens() : pr.getQLens();
  Value kvLensV = sdpa ? sdpa.getKvLens() : pr.getKvLens();
  const Tensor *qLens = operand(qLensV), *kvLens = operand(kvLensV);
  if (!q || !k || !v || (qLensV && !qLens) || (kvLensV && !kvLens))
    return false;
  if (q->shape.size() != 4 || k->shape != v->shape || k->shape.size() != 4 ||
      q->shape[0] != k->shape[0] || q->shape[3] != k->shape[3] ||
      k->shape[1] < 1 || q->shape[1] % k->shape[1] != 0)
    return fail(op, "query " + shapeStr(q->shape) + ", key " +
                    shapeStr(k->shape) + " and value " + shapeStr(v->shape) +
                    " do not fit");
  const int64_t nb = q->shape[0], tq = q->shape[2], tkv = k->shape[2];
  for (const Tensor *l : {qLens, kvLens})
    if (l && (l->shape.size() != 1 || l->shape[0] != nb))
      return fail(op, "lengths " + shapeStr(l->shape) + " do not fit batch " +
                      std::to_string(nb));
  std::vector<int64_t> qv(nb), kv(nb);
  for (int64_t b = 0; b < nb; ++b) {
    qv[b] = qLens ? static_cast<int64_t>(qLens->data[b]) : tq;
    kv[b] = kvLens ? static_cast<int64_t>(kvLens->data[b]) : tkv;
    if (qv[b] < 0 || qv[b] > tq || kv[b] < 0 || kv[b] > tkv)
      return fail(op, "a valid length is outside [0, T]");
  }
  Tensor o, probs;
  if (!allocate(o, q->shape, error) ||
      (pr && !allocate(probs, {nb, q->shape[1], tq, tkv}, error)))
    return false;
  const int64_t window = (sdpa ? sdpa.getWindow() : pr.getWindow()).value_or(0);
  // The score modifiers, as the reference applies them.
  std::optional<llvm::APFloat> cap = sdpa ? sdpa.getSoftcap() : pr.getSoftcap();
  std::optional<ArrayRef<double>> slopes =
      sdpa ? sdpa.getAlibiSlopes() : pr.getAlibiSlopes();
  if (slopes && int64_t(slopes->size()) != q->shape[1])
    return fail(op, "alibi_slopes do not fit the query heads");
  attnrt::naive::ScoreMods mods;
  mods.softcap = cap ? cap->convertToDouble() : 0.0;
  mods.slopes = slopes ? slopes->data() : nullptr;
  mods.beforeScale = sdpa ? sdpa.getAlibiBeforeScale() : pr.getAlibiBeforeScale();
  Value sinksV = sdpa ? sdpa.getSinks() : pr.getSinks();
  const Tensor *sinks = sinksV ? tensorOf(sinksV) : nullptr;
  if (sinksV && (!sinks || sinks->shape.size() != 1 || sinks->shape[0] != q->shape[1]))
    return sinks ? fail(op, "sinks " + shapeStr(sinks->shape) + " do not fit the query heads")
                 : false;
  mods.sinks = sinks ? sinks->data.data() : nullptr;
  Value relV = sdpa ? sdpa.getRelBias() : pr.getRelBias();
  const Tensor *rel = relV ? tensorOf(relV) : nullptr;
  std::optional<ArrayRef<int32_t>> buckets = sdpa ? sdpa.getRelBuckets() : pr.getRelBuckets();
  if (relV && (!rel || !buckets || rel->shape.size() != 2 || rel->shape[1] != q->shape[1]))
    return rel ? fail(op, "rel_bias " + shapeStr(rel->shape) + " does not fit") : false;
  if (rel) {
    mods.relBias = rel->data.data();
    mods.relBuckets = buckets->data();
    mods.relRange = int64_t(buckets->size() / 2);
    mods.hq = q->shape[1];
  }
  Value embV = sdpa ? sdpa.getRelEmb() : pr.getRelEmb();
  const Tensor *emb = embV ? tensorOf(embV) : nullptr;
  if (embV && (!emb || emb->shape.size() != 2 || emb->shape[0] != q->shape[3] ||
               emb->shape[1] % 2 != 1))
    return emb ? fail(op, "rel_emb " + shapeStr(emb->shape) + " does not fit") : false;
  if (emb) {
    mods.relEmb = emb->data.data();
    mods.relCols = emb->shape[1];
    mods.relKeyQuery = sdpa ? sdpa.getRelKeyQuery() : pr.getRelKeyQuery();
  }
  if (o.numel() > 0 && k->numel() > 0)
    attnrt::naive::sdpa(q->data.data(), k->data.data(), v->data.data(),
                        o.data.data(), nb, q->shape[1], k->shape[1], tq, tkv,
                        q->shape[3],
                        (sdpa ? sdpa.getScale() : pr.getScale()).convertToDouble(),
                        interpreterMask(sdpa ? sdpa.getMask() : pr.getMask()),
                        (sdpa ? sdpa.getCausalAlign() : pr.getCausalAlign()) ==
                            CausalAlign::top_left,
                        window, qv.data(), kv.data(),
                        pr ? probs.data.data() : nullptr, mods);
  if (pr) {
    t[pr] = std::move(probs);
    return true;
  }
  if (sdpa.getLayout() == HeadLayout::bthd) {
    Tensor p;
    if (!permute4(o, {0, 2, 1, 3}, p, error))
      return false;
    o = std::move(p);
  }
  t[sdpa] = std::move(o);
  return true;
}

/// attn.cache_append, functional: copies of the caches with each
/// sequence's new rows at its position, and the filled lengths.
bool Evaluator::cacheAppend(Operation &op, CacheAppendOp a) {
  // Functional: copies of the caches with each sequence's new rows at
  // its position, and the filled lengths.
  const Tensor *k = tensorOf(a.getKey()), *v = tensorOf(a.getValue());
  const Tensor *kc = tensorOf(a.getKeyCache()), *vc = tensorOf(a.getValueCache());
  const Tensor *pos = a.getPositions() ? tensorOf(a.getPositions()) : nullptr;
  if (!k || !v || !kc || !vc || (a.getPositions() && !pos))
    return false;
  if (k->shape.size() != 4 || k->shape != v->shape || kc->shape != vc->shape ||
      kc->shape.size() != 4 || kc->shape[0] != k->shape[0] ||
      kc->shape[1] != k->shape[1] || kc->shape[3] != k->shape[3] ||
      (pos && (pos->shape.size() != 1 || pos->shape[0] != k->shape[0])))
    return fail(op, "new rows " + shapeStr(k->shape) + " do not fit cache " +
                    shapeStr(kc->shape));
  const int64_t nb = k->shape[0], hk = k->shape[1], tn = k->shape[2],
                cap = kc->shape[2], dd = k->shape[3];
  Tensor nk = *kc, nv = *vc, lens;
  if (!allocate(lens, {nb}, error))
    return false;
  for (int64_t b = 0; b < nb; ++b) {
    int64_t p0 = pos ? static_cast<int64_t>(pos->data[b]) : 0;
    if (p0 < 0 || p0 + tn > cap)
      return fail(op, "position " + std::to_string(p0) + " + " +
                      std::to_string(tn) + " rows is outside the cache of " +
                      std::to_string(cap) + " rows");
    lens.data[b] = static_cast<double>(p0 + tn);
    for (int64_t h = 0; h < hk; ++h)
      for (int64_t r = 0; r < tn; ++r)
        for (int64_t d = 0; d < dd; ++d) {
          int64_t src = ((b * hk + h) * tn + r) * dd + d;
          int64_t dst = ((b * hk + h) * cap + p0 + r) * dd + d;
          nk.data[dst] = k->data[src];
          nv.data[dst] = v->data[src];
        }
  }
  t[a.getNewKeyCache()] = std::move(nk);
  t[a.getNewValueCache()] = std::move(nv);
  t[a.getLens()] = std::move(lens);
  return true;
}

/// attn.clip: each element clamped to [-limit, limit].
bool Evaluator::clip(Operation &op, ClipOp cl) {
  const Tensor *x = tensorOf(cl.getInput());
  if (!x)
    return false;
  Tensor y = *x;
  attnrt::naive::clip(y.data.data(), int64_t(y.data.size()), cl.getLimit().convertToDouble());
  t[cl] = std::move(y);
  return true;
}

/// attn.rms_norm over each head (or across heads), RMSNorm or LayerNorm.
bool Evaluator::rmsNorm(Operation &op, RmsNormOp r) {
  const Tensor *x = tensorOf(r.getInput());
  const Tensor *w = r.getWeight() ? tensorOf(r.getWeight()) : nullptr;
  const Tensor *bias = r.getBias() ? tensorOf(r.getBias()) : nullptr;
  if (!x || (r.getWeight() && !w) || (r.getBias() && !bias))
    return false;
  const bool wide = r.getAcrossHeads() || r.getPerHeadWeight();
  if (x->shape.size() != 4 ||
      (w && (w->shape.size() != 1 || w->shape[0] != x->shape[3] * (wide ? x->shape[1] : 1))) ||
      (bias && (!w || bias->shape != w->shape)))
    return fail(op, "weight " + (w ? shapeStr(w->shape) : std::string("(none)")) +
                        " does not fit " + shapeStr(x->shape));
  Tensor y = *x;
  attnrt::naive::NormParams np;
  np.eps = r.getEps().convertToDouble();
  np.offset = r.getWeightOffset().convertToDouble();
  np.acrossHeads = r.getAcrossHeads();
  np.center = r.getCenter();
  np.perHead = r.getPerHeadWeight();
  np.noWeight = !w;
  attnrt::naive::rmsNorm(y.data.data(), w ? w->data.data() : nullptr, x->shape[0], x->shape[1],
                         x->shape[2], x->shape[3], np, bias ? bias->data.data() : nullptr);
  t[r] = std::move(y);
  return true;
}

bool Evaluator::startsOf(Operation &op, Value positions, const Tensor &x,
                         std::vector<int64_t> &start) {
  const Tensor *pos = positions ? tensorOf(positions) : nullptr;
  if (positions && !pos)
    return false;
  if (x.shape.size() != 4 || (pos && (pos->shape.size() != 1 || pos->shape[0] != x.shape[0])))
    return fail(op, "positions do not fit " + shapeStr(x.shape));
  if (pos)
    for (double p : pos->data)
      start.push_back(static_cast<int64_t>(p));
  return true;
}

/// attn.rope with the op's frequency tables, from each sequence's start.
bool Evaluator::rope(Operation &op, RopeOp r) {
  const Tensor *x = tensorOf(r.getInput());
  std::vector<int64_t> start;
  if (!x || !startsOf(op, r.getPositions(), *x, start))
    return false;
  attnrt::RopeParams rp;
  rp.style = r.getInterleaved() ? ATTNC_ROPE_INTERLEAVED : ATTNC_ROPE_HALF_SPLIT;
  rp.rotaryDim = r.getRotaryDim();
  rp.invFreq.assign(r.getInvFreq().begin(), r.getInvFreq().end());
  if (auto l = r.getLongInvFreq())
    rp.longInvFreq.assign(l->begin(), l->end());
  rp.longFrom = r.getLongFrom();
  rp.attentionFactor = r.getAttentionFactor().convertToDouble();
  rp.dynamicFactor = r.getDynamicFactor().convertToDouble();
  rp.dynamicFrom = r.getDynamicFrom();
  Tensor y = *x;
  attnrt::naive::rope(y.data.data(), x->shape[0], x->shape[1], x->shape[2], x->shape[3],
                      rp, start.empty() ? nullptr : start.data());
  t[r] = std::move(y);
  return true;
}

/// attn.temperature: row t of sequence b times the factor of its position
/// (attnrt::BlockParams::temperatureAt, the reference's formula).
bool Evaluator::temperature(Operation &op, TemperatureOp r) {
  const Tensor *x = tensorOf(r.getInput());
  std::vector<int64_t> start;
  if (!x || !startsOf(op, r.getPositions(), *x, start))
    return false;
  attnrt::BlockParams bp;
  bp.temperatureFloorScale = r.getFloorScale();
  bp.temperatureAttnScale = r.getAttnScale().convertToDouble();
  Tensor y = *x;
  const int64_t nb = x->shape[0], nh = x->shape[1], tt = x->shape[2], dd = x->shape[3];
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t h = 0; h < nh; ++h)
      for (int64_t i = 0; i < tt; ++i) {
        const double f = bp.temperatureAt((start.empty() ? 0 : start[size_t(b)]) + i);
        for (int64_t c = 0; c < dd; ++c)
          y.data[((b * nh + h) * tt + i) * dd + c] *= f;
      }
  t[r] = std::move(y);
  return true;
}

/// attn.mask_rows: rows at or past each sequence's length zeroed.
bool Evaluator::maskRows(Operation &op, MaskRowsOp m) {
  const Tensor *x = tensorOf(m.getInput()), *l = tensorOf(m.getLens());
  if (!x || !l)
    return false;
  if (x->shape.size() != 3 || l->shape.size() != 1 || l->shape[0] != x->shape[0])
    return fail(op, "lengths " + shapeStr(l->shape) + " do not fit " +
                    shapeStr(x->shape));
  Tensor y = *x;
  int64_t rowLen = x->shape[2];
  for (int64_t b = 0; b < x->shape[0]; ++b)
    for (int64_t r = std::max<int64_t>(0, static_cast<int64_t>(l->data[b]));
         r < x->shape[1]; ++r)
      for (int64_t c = 0; c < rowLen; ++c)
        y.data[(b * x->shape[1] + r) * rowLen + c] = 0;
  t[m] = std::move(y);
  return true;
}

/// attn.scale: every element times the factor.
bool Evaluator::scale(Operation &op, ScaleOp s) {
  const Tensor *x = tensorOf(s.getInput());
  if (!x)
    return false;
  Tensor y = *x;
  for (double &d : y.data)
    d *= s.getFactor().convertToDouble();
  t[s] = std::move(y);
  return true;
}

/// arith.truncf to bf16/f16 (y of a block with such a dtype): each value
/// rounded to the type as the kernels' stores round it (nearest even).
bool Evaluator::truncF(Operation &op, arith::TruncFOp tr) {
  const Tensor *x = tensorOf(tr.getIn());
  if (!x)
    return false;
  Type et = getElementTypeOrSelf(tr.getType());
  uint32_t dt = et.isBF16() ? ATTNC_DTYPE_BF16 : et.isF16() ? ATTNC_DTYPE_F16 : ATTNC_DTYPE_F32;
  if (dt == ATTNC_DTYPE_F32 && !et.isF32())
    return fail(op, "truncates to an element type other than f32, bf16 or f16");
  Tensor y = *x;
  for (double &d : y.data)
    d = roundTo(dt, d);
  t[tr] = std::move(y);
  return true;
}

/// attn.view: a strided view read element by element (bounds-checked).
bool Evaluator::view(Operation &op, ViewOp v) {
  const Tensor *src = tensorOf(v.getSource());
  if (!src)
    return false;
  std::vector<int64_t> sizes, st;
  auto valueOf = [&](OpFoldResult f, int64_t &x) {
    if (isa<Value>(f))
      return indexOf(cast<Value>(f), x);
    x = getConstantIntValue(f).value_or(0);
    return true;
  };
  for (OpFoldResult f : v.getMixedSizes())
    if (!valueOf(f, sizes.emplace_back()))
      return false;
  for (OpFoldResult f : v.getMixedStrides())
    if (!valueOf(f, st.emplace_back()))
      return false;
  if (sizes.size() != st.size())
    return fail(op, "sizes and strides differ in number");
  Tensor y;
  if (!allocate(y, sizes, error))
    return false;
  int64_t n = y.numel(), srcN = src->numel();
  auto ys = strides(sizes);
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = v.getOffset(), rem = e;
    bool ovf = false;
    for (size_t d = 0; d < sizes.size(); ++d) {
      int64_t term;
      ovf |= __builtin_mul_overflow(rem / ys[d], st[d], &term) ||
             __builtin_add_overflow(off, term, &off);
      rem %= ys[d];
    }
    if (ovf || off < 0 || off >= srcN)
      return fail(op, "reads outside its source");
    y.data[e] = src->data[off];
  }
  t[v] = std::move(y);
  return true;
}

/// tensor.concat along one dimension.
bool Evaluator::concat(Operation &op, tensor::ConcatOp c) {
  int64_t dim = c.getDim();
  std::vector<const Tensor *> ins;
  for (Value v : c.getInputs()) {
    const Tensor *x = tensorOf(v);
    if (!x)
      return false;
    ins.push_back(x);
  }
  if (ins.empty() || dim < 0 || dim >= static_cast<int64_t>(ins[0]->shape.size()))
    return fail(op, "dimension " + std::to_string(dim) + " is out of range");
  std::vector<int64_t> shape = ins[0]->shape;
  shape[dim] = 0;
  for (const Tensor *x : ins) {
    std::vector<int64_t> a = x->shape, b = ins[0]->shape;
    if (a.size() != b.size())
      return fail(op, "operand ranks differ");
    a[dim] = b[dim] = 0;
    if (a != b || __builtin_add_overflow(shape[dim], x->shape[dim], &shape[dim]))
      return fail(op, "operand shapes do not fit");
  }
  Tensor y;
  if (!allocate(y, shape, error))
    return false;
  auto ys = strides(y.shape);
  int64_t start = 0;
  for (const Tensor *x : ins) {
    auto xs = strides(x->shape);
    for (int64_t e = 0; e < x->numel(); ++e) {
      int64_t off = 0, rem = e;
      for (size_t d = 0; d < x->shape.size(); ++d) {
        int64_t i = rem / xs[d];
        rem %= xs[d];
        off += (d == static_cast<size_t>(dim) ? i + start : i) * ys[d];
      }
      y.data[off] = x->data[e];
    }
    start += x->shape[dim];
  }
  t[c] = std::move(y);
  return true;
}

bool Evaluator::step(Operation &op) {
  return llvm::TypeSwitch<Operation *, bool>(&op)
      .Case([&](arith::ConstantIndexOp o) { return constantIndex(op, o); })
      .Case([&](tensor::DimOp o) { return dim(op, o); })
      .Case<arith::MulIOp, arith::AddIOp>([&](Operation *) { return indexArith(op); })
      .Case([&](LinearOp o) { return linear(op, o); })
      .Case([&](SliceOp o) { return slice(op, o); })
      .Case([&](SplitHeadsOp o) { return splitHeads(op, o); })
      .Case([&](MergeHeadsOp o) { return mergeHeads(op, o); })
      .Case<SdpaOp, ProbsOp>([&](Operation *) { return attention(op); })
      .Case([&](CacheAppendOp o) { return cacheAppend(op, o); })
      .Case([&](ClipOp o) { return clip(op, o); })
      .Case([&](RmsNormOp o) { return rmsNorm(op, o); })
      .Case([&](RopeOp o) { return rope(op, o); })
      .Case([&](TemperatureOp o) { return temperature(op, o); })
      .Case([&](MaskRowsOp o) { return maskRows(op, o); })
      .Case([&](ScaleOp o) { return scale(op, o); })
      .Case([&](arith::TruncFOp o) { return truncF(op, o); })
      .Case([&](ViewOp o) { return view(op, o); })
      .Case([&](tensor::ConcatOp o) { return concat(op, o); })
      .Default([&](Operation *) {
        error = "the evaluator does not support '" + op.getName().getStringRef().str() + "'";
        return false;
      });
}

bool Evaluator::run(func::FuncOp fn, std::vector<double> &out) {
  if (in.storage.size() != storage.size()) {
    error = "the inputs were made for another spec";
    return false;
  }
  if (!bindArguments(fn))
    return false;
  for (Operation &op : fn.getBody().front()) {
    if (auto r = dyn_cast<func::ReturnOp>(op)) {
    if (r.getNumOperands() < 1)
      return fail(op, "returns nothing");
    const Tensor *y = tensorOf(r.getOperand(0));
    if (!y)
      return false;
    out = y->data;
    return true;
    }
    if (!step(op))
      return false;
  }
  error = "function has no return";
  return false;
}
} // namespace

bool attnc::evaluateAttnIR(ModuleOp module, const Spec &spec,
                           const EvalInputs &in, std::vector<double> &out,
                           std::string &error, const std::string &function) {
  std::string name = function.empty() ? spec.name : function;
  auto fn = module.lookupSymbol<func::FuncOp>(name);
  if (!fn || fn.isExternal() || fn.getBody().empty()) {
    error = "no function @" + name;
    return false;
  }
  return Evaluator(spec, in, error).run(fn, out);
}
