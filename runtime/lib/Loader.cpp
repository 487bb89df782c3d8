//===- Loader.cpp - dlopen, metadata checks, pack and forward ---*- C++ -*-===//
//
// Kernel::load opens an attnc-generated shared object, asks it for its
// attnc_kernel_info through attnc_query, validates the record against what
// this runtime understands (validateInfo), and resolves the NAME_pack,
// NAME_workspace_size and NAME_forward entries. Each failure is classified as
// a LoadError so that callers can tell a missing file from an ABI skew from
// corrupt metadata.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Interpreter.h"
#include "attnc/runtime/Runtime.h"

#include <dlfcn.h>
#include <elf.h>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <climits>
#include <cmath>
#include <utility>

namespace attnrt {

const char *toString(LoadError e) {
  switch (e) {
  case LoadError::None:
    return "none";
  case LoadError::OpenFailed:
    return "open_failed";
  case LoadError::NoQuery:
    return "no_query";
  case LoadError::AbiTooNew:
    return "abi_too_new";
  case LoadError::AbiMismatch:
    return "abi_mismatch";
  case LoadError::BadMetadata:
    return "bad_metadata";
  case LoadError::MissingEntry:
    return "missing_entry";
  }
  return "unknown";
}

namespace {

/// Sizes beyond this are certainly corrupt (and would overflow products).
constexpr int64_t kMaxDim = int64_t(1) << 24;

bool isIdentifier(const char *s) {
  if (!s || !*s)
    return false;
  auto alpha = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  if (!alpha(s[0]))
    return false;
  for (const char *p = s + 1; *p; ++p)
    if (!alpha(*p) && !(*p >= '0' && *p <= '9'))
      return false;
  return true;
}

std::string dimsString(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

/// validateInfo with the error class: AbiMismatch for version/size skew,
/// BadMetadata for everything else, None when valid.
LoadError checkInfo(const attnc_kernel_info &info, uint32_t abiVersion,
                    std::string &why) {
  auto bad = [&](std::string msg) {
    why = std::move(msg);
    return LoadError::BadMetadata;
  };
  if (info.abi_version != abiVersion) {
    why = "kernel ABI version " + std::to_string(info.abi_version) +
          ", runtime speaks " + std::to_string(abiVersion);
    return LoadError::AbiMismatch;
  }
  if (info.struct_size != sizeof(attnc_kernel_info)) {
    why = "kernel metadata struct_size is " + std::to_string(info.struct_size) +
          " bytes, runtime expects " +
          std::to_string(sizeof(attnc_kernel_info));
    return LoadError::AbiMismatch;
  }
  if (!info.name)
    return bad("kernel name is null");
  if (!isIdentifier(info.name))
    return bad("kernel name '" + std::string(info.name) +
               "' is not a valid C identifier");

  const std::pair<const char *, int64_t> sizes[] = {
      {"d_model", info.d_model},
      {"heads", info.heads},
      {"kv_heads", info.kv_heads},
      {"head_dim", info.head_dim}};
  for (const auto &s : sizes) {
    if (s.second <= 0)
      return bad(std::string(s.first) + " must be positive, got " +
                 std::to_string(s.second));
    if (s.second > kMaxDim)
      return bad(std::string(s.first) + " is implausibly large (" +
                 std::to_string(s.second) + ")");
  }
  if (info.heads % info.kv_heads != 0)
    return bad("heads (" + std::to_string(info.heads) +
               ") is not a multiple of kv_heads (" +
               std::to_string(info.kv_heads) + ")");
  if (info.mask > ATTNC_MASK_SLIDING_WINDOW)
    return bad("unknown mask value " + std::to_string(info.mask));
  if (info.causal_align > 1)
    return bad("unknown causal_align value " +
               std::to_string(info.causal_align) +
               " (0 = bottom_right, 1 = top_left)");
  if (info.window < 0)
    return bad("window must be non-negative, got " +
               std::to_string(info.window));
  if (info.mask == ATTNC_MASK_SLIDING_WINDOW && info.window <= 0)
    return bad("sliding_window mask needs a positive window, got " +
               std::to_string(info.window));
  if (info.bias > 1)
    return bad("bias flag must be 0 or 1, got " + std::to_string(info.bias));
  if (info.out_proj > 1)
    return bad("out_proj flag must be 0 or 1, got " +
               std::to_string(info.out_proj));
  if (!std::isfinite(info.scale))
    return bad("scale is not finite");
  if (info.dtype != ATTNC_DTYPE_F32)
    return bad("unknown dtype value " + std::to_string(info.dtype));
  if (info.isa > ATTNC_ISA_MULTI)
    return bad("unknown isa value " + std::to_string(info.isa));
  if (info.weight_layout > ATTNC_LAYOUT_SEPARATE)
    return bad("unknown weight_layout value " +
               std::to_string(info.weight_layout));
  if (info.packed_floats <= 0)
    return bad("packed_floats must be positive, got " +
               std::to_string(info.packed_floats));
  if (info.max_seq_len < 0)
    return bad("max_seq_len must be non-negative, got " +
               std::to_string(info.max_seq_len));

  // The weights table must be exactly the storage tensors of this block.
  std::vector<TensorShape> expected = storageTensors(paramsFromInfo(info));
  if (info.num_weights != expected.size())
    return bad("weights table has " + std::to_string(info.num_weights) +
               " entries, expected " + std::to_string(expected.size()));
  if (info.num_weights > 0 && !info.weights)
    return bad("weights table is null");
  for (size_t i = 0; i < expected.size(); ++i) {
    const attnc_tensor_info &t = info.weights[i];
    const TensorShape &e = expected[i];
    std::string where = "weights[" + std::to_string(i) + "]";
    if (!t.name)
      return bad(where + " has a null name, expected '" + e.name + "'");
    if (e.name != t.name)
      return bad(where + " is named '" + t.name + "', expected '" + e.name +
                 "'");
    if (t.rank != e.shape.size())
      return bad(where + " ('" + e.name + "') has rank " +
                 std::to_string(t.rank) + ", expected " +
                 std::to_string(e.shape.size()));
    std::vector<int64_t> dims(t.dims, t.dims + t.rank);
    if (dims != e.shape || (t.rank == 1 && t.dims[1] != 1))
      return bad(where + " ('" + e.name + "') has dims " +
                 dimsString(t.rank == 1
                                ? std::vector<int64_t>{t.dims[0], t.dims[1]}
                                : dims) +
                 ", expected " + dimsString(e.shape));
  }
  why.clear();
  return LoadError::None;
}

} // namespace

std::string validateInfo(const attnc_kernel_info &info, uint32_t abiVersion) {
  std::string why;
  checkInfo(info, abiVersion, why);
  return why;
}

Kernel::Kernel(Kernel &&other) noexcept { *this = std::move(other); }

Kernel &Kernel::operator=(Kernel &&other) noexcept {
  if (this != &other) {
    std::swap(handle_, other.handle_);
    std::swap(info_, other.info_);
    std::swap(pack_, other.pack_);
    std::swap(wsSize_, other.wsSize_);
    std::swap(forward_, other.forward_);
  }
  return *this;
}

Kernel::~Kernel() {
  if (handle_)
    dlclose(handle_);
}

/// Empty when `path` is a complete 64-bit little-endian x86-64 ELF shared
/// object (headers, program and section tables, and loadable segments all
/// inside the file); otherwise the reason.
static std::string checkElfFile(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return std::strerror(errno);
  std::fseek(f, 0, SEEK_END);
  long size = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  std::vector<unsigned char> bytes(size > 0 ? static_cast<size_t>(size) : 0);
  size_t got = bytes.empty() ? 0 : std::fread(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  if (got != bytes.size())
    return "read error";
  Elf64_Ehdr eh;
  if (bytes.size() < sizeof(eh) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
    return "not an ELF file";
  std::memcpy(&eh, bytes.data(), sizeof(eh));
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_machine != EM_X86_64 || eh.e_type != ET_DYN)
    return "not an x86-64 ELF shared object";
  uint64_t n = bytes.size();
  auto inside = [n](uint64_t off, uint64_t len) { return off <= n && len <= n - off; };
  if (eh.e_phentsize != sizeof(Elf64_Phdr) ||
      !inside(eh.e_phoff, uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr)) ||
      (eh.e_shnum && !inside(eh.e_shoff, uint64_t(eh.e_shnum) * eh.e_shentsize)))
    return "truncated or corrupt ELF file (headers outside the file)";
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, bytes.data() + eh.e_phoff + i * sizeof(ph), sizeof(ph));
    if (ph.p_type == PT_LOAD && !inside(ph.p_offset, ph.p_filesz))
      return "truncated ELF file (segment " + std::to_string(i) +
             " ends past the end of the file)";
  }
  return "";
}

