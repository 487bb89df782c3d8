//===- GpuKernels.cpp - GEMM and flash attention shaped for CUDA blocks ---===//
//
// The CUDA target's kernels, in the same form as the CPU ones: one
// top-level `scf.forall` per phase whose iterations (tasks) are CUDA blocks
// (mapping [#gpu.block<x>]). Inside a task, the work of the block's threads
// is written as a sequence of *thread regions*
//
//   scf.forall (%tid) in (NT) { ... } {mapping = [#gpu.thread<x>]}
//
// with the semantics upstream gives them (map_nested_forall_to_threads): a
// region completes, for every thread, before the next one starts. So the IR
// is an ordinary sequential program (the CPU runs it as nested loops, which
// is how `attnc-dump --check --target cuda-*` checks it without a GPU), and
// attnc-map-to-gpu turns each region into `if (tid < NT) {...};
// gpu.barrier`. Memory a block shares is a `memref.alloca` in workgroup
// memory; state a thread keeps from one region to the next is a
// `[NT, ...]` alloca in private memory whose first index is always the
// region's %tid (attnc-map-to-gpu gives each thread its own slice).
//
//===----------------------------------------------------------------------===//
#include "CudaBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <limits>
#include <optional>

using namespace mlir;
using namespace attnc::attn;
using attnc::loop;
using attnc::LoopBody;
using attnc::taskLoop;
using attnc::f32Const;
using attnc::indexConst;

namespace {

Value dim(ImplicitLocOpBuilder &c, Value m, int64_t i) {
  return memref::DimOp::create(c, m, i);
}
Value ceilDiv(ImplicitLocOpBuilder &c, Value a, int64_t d) {
  return arith::DivUIOp::create(c, arith::AddIOp::create(c, a, indexConst(c, d - 1)),
                                indexConst(c, d));
}
Value lt(ImplicitLocOpBuilder &c, Value a, Value b) {
  return arith::CmpIOp::create(c, arith::CmpIPredicate::slt, a, b);
}

MemRefType bufferType(MLIRContext *ctx, ArrayRef<int64_t> shape,
                      gpu::AddressSpace space) {
  return MemRefType::get(shape, Float32Type::get(ctx), MemRefLayoutAttrInterface{},
                         gpu::AddressSpaceAttr::get(ctx, space));
}

/// Memory the threads of one block share (CUDA __shared__).
Value sharedBuffer(ImplicitLocOpBuilder &c, ArrayRef<int64_t> shape) {
  return memref::AllocaOp::create(
      c, bufferType(c.getContext(), shape, gpu::AddressSpace::Workgroup));
}

/// State each of `nt` threads keeps from one region to the next: slice t
/// of a [nt, shape...] buffer belongs to thread t (registers or local
/// memory on the GPU).
Value privateBuffer(ImplicitLocOpBuilder &c, int64_t nt, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s{nt};
  s.append(shape.begin(), shape.end());
  return memref::AllocaOp::create(
      c, bufferType(c.getContext(), s, gpu::AddressSpace::Private));
}

/// One thread region: fn(tid) for every tid in [0, nt), all of them done
/// before whatever follows.
void threadRegion(ImplicitLocOpBuilder &c, int64_t nt,
                  function_ref<void(ImplicitLocOpBuilder &, Value)> fn) {
  auto mapping = c.getArrayAttr(
      {gpu::GPUThreadMappingAttr::get(c.getContext(), gpu::MappingId::DimX)});
  auto forall = scf::ForallOp::create(c, ArrayRef<OpFoldResult>{c.getIndexAttr(nt)},
                                      ValueRange{}, mapping);
  OpBuilder::InsertionGuard g(c);
  c.setInsertionPoint(forall.getBody()->getTerminator());
  fn(c, forall.getInductionVar(0));
}

void mapToBlocks(scf::ForallOp phase) {
  MLIRContext *ctx = phase.getContext();
  phase.setMappingAttr(ArrayAttr::get(
      ctx, {gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX)}));
}

/// `cond ? load : 0.0`, as f32 (a bf16/f16 buffer is widened).
Value guardedLoad(ImplicitLocOpBuilder &c, Value cond, Value buf, ValueRange at) {
  auto ifOp = scf::IfOp::create(
      c, cond,
      [&](OpBuilder &nb, Location loc) {
        ImplicitLocOpBuilder ib(loc, nb);
        scf::YieldOp::create(nb, loc, attnc::loadF32(ib, buf, at));
      },
      [&](OpBuilder &nb, Location loc) {
        Value z = arith::ConstantOp::create(nb, loc, nb.getF32FloatAttr(0.0f));
        scf::YieldOp::create(nb, loc, z);
      });
  return ifOp.getResult(0);
}

} // namespace

void attnc::buildGpuGemm(ImplicitLocOpBuilder &b, CudaTargetAttr t, Value x,
                         Value wp, Value bias, Value y, int64_t n) {
  // A block computes a BM x BN tile of y; NT threads, each TM x TN outputs
  // (TN adjacent columns, so a warp's stores are contiguous). K is staged
  // through shared memory BK at a time: the x tile as [BK][BM] and the
  // weight tile as [BK][BN], read from the 32-column panels NAME_pack wrote.
  const int64_t BM = t.getGemmTileM(), BN = t.getGemmTileN(), BK = t.getGemmTileK(),
                NT = t.getGemmThreads(), panel = t.getPanel();
  if (!t.gemmTileFits())
    llvm::report_fatal_error("attnc: the CUDA GEMM tile does not divide among its "
                             "threads (#attn.cuda_target's verifier should have refused it)");
  const int64_t TN = t.getGemmThreadN(), colThreads = BN / TN, TM = BM / (NT / colThreads);
  const int64_t K = cast<MemRefType>(x.getType()).getDimSize(2);
  // x, the weights and y may be bf16/f16 (dtype, weight_dtype): loaded as
  // f32, accumulated in f32, y rounded once when stored. A bf16 panel holds
  // the (k, k+1) pairs the x86 kernels read (one packed layout per dtype).
  const bool pairs = cast<MemRefType>(wp.getType()).getElementType().isBF16();
  Value nb = dim(b, x, 0), tt = dim(b, x, 1);
  Value rowBlocks = ceilDiv(b, tt, BM);
  Value colBlocks = indexConst(b, (n + BN - 1) / BN);
  Value tasks = arith::MulIOp::create(b, arith::MulIOp::create(b, nb, rowBlocks), colBlocks);
  Value kDim = indexConst(b, K), nDim = indexConst(b, n);

  scf::ForallOp phase = taskLoop(b, tasks, [&](ImplicitLocOpBuilder &c, Value task) {
    Value cb = arith::RemUIOp::create(c, task, colBlocks);
    Value rest = arith::DivUIOp::create(c, task, colBlocks);
    Value rb = arith::RemUIOp::create(c, rest, rowBlocks);
    Value bi = arith::DivUIOp::create(c, rest, rowBlocks);
    Value row0 = arith::MulIOp::create(c, rb, indexConst(c, BM));
    Value col0 = arith::MulIOp::create(c, cb, indexConst(c, BN));
    Value xs = sharedBuffer(c, {BK, BM});
    Value ws = sharedBuffer(c, {BK, BN});
    Value acc = privateBuffer(c, NT, {TM * TN});

    threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
      for (int64_t e = 0; e < TM * TN; ++e)
        memref::StoreOp::create(r, f32Const(r, 0.0), acc, ValueRange{tid, indexConst(r, e)});
    });
    loop(c, indexConst(c, 0), kDim, indexConst(c, BK), {}, [&](ImplicitLocOpBuilder &ck, Value k0, ValueRange) {
      // Stage the tiles (zeros past T, K and n: nothing out of bounds).
      threadRegion(ck, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
        for (int64_t e = 0; e < BM * BK / NT; ++e) {
          Value i = arith::AddIOp::create(r, tid, indexConst(r, e * NT));
          Value row = arith::DivUIOp::create(r, i, indexConst(r, BK));
          Value kk = arith::RemUIOp::create(r, i, indexConst(r, BK));
          Value gr = arith::AddIOp::create(r, row0, row);
          Value gk = arith::AddIOp::create(r, k0, kk);
          Value ok = arith::AndIOp::create(r, lt(r, gr, tt), lt(r, gk, kDim));
          Value v = guardedLoad(r, ok, x, ValueRange{bi, gr, gk});
          memref::StoreOp::create(r, v, xs, ValueRange{kk, row});
        }
        for (int64_t e = 0; e < BN * BK / NT; ++e) {
          Value i = arith::AddIOp::create(r, tid, indexConst(r, e * NT));
          Value kk = arith::DivUIOp::create(r, i, indexConst(r, BN));
          Value col = arith::RemUIOp::create(r, i, indexConst(r, BN));
          Value gc = arith::AddIOp::create(r, col0, col);
          Value gk = arith::AddIOp::create(r, k0, kk);
          Value ok = arith::AndIOp::create(r, lt(r, gc, nDim), lt(r, gk, kDim));
          Value p = arith::DivUIOp::create(r, gc, indexConst(r, panel));
          Value j = arith::RemUIOp::create(r, gc, indexConst(r, panel));
          SmallVector<Value> at{p, gk, j};
          if (pairs) // bf16: (k, k+1) side by side, [P][ceil(K/2)][2 * panel]
            at = {p, arith::DivUIOp::create(r, gk, indexConst(r, 2)),
                  arith::AddIOp::create(r, arith::MulIOp::create(r, j, indexConst(r, 2)),
                                        arith::RemUIOp::create(r, gk, indexConst(r, 2)))};
          Value v = guardedLoad(r, ok, wp, at);
          memref::StoreOp::create(r, v, ws, ValueRange{kk, col});
        }
      });
      // TM x TN accumulators in registers over the staged BK.
      threadRegion(ck, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
        Value ty = arith::DivUIOp::create(r, tid, indexConst(r, colThreads));
        Value tx = arith::RemUIOp::create(r, tid, indexConst(r, colThreads));
        Value rBase = arith::MulIOp::create(r, ty, indexConst(r, TM));
        Value cBase = arith::MulIOp::create(r, tx, indexConst(r, TN));
        SmallVector<Value> init;
        for (int64_t e = 0; e < TM * TN; ++e)
          init.push_back(memref::LoadOp::create(r, acc, ValueRange{tid, indexConst(r, e)}));
        scf::ForOp kl = loop(r, indexConst(r, 0), indexConst(r, BK), init,
                             [&](ImplicitLocOpBuilder &ci, Value kk, ValueRange a) {
          SmallVector<Value> xv, wv, out;
          for (int64_t i = 0; i < TM; ++i)
            xv.push_back(memref::LoadOp::create(ci, xs, ValueRange{kk, arith::AddIOp::create(ci, rBase, indexConst(ci, i))}));
          for (int64_t j = 0; j < TN; ++j)
            wv.push_back(memref::LoadOp::create(ci, ws, ValueRange{kk, arith::AddIOp::create(ci, cBase, indexConst(ci, j))}));
          for (int64_t i = 0; i < TM; ++i)
            for (int64_t j = 0; j < TN; ++j)
              out.push_back(math::FmaOp::create(ci, xv[i], wv[j], a[i * TN + j]));
          return out;
        });
        for (int64_t e = 0; e < TM * TN; ++e)
          memref::StoreOp::create(r, kl.getResult(e), acc, ValueRange{tid, indexConst(r, e)});
      });
      return SmallVector<Value>{};
    });
    // y = acc + bias, inside T and n only.
    threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
      Value ty = arith::DivUIOp::create(r, tid, indexConst(r, colThreads));
      Value tx = arith::RemUIOp::create(r, tid, indexConst(r, colThreads));
      for (int64_t i = 0; i < TM; ++i)
        for (int64_t j = 0; j < TN; ++j) {
          Value gr = arith::AddIOp::create(r, row0, arith::AddIOp::create(r, arith::MulIOp::create(r, ty, indexConst(r, TM)), indexConst(r, i)));
          Value gc = arith::AddIOp::create(r, col0, arith::AddIOp::create(r, arith::MulIOp::create(r, tx, indexConst(r, TN)), indexConst(r, j)));
          Value ok = arith::AndIOp::create(r, lt(r, gr, tt), lt(r, gc, nDim));
          auto ifOp = scf::IfOp::create(r, ok, /*withElse=*/false);
          ImplicitLocOpBuilder s(r.getLoc(), ifOp.getThenBodyBuilder());
          Value v = memref::LoadOp::create(s, acc, ValueRange{tid, indexConst(s, i * TN + j)});
          if (bias)
            v = arith::AddFOp::create(s, v, attnc::loadF32(s, bias, ValueRange{gc}));
          attnc::storeF32(s, v, y, ValueRange{bi, gr, gc});
        }
    });
  });
  mapToBlocks(phase);
}

