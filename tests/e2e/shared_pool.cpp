//===- shared_pool.cpp - two kernels in one process share one pool --------===//
//
//   attnc-shared-pool-test A.so B.so
//
// Loads two kernel libraries with attnrt::Kernel (libattnrt_core) and runs
// each with 3 threads, counting the process's threads (/proc/self/task)
// after each call: the runtime passes its pool (attnrt_parallel_for) to
// every kernel, so A's call starts 2 workers and B's call starts none.
// Then B's C entry NAME_forward is called directly without a hook, as an
// application that dlopens a kernel itself does: B's built-in pool starts
// its own 2 workers (the same pool source, compiled into the kernel), and
// its output must equal the one computed on the runtime's pool bit for bit.
// Exit 0 and a PASS line; 1 on a wrong count or output; 2 on load errors.
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Runtime.h"
#include "attnc/runtime/attnrt_c.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <dirent.h>
#include <dlfcn.h>

namespace {

int threadCount() {
  int n = 0;
  if (DIR *d = opendir("/proc/self/task")) {
    while (dirent *e = readdir(d))
      if (e->d_name[0] != '.')
        ++n;
    closedir(d);
  }
  return n;
}

struct Loaded {
  attnrt::Kernel kernel;
  std::vector<unsigned char> packed;
  std::vector<float> x, y;
  std::vector<unsigned char> ws;
};

bool load(const char *path, Loaded &l, int64_t batch, int64_t seq) {
  std::string message;
  attnrt::LoadError error = attnrt::LoadError::None;
  if (!l.kernel.load(path, message, error)) {
    std::fprintf(stderr, "shared-pool: %s\n", message.c_str());
    return false;
  }
  const attnc_kernel_info &info = l.kernel.info();
  std::vector<std::vector<float>> weights(info.num_weights);
  std::vector<const float *> ptrs;
  for (uint32_t w = 0; w < info.num_weights; ++w) {
    const attnc_tensor_info &t = info.weights[w];
    int64_t n = t.dims[0] * (t.rank == 2 ? t.dims[1] : 1);
    weights[w].resize(n);
    for (int64_t i = 0; i < n; ++i)
      weights[w][i] = 0.05f * std::sin(0.37f * float(i + 11 * w));
    ptrs.push_back(weights[w].data());
  }
  if (int rc = l.kernel.packFloat(ptrs, l.packed)) {
    std::fprintf(stderr, "shared-pool: %s: pack failed (%s)\n", path,
                 attnrt::statusText(rc));
    return false;
  }
  l.x.resize(batch * seq * info.d_model);
  for (size_t i = 0; i < l.x.size(); ++i)
    l.x[i] = std::cos(0.11f * float(i));
  l.y.assign(batch * seq * info.out_dim, 0.0f);
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: attnc-shared-pool-test A.so B.so\n");
    return 2;
  }
  // Enough rows that every phase has at least 3 tasks.
  const int64_t batch = 2, seq = 64;
  Loaded a, b;
  if (!load(argv[1], a, batch, seq) || !load(argv[2], b, batch, seq))
    return 2;
  const int base = threadCount();
  if (int rc = a.kernel.forward(a.packed.data(), a.x.data(), a.y.data(), batch,
                                seq, a.ws, 3)) {
    std::fprintf(stderr, "shared-pool: A forward failed (%s)\n", attnrt::statusText(rc));
    return 1;
  }
  const int afterA = threadCount();
  if (int rc = b.kernel.forward(b.packed.data(), b.x.data(), b.y.data(), batch,
                                seq, b.ws, 3)) {
    std::fprintf(stderr, "shared-pool: B forward failed (%s)\n", attnrt::statusText(rc));
    return 1;
  }
  const int afterB = threadCount();

  // B's own entry point, no hook: its built-in pool.
  const attnc_kernel_info &info = b.kernel.info();
  void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  std::string sym = std::string(info.name) + "_forward";
  auto fwd = h ? reinterpret_cast<attnc_forward_fn>(dlsym(h, sym.c_str())) : nullptr;
  if (!fwd) {
    std::fprintf(stderr, "shared-pool: %s: no %s\n", argv[2], sym.c_str());
    return 2;
  }
  std::vector<float> yOwn(b.y.size(), 0.0f);
  attnc_forward_args args{};
  args.struct_size = sizeof(args);
  args.packed = b.packed.data();
  args.packed_bytes = info.packed_bytes;
  args.x = b.x.data();
  args.x_elems = int64_t(b.x.size());
  args.y = yOwn.data();
  args.y_elems = int64_t(yOwn.size());
  args.batch = batch;
  args.seq_len = seq;
  args.workspace = b.ws.data();
  args.workspace_bytes = int64_t(b.ws.size());
  args.num_threads = 3;
  if (int rc = fwd(&args)) {
    std::fprintf(stderr, "shared-pool: %s returned %d (%s)\n", sym.c_str(), rc,
                 attnrt::statusText(rc));
    return 1;
  }
  const int own = threadCount();
  dlclose(h);

  std::printf("shared-pool: threads %d at start, %d after A (3 threads), %d "
              "after B (3 threads), %d after B's own entry without a hook\n",
              base, afterA, afterB, own);
  bool ok = true;
  if (afterA != base + 2 || afterB != afterA) {
    std::printf("shared-pool: FAIL: A and B should share 2 workers\n");
    ok = false;
  }
  if (own != afterB + 2) {
    std::printf("shared-pool: FAIL: B's built-in pool should start 2 workers\n");
    ok = false;
  }
  if (std::memcmp(yOwn.data(), b.y.data(), yOwn.size() * sizeof(float)) != 0) {
    std::printf("shared-pool: FAIL: B's output differs between the pools\n");
    ok = false;
  }
  // Nested: tasks of a job on the shared pool call A's forward with 2
  // threads, which goes through the same pool: each nested job runs inline
  // on its task's thread (it used to wait for the pool for ever).
  struct Nested {
    const Loaded *a;
    int64_t batch, seq;
    std::vector<std::vector<float>> y;
    std::vector<std::vector<unsigned char>> ws;
    int failed = 0;
  } nested{&a, batch, seq, {}, {}, 0};
  nested.y.assign(4, std::vector<float>(a.y.size(), 0.0f));
  nested.ws.resize(4);
  attnrt_pool_request req{3, int64_t(a.kernel.info().stack_bytes)};
  auto task = [](void *ctx, int64_t begin, int64_t end) {
    auto *n = static_cast<Nested *>(ctx);
    for (int64_t t = begin; t < end; ++t)
      if (n->a->kernel.forward(n->a->packed.data(), n->a->x.data(), n->y[t].data(),
                               n->batch, n->seq, n->ws[t], 2) != ATTNC_OK)
        __atomic_add_fetch(&n->failed, 1, __ATOMIC_RELAXED);
  };
  const int prc = attnrt_parallel_for(&req, 4, task, &nested);
  int differ = 0;
  for (const auto &y : nested.y)
    differ += std::memcmp(y.data(), a.y.data(), y.size() * sizeof(float)) != 0;
  std::printf("shared-pool: nested forwards in a pool job: rc %d, %d failed, %d differ\n",
              prc, nested.failed, differ);
  if (prc != 0 || nested.failed || differ) {
    std::printf("shared-pool: FAIL: nested calls on the shared pool\n");
    ok = false;
  }
  if (!ok)
    return 1;
  std::printf("shared-pool: PASS %s and %s share one pool\n",
              a.kernel.info().name, info.name);
  return 0;
}