bool Kernel::load(const std::string &path, std::string &message, LoadError &err,
                  uint32_t abiVersion) {
  // Drop whatever was loaded before.
  *this = Kernel();

  auto fail = [&](LoadError e, const std::string &what) {
    err = e;
    message = path + ": " + what;
    if (handle_)
      dlclose(handle_);
    handle_ = nullptr;
    info_ = nullptr;
    pack_ = nullptr;
    wsSize_ = nullptr;
    forward_ = nullptr;
    return false;
  };

  // A bare file name would make dlopen search the library path; load the
  // file the caller named.
  std::string openPath =
      path.find('/') == std::string::npos ? "./" + path : path;
  // dlopen() maps a truncated or corrupt ELF file and dies with SIGBUS on
  // first touch; check that every header and segment lies inside the file.
  std::string elfProblem = checkElfFile(openPath);
  if (!elfProblem.empty())
    return fail(LoadError::OpenFailed,
                "cannot load kernel library: " + elfProblem);
  dlerror();
  handle_ = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char *e = dlerror();
    return fail(LoadError::OpenFailed,
                std::string("cannot load kernel library: ") +
                    (e ? e : "unknown dlopen error"));
  }

  auto query = reinterpret_cast<attnc_query_fn>(dlsym(handle_, "attnc_query"));
  if (!query)
    return fail(LoadError::NoQuery,
                "not an attnc kernel (no attnc_query symbol)");

  const attnc_kernel_info *info = query(abiVersion);
  if (!info) {
    // Ask without a limit only to name the version in the message; the
    // first two fields are stable across ABI versions.
    const attnc_kernel_info *any = query(UINT32_MAX);
    std::string theirs =
        any ? std::to_string(any->abi_version) : std::string("newer");
    return fail(LoadError::AbiTooNew,
                "kernel ABI version " + theirs + ", runtime speaks " +
                    std::to_string(abiVersion) +
                    " (the kernel was built by a newer attnc; rebuild it or "
                    "upgrade the runtime)");
  }

  std::string why;
  LoadError e = checkInfo(*info, abiVersion, why);
  if (e != LoadError::None)
    return fail(e, why);
  info_ = info;

  std::string name = info->name;
  auto sym = [&](const char *suffix) {
    return dlsym(handle_, (name + suffix).c_str());
  };
  pack_ = reinterpret_cast<attnc_pack_fn>(sym("_pack"));
  wsSize_ = reinterpret_cast<attnc_workspace_size_fn>(sym("_workspace_size"));
  forward_ = reinterpret_cast<attnc_forward_fn>(sym("_forward"));
  const char *missing = !pack_      ? "_pack"
                        : !wsSize_  ? "_workspace_size"
                        : !forward_ ? "_forward"
                                    : nullptr;
  if (missing)
    return fail(LoadError::MissingEntry,
                "missing entry point " + name + missing);

  err = LoadError::None;
  message.clear();
  return true;
}

