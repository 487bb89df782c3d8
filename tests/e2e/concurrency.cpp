//===- concurrency.cpp - 8 threads, one packed buffer, bit-identical ------===//
//
//   attnc-concurrency-test LIB.so [--threads N] [--calls C] [--batch B]
//                          [--seq-len T] [--pool-threads P] [--hook]
//
// Loads a kernel library, packs one set of random weights once, computes
// y_i = forward(x_i) single-threaded for N different inputs, then starts N
// threads that, released together, each call NAME_forward C times on the
// shared packed buffer with their own input, output and workspace
// (num_threads = P, default 1: the calling thread only). Every result must
// be bit-identical to the single-threaded one. With --hook the concurrent
// calls run their tasks through attnc_forward_args::parallel_for instead,
// a hook that runs them on the calling thread in reverse order and in
// uneven chunks (the ABI: results do not depend on how tasks are split);
// the test reports how many tasks the hook ran. Exit 0 and a PASS line, or
// exit 1 naming the first difference; 2 for usage and load errors.
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Checked.h"
#include "attnc/runtime/Interpreter.h"
#include "attnc/runtime/Runtime.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

/// A parallel-for hook: runs [0, n) on the calling thread, last chunk
/// first, in chunks of 1, 2, 3, ... tasks. Counts the tasks it ran.
struct HookStats {
  std::atomic<int64_t> calls{0}, tasks{0};
};

int reverseChunksHook(void *ctx, int64_t n, attnc_task_fn task,
                      void *taskCtx) {
  auto *stats = static_cast<HookStats *>(ctx);
  ++stats->calls;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  for (int64_t b = 0, len = 1; b < n; b += len, ++len)
    chunks.push_back({b, std::min(n, b + len)});
  for (auto it = chunks.rbegin(); it != chunks.rend(); ++it) {
    task(taskCtx, it->first, it->second);
    stats->tasks += it->second - it->first;
  }
  return 0;
}

bool parsePositive(const char *s, int64_t &out, int64_t min) {
  char *end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  if (!end || *end || end == s || v < min || v > (int64_t(1) << 20))
    return false;
  out = v;
  return true;
}

} // namespace

