//===- NpyTests.cpp - .npy reader/writer unit tests -------------*- C++ -*-===//
//
// Round trips through a temporary file, header variants (versions 1.0-3.0,
// scalar and multi-dimensional shapes), and every rejection with its
// message. Files are crafted in memory; no Python needed.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Runtime.h"

#include <catch2/catch.hpp>

#include <csignal>
#include <atomic>
#include <chrono>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace attnrt;
using Catch::Matchers::Contains;

namespace {

/// A unique temporary file path, removed on destruction.
struct TempFile {
  std::string path;
  TempFile() {
    const char *dir = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(dir && *dir ? dir : "/tmp") + "/attnc_npy_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    int fd = mkstemp(buf.data());
    REQUIRE(fd >= 0);
    close(fd);
    path = buf.data();
  }
  ~TempFile() { std::remove(path.c_str()); }
};

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Little-endian float32 payload.
std::string payload(const std::vector<float> &v) {
  std::string s;
  for (float f : v) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    for (int i = 0; i < 4; ++i)
      s += char((bits >> (8 * i)) & 0xff);
  }
  return s;
}

/// An .npy image with the given header dict text and version.
std::string npyImage(const std::string &dict, const std::string &data,
                     int major = 1) {
  std::string header = dict;
  size_t lenBytes = major == 1 ? 2 : 4;
  size_t total = 8 + lenBytes + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::string s = "\x93NUMPY";
  s += char(major);
  s += char(0);
  for (size_t i = 0; i < lenBytes; ++i)
    s += char((header.size() >> (8 * i)) & 0xff);
  return s + header + data;
}

std::string dictFor(const std::string &shape, const std::string &descr = "<f4",
                    const std::string &fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran +
         ", 'shape': " + shape + ", }";
}

} // namespace

TEST_CASE("npy: write then read round-trips shape and data", "[npy]") {
  TempFile tmp;
  std::vector<float> data = {1.5f, -2.0f, 0.0f, 3.25f, 1e-30f, -7e20f};
  std::string msg;
  REQUIRE(writeNpy(tmp.path, {2, 3}, data.data(), msg));
  CHECK(msg.empty());
  NpyArray arr;
  REQUIRE(readNpy(tmp.path, arr, msg));
  CHECK(arr.shape == std::vector<int64_t>{2, 3});
  CHECK(arr.data == data);
}

TEST_CASE("npy: written header is version 1.0 padded to 64 bytes", "[npy]") {
  TempFile tmp;
  std::vector<float> data(24, 1.0f);
  std::string msg;
  REQUIRE(writeNpy(tmp.path, {2, 3, 4}, data.data(), msg));
  std::string bytes = slurp(tmp.path);
  REQUIRE(bytes.size() > 10);
  CHECK(bytes.compare(0, 6, "\x93NUMPY") == 0);
  CHECK(bytes[6] == 1);
  CHECK(bytes[7] == 0);
  size_t hlen =
      size_t((unsigned char)bytes[8]) | size_t((unsigned char)bytes[9]) << 8;
  CHECK((10 + hlen) % 64 == 0);
  CHECK(bytes[10 + hlen - 1] == '\n');
  CHECK_THAT(bytes.substr(10, hlen), Contains("'shape': (2, 3, 4)"));
  CHECK_THAT(bytes.substr(10, hlen), Contains("'descr': '<f4'"));
  CHECK(bytes.size() == 10 + hlen + 24 * 4);
}

TEST_CASE("npy: scalar and 1-d shapes round-trip", "[npy]") {
  std::string msg;
  NpyArray arr;
  {
    TempFile tmp;
    float one = 42.0f;
    REQUIRE(writeNpy(tmp.path, {}, &one, msg));
    CHECK_THAT(slurp(tmp.path), Contains("'shape': ()"));
    REQUIRE(readNpy(tmp.path, arr, msg));
    CHECK(arr.shape.empty());
    REQUIRE(arr.data.size() == 1);
    CHECK(arr.data[0] == 42.0f);
  }
  {
    TempFile tmp;
    std::vector<float> v = {1, 2, 3, 4, 5};
    REQUIRE(writeNpy(tmp.path, {5}, v.data(), msg));
    CHECK_THAT(slurp(tmp.path), Contains("'shape': (5,)"));
    REQUIRE(readNpy(tmp.path, arr, msg));
    CHECK(arr.shape == std::vector<int64_t>{5});
    CHECK(arr.data == v);
  }
  {
    TempFile tmp;
    REQUIRE(writeNpy(tmp.path, {0, 3}, nullptr, msg));
    REQUIRE(readNpy(tmp.path, arr, msg));
    CHECK(arr.shape == std::vector<int64_t>{0, 3});
    CHECK(arr.data.empty());
  }
}