/// lens[b] clamped to [0, full], or `full` for a null buffer. A CUDA
/// kernel's lengths live in device memory, where the glue cannot check
/// them, so the kernel clamps what it reads.
static Value deviceLength(ImplicitLocOpBuilder &c, Value lens, Value bi, Value full) {
  Value l = attnc::validLength(c, lens, bi, full);
  return arith::MinSIOp::create(c, arith::MaxSIOp::create(c, l, indexConst(c, 0)), full);
}

namespace {

/// What the CUDA attention kernels share about one attn.sdpa: head_dim,
/// visibility, layout, scale and score modifiers (in natural-log units:
/// the CUDA kernels scale q by `scale` only, so ScoreMods' unit is 1),
/// the operands and the optional sinks [Hq] and T5 table [buckets, Hq].
struct GpuSdpa : AttentionBuffers {
  int64_t D = 0;
  attnc::KeyVisibility vis;
  bool bthd = false;
  double scale = 1;
  attnc::ScoreMods mods;
  attnc::RelKey rel;

  static GpuSdpa of(SdpaOp op, const AttentionBuffers &bufs) {
    GpuSdpa a;
    static_cast<AttentionBuffers &>(a) = bufs;
    a.D = cast<MemRefType>(bufs.q.getType()).getDimSize(3);
    a.vis = attnc::KeyVisibility::of(op);
    a.bthd = op.getLayout() == HeadLayout::bthd;
    a.scale = op.getScale().convertToDouble();
    a.mods = attnc::ScoreMods::of(op);
    a.rel = attnc::RelKey::of(op);
    return a;
  }
  /// The score s of key j for the query at key position qpos (index
  /// values) after the score modifiers.
  Value modified(ImplicitLocOpBuilder &c, Value s, const attnc::ScoreMods::Head &h, Value j,
                 Value qpos) const {
    return mods.any() ? mods.applyAt(c, s, h, j, qpos, /*unit=*/1.0) : s;
  }
  /// Element d of row i of query head h in the output.
  SmallVector<Value> outAt(Value bi, Value h, Value i, Value d) const {
    return bthd ? SmallVector<Value>{bi, i, h, d} : SmallVector<Value>{bi, h, i, d};
  }
};

/// The decode kernel's task: one query of head h of sequence bi, its
/// visible keys [kStart, kEnd) split among NT threads, their partial
/// softmax states in shared memory (pm, pl: [NT], pacc: [NT, D]).
struct GpuDecodeTask {
  const GpuSdpa &a;
  int64_t NT;
  Value bi, h, hk, off, kStart, kEnd, pm, pl, pacc;
  attnc::ScoreMods::Head mh;

  /// Thread t's online softmax (m, l, acc) over keys kStart + t, + NT, ...
  void partials(ImplicitLocOpBuilder &c) const;
  /// M = max m_i, o = sum_i e^{m_i - M} acc_i / sum_i e^{m_i - M} l_i; a
  /// sink is one more partial (m = sink, l = 1, acc = 0).
  void merge(ImplicitLocOpBuilder &c) const;
};

void GpuDecodeTask::partials(ImplicitLocOpBuilder &c) const {
  const double negInf = -std::numeric_limits<double>::infinity();
  const int64_t D = a.D;
  Value zero = indexConst(c, 0);
  threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
    SmallVector<Value> qv;
    for (int64_t d = 0; d < D; ++d)
      qv.push_back(arith::MulFOp::create(
          r, attnc::loadF32(r, a.q, ValueRange{bi, h, zero, indexConst(r, d)}),
          f32Const(r, a.scale)));
    SmallVector<Value> init{f32Const(r, negInf), f32Const(r, 0.0)};
    for (int64_t d = 0; d < D; ++d)
      init.push_back(f32Const(r, 0.0));
    scf::ForOp keys = attnc::loop(r, arith::AddIOp::create(r, kStart, tid), kEnd, indexConst(r, NT), init,
                           [&](ImplicitLocOpBuilder &ci, Value j, ValueRange st) {
      Value sc = f32Const(ci, 0.0);
      for (int64_t d = 0; d < D; ++d)
        sc = math::FmaOp::create(ci, qv[d], attnc::loadF32(ci, a.k, ValueRange{bi, hk, j, indexConst(ci, d)}), sc);
      sc = a.modified(ci, sc, mh, j, off); // the query sits at key position off
      Value m = st[0];
      Value mNew = arith::MaximumFOp::create(ci, m, sc);
      Value first = arith::CmpFOp::create(ci, arith::CmpFPredicate::OEQ, m, f32Const(ci, negInf));
      Value alpha = arith::SelectOp::create(ci, first, f32Const(ci, 0.0),
                                            attnc::expClamped(ci, arith::SubFOp::create(ci, m, mNew)));
      Value p = attnc::expClamped(ci, arith::SubFOp::create(ci, sc, mNew));
      SmallVector<Value> out{mNew, math::FmaOp::create(ci, st[1], alpha, p).getResult()};
      for (int64_t d = 0; d < D; ++d) {
        Value vd = attnc::loadF32(ci, a.v, ValueRange{bi, hk, j, indexConst(ci, d)});
        out.push_back(math::FmaOp::create(ci, p, vd, arith::MulFOp::create(ci, st[2 + d], alpha)));
      }
      return out;
    });
    memref::StoreOp::create(r, keys.getResult(0), pm, ValueRange{tid});
    memref::StoreOp::create(r, keys.getResult(1), pl, ValueRange{tid});
    for (int64_t d = 0; d < D; ++d)
      memref::StoreOp::create(r, keys.getResult(2 + d), pacc, ValueRange{tid, indexConst(r, d)});
  });
}

