//===- Cuda.cpp - the CUDA driver through dlopen ----------------*- C++ -*-===//
//
// libcuda.so.1 (or $ATTNC_LIBCUDA) is opened on first use and the driver
// entry points are looked up by their versioned names (the ones cuda.h's
// macros select: cuMemAlloc -> cuMemAlloc_v2, ...). The prototypes, over
// plain C types, and the loader are cuda_driver.def and cuda_driver.inc,
// which the CUDA kernels' glue embeds too: the runtime builds without the
// CUDA toolkit and runs without a driver.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Cuda.h"
#include "attnc/runtime/abi.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <utility>

#include "attnc/runtime/cuda_driver.inc"

namespace attnrt {
namespace cuda {

namespace {

// The driver's types, as cuda.h declares them (LP64).
using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
using CUdeviceptr = unsigned long long;
using CUevent = void *;
using CUstream = void *;

constexpr CUresult kSuccess = ATTNC_CU_SUCCESS;
constexpr CUresult kNoDevice = ATTNC_CU_ERROR_NO_DEVICE;
constexpr int kAttrMajor = ATTNC_CU_ATTR_CC_MAJOR;
constexpr int kAttrMinor = ATTNC_CU_ATTR_CC_MINOR;

/// The driver's entry points (cuda_driver.def, loaded by
/// cuda_driver.inc: the CUDA kernels' glue reads the same two files).
attnc_cuda_driver g_driver;
int g_status = -1; // loadDriver's result once it ran
std::string g_message;
std::once_flag g_once;

/// The text of the errors a driver that cannot describe itself (the
/// toolkit's stub library) returns; NULL for others.
const char *fallbackText(CUresult rc) {
  switch (rc) {
  case 2: return "out of memory";
  case 3: return "initialization error";
  case 34: return "CUDA driver is a stub library";
  case 35: return "CUDA driver version is insufficient for CUDA runtime version";
  case 100: return "no CUDA-capable device is detected";
  default: return nullptr;
  }
}

/// "CALL failed: <cuGetErrorString>" ("CUDA error N" when the driver
/// has no text for it).
std::string failure(const char *call, CUresult rc) {
  const char *text = nullptr;
  if (!g_driver.cuGetErrorString ||
      g_driver.cuGetErrorString(rc, &text) != kSuccess || !text)
    text = fallbackText(rc);
  return std::string(call) + " failed: " +
         (text ? std::string(text) + " (CUDA error " + std::to_string(rc) + ")"
               : "CUDA error " + std::to_string(rc));
}

void load() {
  const char *env = std::getenv("ATTNC_LIBCUDA");
  const std::string lib = env && *env ? env : "libcuda.so.1";
  auto noDriver = [&](std::string why) {
    g_status = ATTNC_ERR_NO_DRIVER;
    g_message = "no CUDA driver: " + why;
  };
  dlerror();
  // Kept open for the life of the process (kernels and contexts outlive
  // any one caller).
  attnc_cuda_driver d{};
  const char *missing = nullptr;
  void *h = attnc_cuda_driver_open(lib.c_str(), &d, &missing);
  if (missing)
    return noDriver(lib + " has no " + missing + " (a driver too old, or "
                                                 "not the CUDA driver)");
  if (!h) {
    const char *e = dlerror();
    std::string why = e ? e : "cannot be loaded";
    // dlerror() usually starts with the file's name already.
    if (why.compare(0, lib.size(), lib) != 0)
      why = lib + ": " + why;
    return noDriver(why);
  }
  g_driver = d;
  CUresult rc = g_driver.cuInit(0);
  if (rc == kNoDevice) {
    g_status = ATTNC_ERR_NO_DEVICE;
    g_message = "no CUDA device (" + failure("cuInit", rc) + ")";
    return;
  }
  if (rc != kSuccess)
    return noDriver(failure("cuInit", rc));
  g_status = ATTNC_OK;
  g_message.clear();
}

bool loaded() { return g_status == ATTNC_OK; }

bool check(CUresult rc, const char *call, std::string &message) {
  if (rc == kSuccess)
    return true;
  message = failure(call, rc);
  return false;
}

bool notLoaded(std::string &message) {
  message = "the CUDA driver is not loaded (cuda::loadDriver)";
  return false;
}

} // namespace

int loadDriver(std::string &message) {
  std::call_once(g_once, load);
  message = g_message;
  return g_status;
}

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

Device::~Device() {
  if (open_) {
    g_driver.cuCtxSetCurrent(nullptr);
    g_driver.cuDevicePrimaryCtxRelease_v2(device_);
  }
}

int Device::open(int ordinal, std::string &message) {
  if (open_) {
    message = "device already open";
    return ATTNC_ERR_DEVICE;
  }
  int status = loadDriver(message);
  if (status != ATTNC_OK)
    return status;
  int count = 0;
  if (!check(g_driver.cuDeviceGetCount(&count), "cuDeviceGetCount", message))
    return ATTNC_ERR_DEVICE;
  if (count <= 0) {
    message = "no CUDA device (cuDeviceGetCount returned " +
              std::to_string(count) + ")";
    return ATTNC_ERR_NO_DEVICE;
  }
  if (ordinal < 0 || ordinal >= count) {
    message = "no CUDA device " + std::to_string(ordinal) + " (" +
              std::to_string(count) + " present)";
    return ATTNC_ERR_NO_DEVICE;
  }
  CUdevice dev = 0;
  if (!check(g_driver.cuDeviceGet(&dev, ordinal), "cuDeviceGet", message))
    return ATTNC_ERR_DEVICE;
  char name[256] = {};
  int major = 0, minor = 0;
  size_t total = 0;
  if (!check(g_driver.cuDeviceGetName(name, int(sizeof name) - 1, dev),
             "cuDeviceGetName", message) ||
      !check(g_driver.cuDeviceGetAttribute(&major, kAttrMajor, dev),
             "cuDeviceGetAttribute", message) ||
      !check(g_driver.cuDeviceGetAttribute(&minor, kAttrMinor, dev),
             "cuDeviceGetAttribute", message) ||
      !check(g_driver.cuDeviceTotalMem_v2(&total, dev), "cuDeviceTotalMem_v2",
             message))
    return ATTNC_ERR_DEVICE;
  CUcontext ctx = nullptr;
  if (!check(g_driver.cuDevicePrimaryCtxRetain(&ctx, dev),
             "cuDevicePrimaryCtxRetain", message))
    return ATTNC_ERR_DEVICE;
  if (!check(g_driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent", message)) {
    g_driver.cuDevicePrimaryCtxRelease_v2(dev);
    return ATTNC_ERR_DEVICE;
  }
  open_ = true;
  ordinal_ = ordinal;
  device_ = dev;
  name_ = name;
  major_ = major;
  minor_ = minor;
  totalMemory_ = total > size_t(INT64_MAX) ? INT64_MAX : int64_t(total);
  message.clear();
  return ATTNC_OK;
}

bool Device::synchronize(std::string &message) const {
  if (!open_) {
    message = "no CUDA device open";
    return false;
  }
  return check(g_driver.cuCtxSynchronize(), "cuCtxSynchronize", message);
}

//===----------------------------------------------------------------------===//
// Buffer
//===----------------------------------------------------------------------===//

Buffer::Buffer(Buffer &&other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

Buffer &Buffer::operator=(Buffer &&other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void Buffer::reset() {
  if (ptr_ && loaded())
    g_driver.cuMemFree_v2(ptr_);
  ptr_ = 0;
  bytes_ = 0;
}

bool Buffer::allocate(size_t bytes, const char *what, std::string &message) {
  reset();
  if (!loaded())
    return notLoaded(message);
  if (bytes == 0)
    return true;
  CUdeviceptr p = 0;
  CUresult rc = g_driver.cuMemAlloc_v2(&p, bytes);
  if (rc != kSuccess) {
    message = failure(("cuMemAlloc_v2 (" + std::to_string(bytes) +
                       " bytes for " + what + ")")
                          .c_str(),
                      rc);
    return false;
  }
  ptr_ = p;
  bytes_ = bytes;
  return true;
}

bool Buffer::upload(const void *src, size_t bytes, std::string &message) {
  if (!loaded())
    return notLoaded(message);
  if (bytes > bytes_) {
    message = "cuMemcpyHtoD_v2: " + std::to_string(bytes) +
              " bytes into a buffer of " + std::to_string(bytes_);
    return false;
  }
  return bytes == 0 ||
         check(g_driver.cuMemcpyHtoD_v2(ptr_, src, bytes), "cuMemcpyHtoD_v2",
               message);
}

bool Buffer::download(void *dst, size_t bytes, std::string &message) const {
  if (!loaded())
    return notLoaded(message);
  if (bytes > bytes_) {
    message = "cuMemcpyDtoH_v2: " + std::to_string(bytes) +
              " bytes out of a buffer of " + std::to_string(bytes_);
    return false;
  }
  return bytes == 0 ||
         check(g_driver.cuMemcpyDtoH_v2(dst, ptr_, bytes), "cuMemcpyDtoH_v2",
               message);
}

bool Buffer::fill(unsigned char value, std::string &message) {
  if (!loaded())
    return notLoaded(message);
  return bytes_ == 0 || check(g_driver.cuMemsetD8_v2(ptr_, value, bytes_),
                              "cuMemsetD8_v2", message);
}

//===----------------------------------------------------------------------===//
// Event
//===----------------------------------------------------------------------===//

Event::~Event() {
  if (event_ && loaded())
    g_driver.cuEventDestroy_v2(event_);
}

bool Event::create(std::string &message) {
  if (!loaded())
    return notLoaded(message);
  if (event_)
    return true;
  return check(g_driver.cuEventCreate(&event_, 0 /* CU_EVENT_DEFAULT */),
               "cuEventCreate", message);
}

bool Event::record(void *stream, std::string &message) {
  if (!event_ && !create(message))
    return false;
  return check(g_driver.cuEventRecord(event_, stream), "cuEventRecord",
               message);
}

bool Event::synchronize(std::string &message) {
  if (!event_) {
    message = "cuEventSynchronize: the event was never recorded";
    return false;
  }
  return check(g_driver.cuEventSynchronize(event_), "cuEventSynchronize",
               message);
}

bool Event::elapsedSince(const Event &start, float &ms,
                         std::string &message) const {
  if (!event_ || !start.event_) {
    message = "cuEventElapsedTime: an event was never recorded";
    return false;
  }
  return check(g_driver.cuEventElapsedTime(&ms, start.event_, event_),
               "cuEventElapsedTime", message);
}

} // namespace cuda
} // namespace attnrt