TEST_CASE("npy: versions 2.0 and 3.0 headers parse", "[npy]") {
  std::vector<float> v = {1, 2, 3, 4};
  for (int major : {1, 2, 3}) {
    NpyArray arr;
    std::string msg;
    REQUIRE(parseNpy(npyImage(dictFor("(2, 2)"), payload(v), major), "m.npy",
                     arr, msg));
    CHECK(arr.shape == std::vector<int64_t>{2, 2});
    CHECK(arr.data == v);
  }
}

TEST_CASE("npy: header key order and spacing are free", "[npy]") {
  NpyArray arr;
  std::string msg;
  std::string dict =
      "{\"shape\":(3,),\"fortran_order\":False,\"descr\":\"<f4\"}";
  REQUIRE(parseNpy(npyImage(dict, payload({7, 8, 9})), "k.npy", arr, msg));
  CHECK(arr.shape == std::vector<int64_t>{3});
  CHECK(arr.data == std::vector<float>{7, 8, 9});
}

TEST_CASE("npy: bad magic is rejected naming the file", "[npy]") {
  NpyArray arr;
  std::string msg;
  std::string img = npyImage(dictFor("(1,)"), payload({1}));
  img[1] = 'X';
  CHECK_FALSE(parseNpy(img, "bad.npy", arr, msg));
  CHECK_THAT(msg, Contains("bad.npy"));
  CHECK_THAT(msg, Contains("bad magic"));
  CHECK_FALSE(parseNpy("hello", "short.npy", arr, msg));
  CHECK_THAT(msg, Contains("short.npy") && Contains("bad magic"));
}

TEST_CASE("npy: unsupported version is rejected", "[npy]") {
  NpyArray arr;
  std::string msg;
  std::string img = npyImage(dictFor("(1,)"), payload({1}));
  img[6] = 4;
  CHECK_FALSE(parseNpy(img, "v4.npy", arr, msg));
  CHECK_THAT(msg, Contains("v4.npy") && Contains("version 4.0"));
}

TEST_CASE("npy: other dtypes are rejected with expected/found", "[npy]") {
  NpyArray arr;
  std::string msg;
  for (const char *descr : {"<i4", "|O", "<f16", "<c8", "|b1"}) {
    CHECK_FALSE(parseNpy(npyImage(dictFor("(1,)", descr), payload({1, 2})),
                         "d.npy", arr, msg));
    CHECK_THAT(msg, Contains("d.npy"));
    CHECK_THAT(msg, Contains(std::string("expected float32 ('<f4'; float16, float64 and "
                                         "ml_dtypes' bfloat16, saved as '|V2', are "
                                         "converted), found '") +
                             descr + "'"));
  }
  // A bfloat16 array saved through ml_dtypes: 2-byte raw values ('|V2',
  // '<V2'), read as bfloat16 bits (1.5 = 0x3FC0, -2 = 0xC000), noted by
  // the caller through NpyArray::dtype; other raw widths are refused.
  for (const char *descr : {"|V2", "<V2"}) {
    const std::string bits("\xC0\x3F\x00\xC0", 4);
    REQUIRE(parseNpy(npyImage(dictFor("(2,)", descr), bits), "bf.npy", arr, msg));
    CHECK(arr.dtype == descr);
    CHECK(arr.data == std::vector<float>{1.5f, -2.0f});
  }
  CHECK_FALSE(parseNpy(npyImage(dictFor("(1,)", "|V4"), std::string(4, '\0')),
                       "v4.npy", arr, msg));
  CHECK_THAT(msg, Contains("found '|V4'"));
  std::string structured =
      "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }";
  CHECK_FALSE(parseNpy(npyImage(structured, payload({1})), "s.npy", arr, msg));
  CHECK_THAT(msg, Contains("structured dtype"));
}