void GpuDecodeTask::merge(ImplicitLocOpBuilder &c) const {
  const double negInf = -std::numeric_limits<double>::infinity();
  Value zero = indexConst(c, 0);
  threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
    scf::ForOp mx = attnc::loop(r, zero, indexConst(r, NT), ValueRange{f32Const(r, negInf)},
                         [&](ImplicitLocOpBuilder &ci, Value i, ValueRange st) {
      Value m = memref::LoadOp::create(ci, pm, ValueRange{i});
      return SmallVector<Value>{arith::MaximumFOp::create(ci, st[0], m).getResult()};
    });
    Value M = mx.getResult(0);
    Value sink;
    if (a.sinks) {
      sink = attnc::loadF32(r, a.sinks, ValueRange{h});
      M = arith::MaximumFOp::create(r, M, sink);
    }
    // A thread that saw no key has m = -inf, l = 0, acc = 0: weight 0.
    auto weight = [&](ImplicitLocOpBuilder &ci, Value i) -> Value {
      Value m = memref::LoadOp::create(ci, pm, ValueRange{i});
      Value none = arith::CmpFOp::create(ci, arith::CmpFPredicate::OEQ, m, f32Const(ci, negInf));
      return arith::SelectOp::create(ci, none, f32Const(ci, 0.0),
                                     attnc::expClamped(ci, arith::SubFOp::create(ci, m, M)));
    };
    scf::ForOp ls = attnc::loop(r, zero, indexConst(r, NT), ValueRange{f32Const(r, 0.0)},
                         [&](ImplicitLocOpBuilder &ci, Value i, ValueRange st) {
      Value l = memref::LoadOp::create(ci, pl, ValueRange{i});
      return SmallVector<Value>{math::FmaOp::create(ci, weight(ci, i), l, st[0]).getResult()};
    });
    Value L = ls.getResult(0);
    if (a.sinks)
      L = arith::AddFOp::create(r, L, attnc::expClamped(r, arith::SubFOp::create(r, sink, M)));
    Value pos = arith::CmpFOp::create(r, arith::CmpFPredicate::OGT, L, f32Const(r, 0.0));
    Value inv = arith::SelectOp::create(r, pos, arith::DivFOp::create(r, f32Const(r, 1.0), L),
                                        f32Const(r, 0.0));
    attnc::loop(r, tid, indexConst(r, a.D), indexConst(r, NT), {}, [&](ImplicitLocOpBuilder &cd, Value d, ValueRange) {
      scf::ForOp acc = attnc::loop(cd, zero, indexConst(cd, NT), ValueRange{f32Const(cd, 0.0)},
                            [&](ImplicitLocOpBuilder &ci, Value i, ValueRange st) {
        Value x = memref::LoadOp::create(ci, pacc, ValueRange{i, d});
        return SmallVector<Value>{math::FmaOp::create(ci, weight(ci, i), x, st[0]).getResult()};
      });
      Value val = arith::MulFOp::create(cd, acc.getResult(0), inv);
      attnc::storeF32(cd, val, a.o, a.outAt(bi, h, zero, d));
      return SmallVector<Value>{};
    });
  });
}

} // namespace

/// One query per (batch, head) (decode): the block's threads split the
/// key range (thread t takes keys kStart + t, + NT, ...), each keeping an
/// online softmax (m, l, acc) of its keys in registers; a second region
/// merges the NT partial results through shared memory:
///   M = max m_i,  o = sum_i e^{m_i - M} acc_i / sum_i e^{m_i - M} l_i.
static void buildGpuDecodeAttention(ImplicitLocOpBuilder &b, int64_t NT, const GpuSdpa &a,
                                    Value kvLens) {
  Value nb = dim(b, a.q, 0), hq = dim(b, a.q, 1);
  Value hkv = dim(b, a.k, 1), tkv = dim(b, a.k, 2);
  Value group = arith::DivUIOp::create(b, hq, hkv);
  scf::ForallOp phase = attnc::taskLoop(b, arith::MulIOp::create(b, nb, hq),
                                 [&](ImplicitLocOpBuilder &c, Value task) {
    GpuDecodeTask dt{a, NT};
    dt.bi = arith::DivUIOp::create(c, task, hq);
    dt.h = arith::RemUIOp::create(c, task, hq);
    dt.hk = arith::DivUIOp::create(c, dt.h, group);
    Value kvv = kvLens ? deviceLength(c, kvLens, dt.bi, tkv) : tkv;
    // The query is row 0 of 1 (KeyVisibility: bottom-right, off = kvv - 1).
    dt.off = a.vis.offset(c, indexConst(c, 1), kvv);
    attnc::KeyVisibility::Range keys = a.vis.row(c, dt.off, kvv);
    dt.kStart = keys.start, dt.kEnd = keys.end;
    dt.pm = sharedBuffer(c, {NT});
    dt.pl = sharedBuffer(c, {NT});
    dt.pacc = sharedBuffer(c, {NT, a.D});
    dt.mh = a.mods.head(c, dt.h, a.relBias, /*unit=*/1.0);
    dt.partials(c);
    dt.merge(c);
  });
  mapToBlocks(phase);
}

namespace {

/// The flash kernel's task: MQ query rows [i0, i0 + MQ) of head h of
/// sequence bi, thread r owning row i0 + r (its scaled q row qr, output row
/// accB and (m, l) in stat, private), the K/V tiles (ks, vs: [NK, D],
/// shared) and each thread's scores of one tile (sc, private).
struct GpuAttentionTask {
  const GpuSdpa &a;
  int64_t MQ, NK;
  Value bi, h, hk, i0, tq, off, kEnd;
  Value ks, vs, qr, accB, stat, sc;
  attnc::ScoreMods::Head mh;