int Kernel::pack(const std::vector<const float *> &weights,
                 std::vector<float> &packed) const {
  if (!pack_ || weights.size() != info_->num_weights)
    return ATTNC_ERR_NULL_ARG;
  for (const float *w : weights)
    if (!w)
      return ATTNC_ERR_NULL_ARG;
  std::vector<int64_t> counts;
  for (uint32_t i = 0; i < info_->num_weights; ++i)
    counts.push_back(info_->weights[i].dims[0] * info_->weights[i].dims[1]);
  packed.assign(static_cast<size_t>(info_->packed_floats), 0.0f);
  return pack_(weights.data(), counts.data(),
               static_cast<int64_t>(counts.size()), packed.data(),
               info_->packed_floats);
}

int64_t Kernel::workspaceSize(int64_t batch, int64_t seqLen) const {
  return wsSize_ ? wsSize_(batch, seqLen, seqLen) : -1;
}

uint32_t Kernel::selectedIsa() const {
  return info_ && info_->selected_isa ? info_->selected_isa() : ATTNC_ISA_NONE;
}

int Kernel::forward(const float *packed, const float *x, float *y,
                    int64_t batch, int64_t seqLen,
                    std::vector<unsigned char> &workspace, int threads,
                    attnc_parallel_for_fn hook, void *hookCtx) const {
  if (!forward_)
    return ATTNC_ERR_NULL_ARG;
  int64_t need = workspaceSize(batch, seqLen);
  if (need < 0)
    return ATTNC_ERR_BAD_SHAPE;
  if (workspace.size() < static_cast<uint64_t>(need))
    workspace.resize(static_cast<size_t>(need));
  attnc_forward_args a{};
  a.struct_size = sizeof(a);
  a.packed = packed;
  a.packed_floats = info_->packed_floats;
  a.x = x;
  a.x_floats = batch * seqLen * info_->d_model;
  a.y = y;
  a.y_floats = batch * seqLen * info_->out_dim;
  a.batch = batch;
  a.seq_len = seqLen;
  a.workspace = workspace.empty() ? nullptr : workspace.data();
  a.workspace_bytes = static_cast<int64_t>(workspace.size());
  a.parallel_for = hook;
  a.parallel_ctx = hookCtx;
  a.num_threads = threads;
  return forward_(&a);
}

} // namespace attnrt