TEST_CASE("npy: float16, float64 and big-endian float32 are converted", "[npy]") {
  NpyArray arr;
  std::string msg;
  // float64 little-endian: 1.5, -2.25, 1e-3 (rounded to float32).
  std::string f8;
  for (double d : {1.5, -2.25, 1e-3}) {
    char b[8];
    std::memcpy(b, &d, 8);
    f8.append(b, 8);
  }
  REQUIRE(parseNpy(npyImage(dictFor("(3,)", "<f8"), f8), "d.npy", arr, msg));
  CHECK(arr.dtype == "<f8");
  REQUIRE(arr.data.size() == 3);
  CHECK(arr.data[0] == 1.5f);
  CHECK(arr.data[1] == -2.25f);
  CHECK(arr.data[2] == static_cast<float>(1e-3));
  // float16: 0x3c00 = 1, 0xc000 = -2, 0x0001 = the smallest subnormal.
  std::string f2 = std::string("\x00\x3c\x00\xc0\x01\x00", 6);
  REQUIRE(parseNpy(npyImage(dictFor("(3,)", "<f2"), f2), "h.npy", arr, msg));
  CHECK(arr.dtype == "<f2");
  CHECK(arr.data == std::vector<float>{1.0f, -2.0f, 5.9604644775390625e-08f});
  // Big-endian float32 2.0: 40 00 00 00.
  REQUIRE(parseNpy(npyImage(dictFor("(1,)", ">f4"), std::string("\x40\0\0\0", 4)),
                   "b.npy", arr, msg));
  CHECK(arr.dtype == ">f4");
  CHECK(arr.data == std::vector<float>{2.0f});
  // Little-endian float32 is not a conversion.
  REQUIRE(parseNpy(npyImage(dictFor("(1,)", "<f4"), payload({3})), "f.npy", arr, msg));
  CHECK(arr.dtype.empty());
  // A float64 beyond float32's range is an error naming the element.
  std::string big = f8;
  double huge = 1e300;
  std::memcpy(&big[8], &huge, 8);
  CHECK_FALSE(parseNpy(npyImage(dictFor("(3,)", "<f8"), big), "x.npy", arr, msg));
  CHECK_THAT(msg, Contains("x.npy: element 1 is a float64 beyond float32's range"));
  // The data size follows the item size: 3 float64 are 24 bytes.
  CHECK_FALSE(parseNpy(npyImage(dictFor("(3,)", "<f8"), f8.substr(0, 12)), "t.npy",
                       arr, msg));
  CHECK_THAT(msg, Contains("needs 24 bytes"));
}

TEST_CASE("npy: Fortran order is rejected", "[npy]") {
  NpyArray arr;
  std::string msg;
  CHECK_FALSE(parseNpy(
      npyImage(dictFor("(2, 2)", "<f4", "True"), payload({1, 2, 3, 4})),
      "f.npy", arr, msg));
  CHECK_THAT(msg, Contains("f.npy") && Contains("Fortran"));
}

TEST_CASE("npy: truncated header and data are rejected", "[npy]") {
  NpyArray arr;
  std::string msg;
  std::string img = npyImage(dictFor("(2, 3)"), payload({1, 2, 3, 4, 5, 6}));
  // Cut inside the header.
  CHECK_FALSE(parseNpy(img.substr(0, 30), "h.npy", arr, msg));
  CHECK_THAT(msg, Contains("h.npy") && Contains("truncated header"));
  // Cut inside the preamble.
  CHECK_FALSE(parseNpy(img.substr(0, 9), "p.npy", arr, msg));
  CHECK_THAT(msg, Contains("truncated header"));
  // Cut inside the data.
  CHECK_FALSE(parseNpy(img.substr(0, img.size() - 3), "t.npy", arr, msg));
  CHECK_THAT(msg, Contains("t.npy") && Contains("truncated data") &&
                      Contains("needs 24 bytes, found 21"));
}

TEST_CASE("npy: trailing bytes are a size mismatch", "[npy]") {
  NpyArray arr;
  std::string msg;
  std::string img = npyImage(dictFor("(2,)"), payload({1, 2, 3}));
  CHECK_FALSE(parseNpy(img, "x.npy", arr, msg));
  CHECK_THAT(msg, Contains("x.npy") && Contains("size mismatch") &&
                      Contains("trailing"));
}

TEST_CASE("npy: malformed shapes and headers are rejected", "[npy]") {
  NpyArray arr;
  std::string msg;
  for (const char *shape : {"(2, -1)", "(a,)", "[2, 3]", "(2, 3", "(2 3)"}) {
    INFO(shape);
    CHECK_FALSE(
        parseNpy(npyImage(dictFor(shape), payload({1})), "s.npy", arr, msg));
    CHECK_THAT(msg, Contains("s.npy") && Contains("shape"));
  }
  CHECK_FALSE(
      parseNpy(npyImage("{'descr': '<f4', 'shape': (1,), }", payload({1})),
               "m.npy", arr, msg));
  CHECK_THAT(msg, Contains("missing key 'fortran_order'"));
  CHECK_FALSE(
      parseNpy(npyImage("not a dict", payload({1})), "n.npy", arr, msg));
  CHECK_THAT(msg, Contains("malformed header"));
  CHECK_FALSE(parseNpy(npyImage(dictFor("(99999999999999999999,)"), ""),
                       "o.npy", arr, msg));
  CHECK_THAT(msg, Contains("shape"));
}