  /// q scaled, acc = 0, (m, l) = (-inf, 0), or (sink, 1): the sink is one
  /// more key of weight 1 at its logit with no value.
  void init(ImplicitLocOpBuilder &c) const;
  /// K and V rows [j0, j0 + NK) into shared memory, zeros past kEnd.
  void stage(ImplicitLocOpBuilder &c, Value j0) const;
  /// The online softmax of each row over the staged tile.
  void update(ImplicitLocOpBuilder &c, Value j0) const;
  /// o = acc / l (zeros for a row that saw no key).
  void write(ImplicitLocOpBuilder &c) const;

private:
  /// What thread tid's scores of the tile starting at key j0 need: its row's
  /// key position, the tile's valid keys, the row's q.
  struct Row {
    Value diag, cnt;
    SmallVector<Value> q;
  };
  Row row(ImplicitLocOpBuilder &r, Value tid, Value j0) const;
  /// Thread tid's scores of the tile (modified, -inf where masked) into sc;
  /// returns their maximum.
  Value scores(ImplicitLocOpBuilder &r, Value tid, Value j0, const Row &row) const;
};

void GpuAttentionTask::init(ImplicitLocOpBuilder &c) const {
  const double negInf = -std::numeric_limits<double>::infinity();
  Value lastQ = arith::SubIOp::create(c, tq, indexConst(c, 1));
  threadRegion(c, MQ, [&](ImplicitLocOpBuilder &r, Value tid) {
    Value i = arith::MinUIOp::create(r, arith::AddIOp::create(r, i0, tid), lastQ);
    for (int64_t d = 0; d < a.D; ++d) {
      Value x = attnc::loadF32(r, a.q, ValueRange{bi, h, i, indexConst(r, d)});
      memref::StoreOp::create(r, arith::MulFOp::create(r, x, f32Const(r, a.scale)), qr,
                              ValueRange{tid, indexConst(r, d)});
      memref::StoreOp::create(r, f32Const(r, 0.0), accB, ValueRange{tid, indexConst(r, d)});
    }
    Value m0 = a.sinks ? attnc::loadF32(r, a.sinks, ValueRange{h})
                       : f32Const(r, negInf);
    memref::StoreOp::create(r, m0, stat, ValueRange{tid, indexConst(r, 0)});
    memref::StoreOp::create(r, f32Const(r, a.sinks ? 1.0 : 0.0), stat, ValueRange{tid, indexConst(r, 1)});
  });
}

void GpuAttentionTask::stage(ImplicitLocOpBuilder &c, Value j0) const {
  // Rows past the block's key range are zeros (their scores are masked,
  // and p = 0 times a zero row keeps the sum exact even when a padding
  // token's K/V is not finite).
  const int64_t D = a.D, elems = NK * D, per = (elems + MQ - 1) / MQ;
  threadRegion(c, MQ, [&](ImplicitLocOpBuilder &r, Value tid) {
    for (int64_t e = 0; e < per; ++e) {
      Value li = arith::AddIOp::create(r, tid, indexConst(r, e * MQ));
      auto body = [&](ImplicitLocOpBuilder &s) {
        Value row = arith::DivUIOp::create(s, li, indexConst(s, D));
        Value d = arith::RemUIOp::create(s, li, indexConst(s, D));
        Value j = arith::AddIOp::create(s, j0, row);
        Value in = lt(s, j, kEnd);
        memref::StoreOp::create(s, guardedLoad(s, in, a.k, ValueRange{bi, hk, j, d}),
                                ks, ValueRange{row, d});
        memref::StoreOp::create(s, guardedLoad(s, in, a.v, ValueRange{bi, hk, j, d}),
                                vs, ValueRange{row, d});
      };
      if ((e + 1) * MQ <= elems) {
        body(r);
      } else {
        auto ifOp = scf::IfOp::create(r, lt(r, li, indexConst(r, elems)), false);
        ImplicitLocOpBuilder s(r.getLoc(), ifOp.getThenBodyBuilder());
        body(s);
      }
    }
  });
}

GpuAttentionTask::Row GpuAttentionTask::row(ImplicitLocOpBuilder &r, Value tid, Value j0) const {
  Row w;
  Value i = arith::AddIOp::create(r, i0, tid);
  w.cnt = arith::MinUIOp::create(r, indexConst(r, NK), arith::SubIOp::create(r, kEnd, j0));
  w.diag = arith::AddIOp::create(r, i, off); // row i's key position
  for (int64_t d = 0; d < a.D; ++d)
    w.q.push_back(memref::LoadOp::create(r, qr, ValueRange{tid, indexConst(r, d)}));
  return w;
}

Value GpuAttentionTask::scores(ImplicitLocOpBuilder &r, Value tid, Value j0,
                               const Row &w) const {
  const double negInf = -std::numeric_limits<double>::infinity();
  Value diag = w.diag, cnt = w.cnt;
  ArrayRef<Value> qv = w.q;
  scf::ForOp sl = loop(r, indexConst(r, 0), indexConst(r, NK), ValueRange{f32Const(r, negInf)},
                       [&](ImplicitLocOpBuilder &ci, Value jj, ValueRange st) {
    Value j = arith::AddIOp::create(ci, j0, jj);
    // q'.k and relative_key's (q' + scale k) . E[r] (q' = scale q) in one
    // pass over the row.
    Value col = a.rel.any() ? a.rel.column(ci, diag, j) : Value();
    Value s = f32Const(ci, 0.0);
    for (int64_t d = 0; d < a.D; ++d) {
      Value di = indexConst(ci, d);
      Value kd = memref::LoadOp::create(ci, ks, ValueRange{jj, di});
      s = math::FmaOp::create(ci, qv[d], kd, s);
      if (a.rel.any())
        s = a.rel.fold(ci, s, qv[d], kd, a.relEmb, di, col, a.scale);
    }
    s = a.modified(ci, s, mh, j, diag);
    Value vis = lt(ci, jj, cnt);
    if (a.vis.highEdge())
      vis = arith::AndIOp::create(
          ci, vis, arith::CmpIOp::create(ci, arith::CmpIPredicate::sle, j,
                                         a.vis.lastKey(ci, diag)));
    if (a.vis.lowEdge())
      vis = arith::AndIOp::create(
          ci, vis, arith::CmpIOp::create(ci, arith::CmpIPredicate::sge, j,
                                         a.vis.firstKey(ci, diag)));
    s = arith::SelectOp::create(ci, vis, s, f32Const(ci, negInf));
    memref::StoreOp::create(ci, s, sc, ValueRange{tid, jj});
    return SmallVector<Value>{arith::MaximumFOp::create(ci, st[0], s).getResult()};
  });
  return sl.getResult(0);
}

void GpuAttentionTask::update(ImplicitLocOpBuilder &c, Value j0) const {
  const double negInf = -std::numeric_limits<double>::infinity();
  threadRegion(c, MQ, [&](ImplicitLocOpBuilder &r, Value tid) {
    Row w = row(r, tid, j0);
    Value mOld = memref::LoadOp::create(r, stat, ValueRange{tid, indexConst(r, 0)});
    Value lOld = memref::LoadOp::create(r, stat, ValueRange{tid, indexConst(r, 1)});
    Value mNew = arith::MaximumFOp::create(r, mOld, scores(r, tid, j0, w));
    // No visible key so far: nothing to rescale, and exp(s - m) would be
    // exp(-inf + inf); use m = 0 (every p is then 0 anyway). (Never with a
    // sink: m starts finite.)
    Value none = arith::CmpFOp::create(r, arith::CmpFPredicate::OEQ, mNew, f32Const(r, negInf));
    Value mUse = arith::SelectOp::create(r, none, f32Const(r, 0.0), mNew);
    Value hadNone = arith::CmpFOp::create(r, arith::CmpFPredicate::OEQ, mOld, f32Const(r, negInf));
    Value alpha = arith::SelectOp::create(
        r, hadNone, f32Const(r, 0.0), attnc::expClamped(r, arith::SubFOp::create(r, mOld, mUse)));
    SmallVector<Value> init;
    init.push_back(arith::MulFOp::create(r, lOld, alpha));
    for (int64_t d = 0; d < a.D; ++d)
      init.push_back(arith::MulFOp::create(
          r, memref::LoadOp::create(r, accB, ValueRange{tid, indexConst(r, d)}), alpha));
    scf::ForOp pl = loop(r, indexConst(r, 0), indexConst(r, NK), init,
                         [&](ImplicitLocOpBuilder &ci, Value jj, ValueRange st) {
      Value s = memref::LoadOp::create(ci, sc, ValueRange{tid, jj});
      Value masked = arith::CmpFOp::create(ci, arith::CmpFPredicate::OEQ, s, f32Const(ci, negInf));
      Value p = arith::SelectOp::create(
          ci, masked, f32Const(ci, 0.0), attnc::expClamped(ci, arith::SubFOp::create(ci, s, mUse)));
      SmallVector<Value> out{arith::AddFOp::create(ci, st[0], p).getResult()};
      for (int64_t d = 0; d < a.D; ++d)
        out.push_back(math::FmaOp::create(
            ci, p, memref::LoadOp::create(ci, vs, ValueRange{jj, indexConst(ci, d)}), st[1 + d]));
      return out;
    });
    memref::StoreOp::create(r, mNew, stat, ValueRange{tid, indexConst(r, 0)});
    memref::StoreOp::create(r, pl.getResult(0), stat, ValueRange{tid, indexConst(r, 1)});
    for (int64_t d = 0; d < a.D; ++d)
      memref::StoreOp::create(r, pl.getResult(1 + d), accB, ValueRange{tid, indexConst(r, d)});
  });
}

void GpuAttentionTask::write(ImplicitLocOpBuilder &c) const {
  threadRegion(c, MQ, [&](ImplicitLocOpBuilder &r, Value tid) {
    Value i = arith::AddIOp::create(r, i0, tid);
    auto ifOp = scf::IfOp::create(r, lt(r, i, tq), false);
    ImplicitLocOpBuilder s(r.getLoc(), ifOp.getThenBodyBuilder());
    Value l = memref::LoadOp::create(s, stat, ValueRange{tid, indexConst(s, 1)});
    Value pos = arith::CmpFOp::create(s, arith::CmpFPredicate::OGT, l, f32Const(s, 0.0));
    Value inv = arith::SelectOp::create(s, pos, arith::DivFOp::create(s, f32Const(s, 1.0), l),
                                        f32Const(s, 0.0));
    for (int64_t d = 0; d < a.D; ++d) {
      Value val = arith::MulFOp::create(
          s, memref::LoadOp::create(s, accB, ValueRange{tid, indexConst(s, d)}), inv);
      attnc::storeF32(s, val, a.o, a.outAt(bi, h, i, indexConst(s, d)));
    }
  });
}

} // namespace

