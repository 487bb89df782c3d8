//===- main.cpp - embed an attnc kernel in a C++ application ---------------===//
//
//   embed WEIGHTS PREFIX [THREADS]
//
// What an application does with a generated kernel (embed_block.h, linked
// through attnc_add_kernel) and libattnrt:
//   1. loads one layer's weights from a real checkpoint (.safetensors,
//      .npz or a .npy directory; PREFIX picks the layer) with the C API of
//      attnc/runtime/weights.h (through its C++ wrapper);
//   2. packs them once (embed_block_pack);
//   3. serves requests from its own threads: several std::threads call
//      embed_block_forward at the same time on their own sequences, sharing
//      the packed weights (the kernel keeps no global state);
//   4. runs one batched forward whose tiles go to the application's thread
//      pool through the attnc_forward_args parallel_for hook;
//   5. checks every result against libattnrt's double-precision
//      interpreter. Prints "embed-cmake: OK" and exits 0 when all agree.
//
//===----------------------------------------------------------------------===//
#include "embed_block.h"

#include "attnc/runtime/Interpreter.h"
#include "attnc/runtime/Runtime.h"
#include "attnc/runtime/weights.h"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

/// A small thread pool that implements the parallel-for hook: the tasks of
/// one call are handed out in chunks to the workers and the calling thread;
/// the call returns once all of them have run (abi.h's contract).
class ThreadPool {
public:
  explicit ThreadPool(unsigned workers) {
    for (unsigned i = 0; i < workers; ++i)
      threads_.emplace_back([this] { work(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : threads_)
      t.join();
  }

  /// The attnc_parallel_for_fn: ctx is the pool.
  static int parallelFor(void *ctx, int64_t numTasks, attnc_task_fn task,
                         void *taskCtx) {
    return static_cast<ThreadPool *>(ctx)->run(numTasks, task, taskCtx);
  }

  int64_t tasksOnWorkers() const { return onWorkers_; }
  int64_t calls() const { return calls_; }

private:
  int run(int64_t n, attnc_task_fn task, void *taskCtx) {
    if (n <= 0)
      return 0;
    std::lock_guard<std::mutex> one(callMutex_); // one job at a time
    {
      std::lock_guard<std::mutex> lock(m_);
      task_ = task;
      taskCtx_ = taskCtx;
      n_ = n;
      chunk_ = std::max<int64_t>(1, n / int64_t(4 * (threads_.size() + 1)));
      next_ = 0;
      busy_ = threads_.size();
      ++generation_;
    }
    ++calls_;
    wake_.notify_all();
    drain(false);
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [this] { return busy_ == 0; });
    return 0;
  }

  void drain(bool worker) {
    for (int64_t b; (b = next_.fetch_add(chunk_)) < n_;) {
      int64_t e = std::min(n_, b + chunk_);
      task_(taskCtx_, b, e);
      if (worker)
        onWorkers_ += e - b;
    }
  }

  void work() {
    uint64_t seen = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(m_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_)
          return;
        seen = generation_;
      }
      drain(true);
      std::lock_guard<std::mutex> lock(m_);
      if (--busy_ == 0)
        done_.notify_all();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex m_, callMutex_;
  std::condition_variable wake_, done_;
  attnc_task_fn task_ = nullptr;
  void *taskCtx_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  std::atomic<int64_t> next_{0}, onWorkers_{0}, calls_{0};
  size_t busy_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

/// One forward call through the C ABI. hook == nullptr: the library's
/// built-in pool with `threads` threads.
int forward(const attnc_kernel_info &info, const std::vector<unsigned char> &packed,
            const float *x, float *y, int64_t batch, int64_t seq,
            ThreadPool *pool, int threads) {
  int64_t wsBytes = embed_block_workspace_size(batch, seq, seq);
  if (wsBytes < 0)
    return ATTNC_ERR_BAD_SHAPE;
  std::vector<unsigned char> ws(size_t(wsBytes) + 64);
  attnc_forward_args a = {};
  a.struct_size = sizeof a;
  a.packed = packed.data();
  a.packed_bytes = int64_t(packed.size());
  a.x = x;
  a.x_elems = batch * seq * info.d_model;
  a.y = y;
  a.y_elems = batch * seq * info.out_dim;
  a.batch = batch;
  a.seq_len = seq;
  uintptr_t p = reinterpret_cast<uintptr_t>(ws.data());
  a.workspace = ws.data() + ((64 - p % 64) % 64); // 64-byte aligned
  a.workspace_bytes = wsBytes;
  a.parallel_for = pool ? ThreadPool::parallelFor : nullptr;
  a.parallel_ctx = pool;
  a.num_threads = threads;
  return embed_block_forward(&a);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: embed WEIGHTS PREFIX [THREADS]\n");
    return 2;
  }
  unsigned threads = argc > 3 ? unsigned(std::atoi(argv[3])) : 4;
  if (threads < 1)
    threads = 1;
  const attnc_kernel_info *info = embed_block_query(ATTNC_ABI_VERSION);
  if (!info || info->abi_version != ATTNC_ABI_VERSION ||
      info->struct_size != sizeof(attnc_kernel_info)) {
    std::fprintf(stderr, "embed-cmake: kernel ABI does not match this header\n");
    return 1;
  }
  std::printf("embed-cmake: kernel %s, d_model %lld, heads %lld, %u weight tensors\n",
              info->name, (long long)info->d_model, (long long)info->heads,
              info->num_weights);

  // 1. Weights from the checkpoint, in the kernel's order.
  std::string err;
  attnrt::Weights w = attnrt::Weights::open(argv[1], argv[2], *info, err);
  if (!w) {
    std::fprintf(stderr, "embed-cmake: %s\n", err.c_str());
    return 1;
  }
  for (const std::string &note : w.notes())
    std::printf("embed-cmake: note: %s\n", note.c_str());
  std::printf("embed-cmake: weights %s ... %s from %s\n", w.sourceName(0).c_str(),
              w.sourceName(w.count() - 1).c_str(), argv[1]);

  // 2. Pack once.
  std::vector<unsigned char> packed(size_t(info->packed_bytes));
  int rc = embed_block_pack(w.data(), w.elems(), w.count(), packed.data(),
                            info->packed_bytes);
  if (rc != ATTNC_OK) {
    std::fprintf(stderr, "embed-cmake: pack returned %d\n", rc);
    return 1;
  }

  // Requests: `threads` sequences of T tokens.
  const int64_t batch = threads, seq = 37, d = info->d_model, od = info->out_dim;
  std::mt19937_64 rng(42);
  std::vector<float> x = attnrt::randomNormal(batch * seq * d, rng);
  std::vector<double> ref = attnrt::interpret(attnrt::paramsFromInfo(*info),
                                              w.float32(), x.data(), batch, seq);
  if (ref.size() != size_t(batch * seq * od)) {
    std::fprintf(stderr, "embed-cmake: the interpreter refused the block\n");
    return 1;
  }
  auto check = [&](const char *what, const std::vector<float> &y) {
    attnrt::CompareResult c = attnrt::compare(y.data(), ref.data(),
                                              int64_t(y.size()), 1e-4, 1e-3);
    std::printf("embed-cmake: %s: max_abs_err %.3g vs interpreter: %s\n", what,
                c.maxAbs, c.ok ? "ok" : "FAIL");
    return c.ok;
  };
  bool ok = true;

  // 3. One request per application thread, all at once, same packed weights.
  std::vector<float> y1(size_t(batch * seq * od));
  std::vector<int> status(batch, -1);
  {
    std::vector<std::thread> clients;
    for (int64_t b = 0; b < batch; ++b)
      clients.emplace_back([&, b] {
        status[size_t(b)] = forward(*info, packed, x.data() + b * seq * d,
                                    y1.data() + b * seq * od, 1, seq, nullptr, 1);
      });
    for (std::thread &t : clients)
      t.join();
  }
  for (int64_t b = 0; b < batch; ++b)
    if (status[size_t(b)] != ATTNC_OK) {
      std::fprintf(stderr, "embed-cmake: forward (client %lld) returned %d\n",
                   (long long)b, status[size_t(b)]);
      return 1;
    }
  ok &= check("concurrent requests (one std::thread each)", y1);

  // 4. One batched call; its tasks run on the application's pool.
  std::vector<float> y2(y1.size());
  ThreadPool pool(threads - 1);
  rc = forward(*info, packed, x.data(), y2.data(), batch, seq, &pool, 0);
  if (rc != ATTNC_OK) {
    std::fprintf(stderr, "embed-cmake: batched forward returned %d\n", rc);
    return 1;
  }
  std::printf("embed-cmake: parallel_for hook: %lld calls, %lld tasks on pool threads\n",
              (long long)pool.calls(), (long long)pool.tasksOnWorkers());
  ok &= check("batched call (parallel_for hook)", y2);
  if (pool.calls() == 0) { // abi.h: tasks go through the hook when one is set
    std::printf("embed-cmake: FAIL: the kernel never called the parallel_for hook\n");
    ok = false;
  }

  // The built-in pool as well.
  std::vector<float> y3(y1.size());
  rc = forward(*info, packed, x.data(), y3.data(), batch, seq, nullptr, int(threads));
  if (rc != ATTNC_OK) {
    std::fprintf(stderr, "embed-cmake: forward (built-in pool) returned %d\n", rc);
    return 1;
  }
  ok &= check("batched call (built-in pool)", y3);

  if (!ok)
    return 1;
  std::printf("embed-cmake: OK\n");
  return 0;
}