TEST_CASE("npy: readNpy on a missing file names it", "[npy]") {
  NpyArray arr;
  std::string msg;
  CHECK_FALSE(readNpy("/nonexistent/dir/w.npy", arr, msg));
  CHECK_THAT(msg,
             Contains("/nonexistent/dir/w.npy") && Contains("cannot open"));
  CHECK_FALSE(writeNpy("/nonexistent/dir/w.npy", {1},
                       std::vector<float>{1}.data(), msg));
  CHECK_THAT(msg, Contains("/nonexistent/dir/w.npy"));
}

namespace {

/// A FIFO fed by a thread with `bytes` (then closed), for stream reads.
struct Fifo {
  std::string path;
  std::thread writer;
  std::atomic<bool> done{false};
  explicit Fifo(std::string bytes) {
    TempFile t; // a unique name
    path = t.path + ".fifo";
    REQUIRE(mkfifo(path.c_str(), 0600) == 0);
    std::signal(SIGPIPE, SIG_IGN); // the reader may stop early
    writer = std::thread([this, b = std::move(bytes)] {
      int fd = open(path.c_str(), O_WRONLY);
      size_t off = 0;
      while (fd >= 0 && off < b.size()) {
        ssize_t n = write(fd, b.data() + off, b.size() - off);
        if (n <= 0)
          break; // EPIPE: the reader closed
        off += size_t(n);
      }
      if (fd >= 0)
        close(fd);
      done = true;
    });
  }
  ~Fifo() {
    // Hold a read end open (so the writer's open() returns whenever it
    // runs) and drain it until the writer is done.
    int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK);
    char buf[4096];
    while (!done)
      if (fd < 0 || read(fd, buf, sizeof buf) <= 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (fd >= 0)
      close(fd);
    writer.join();
    std::remove(path.c_str());
  }
};

} // namespace

TEST_CASE("npy: FIFOs and devices are refused, never read or waited on",
          "[npy]") {
  // Only regular files (attnc/runtime/Files.h): a FIFO without a writer
  // would block open() forever, a device could stream without end.
  NpyArray arr;
  std::string msg;
  SECTION("/dev/zero") {
    CHECK_FALSE(readNpy("/dev/zero", arr, msg));
    CHECK(msg == "/dev/zero: is a character device, not a regular file");
  }
  SECTION("a FIFO with a writer") {
    Fifo f(npyImage(dictFor("(2, 2)"), payload({1, 2, 3, 4})));
    CHECK_FALSE(readNpy(f.path, arr, msg));
    CHECK(msg == f.path + ": is a FIFO, not a regular file");
  }
  SECTION("a FIFO without a writer") {
    TempFile t;
    std::string path = t.path + ".fifo";
    REQUIRE(mkfifo(path.c_str(), 0600) == 0);
    CHECK_FALSE(readNpy(path, arr, msg));
    CHECK(msg == path + ": is a FIFO, not a regular file");
    std::remove(path.c_str());
  }
}

TEST_CASE("npy: header length is bounded and directories are refused",
          "[npy]") {
  NpyArray arr;
  std::string msg;
  // Version 2.0 header claiming 2^31 bytes.
  std::string img = "\x93NUMPY";
  img += char(2);
  img += char(0);
  img += std::string("\x00\x00\x00\x80", 4);
  img += "{'descr': '<f4'";
  CHECK_FALSE(parseNpy(img, "big.npy", arr, msg));
  CHECK(msg == "big.npy: header length 2147483648 bytes is implausible (at "
               "most 1048576 accepted)");
  // A regular file whose declared data is larger than the file: refused
  // from the file size, before reading.
  TempFile t;
  {
    std::ofstream out(t.path, std::ios::binary);
    out << npyImage(dictFor("(1099511627776,)"), payload({1}));
  }
  CHECK_FALSE(readNpy(t.path, arr, msg));
  CHECK_THAT(msg, Contains("truncated data") &&
                      Contains("needs 4398046511104 bytes, found 4"));
  const char *dir = std::getenv("TMPDIR");
  std::string d = dir && *dir ? dir : "/tmp";
  CHECK_FALSE(readNpy(d, arr, msg));
  CHECK(msg == d + ": is a directory, not a regular file");
}