int main(int argc, char **argv) {
  std::string lib;
  int64_t threads = 8, calls = 4, batch = 2, seq = 33, pool = 1;
  bool hook = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--hook") {
      hook = true;
      continue;
    }
    int64_t *dst = a == "--threads"        ? &threads
                   : a == "--calls"        ? &calls
                   : a == "--batch"        ? &batch
                   : a == "--seq-len"      ? &seq
                   : a == "--pool-threads" ? &pool
                                           : nullptr;
    if (dst) {
      if (i + 1 >= argc || !parsePositive(argv[++i], *dst, dst == &pool ? 0 : 1)) {
        std::fprintf(stderr, "concurrency: error: %s needs an integer\n",
                     a.c_str());
        return 2;
      }
    } else if (lib.empty() && !a.empty() && a[0] != '-') {
      lib = a;
    } else {
      std::fprintf(stderr, "concurrency: error: unexpected argument '%s'\n",
                   a.c_str());
      return 2;
    }
  }
  if (lib.empty()) {
    std::fprintf(stderr, "usage: attnc-concurrency-test LIB.so [--threads N] "
                         "[--calls C] [--batch B] [--seq-len T] "
                         "[--pool-threads P] [--hook]\n");
    return 2;
  }

  attnrt::Kernel k;
  std::string msg;
  attnrt::LoadError err;
  if (!k.load(lib, msg, err)) {
    std::fprintf(stderr, "concurrency: error: %s (%s)\n", msg.c_str(),
                 attnrt::toString(err));
    return 2;
  }
  const attnc_kernel_info &ki = k.info();
  if (!k.checkShape(batch, seq, msg)) {
    std::fprintf(stderr, "concurrency: error: %s\n", msg.c_str());
    return 2;
  }
  int64_t wsBytes = k.workspaceBytes(batch, seq, msg);
  int64_t xFloats = 0, yFloats = 0;
  if (wsBytes < 0 ||
      !attnrt::checkedProduct({batch, seq, ki.d_model}, xFloats) ||
      !attnrt::checkedProduct({batch, seq, ki.out_dim}, yFloats)) {
    std::fprintf(stderr, "concurrency: error: %s\n", msg.c_str());
    return 2;
  }

  std::mt19937_64 rng(42);
  auto weights =
      attnrt::randomWeights(attnrt::storageTensors(attnrt::paramsFromInfo(ki)), rng);
  std::vector<const float *> wptrs;
  for (auto &w : weights)
    wptrs.push_back(w.data());
  std::vector<unsigned char> packed;
  int rc = k.packFloat(wptrs, packed);
  if (rc != ATTNC_OK) {
    std::fprintf(stderr, "concurrency: error: %s_pack returned %d\n", ki.name, rc);
    return 1;
  }

  // One input per thread, and its single-threaded result.
  std::vector<std::vector<float>> xs, expected;
  for (int64_t t = 0; t < threads; ++t) {
    xs.push_back(attnrt::randomNormal(xFloats, rng));
    expected.emplace_back(size_t(yFloats));
    std::vector<unsigned char> ws(static_cast<size_t>(wsBytes));
    rc = k.forward(packed.data(), xs.back().data(), expected.back().data(),
                   batch, seq, ws, 1);
    if (rc != ATTNC_OK) {
      std::fprintf(stderr, "concurrency: error: %s_forward returned %d\n",
                   ki.name, rc);
      return 1;
    }
  }
  // Determinism first: the same call twice gives the same bits.
  {
    std::vector<float> again(static_cast<size_t>(yFloats));
    std::vector<unsigned char> ws(static_cast<size_t>(wsBytes));
    k.forward(packed.data(), xs[0].data(), again.data(), batch, seq, ws, 1);
    if (std::memcmp(again.data(), expected[0].data(), again.size() * 4) != 0) {
      std::printf("concurrency: FAIL: two single-threaded calls differ\n");
      return 1;
    }
  }

  HookStats stats;
  std::mutex mu;
  std::condition_variable cv;
  bool go = false;
  std::atomic<int> ready{0};
  struct Failure {
    int64_t call = -1, index = -1, count = 0;
    float got = 0, want = 0;
    int rc = ATTNC_OK;
  };
  std::vector<Failure> failures(static_cast<size_t>(threads));
  std::vector<std::thread> pool_;
  for (int64_t t = 0; t < threads; ++t) {
    pool_.emplace_back([&, t] {
      std::vector<float> y(static_cast<size_t>(yFloats));
      std::vector<unsigned char> ws(static_cast<size_t>(wsBytes));
      {
        std::unique_lock<std::mutex> lock(mu);
        ++ready;
        cv.notify_all();
        cv.wait(lock, [&] { return go; });
      }
      Failure &f = failures[size_t(t)];
      for (int64_t c = 0; c < calls && f.call < 0; ++c) {
        std::fill(y.begin(), y.end(), -1.0f);
        int r = k.forward(packed.data(), xs[size_t(t)].data(), y.data(), batch,
                          seq, ws, int(pool),
                          hook ? &reverseChunksHook : nullptr,
                          hook ? &stats : nullptr);
        const std::vector<float> &want = expected[size_t(t)];
        if (r != ATTNC_OK) {
          f.call = c;
          f.rc = r;
          break;
        }
        for (size_t i = 0; i < y.size(); ++i)
          if (std::memcmp(&y[i], &want[i], 4) != 0) {
            if (f.index < 0) {
              f.call = c;
              f.index = int64_t(i);
              f.got = y[i];
              f.want = want[i];
            }
            ++f.count;
          }
      }
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return ready == threads; });
    go = true;
  }
  cv.notify_all();
  for (auto &th : pool_)
    th.join();

  bool ok = true;
  for (int64_t t = 0; t < threads; ++t) {
    const Failure &f = failures[size_t(t)];
    if (f.call < 0)
      continue;
    ok = false;
    if (f.rc != ATTNC_OK)
      std::printf("concurrency: FAIL: thread %lld call %lld: %s_forward "
                  "returned %d\n",
                  (long long)t, (long long)f.call, ki.name, f.rc);
    else
      std::printf("concurrency: FAIL: thread %lld call %lld: %lld elements "
                  "differ from the single-threaded result (first at %lld: "
                  "%.9g, expected %.9g)\n",
                  (long long)t, (long long)f.call, (long long)f.count,
                  (long long)f.index, double(f.got), double(f.want));
  }
  if (ok && hook)
    std::printf("concurrency: %s: %lld threads x %lld calls (tasks through "
                "a reverse-order hook: %lld hook calls, %lld tasks), batch "
                "%lld, seq_len %lld, one packed buffer: all bit-identical to "
                "single-threaded calls: PASS\n",
                ki.name, (long long)threads, (long long)calls,
                (long long)stats.calls.load(), (long long)stats.tasks.load(),
                (long long)batch, (long long)seq);
  else if (ok)
    std::printf("concurrency: %s: %lld threads x %lld calls (num_threads %lld "
                "each), batch %lld, seq_len %lld, one packed buffer: all "
                "bit-identical to single-threaded calls: PASS\n",
                ki.name, (long long)threads, (long long)calls, (long long)pool,
                (long long)batch, (long long)seq);
  return ok ? 0 : 1;
}