LogicalResult attnc::buildGpuAttention(ImplicitLocOpBuilder &b, CudaTargetAttr t,
                                       SdpaOp op, const AttentionBuffers &bufs) {
  Value q = bufs.q, k = bufs.k, qLens = bufs.qLens, kvLens = bufs.kvLens;
  auto qt = cast<MemRefType>(q.getType());
  const int64_t D = qt.getDimSize(3);
  if (!qt.getElementType().isF32() || ShapedType::isDynamic(D))
    return op.emitOpError("the CUDA target needs f32 operands with a static head_dim");
  const GpuSdpa a = GpuSdpa::of(op, bufs);
  {
    // Decode (one query, no query lengths): the key-split kernel when its
    // NT partial rows fit the shared memory. The decode entry's queries
    // (keys from the KV cache) are one per call on CUDA: its glue refuses
    // seq_len > 1 (K_DECODE_MAX_SEQ), so a run-time query count there is 1.
    const int64_t NT = t.getAttnThreads();
    const bool oneQuery =
        qt.getDimSize(2) == 1 ||
        (ShapedType::isDynamic(qt.getDimSize(2)) && op.getKey().getDefiningOp<CacheAppendOp>());
    if (oneQuery && !qLens && NT * (D + 2) * 4 <= t.getSharedBytes()) {
      if (bufs.relEmb)
        return op.emitOpError("the CUDA decode kernel has no relative_key (the front end "
                              "refuses it with decode)");
      buildGpuDecodeAttention(b, NT, a, kvLens);
      return success();
    }
  }
  // One block per (batch, head, MQ queries); thread r owns query i0 + r:
  // its scaled q row, its output row and its softmax statistics (m, l).
  // Keys go through shared memory NK rows at a time; the block walks only
  // the key range its mask leaves visible (causal: up to the diagonal of
  // its last row; sliding window: from the window's start for its first).
  // K and V tiles of NK rows must fit the block's static shared memory
  // (shared_bytes: 48 KiB): head_dim 256 stages 24 rows, 1024 six.
  const int64_t MQ = t.getAttnThreads();
  const int64_t NK = std::max<int64_t>(
      1, std::min<int64_t>(t.getAttnKeys(), t.getSharedBytes() / (2 * 4 * D)));

  Value nb = dim(b, q, 0), hq = dim(b, q, 1), tq = dim(b, q, 2);
  Value hkv = dim(b, k, 1), tkv = dim(b, k, 2);
  Value group = arith::DivUIOp::create(b, hq, hkv);
  Value qBlocks = ceilDiv(b, tq, MQ);
  Value perBatch = arith::MulIOp::create(b, hq, qBlocks);
  Value tasks = arith::MulIOp::create(b, nb, perBatch);

  scf::ForallOp phase = taskLoop(b, tasks, [&](ImplicitLocOpBuilder &ct, Value task) {
    GpuAttentionTask at{a, MQ, NK};
    at.tq = tq;
    at.bi = arith::DivUIOp::create(ct, task, perBatch);
    Value rest = arith::RemUIOp::create(ct, task, perBatch);
    at.h = arith::DivUIOp::create(ct, rest, qBlocks);
    at.i0 = arith::MulIOp::create(ct, arith::RemUIOp::create(ct, rest, qBlocks), indexConst(ct, MQ));
    at.hk = arith::DivUIOp::create(ct, at.h, group);
    // Valid lengths (padding): queries [0, qv), keys [0, kvv). A block of
    // queries wholly past qv does nothing (its rows are zeroed by the mask
    // rows phase); the condition is the same for every thread of the block,
    // so its barriers stay uniform.
    Value qv = qLens ? deviceLength(ct, qLens, at.bi, tq) : tq;
    Value kvv = kvLens ? deviceLength(ct, kvLens, at.bi, tkv) : tkv;
    std::optional<ImplicitLocOpBuilder> inner;
    if (qLens) {
      auto ifOp = scf::IfOp::create(ct, lt(ct, at.i0, qv), /*withElse=*/false);
      inner.emplace(ct.getLoc(), ifOp.getThenBodyBuilder());
    }
    ImplicitLocOpBuilder &c = inner ? *inner : ct;
    // Query i sees key j when j <= i + off (causal; bottom-right: off =
    // kvv - qv) and j > i + off - W (window), and j < kvv.
    at.off = a.vis.offset(c, qv, kvv);
    Value rows = arith::MinUIOp::create(c, indexConst(c, MQ), arith::SubIOp::create(c, qv, at.i0));
    Value diag0 = arith::AddIOp::create(c, at.i0, at.off);
    attnc::KeyVisibility::Range keys = a.vis.block(c, diag0, rows, kvv);
    at.kEnd = keys.end;

    at.ks = sharedBuffer(c, {NK, D});
    at.vs = sharedBuffer(c, {NK, D});
    at.qr = privateBuffer(c, MQ, {D});
    at.accB = privateBuffer(c, MQ, {D});
    at.stat = privateBuffer(c, MQ, {2});
    at.sc = privateBuffer(c, MQ, {NK});
    at.mh = a.mods.head(c, at.h, a.relBias, /*unit=*/1.0);
    at.init(c);
    loop(c, keys.start, keys.end, indexConst(c, NK), {},
         [&](ImplicitLocOpBuilder &cj, Value j0, ValueRange) {
      at.stage(cj, j0);
      at.update(cj, j0);
      return SmallVector<Value>{};
    });
    at.write(c);
  });
  mapToBlocks(phase);
  return success();
}

LogicalResult attnc::buildGpuCopy(ImplicitLocOpBuilder &b, CudaTargetAttr t,
                                  Value src, Value dst) {
  auto st = cast<MemRefType>(src.getType()), dt = cast<MemRefType>(dst.getType());
  if (st.getRank() != 3 || dt.getRank() != 3 ||
      st.getDimSize(2) != dt.getDimSize(2) || ShapedType::isDynamic(st.getDimSize(2)))
    return failure();
  const int64_t NT = t.getBlockThreads(), n = st.getDimSize(2);
  Value tt = dim(b, dst, 1);
  Value rows = arith::MulIOp::create(b, dim(b, dst, 0), tt);
  scf::ForallOp phase = taskLoop(b, rows, [&](ImplicitLocOpBuilder &c, Value row) {
    Value bi = arith::DivUIOp::create(c, row, tt);
    Value ti = arith::RemUIOp::create(c, row, tt);
    threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
      loop(r, tid, indexConst(r, n), indexConst(r, NT), {}, [&](ImplicitLocOpBuilder &ci, Value col, ValueRange) {
        // (converted when the types differ: y = truncf of an f32 result)
        attnc::storeF32(ci, attnc::loadF32(ci, src, ValueRange{bi, ti, col}), dst,
                        ValueRange{bi, ti, col});
        return SmallVector<Value>{};
      });
    });
  });
  mapToBlocks(phase);
  return success();
}

LogicalResult attnc::buildGpuMaskRows(ImplicitLocOpBuilder &b, CudaTargetAttr t,
                                      Value y, Value lens) {
  auto yt = cast<MemRefType>(y.getType());
  if (yt.getRank() != 3 || ShapedType::isDynamic(yt.getDimSize(2)))
    return failure();
  const int64_t NT = t.getBlockThreads(), n = yt.getDimSize(2);
  Value tt = dim(b, y, 1);
  Value rows = arith::MulIOp::create(b, dim(b, y, 0), tt);
  // One block per row of y; the rows at or past the sequence's length
  // become zeros (a uniform condition per block).
  scf::ForallOp phase = taskLoop(b, rows, [&](ImplicitLocOpBuilder &c, Value row) {
    Value bi = arith::DivUIOp::create(c, row, tt);
    Value ti = arith::RemUIOp::create(c, row, tt);
    Value len = deviceLength(c, lens, bi, tt);
    auto ifOp = scf::IfOp::create(c, arith::CmpIOp::create(c, arith::CmpIPredicate::sge, ti, len),
                                  /*withElse=*/false);
    ImplicitLocOpBuilder s(c.getLoc(), ifOp.getThenBodyBuilder());
    threadRegion(s, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
      loop(r, tid, indexConst(r, n), indexConst(r, NT), {}, [&](ImplicitLocOpBuilder &ci, Value col, ValueRange) {
        attnc::storeF32(ci, f32Const(ci, 0.0), y, ValueRange{bi, ti, col});
        return SmallVector<Value>{};
      });
    });
  });
  mapToBlocks(phase);
  return success();
}

