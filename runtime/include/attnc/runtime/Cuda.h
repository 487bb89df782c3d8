//===- Cuda.h - libattnrt: the CUDA driver, loaded at run time --*- C++ -*-===//
//
// What a host program needs to run a CUDA kernel library
// (ATTNC_FEATURE_CUDA, Kernel::forwardDevice): a device's primary context,
// device memory, copies and events. libattnrt never links CUDA nor includes
// cuda.h: the driver (libcuda.so.1) is dlopen()ed on first use, and a
// machine without it gets a clear error instead of a failed load.
//
// Status codes are the ABI's (abi.h): ATTNC_OK, ATTNC_ERR_NO_DRIVER
// ("no CUDA driver: libcuda.so.1: <dlerror>", or cuInit failed),
// ATTNC_ERR_NO_DEVICE ("no CUDA device (cuDeviceGetCount returned 0)") and
// ATTNC_ERR_DEVICE ("<call> failed: <cuGetErrorString>"). No exceptions.
//
// Every object works on the context current on the calling thread, which
// Device::open makes the device's primary context; destroy buffers and
// events before their Device.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_CUDA_H
#define ATTNC_RUNTIME_CUDA_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace attnrt {
namespace cuda {

/// Loads the CUDA driver (libcuda.so.1, or the file $ATTNC_LIBCUDA names:
/// tests point it elsewhere) and runs cuInit(0), once per process; later
/// calls return the first result. ATTNC_OK, else ATTNC_ERR_NO_DRIVER with
/// "no CUDA driver: libcuda.so.1: <dlerror text>" (or "no CUDA driver:
/// cuInit failed: ..."), or ATTNC_ERR_NO_DEVICE when cuInit finds no device.
int loadDriver(std::string &message);

/// One device, its primary context retained and made current on the
/// calling thread (released on destruction).
class Device {
public:
  Device() = default;
  ~Device();
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  /// Opens device `ordinal` (after loadDriver). ATTNC_OK, or the driver's
  /// status with the message: ATTNC_ERR_NO_DEVICE "no CUDA device
  /// (cuDeviceGetCount returned 0)" or "no CUDA device N (M present)";
  /// ATTNC_ERR_DEVICE "<call> failed: ...".
  int open(int ordinal, std::string &message);
  bool isOpen() const { return open_; }

  int ordinal() const { return ordinal_; }
  const std::string &name() const { return name_; }
  /// Compute capability: major, minor and 10*major + minor (sm_XY).
  int major() const { return major_; }
  int minor() const { return minor_; }
  int sm() const { return 10 * major_ + minor_; }
  /// The device's memory in bytes (cuDeviceTotalMem_v2).
  int64_t totalMemory() const { return totalMemory_; }

  /// Waits for everything queued on the context (cuCtxSynchronize); an
  /// error of a kernel that already ran (a bad address, a launch failure)
  /// shows here. False with "cuCtxSynchronize failed: ...".
  bool synchronize(std::string &message) const;

private:
  bool open_ = false;
  int ordinal_ = -1;
  int device_ = 0; // CUdevice
  std::string name_;
  int major_ = 0, minor_ = 0;
  int64_t totalMemory_ = 0;
};

/// Device memory (cuMemAlloc_v2), freed on destruction (cuMemFree_v2).
class Buffer {
public:
  Buffer() = default;
  ~Buffer() { reset(); }
  Buffer(Buffer &&other) noexcept;
  Buffer &operator=(Buffer &&other) noexcept;
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  /// `bytes` of device memory (0: none, a null pointer). `what` names the
  /// buffer in the message: "cuMemAlloc_v2 (N bytes for WHAT) failed: ...".
  bool allocate(size_t bytes, const char *what, std::string &message);
  void reset();

  void *get() const { return reinterpret_cast<void *>(ptr_); }
  float *floats() const { return reinterpret_cast<float *>(ptr_); }
  size_t size() const { return bytes_; }

  /// Host -> device (cuMemcpyHtoD_v2) of the first `bytes` (<= size()).
  bool upload(const void *src, size_t bytes, std::string &message);
  /// Device -> host (cuMemcpyDtoH_v2) of the first `bytes` (<= size()).
  bool download(void *dst, size_t bytes, std::string &message) const;
  /// Every byte set to `value` (cuMemsetD8_v2).
  bool fill(unsigned char value, std::string &message);

private:
  unsigned long long ptr_ = 0; // CUdeviceptr
  size_t bytes_ = 0;
};

/// A CUDA event (cuEventCreate), destroyed on destruction.
class Event {
public:
  Event() = default;
  ~Event();
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;

  bool create(std::string &message);
  /// Records the event on `stream` (a CUstream; null: the default stream).
  bool record(void *stream, std::string &message);
  bool synchronize(std::string &message);
  /// Milliseconds from `start` to this event, both recorded and complete.
  bool elapsedSince(const Event &start, float &ms, std::string &message) const;

private:
  void *event_ = nullptr; // CUevent
};

} // namespace cuda
} // namespace attnrt

#endif // ATTNC_RUNTIME_CUDA_H