void attnc::buildGpuCacheAppend(ImplicitLocOpBuilder &b, CudaTargetAttr t, Value k,
                                Value v, Value kc, Value vc, Value lens,
                                Value positions) {
  // One block per (sequence, kv head): rows [pos, pos + Tn) of both caches
  // take the new K/V rows, the threads striding over the Tn x D elements;
  // the head-0 block also writes lens[b] = pos + Tn. The position is device
  // memory: clamped to [0, cache_len - Tn], so no write leaves the cache.
  // A NULL cache (forward without one) is not written.
  const int64_t NT = t.getBlockThreads();
  Value nb = dim(b, k, 0), hkv = dim(b, k, 1), tn = dim(b, k, 2), dd = dim(b, k, 3);
  Value cacheLen = dim(b, kc, 2);
  Value elems = arith::MulIOp::create(b, tn, dd);
  scf::ForallOp phase = taskLoop(b, arith::MulIOp::create(b, nb, hkv),
                                 [&](ImplicitLocOpBuilder &c, Value task) {
    Value bi = arith::DivUIOp::create(c, task, hkv);
    Value h = arith::RemUIOp::create(c, task, hkv);
    Value zero = indexConst(c, 0);
    Value room = arith::MaxSIOp::create(c, arith::SubIOp::create(c, cacheLen, tn), zero);
    Value p0 = positions ? deviceLength(c, positions, bi, room) : zero;
    auto notNull = [&](ImplicitLocOpBuilder &cc, Value buf) -> Value {
      Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(cc, buf);
      return arith::CmpIOp::create(cc, arith::CmpIPredicate::ne, ptr, indexConst(cc, 0));
    };
    threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
      Value first = arith::AndIOp::create(
          r, arith::CmpIOp::create(r, arith::CmpIPredicate::eq, h, indexConst(r, 0)),
          arith::CmpIOp::create(r, arith::CmpIPredicate::eq, tid, indexConst(r, 0)));
      auto ifFirst = scf::IfOp::create(r, first, /*withElse=*/false);
      {
        ImplicitLocOpBuilder s(r.getLoc(), ifFirst.getThenBodyBuilder());
        Value end = arith::AddIOp::create(s, p0, tn);
        memref::StoreOp::create(s, arith::IndexCastOp::create(s, s.getI32Type(), end),
                                lens, ValueRange{bi});
      }
      for (auto [src, dst] : {std::pair{k, kc}, std::pair{v, vc}}) {
        auto ifOp = scf::IfOp::create(r, notNull(r, dst), /*withElse=*/false);
        ImplicitLocOpBuilder s(r.getLoc(), ifOp.getThenBodyBuilder());
        loop(s, tid, elems, indexConst(s, NT), {}, [&, src = src, dst = dst](ImplicitLocOpBuilder &ci, Value e, ValueRange) {
          Value row = arith::DivUIOp::create(ci, e, dd);
          Value d = arith::RemUIOp::create(ci, e, dd);
          // (rounded to the cache's type: bf16/f16 with such a dtype)
          Value x = attnc::loadF32(ci, src, ValueRange{bi, h, row, d});
          attnc::storeF32(ci, x, dst, ValueRange{bi, h, arith::AddIOp::create(ci, p0, row), d});
          return SmallVector<Value>{};
        });
      }
    });
  });
  mapToBlocks(phase);
}

//===----------------------------------------------------------------------===//
// attn.probs
//===----------------------------------------------------------------------===//

namespace {

/// buildGpuProbs' task: row i of head h of sequence bi, whose visible keys
/// [jLo, jHi) the NT threads stride over (thread t: jLo + t, + NT, ...);
/// the query row staged in shared memory (qs), each thread's partial max
/// and sum in shared memory (pm, pl).
struct GpuProbsTask {
  int64_t NT, D;
  double scale;
  const attnc::ScoreMods &mods;
  attnc::RelKey rel;
  Value q, k, p, sinks, relEmb;
  Value bi, h, hk, i, diag, jLo, jHi, tkv, qs, pm, pl;
  attnc::ScoreMods::Head mh;

  /// p is bf16/f16 (dtype): each of its values is rounded once.
  bool narrow() const { return !cast<MemRefType>(p.getType()).getElementType().isF32(); }
  /// Loads q's row into qs and writes the zeros of the row's hidden keys.
  void prepare(ImplicitLocOpBuilder &c) const;
  /// pm[t] = the max of thread t's scores.
  void maxPass(ImplicitLocOpBuilder &c) const;
  /// p = e^{s - M} on the visible keys; pl[t] = thread t's sum.
  void expPass(ImplicitLocOpBuilder &c) const;
  /// p /= the row's sum (the sink's e^{sink - M} included).
  void scalePass(ImplicitLocOpBuilder &c) const;

private:
  /// The modified score of key j (natural-log units).
  Value score(ImplicitLocOpBuilder &c, Value j) const;
  /// M: the max of the partial maxima (and the sink); every thread reads
  /// all NT of them, in the same order.
  Value rowMax(ImplicitLocOpBuilder &c) const;
  /// for j = jLo + tid; j < jHi; j += NT.
  void eachKey(ImplicitLocOpBuilder &c, Value tid, ValueRange init, LoopBody fn,
               SmallVectorImpl<Value> *results = nullptr) const;
};

Value GpuProbsTask::score(ImplicitLocOpBuilder &c, Value j) const {
  // q.k (+ relative_key's q.E[r] (+ k.E[r])), then the scale.
  Value s = rel.scoreDot(
      c, D,
      [&](ImplicitLocOpBuilder &c3, Value d) -> Value {
        return memref::LoadOp::create(c3, qs, ValueRange{d});
      },
      [&](ImplicitLocOpBuilder &c3, Value d) -> Value {
        return attnc::loadF32(c3, k, ValueRange{bi, hk, j, d});
      },
      relEmb, diag, j, 1.0);
  s = arith::MulFOp::create(c, s, f32Const(c, scale));
  return mods.any() ? mods.applyAt(c, s, mh, j, diag, /*unit=*/1.0) : s;
}

void GpuProbsTask::eachKey(ImplicitLocOpBuilder &c, Value tid, ValueRange init, LoopBody fn,
                           SmallVectorImpl<Value> *results) const {
  scf::ForOp l = loop(c, arith::AddIOp::create(c, jLo, tid), jHi, indexConst(c, NT), init, fn);
  if (results)
    results->assign(l.getResults().begin(), l.getResults().end());
}

Value GpuProbsTask::rowMax(ImplicitLocOpBuilder &c) const {
  scf::ForOp mx = loop(c, indexConst(c, 0), indexConst(c, NT),
                       ValueRange{f32Const(c, -std::numeric_limits<double>::infinity())},
                       [&](ImplicitLocOpBuilder &ci, Value t, ValueRange a) {
    Value m = memref::LoadOp::create(ci, pm, ValueRange{t});
    return SmallVector<Value>{arith::MaximumFOp::create(ci, a[0], m).getResult()};
  });
  Value m = mx.getResult(0);
  if (sinks)
    m = arith::MaximumFOp::create(c, m, attnc::loadF32(c, sinks, ValueRange{h}));
  return m;
}

void GpuProbsTask::prepare(ImplicitLocOpBuilder &c) const {
  threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
    loop(r, tid, indexConst(r, D), indexConst(r, NT), {}, [&](ImplicitLocOpBuilder &ci, Value d, ValueRange) {
      memref::StoreOp::create(ci, attnc::loadF32(ci, q, ValueRange{bi, h, i, d}), qs,
                              ValueRange{d});
      return SmallVector<Value>{};
    });
    loop(r, tid, tkv, indexConst(r, NT), {}, [&](ImplicitLocOpBuilder &ci, Value j, ValueRange) {
      Value past = arith::CmpIOp::create(ci, arith::CmpIPredicate::sge, j, jHi);
      Value hidden = arith::OrIOp::create(ci, lt(ci, j, jLo), past);
      auto ifOp = scf::IfOp::create(ci, hidden, /*withElse=*/false);
      ImplicitLocOpBuilder s(ci.getLoc(), ifOp.getThenBodyBuilder());
      attnc::storeF32(s, f32Const(s, 0.0), p, ValueRange{bi, h, i, j});
      return SmallVector<Value>{};
    });
  });
}

void GpuProbsTask::maxPass(ImplicitLocOpBuilder &c) const {
  threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
    SmallVector<Value> m;
    eachKey(r, tid, ValueRange{f32Const(r, -std::numeric_limits<double>::infinity())},
            [&](ImplicitLocOpBuilder &ci, Value j, ValueRange a) {
              Value mx = arith::MaximumFOp::create(ci, a[0], score(ci, j));
              return SmallVector<Value>{mx};
            },
            &m);
    memref::StoreOp::create(r, m[0], pm, ValueRange{tid});
  });
}

void GpuProbsTask::expPass(ImplicitLocOpBuilder &c) const {
  threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
    Value M = rowMax(r);
    SmallVector<Value> sum;
    eachKey(r, tid, ValueRange{f32Const(r, 0.0)},
            [&](ImplicitLocOpBuilder &ci, Value j, ValueRange a) {
              Value e = attnc::expClamped(ci, arith::SubFOp::create(ci, score(ci, j), M));
              if (!narrow())
                memref::StoreOp::create(ci, e, p, ValueRange{bi, h, i, j});
              return SmallVector<Value>{arith::AddFOp::create(ci, a[0], e).getResult()};
            },
            &sum);
    memref::StoreOp::create(r, sum[0], pl, ValueRange{tid});
  });
}

void GpuProbsTask::scalePass(ImplicitLocOpBuilder &c) const {
  threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
    scf::ForOp total = loop(r, indexConst(r, 0), indexConst(r, NT), ValueRange{f32Const(r, 0.0)},
                            [&](ImplicitLocOpBuilder &ci, Value t, ValueRange a) {
      Value l = memref::LoadOp::create(ci, pl, ValueRange{t});
      return SmallVector<Value>{arith::AddFOp::create(ci, a[0], l).getResult()};
    });
    Value L = total.getResult(0);
    if (sinks) { // the sink: one more term of the denominator
      Value M = rowMax(r);
      Value sk = attnc::loadF32(r, sinks, ValueRange{h});
      L = arith::AddFOp::create(r, L, attnc::expClamped(r, arith::SubFOp::create(r, sk, M)));
    }
    Value inv = arith::DivFOp::create(r, f32Const(r, 1.0), L);
    // A bf16/f16 p is rounded once: its e^{s - M} is computed again here
    // rather than stored rounded by expPass and rounded again.
    Value M = narrow() ? rowMax(r) : Value();
    eachKey(r, tid, {}, [&](ImplicitLocOpBuilder &ci, Value j, ValueRange) {
      Value e = narrow() ? attnc::expClamped(ci, arith::SubFOp::create(ci, score(ci, j), M))
                         : memref::LoadOp::create(ci, p, ValueRange{bi, h, i, j}).getResult();
      attnc::storeF32(ci, arith::MulFOp::create(ci, e, inv), p, ValueRange{bi, h, i, j});
      return SmallVector<Value>{};
    });
  });
}

} // namespace

LogicalResult attnc::buildGpuProbs(ImplicitLocOpBuilder &b, CudaTargetAttr t, ProbsOp op,
                                   const AttentionBuffers &bufs) {
  Value q = bufs.q, k = bufs.k, p = bufs.o, qLens = bufs.qLens, kvLens = bufs.kvLens;
  Value sinks = bufs.sinks, relBias = bufs.relBias, relEmb = bufs.relEmb;
  auto qt = cast<MemRefType>(q.getType());
  const int64_t D = qt.getDimSize(3);
  if (!qt.getElementType().isF32() || ShapedType::isDynamic(D))
    return op.emitOpError("the CUDA target needs f32 operands with a static head_dim");
  const attnc::KeyVisibility vis = attnc::KeyVisibility::of(op);
  const attnc::ScoreMods mods = attnc::ScoreMods::of(op);
  const int64_t NT = t.getAttnThreads();
  Value nb = dim(b, q, 0), hq = dim(b, q, 1), tq = dim(b, q, 2);
  Value hkv = dim(b, k, 1), tkv = dim(b, k, 2);
  Value group = arith::DivUIOp::create(b, hq, hkv);
  Value perBatch = arith::MulIOp::create(b, hq, tq);
  // No output buffer (NULL probs in the C ABI): no tasks (and no launch).
  Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, p);
  Value none = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, ptr, indexConst(b, 0));
  Value tasks = arith::SelectOp::create(b, none, indexConst(b, 0),
                                        arith::MulIOp::create(b, nb, perBatch));
  scf::ForallOp phase = taskLoop(b, tasks, [&](ImplicitLocOpBuilder &c, Value task) {
    GpuProbsTask pt{NT, D, op.getScale().convertToDouble(), mods, attnc::RelKey::of(op),
                    q, k, p, sinks, relEmb};
    pt.tkv = tkv;
    pt.bi = arith::DivUIOp::create(c, task, perBatch);
    Value rest = arith::RemUIOp::create(c, task, perBatch);
    pt.h = arith::DivUIOp::create(c, rest, tq);
    pt.i = arith::RemUIOp::create(c, rest, tq);
    pt.hk = arith::DivUIOp::create(c, pt.h, group);
    Value qv = qLens ? deviceLength(c, qLens, pt.bi, tq) : tq;
    Value kvv = kvLens ? deviceLength(c, kvLens, pt.bi, tkv) : tkv;
    pt.diag = arith::AddIOp::create(c, pt.i, vis.offset(c, qv, kvv));
    attnc::KeyVisibility::Range keys = vis.row(c, pt.diag, kvv);
    // A row past the valid queries sees no key: all zeros.
    pt.jLo = keys.start;
    pt.jHi = arith::SelectOp::create(c, lt(c, pt.i, qv), keys.end, keys.start);
    pt.qs = sharedBuffer(c, {D});
    pt.pm = sharedBuffer(c, {NT});
    pt.pl = sharedBuffer(c, {NT});
    pt.mh = mods.head(c, pt.h, relBias, /*unit=*/1.0);
    pt.prepare(c);
    pt.maxPass(c);
    pt.expPass(c);
    pt.scalePass(c);
  });
  mapToBlocks(phase);
  return success();
}

//===----------------------------------------------------------------------===//
// attn.rope and attn.rms_norm
//===----------------------------------------------------------------------===//

void attnc::buildGpuRope(ImplicitLocOpBuilder &b, CudaTargetAttr t, RopeOp op, Value x,
                         Value positions) {
  // One block per (sequence, R rows), R such that the block's R x half
  // (row, pair) items give each of the NT threads about one: an item's cos
  // and sin are computed once (in double: RopeAngles) and applied to every
  // head; consecutive threads take consecutive pairs of a row.
  const int64_t NT = t.getBlockThreads();
  const RopeAngles ang = RopeAngles::of(b, op);
  const int64_t R = std::max<int64_t>(1, (NT + ang.half - 1) / ang.half);
  Value nb = dim(b, x, 0), nh = dim(b, x, 1), tt = dim(b, x, 2);
  Value blocks = ceilDiv(b, tt, R);
  Value tasks = arith::MulIOp::create(b, nb, blocks);
  scf::ForallOp phase = taskLoop(b, tasks, [&](ImplicitLocOpBuilder &c, Value task) {
    Value bi = arith::DivUIOp::create(c, task, blocks);
    Value r0 = arith::MulIOp::create(c, arith::RemUIOp::create(c, task, blocks), indexConst(c, R));
    Value rows = arith::MinUIOp::create(c, indexConst(c, R), arith::SubIOp::create(c, tt, r0));
    Value items = arith::MulIOp::create(c, rows, indexConst(c, ang.half));
    Value zero = indexConst(c, 0);
    // Decode: the sequence's rows start at positions[b] (a position is
    // only a number here: nothing is indexed by it).
    Value p0 = positions ? attnc::validLength(c, positions, bi, zero) : zero;
    const RopeAngles::Sequence seq = ang.sequence(c, positions, nb, tt);
    threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
      loop(r, tid, items, indexConst(r, NT), {}, [&](ImplicitLocOpBuilder &ci, Value e, ValueRange) {
        Value row = arith::AddIOp::create(ci, r0, arith::DivUIOp::create(ci, e, indexConst(ci, ang.half)));
        Value i = arith::RemUIOp::create(ci, e, indexConst(ci, ang.half));
        Value posF = ang.position(ci, arith::AddIOp::create(ci, p0, row));
        auto cs = ang.cosSin(ci, posF, i, seq);
        auto cols = ang.columns(ci, i);
        loop(ci, zero, nh, {}, [&](ImplicitLocOpBuilder &ch, Value h, ValueRange) {
          ang.rotate(ch, x, ValueRange{bi, h, row}, cols, cs);
          return SmallVector<Value>{};
        });
        return SmallVector<Value>{};
      });
    });
  });
  mapToBlocks(phase);
}

void attnc::buildGpuClip(ImplicitLocOpBuilder &b, CudaTargetAttr t, ClipOp op, Value x) {
  // One block per (sequence, head); its NT threads stride over the T * D
  // elements (consecutive threads, consecutive columns).
  const int64_t NT = t.getBlockThreads();
  const double limit = op.getLimit().convertToDouble();
  Value nb = dim(b, x, 0), nh = dim(b, x, 1), tt = dim(b, x, 2), dd = dim(b, x, 3);
  Value n = arith::MulIOp::create(b, tt, dd);
  Value tasks = arith::MulIOp::create(b, nb, nh);
  scf::ForallOp phase = taskLoop(b, tasks, [&](ImplicitLocOpBuilder &c, Value task) {
    Value bi = arith::DivUIOp::create(c, task, nh), h = arith::RemUIOp::create(c, task, nh);
    threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
      loop(r, tid, n, indexConst(r, NT), {}, [&](ImplicitLocOpBuilder &ci, Value e, ValueRange) {
        SmallVector<Value> at{bi, h, arith::DivUIOp::create(ci, e, dd),
                              arith::RemUIOp::create(ci, e, dd)};
        Value v = attnc::loadF32(ci, x, at);
        attnc::storeF32(ci, attnc::clampSymmetric(ci, v, limit), x, at);
        return SmallVector<Value>{};
      });
    });
  });
  mapToBlocks(phase);
}

void attnc::buildGpuTemperature(ImplicitLocOpBuilder &b, CudaTargetAttr t, TemperatureOp op,
                                Value x, Value positions) {
  // As buildGpuClip: one block per (sequence, head), its NT threads striding
  // over the T * D elements; each element's row factor (an integer division
  // and a short f64 series: cheap next to the attention).
  const int64_t NT = t.getBlockThreads();
  Value nb = dim(b, x, 0), nh = dim(b, x, 1), tt = dim(b, x, 2), dd = dim(b, x, 3);
  Value n = arith::MulIOp::create(b, tt, dd);
  Value tasks = arith::MulIOp::create(b, nb, nh);
  scf::ForallOp phase = taskLoop(b, tasks, [&](ImplicitLocOpBuilder &c, Value task) {
    Value bi = arith::DivUIOp::create(c, task, nh), h = arith::RemUIOp::create(c, task, nh);
    Value p0 = positions ? attnc::validLength(c, positions, bi, indexConst(c, 0))
                         : indexConst(c, 0);
    threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
      loop(r, tid, n, indexConst(r, NT), {}, [&](ImplicitLocOpBuilder &ci, Value e, ValueRange) {
        Value row = arith::DivUIOp::create(ci, e, dd);
        SmallVector<Value> at{bi, h, row, arith::RemUIOp::create(ci, e, dd)};
        Value f = attnc::temperatureFactor(ci, op, arith::AddIOp::create(ci, p0, row));
        Value v = attnc::loadF32(ci, x, at);
        attnc::storeF32(ci, arith::MulFOp::create(ci, v, f), x, at);
        return SmallVector<Value>{};
      });
    });
  });
  mapToBlocks(phase);
}

void attnc::buildGpuRmsNorm(ImplicitLocOpBuilder &b, CudaTargetAttr t, RmsNormOp op, Value x,
                            Value w, Value bias) {
  // One block per (sequence, row, group: one head, or all heads across):
  // NT threads stride over the group's n = heads * D elements (element e is
  // head h0 + e / D, column e % D, weight w[e]; one weight per head:
  // w[h0 * D + e]); each thread's partial sum of squares goes through
  // shared memory, and every thread adds the NT partials in the same order
  // before scaling its elements:
  //   x = x * (1 / sqrt(sum / n + eps)) * (w + offset) (+ bias).
  // LayerNorm (center): a first round of partial sums gives the mean,
  // subtracted from each element before the squares and the scaling.
  auto xt = cast<MemRefType>(x.getType());
  const int64_t D = xt.getDimSize(3);
  const bool across = op.getAcrossHeads();
  const bool center = op.getCenter(), perHead = op.getPerHeadWeight();
  const double eps = op.getEps().convertToDouble();
  const double offset = op.getWeightOffset().convertToDouble();
  const int64_t heads = across && !ShapedType::isDynamic(xt.getDimSize(1)) ? xt.getDimSize(1) : 1;
  const int64_t NT =
      std::min<int64_t>(t.getBlockThreads(), std::max<int64_t>(32, (D * heads + 31) / 32 * 32));
  Value nb = dim(b, x, 0), nh = dim(b, x, 1), tt = dim(b, x, 2);
  Value groups = across ? indexConst(b, 1) : nh;
  Value per = across ? nh : indexConst(b, 1);
  Value n = arith::MulIOp::create(b, per, indexConst(b, D));
  Value perSeq = arith::MulIOp::create(b, tt, groups);
  Value tasks = arith::MulIOp::create(b, nb, perSeq);
  scf::ForallOp phase = taskLoop(b, tasks, [&](ImplicitLocOpBuilder &c, Value task) {
    Value bi = arith::DivUIOp::create(c, task, perSeq);
    Value rest = arith::RemUIOp::create(c, task, perSeq);
    Value row = arith::DivUIOp::create(c, rest, groups);
    Value h0 = arith::MulIOp::create(c, arith::RemUIOp::create(c, rest, groups), per);
    Value ps = sharedBuffer(c, {NT});
    Value pm = center ? sharedBuffer(c, {NT}) : Value();
    // Element e of the group in x.
    auto at = [&](ImplicitLocOpBuilder &ci, Value e) {
      Value h = arith::AddIOp::create(ci, h0, arith::DivUIOp::create(ci, e, indexConst(ci, D)));
      return SmallVector<Value>{bi, h, row, arith::RemUIOp::create(ci, e, indexConst(ci, D))};
    };
    // The sum of the NT partials in buf, in the same order on every thread.
    auto sumOf = [&](ImplicitLocOpBuilder &r, Value buf) -> Value {
      return loop(r, indexConst(r, 0), indexConst(r, NT), ValueRange{f32Const(r, 0.0)},
                  [&](ImplicitLocOpBuilder &ci, Value i, ValueRange a) {
                    Value s = memref::LoadOp::create(ci, buf, ValueRange{i});
                    return SmallVector<Value>{arith::AddFOp::create(ci, a[0], s).getResult()};
                  })
          .getResult(0);
    };
    auto nfOf = [&](ImplicitLocOpBuilder &r) -> Value {
      return arith::UIToFPOp::create(r, r.getF32Type(),
                                     arith::IndexCastOp::create(r, r.getI64Type(), n));
    };
    if (center)
      threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
        scf::ForOp s1 = loop(r, tid, n, indexConst(r, NT), ValueRange{f32Const(r, 0.0)},
                             [&](ImplicitLocOpBuilder &ci, Value e, ValueRange a) {
          Value v = attnc::loadF32(ci, x, at(ci, e));
          return SmallVector<Value>{arith::AddFOp::create(ci, a[0], v).getResult()};
        });
        memref::StoreOp::create(r, s1.getResult(0), pm, ValueRange{tid});
      });
    // The mean of a LayerNorm (null for RMSNorm), on each thread.
    auto meanOf = [&](ImplicitLocOpBuilder &r) -> Value {
      return center ? arith::DivFOp::create(r, sumOf(r, pm), nfOf(r)).getResult() : Value();
    };
    auto centered = [&](ImplicitLocOpBuilder &ci, Value v, Value mu) -> Value {
      return mu ? arith::SubFOp::create(ci, v, mu).getResult() : v;
    };
    threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
      Value mu = meanOf(r);
      scf::ForOp ss = loop(r, tid, n, indexConst(r, NT), ValueRange{f32Const(r, 0.0)},
                           [&](ImplicitLocOpBuilder &ci, Value e, ValueRange a) {
        Value v = centered(ci, attnc::loadF32(ci, x, at(ci, e)), mu);
        return SmallVector<Value>{math::FmaOp::create(ci, v, v, a[0]).getResult()};
      });
      memref::StoreOp::create(r, ss.getResult(0), ps, ValueRange{tid});
    });
    threadRegion(c, NT, [&](ImplicitLocOpBuilder &r, Value tid) {
      Value mu = meanOf(r);
      Value nf = nfOf(r);
      Value mean = arith::DivFOp::create(r, sumOf(r, ps), nf);
      Value inv = arith::DivFOp::create(
          r, f32Const(r, 1.0), math::SqrtOp::create(r, arith::AddFOp::create(r, mean, f32Const(r, eps))));
      loop(r, tid, n, indexConst(r, NT), {}, [&](ImplicitLocOpBuilder &ci, Value e, ValueRange) {
        SmallVector<Value> pos = at(ci, e);
        Value v = centered(ci, attnc::loadF32(ci, x, pos), mu);
        // One weight per head: head h0's entries h0*D + e (a group is one head).
        Value wIdx = perHead ? arith::AddIOp::create(
                                   ci, arith::MulIOp::create(ci, h0, indexConst(ci, D)), e)
                                   .getResult()
                             : e;
        // No weight (Llama 4's L2 norm): the factor is 1 (+ offset).
        Value wv = w ? attnc::loadF32(ci, w, ValueRange{wIdx}) : f32Const(ci, 1.0);
        if (offset != 0)
          wv = arith::AddFOp::create(ci, wv, f32Const(ci, offset));
        Value y = arith::MulFOp::create(ci, v, inv);
        if (w || offset != 0)
          y = arith::MulFOp::create(ci, y, wv);
        if (bias)
          y = arith::AddFOp::create(ci, y, attnc::loadF32(ci, bias, ValueRange{wIdx}));
        attnc::storeF32(ci, y, x, pos);
        return SmallVector<Value>{};
      });
    });
  });
  mapToBlocks(phase);
}
