//===- WeightsTests.cpp - weights.h: checkpoint formats and names -*- C++ -*-===//
//
// Files are written here by small C++ writers (no Python): .npy with any
// float dtype, zip archives with stored and deflate (zlib) entries as
// np.savez writes them, safetensors (JSON header + raw bytes). Each format
// is read back through attnrt_weights_open with a layer prefix and the
// Hugging Face names, and each kind of damage (truncation, bad JSON,
// offsets out of range or overlapping, wrong dtype or shape, missing and
// duplicate tensors, CRC) must give its error code and a message naming
// the file and the tensor. Every truncation of a valid file is an error,
// never a crash.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/weights.h"

#include <catch2/catch.hpp>

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using Catch::Matchers::Contains;

namespace {

/// A fresh temporary directory, removed (one level deep) at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/attnc_weights_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::string cmd = "rm -rf '" + path + "'";
    if (std::system(cmd.c_str()) != 0)
      std::fprintf(stderr, "could not remove %s\n", path.c_str());
  }
  std::string operator/(const std::string &n) const { return path + "/" + n; }
};

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  REQUIRE(out.good());
}

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void put(std::string &s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    s += char((v >> (8 * i)) & 0xff);
}

/// A tensor to write: values (as doubles) and a shape.
struct T {
  std::vector<int64_t> shape;
  std::vector<double> values;
};

/// Deterministic values, distinct per tensor (seed), exact in bf16.
T tensor(std::vector<int64_t> shape, int seed) {
  T t{shape, {}};
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  for (int64_t i = 0; i < n; ++i)
    t.values.push_back(double((i * 7 + seed * 13) % 31 - 15) / 8.0);
  return t;
}

/// Raw little-endian bytes of `t` as dtype "F32", "F16", "BF16", "F64",
/// "I64" (the values are small multiples of 1/8, exact in every one).
std::string raw(const T &t, const std::string &dtype) {
  std::string s;
  for (double v : t.values) {
    float f = float(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if (dtype == "F32") {
      put(s, bits, 4);
    } else if (dtype == "BF16") {
      put(s, bits >> 16, 2);
    } else if (dtype == "F16") { // normal values only
      uint32_t sign = (bits >> 16) & 0x8000, exp = (bits >> 23) & 0xff;
      uint32_t h = v == 0 ? sign : sign | ((exp - 127 + 15) << 10) | ((bits >> 13) & 0x3ff);
      put(s, h, 2);
    } else if (dtype == "F64") {
      uint64_t b;
      std::memcpy(&b, &v, 8);
      put(s, b, 8);
    } else {
      put(s, uint64_t(int64_t(v)), 8);
    }
  }
  return s;
}

std::string shapeText(const std::vector<int64_t> &shape, bool python) {
  std::string s = python ? "(" : "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  if (python && shape.size() == 1)
    s += ",";
  return s + (python ? ")" : "]");
}

/// A .npy image (version 1.0) with the numpy descr of `dtype`.
std::string npy(const T &t, const std::string &dtype = "F32") {
  std::string descr = dtype == "F32" ? "<f4" : dtype == "F16" ? "<f2"
                      : dtype == "F64" ? "<f8" : "<i8";
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " +
                     shapeText(t.shape, true) + ", }";
  while ((10 + dict.size() + 1) % 64)
    dict += ' ';
  dict += '\n';
  std::string s = "\x93NUMPY";
  s += char(1);
  s += char(0);
  put(s, dict.size(), 2);
  return s + dict + raw(t, dtype);
}

/// A zip archive of (name, bytes) entries, stored or deflated, as
/// np.savez / np.savez_compressed write them; with zip64, every size and
/// offset of the central directory and its end record is in the zip64
/// records (0xffffffff / 0xffff in the classic fields).
std::string zip(const std::vector<std::pair<std::string, std::string>> &entries,
                bool deflate, bool zip64 = false) {
  std::string out, cd;
  for (const auto &e : entries) {
    std::string data = e.second;
    uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef *>(data.data()),
                                  uInt(data.size())));
    if (deflate) {
      z_stream z{};
      REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
      std::string c(deflateBound(&z, uLong(data.size())), '\0');
      z.next_in = reinterpret_cast<Bytef *>(&data[0]);
      z.avail_in = uInt(data.size());
      z.next_out = reinterpret_cast<Bytef *>(&c[0]);
      z.avail_out = uInt(c.size());
      REQUIRE(::deflate(&z, Z_FINISH) == Z_STREAM_END);
      c.resize(z.total_out);
      deflateEnd(&z);
      data = c;
    }
    uint64_t local = out.size();
    std::string common;
    put(common, 20, 2);               // version needed
    put(common, 0, 2);                // flags
    put(common, deflate ? 8 : 0, 2);  // method
    put(common, 0, 4);                // time, date
    put(common, crc, 4);
    put(common, data.size(), 4);
    put(common, e.second.size(), 4);
    put(common, e.first.size(), 2);
    put(common, 0, 2);                // extra length
    out += "PK\x03\x04" + common + e.first + data;
    cd += "PK\x01\x02";
    put(cd, 45, 2); // version made by
    if (zip64) {
      std::string c64;
      put(c64, 45, 2);
      put(c64, 0, 2);
      put(c64, deflate ? 8 : 0, 2);
      put(c64, 0, 4);
      put(c64, crc, 4);
      put(c64, 0xffffffffu, 4);
      put(c64, 0xffffffffu, 4);
      put(c64, e.first.size(), 2);
      put(c64, 28, 2); // extra: id 1, 24 bytes
      cd += c64;
    } else {
      cd += common;
    }
    put(cd, 0, 2);  // comment length
    put(cd, 0, 2);  // disk
    put(cd, 0, 2);  // internal attributes
    put(cd, 0, 4);  // external attributes
    put(cd, zip64 ? 0xffffffffu : local, 4);
    cd += e.first;
    if (zip64) { // usize, csize, local header offset
      put(cd, 1, 2);
      put(cd, 24, 2);
      put(cd, e.second.size(), 8);
      put(cd, data.size(), 8);
      put(cd, local, 8);
    }
  }
  uint64_t cdOff = out.size();
  out += cd;
  if (zip64) {
    uint64_t eocd64 = out.size();
    out += "PK\x06\x06";
    put(out, 44, 8);
    put(out, 45, 2);
    put(out, 45, 2);
    put(out, 0, 4);
    put(out, 0, 4);
    put(out, entries.size(), 8);
    put(out, entries.size(), 8);
    put(out, cd.size(), 8);
    put(out, cdOff, 8);
    out += "PK\x06\x07";
    put(out, 0, 4);
    put(out, eocd64, 8);
    put(out, 1, 4);
  }
  out += "PK\x05\x06";
  put(out, 0, 4);
  put(out, zip64 ? 0xffff : entries.size(), 2);
  put(out, zip64 ? 0xffff : entries.size(), 2);
  put(out, zip64 ? 0xffffffffu : cd.size(), 4);
  put(out, zip64 ? 0xffffffffu : cdOff, 4);
  put(out, 0, 2);
  return out;
}

/// A safetensors image: header JSON built from (name, dtype, tensor), data
/// packed in order; `header` overrides the generated JSON when not empty.
std::string safetensors(const std::vector<std::tuple<std::string, std::string, T>> &ts,
                        std::string header = "") {
  std::string data, json = "{\"__metadata__\": {\"format\": \"pt\"}";
  for (const auto &t : ts) {
    std::string bytes = raw(std::get<2>(t), std::get<1>(t));
    json += ", \"" + std::get<0>(t) + "\": {\"dtype\": \"" + std::get<1>(t) +
            "\", \"shape\": " + shapeText(std::get<2>(t).shape, false) +
            ", \"data_offsets\": [" + std::to_string(data.size()) + ", " +
            std::to_string(data.size() + bytes.size()) + "]}";
    data += bytes;
  }
  json += "}";
  if (!header.empty())
    json = header;
  while (json.size() % 8)
    json += ' ';
  std::string s;
  put(s, json.size(), 8);
  return s + json + data;
}

/// A hand-made metadata record: what a kernel's NAME_query returns.
struct Info {
  std::vector<std::string> names;
  std::vector<attnc_tensor_info> tensors;
  attnc_kernel_info info{};
  Info(uint32_t layout, int64_t d, int64_t kvWidth, bool bias) {
    info.abi_version = ATTNC_ABI_VERSION;
    info.struct_size = sizeof(attnc_kernel_info);
    info.weight_layout = layout;
    info.d_model = d;
    std::vector<std::pair<std::string, std::vector<int64_t>>> spec;
    if (layout == ATTNC_LAYOUT_GPT2_CONV1D)
      spec = {{"c_attn.weight", {d, 3 * d}}, {"c_attn.bias", {3 * d}},
              {"c_proj.weight", {d, d}}, {"c_proj.bias", {d}}};
    else if (layout == ATTNC_LAYOUT_TORCH_IN_PROJ)
      spec = {{"in_proj_weight", {3 * d, d}}, {"in_proj_bias", {3 * d}},
              {"out_proj.weight", {d, d}}, {"out_proj.bias", {d}}};
    else
      for (const char *p : {"q", "k", "v", "o"}) {
        int64_t rows = (*p == 'k' || *p == 'v') ? kvWidth : d;
        spec.push_back({std::string(p) + "_proj.weight", {rows, d}});
        if (bias)
          spec.push_back({std::string(p) + "_proj.bias", {rows}});
      }
    if (layout != ATTNC_LAYOUT_SEPARATE && !bias)
      spec = {spec[0], spec[2]};
    for (auto &s : spec)
      names.push_back(s.first);
    for (size_t i = 0; i < spec.size(); ++i) {
      attnc_tensor_info t{};
      t.name = names[i].c_str();
      t.rank = uint32_t(spec[i].second.size());
      t.dims[0] = spec[i].second[0];
      t.dims[1] = t.rank == 2 ? spec[i].second[1] : 1;
      tensors.push_back(t);
    }
    info.num_weights = uint32_t(tensors.size());
    info.weights = tensors.data();
  }
  T make(size_t i, int seed) const {
    std::vector<int64_t> shape = {tensors[i].dims[0]};
    if (tensors[i].rank == 2)
      shape.push_back(tensors[i].dims[1]);
    return tensor(shape, seed);
  }
};

struct Result {
  int rc = -1;
  std::string err;
  attnrt::Weights w;
};

Result open(const std::string &path, const std::string &prefix, const Info &info) {
  Result r;
  r.w = attnrt::Weights::open(path, prefix, info.info, r.err, &r.rc);
  return r;
}

/// Every buffer equals the values of the tensor it came from.
void checkValues(const attnrt::Weights &w, const Info &info, int seedBase) {
  REQUIRE(w.count() == info.info.num_weights);
  for (uint32_t i = 0; i < w.count(); ++i) {
    T want = info.make(i, seedBase + int(i));
    REQUIRE(w.elems()[i] == int64_t(want.values.size()));
    for (size_t j = 0; j < want.values.size(); ++j)
      REQUIRE(w.float32()[i][j] == float(want.values[j]));
  }
}

} // namespace

TEST_CASE("weights: safetensors, GPT-2 names, one layer out of three",
          "[weights]") {
  TempDir dir;
  Info info(ATTNC_LAYOUT_GPT2_CONV1D, 8, 8, true);
  std::vector<std::tuple<std::string, std::string, T>> ts;
  for (int layer = 0; layer < 3; ++layer) {
    // GPT-2 checkpoints also hold the causal-mask buffer 'attn.bias'.
    ts.emplace_back("h." + std::to_string(layer) + ".attn.bias", "BOOL",
                    T{{1}, {}});
    for (size_t i = 0; i < info.names.size(); ++i)
      ts.emplace_back("h." + std::to_string(layer) + ".attn." + info.names[i],
                      "F32", info.make(i, layer * 100 + int(i)));
  }
  // The BOOL entry needs one byte of data; build the file by hand around it.
  std::string json = "{";
  std::string data;
  for (const auto &t : ts) {
    std::string bytes = std::get<1>(t) == "BOOL" ? std::string(1, '\1')
                                                 : raw(std::get<2>(t), "F32");
    json += (json.size() > 1 ? ", \"" : "\"") + std::get<0>(t) +
            "\": {\"dtype\": \"" + std::get<1>(t) + "\", \"shape\": " +
            shapeText(std::get<2>(t).shape, false) + ", \"data_offsets\": [" +
            std::to_string(data.size()) + ", " +
            std::to_string(data.size() + bytes.size()) + "]}";
    data += bytes;
  }
  json += "}";
  std::string file;
  put(file, json.size(), 8);
  writeFile(dir / "model.safetensors", file + json + data);

  Result r = open(dir / "model.safetensors", "h.1.attn.", info);
  REQUIRE(r.rc == ATTNRT_WEIGHTS_OK);
  CHECK(r.err.empty());
  checkValues(r.w, info, 100);
  CHECK(r.w.sourceName(0) == "h.1.attn.c_attn.weight");
  CHECK(r.w.notes().empty());

  // No prefix: the names are not there, and the error says which prefixes
  // would work.
  r = open(dir / "model.safetensors", "", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_MISSING);
  CHECK_THAT(r.err, Contains("model.safetensors") && Contains("'c_attn.weight'") &&
                        Contains("'h.0.attn.'") && Contains("--weights-prefix"));
  // A prefix that matches nothing.
  r = open(dir / "model.safetensors", "h.7.attn.", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_MISSING);
  CHECK_THAT(r.err, Contains("no tensor name starts with 'h.7.attn.'"));
}

TEST_CASE("weights: bf16, f16 and f64 are converted with a note", "[weights]") {
  TempDir dir;
  Info info(ATTNC_LAYOUT_TORCH_IN_PROJ, 4, 4, true);
  const char *dtypes[] = {"BF16", "F16", "F64", "F32"};
  std::vector<std::tuple<std::string, std::string, T>> ts;
  for (size_t i = 0; i < info.names.size(); ++i)
    ts.emplace_back(info.names[i], dtypes[i], info.make(i, int(i)));
  writeFile(dir / "w.safetensors", safetensors(ts));
  Result r = open(dir / "w.safetensors", "", info);
  REQUIRE(r.rc == ATTNRT_WEIGHTS_OK);
  checkValues(r.w, info, 0);
  std::vector<std::string> notes = r.w.notes();
  REQUIRE(notes.size() == 3);
  CHECK_THAT(notes[0], Contains("w.safetensors: tensor 'in_proj_weight': bfloat16 converted to float32"));
  CHECK_THAT(notes[1], Contains("'in_proj_bias': float16 converted"));
  CHECK_THAT(notes[2], Contains("'out_proj.weight': float64 converted"));

  // The same in a directory of .npy files (numpy has no bfloat16).
  TempDir npyDir;
  const char *npyTypes[] = {"F16", "F64", "F32", "F32"};
  for (size_t i = 0; i < info.names.size(); ++i)
    writeFile(npyDir / (info.names[i] + ".npy"), npy(info.make(i, int(i)), npyTypes[i]));
  r = open(npyDir.path, "", info);
  REQUIRE(r.rc == ATTNRT_WEIGHTS_OK);
  checkValues(r.w, info, 0);
  CHECK(r.w.notes().size() == 2);

  // A float64 value beyond float32's range is an error, not an inf.
  T big = info.make(0, 0);
  big.values[5] = 1e300;
  std::get<2>(ts[0]) = big;
  std::get<1>(ts[0]) = "F64";
  writeFile(dir / "big.safetensors", safetensors(ts));
  r = open(dir / "big.safetensors", "", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_DTYPE);
  CHECK_THAT(r.err, Contains("big.safetensors: tensor 'in_proj_weight'") &&
                        Contains("out of float32 range"));

  // An f16 kernel's weights hold at most 65504: 65519 rounds to it, 65520
  // would be inf (an error naming the element); inf itself stays inf.
  std::get<1>(ts[0]) = "F32";
  big.values[5] = 65519.0f;
  std::get<2>(ts[0]) = big;
  writeFile(dir / "f16.safetensors", safetensors(ts));
  info.info.weight_dtype = ATTNC_DTYPE_F16;
  r = open(dir / "f16.safetensors", "", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_OK);
  big.values[5] = -65520.0f;
  std::get<2>(ts[0]) = big;
  writeFile(dir / "f16.safetensors", safetensors(ts));
  r = open(dir / "f16.safetensors", "", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_DTYPE);
  CHECK_THAT(r.err, Contains("the kernel's 'in_proj_weight' (from 'in_proj_weight'): element 5 (-65520) is out of float16 range"));
  info.info.weight_dtype = ATTNC_DTYPE_BF16; // bf16 has float32's range
  r = open(dir / "f16.safetensors", "", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_OK);
}

TEST_CASE("weights: .npz (stored and deflate) with BERT names", "[weights]") {
  TempDir dir;
  Info info(ATTNC_LAYOUT_SEPARATE, 8, 8, true);
  // BERT's spelling of each separate-layout tensor, in info order.
  std::map<std::string, std::string> bert = {
      {"q_proj.weight", "self.query.weight"}, {"q_proj.bias", "self.query.bias"},
      {"k_proj.weight", "self.key.weight"},   {"k_proj.bias", "self.key.bias"},
      {"v_proj.weight", "self.value.weight"}, {"v_proj.bias", "self.value.bias"},
      {"o_proj.weight", "output.dense.weight"}, {"o_proj.bias", "output.dense.bias"}};
  for (bool deflate : {false, true}) {
    std::vector<std::pair<std::string, std::string>> entries;
    for (int layer = 0; layer < 2; ++layer) {
      std::string p = "encoder.layer." + std::to_string(layer) + ".attention.";
      for (size_t i = 0; i < info.names.size(); ++i)
        entries.push_back({p + bert[info.names[i]] + ".npy",
                           npy(info.make(i, layer * 100 + int(i)))});
      entries.push_back({p + "output.LayerNorm.weight.npy", npy(tensor({8}, 9))});
    }
    std::string path = dir / (deflate ? "deflate.npz" : "stored.npz");
    writeFile(path, zip(entries, deflate));
    Result r = open(path, "encoder.layer.1.attention.", info);
    INFO(r.err);
    REQUIRE(r.rc == ATTNRT_WEIGHTS_OK);
    checkValues(r.w, info, 100);
    CHECK(r.w.sourceName(6) == "encoder.layer.1.attention.output.dense.weight");

    // A flipped byte in the data: the CRC (stored) or inflate (deflate) says so.
    std::string bytes = slurp(path);
    bytes[30 + entries[0].first.size() + 20] ^= 0x5a; // inside entry 0's data
    writeFile(path, bytes);
    r = open(path, "encoder.layer.0.attention.", info);
    CHECK(r.rc == ATTNRT_WEIGHTS_ERR_FORMAT);
    CHECK_THAT(r.err, Contains(path));
  }
}

TEST_CASE("weights: torch_in_proj from BERT's separate query/key/value",
          "[weights]") {
  TempDir dir;
  Info info(ATTNC_LAYOUT_TORCH_IN_PROJ, 4, 4, true);
  // Parts: q, k, v weights (4, 4) and biases (4), output.dense.
  std::vector<std::tuple<std::string, std::string, T>> ts;
  const char *part[] = {"query", "key", "value"};
  for (int i = 0; i < 3; ++i) {
    ts.emplace_back(std::string("attention.self.") + part[i] + ".weight", "F32",
                    tensor({4, 4}, 10 + i));
    ts.emplace_back(std::string("attention.self.") + part[i] + ".bias", "BF16",
                    tensor({4}, 20 + i));
  }
  ts.emplace_back("attention.output.dense.weight", "F32", info.make(2, 2));
  ts.emplace_back("attention.output.dense.bias", "F32", info.make(3, 3));
  writeFile(dir / "bert.safetensors", safetensors(ts));
  Result r = open(dir / "bert.safetensors", "attention.", info);
  INFO(r.err);
  REQUIRE(r.rc == ATTNRT_WEIGHTS_OK);
  REQUIRE(r.w.count() == 4);
  for (int k = 0; k < 2; ++k) { // in_proj_weight, in_proj_bias: q; k; v
    std::vector<double> want;
    for (int i = 0; i < 3; ++i) {
      T part = k == 0 ? tensor({4, 4}, 10 + i) : tensor({4}, 20 + i);
      want.insert(want.end(), part.values.begin(), part.values.end());
    }
    REQUIRE(r.w.elems()[k] == int64_t(want.size()));
    for (size_t j = 0; j < want.size(); ++j)
      REQUIRE(r.w.float32()[k][j] == float(want[j]));
  }
  for (uint32_t i = 2; i < 4; ++i) {
    T want = info.make(i, int(i));
    for (size_t j = 0; j < want.values.size(); ++j)
      REQUIRE(r.w.float32()[i][j] == float(want.values[j]));
  }
  CHECK(r.w.sourceName(0) == "attention.self.query.weight+attention.self.key.weight+attention.self.value.weight");
  CHECK(r.w.sourceName(2) == "attention.output.dense.weight");
  std::vector<std::string> notes = r.w.notes();
  REQUIRE(notes.size() == 5); // stacked weight, 3 bf16 biases, stacked bias
  CHECK_THAT(notes[0], Contains("'in_proj_weight' stacked from 'attention.self.query.weight', 'attention.self.key.weight', 'attention.self.value.weight'"));

  // A part with the wrong shape is named.
  std::get<2>(ts[2]) = tensor({4, 3}, 11);
  writeFile(dir / "bert.safetensors", safetensors(ts));
  r = open(dir / "bert.safetensors", "attention.", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_SHAPE);
  CHECK_THAT(r.err, Contains("tensor 'attention.self.key.weight' (the kernel's 'in_proj_weight (part k)'): expected shape (4, 4), found (4, 3)"));
  // Only two of the three parts: the fused name is reported missing.
  ts.erase(ts.begin() + 2);
  writeFile(dir / "bert.safetensors", safetensors(ts));
  r = open(dir / "bert.safetensors", "attention.", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_MISSING);
  CHECK_THAT(r.err, Contains("no tensor for the kernel's 'in_proj_weight'"));
  // A part spelled twice (q_proj.weight and self.query.weight): a duplicate
  // (code 5), not a missing in_proj_weight (issue 22, item 15).
  ts.emplace_back("attention.self.key.weight", "F32", tensor({4, 4}, 11));
  ts.emplace_back("attention.q_proj.weight", "F32", tensor({4, 4}, 30));
  writeFile(dir / "bert.safetensors", safetensors(ts));
  r = open(dir / "bert.safetensors", "attention.", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_DUPLICATE);
  CHECK_THAT(r.err, Contains("two tensors for part q of the kernel's 'in_proj_weight': "
                             "'attention.q_proj.weight' and 'attention.self.query.weight' "
                             "(two spellings of one tensor)"));
  // The fused in_proj_weight beside a separate part of it: which one?
  ts.pop_back();
  ts.emplace_back("attention.in_proj_weight", "F32", tensor({12, 4}, 31));
  writeFile(dir / "bert.safetensors", safetensors(ts));
  r = open(dir / "bert.safetensors", "attention.", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_DUPLICATE);
  CHECK_THAT(r.err, Contains("two tensors for the kernel's 'in_proj_weight': "
                             "'attention.in_proj_weight' and 'attention.self.query.weight' "
                             "(the fused Q/K/V and a separate part of it)"));
}

TEST_CASE("weights: a directory without tensor files says so", "[weights]") {
  TempDir dir;
  Info info(ATTNC_LAYOUT_SEPARATE, 8, 4, false);
  for (bool withFile : {false, true}) { // empty, then a README only
    if (withFile)
      writeFile(dir / "README", "not a tensor");
    Result r = open(dir.path, "", info);
    CHECK(r.rc != ATTNRT_WEIGHTS_OK);
    CHECK_THAT(r.err, Contains(": no .safetensors, .npz or .npy files"));
    CHECK_THAT(r.err, !Contains("no tensor for the kernel's"));
  }
}

TEST_CASE("weights: a directory of .npy files with Llama names (GQA)",
          "[weights]") {
  TempDir dir;
  Info info(ATTNC_LAYOUT_SEPARATE, 8, 4, false);
  for (size_t i = 0; i < info.names.size(); ++i)
    writeFile(dir / ("model.layers.3.self_attn." + info.names[i] + ".npy"),
              npy(info.make(i, int(i))));
  writeFile(dir / "README", "not a tensor");
  Result r = open(dir.path, "model.layers.3.self_attn.", info);
  REQUIRE(r.rc == ATTNRT_WEIGHTS_OK);
  checkValues(r.w, info, 0);

  // The same tensors as Fortran-order and as big-endian arrays.
  for (const char *variant : {"fortran", "big-endian"}) {
    TempDir d2;
    for (size_t i = 0; i < info.names.size(); ++i) {
      T t = info.make(i, int(i));
      std::string bytes = npy(t);
      size_t dataStart = bytes.size() - t.values.size() * 4;
      std::string header = bytes.substr(0, dataStart), data;
      if (std::string(variant) == "fortran") {
        header.replace(header.find("'fortran_order': False"), 22, "'fortran_order': True ");
        int64_t rows = t.shape[0], cols = t.shape[1];
        T colMajor = t;
        for (int64_t c = 0; c < cols; ++c)
          for (int64_t r2 = 0; r2 < rows; ++r2)
            colMajor.values[size_t(c * rows + r2)] = t.values[size_t(r2 * cols + c)];
        data = raw(colMajor, "F32");
      } else {
        header.replace(header.find("'<f4'"), 5, "'>f4'");
        data = raw(t, "F32");
        for (size_t k = 0; k < data.size(); k += 4)
          std::reverse(data.begin() + long(k), data.begin() + long(k) + 4);
      }
      writeFile(d2 / (info.names[i] + ".npy"), header + data);
    }
    r = open(d2.path, "", info);
    INFO(variant << ": " << r.err);
    REQUIRE(r.rc == ATTNRT_WEIGHTS_OK);
    checkValues(r.w, info, 0);
  }

  // A wrong shape in a .npy file: the file names the tensor.
  {
    TempDir d3;
    for (size_t i = 0; i < info.names.size(); ++i)
      writeFile(d3 / (info.names[i] + ".npy"),
                npy(i == 0 ? tensor({3, 3}, 0) : info.make(i, int(i))));
    r = open(d3.path, "", info);
    CHECK(r.rc == ATTNRT_WEIGHTS_ERR_SHAPE);
    CHECK_THAT(r.err, Contains(d3.path + "/q_proj.weight.npy: expected shape (8, 8), found (3, 3)"));
  }

  // The same kernel with biases: the checkpoint has none, and says so.
  Info withBias(ATTNC_LAYOUT_SEPARATE, 8, 4, true);
  r = open(dir.path, "model.layers.3.self_attn.", withBias);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_MISSING);
  CHECK_THAT(r.err, Contains("'q_proj.bias'") && Contains("bias: false"));
}

TEST_CASE("weights: wrong shape, dtype, missing and duplicate tensors",
          "[weights]") {
  TempDir dir;
  Info info(ATTNC_LAYOUT_GPT2_CONV1D, 4, 4, true);
  auto good = [&] {
    std::vector<std::tuple<std::string, std::string, T>> ts;
    for (size_t i = 0; i < info.names.size(); ++i)
      ts.emplace_back(info.names[i], "F32", info.make(i, int(i)));
    return ts;
  };
  std::string path = dir / "w.safetensors";

  auto ts = good();
  std::get<2>(ts[0]) = tensor({12, 4}, 0); // (3d, d): the torch layout
  writeFile(path, safetensors(ts));
  Result r = open(path, "", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_SHAPE);
  CHECK_THAT(r.err, Contains("w.safetensors: tensor 'c_attn.weight': expected shape (4, 12), found (12, 4)") &&
                        Contains("transpose"));

  ts = good();
  std::get<1>(ts[1]) = "I64";
  writeFile(path, safetensors(ts));
  r = open(path, "", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_DTYPE);
  CHECK_THAT(r.err, Contains("tensor 'c_attn.bias': dtype I64 is not supported"));

  ts = good();
  ts.erase(ts.begin() + 2);
  writeFile(path, safetensors(ts));
  r = open(path, "", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_MISSING);
  CHECK_THAT(r.err, Contains(path) && Contains("'c_proj.weight'"));

  // The same name twice in the JSON header.
  std::string dup = "{\"c_attn.bias\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                    " \"c_attn.bias\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}";
  std::string file = safetensors({}, dup) + std::string(8, '\0');
  writeFile(path, file);
  r = open(path, "", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_DUPLICATE);
  CHECK_THAT(r.err, Contains("tensor 'c_attn.bias' appears twice"));

  // A field twice in one entry (the last one was taken), and a header that
  // is not UTF-8 (it was read as bytes): refused, as the Python loader and
  // the format's own reader refuse them.
  std::string dupField = "{\"c_attn.bias\": {\"dtype\": \"I8\", \"dtype\": \"F32\", "
                         "\"shape\": [1], \"data_offsets\": [0, 4]}}";
  writeFile(path, safetensors({}, dupField) + std::string(4, '\0'));
  r = open(path, "", info);
  CHECK(r.rc != ATTNRT_WEIGHTS_OK);
  CHECK_THAT(r.err, Contains("tensor 'c_attn.bias': names 'dtype' twice"));
  for (const char *bad : {"\xff", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82"}) {
    std::string h = std::string("{\"c_attn.bias") + bad +
                    "\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}";
    writeFile(path, safetensors({}, h) + std::string(4, '\0'));
    r = open(path, "", info);
    CHECK(r.rc != ATTNRT_WEIGHTS_OK);
    CHECK_THAT(r.err, Contains("bad safetensors header: byte 21 is not UTF-8"));
  }
  std::string utf8 = "{\"c_attn.bias\u00e9\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\": {\"dtype\": "
                     "\"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}";
  writeFile(path, safetensors({}, utf8) + std::string(4, '\0'));
  r = open(path, "", info);
  CHECK_THAT(r.err, !Contains("UTF-8"));

  // The same name in two .npz entries.
  std::string z = zip({{"c_attn.bias.npy", npy(tensor({12}, 1))},
                       {"c_attn.bias.npy", npy(tensor({12}, 2))}}, false);
  writeFile(dir / "dup.npz", z);
  r = open(dir / "dup.npz", "", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_DUPLICATE);
  CHECK_THAT(r.err, Contains("dup.npz") && Contains("'c_attn.bias' appears twice"));

  // Two spellings of one separate-layout tensor.
  Info sep(ATTNC_LAYOUT_SEPARATE, 4, 4, false);
  std::vector<std::tuple<std::string, std::string, T>> s2;
  for (size_t i = 0; i < sep.names.size(); ++i)
    s2.emplace_back(sep.names[i], "F32", sep.make(i, int(i)));
  s2.emplace_back("out_proj.weight", "F32", sep.make(3, 3));
  writeFile(path, safetensors(s2));
  r = open(path, "", sep);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_DUPLICATE);
  CHECK_THAT(r.err, Contains("two tensors for the kernel's 'o_proj.weight'") &&
                        Contains("'out_proj.weight'"));

  // A tensor in a directory twice: as .npy and inside a .safetensors.
  TempDir d2;
  auto g = good();
  writeFile(d2 / "w.safetensors", safetensors(g));
  writeFile(d2 / "c_proj.bias.npy", npy(info.make(3, 3)));
  r = open(d2.path, "", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_DUPLICATE);
  CHECK_THAT(r.err, Contains("'c_proj.bias' is in both"));
  CHECK_THAT(r.err, !Contains("index.json"));

  // A stale file beside a sharded checkpoint: the index says which file
  // holds the tensor, so the message names the other as the stale copy.
  TempDir d3;
  writeFile(d3 / "model-00001-of-00001.safetensors", safetensors(g));
  writeFile(d3 / "model.safetensors", safetensors(g));
  writeFile(d3 / "model.safetensors.index.json",
            "{\"metadata\": {}, \"weight_map\": {\"c_attn.weight\": "
            "\"model-00001-of-00001.safetensors\"}}");
  r = open(d3.path, "", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_DUPLICATE);
  CHECK_THAT(r.err, Contains("'c_attn.weight' is in both") &&
                        Contains("(model.safetensors.index.json puts it in "
                                 "model-00001-of-00001.safetensors: " +
                                 (d3 / "model.safetensors") +
                                 " is not one of the checkpoint's shards, a stale copy?"));
}

TEST_CASE("weights: malformed safetensors headers", "[weights]") {
  TempDir dir;
  Info info(ATTNC_LAYOUT_GPT2_CONV1D, 2, 2, false);
  std::string path = dir / "bad.safetensors";
  struct Case {
    std::string header;
    std::string data;
    const char *message;
  } cases[] = {
      {"{\"c_attn.weight\": {\"dtype\": \"F32\", \"shape\": [2, 6], ", "", "bad safetensors header JSON"},
      {"{\"c_attn.weight\": {\"dtype\": \"F32\", \"shape\": [2, 6], \"data_offsets\": [0, 48]}} x", std::string(48, '\0'), "text after the JSON object"},
      {"[1, 2]", "", "not a JSON object"},
      {"{\"c_attn.weight\": {\"dtype\": \"F32\", \"shape\": [2, 6], \"data_offsets\": [0, 48]}}", std::string(40, '\0'), "tensor 'c_attn.weight': data_offsets [0, 48] are beyond the data (40 bytes"},
      {"{\"c_attn.weight\": {\"dtype\": \"F32\", \"shape\": [2, 6], \"data_offsets\": [0, 44]}}", std::string(48, '\0'), "F32 (2, 6) needs 48 bytes but data_offsets [0, 44] span 44"},
      {"{\"c_attn.weight\": {\"dtype\": \"F32\", \"shape\": [2, 6], \"data_offsets\": [0, 48]},"
       " \"c_proj.weight\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [40, 56]}}", std::string(56, '\0'), "tensors 'c_attn.weight' and 'c_proj.weight' overlap"},
      {"{\"c_attn.weight\": {\"dtype\": \"F32\", \"shape\": [2, -6], \"data_offsets\": [0, 48]}}", std::string(48, '\0'), "shape entries must be non-negative integers"},
      {"{\"c_attn.weight\": {\"dtype\": \"F32\", \"shape\": [2, 6], \"data_offsets\": [48, 0]}}", std::string(48, '\0'), "end before they begin"},
      {"{\"c_attn.weight\": {\"shape\": [2, 6], \"data_offsets\": [0, 48]}}", std::string(48, '\0'), "tensor 'c_attn.weight': no \"dtype\" string"},
      {"{\"c_attn.weight\": {\"dtype\": \"F32\", \"shape\": [2, 6], \"data_offsets\": [0, 99999999999999999999]}}", std::string(48, '\0'), "data_offsets must be non-negative integers"},
      {"{\"a\": \"\\ud800\"}", "", "lone surrogate"},
      {"{\"a\": " + std::string(70, '['), "", "nested deeper than 3 levels at byte 9"},
  };
  for (const Case &c : cases) {
    writeFile(path, safetensors({}, c.header) + c.data);
    Result r = open(path, "", info);
    INFO(c.header);
    CHECK(r.rc == ATTNRT_WEIGHTS_ERR_FORMAT);
    CHECK_THAT(r.err, Contains(path) && Contains(c.message));
  }
  // A header length beyond the file.
  std::string s;
  put(s, 1000, 8);
  writeFile(path, s + "{}");
  Result r = open(path, "", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_FORMAT);
  CHECK_THAT(r.err, Contains("truncated safetensors file: header length 1000 but only 2 bytes follow"));
}

TEST_CASE("weights: every truncation of a valid file is an error, not a crash",
          "[weights]") {
  TempDir dir;
  Info info(ATTNC_LAYOUT_TORCH_IN_PROJ, 4, 4, true);
  std::vector<std::tuple<std::string, std::string, T>> ts;
  std::vector<std::pair<std::string, std::string>> entries;
  for (size_t i = 0; i < info.names.size(); ++i) {
    ts.emplace_back(info.names[i], "F32", info.make(i, int(i)));
    entries.push_back({info.names[i] + ".npy", npy(info.make(i, int(i)))});
  }
  std::map<std::string, std::string> files = {
      {"w.safetensors", safetensors(ts)},
      {"stored.npz", zip(entries, false)},
      {"deflate.npz", zip(entries, true)},
      {"zip64.npz", zip(entries, true, true)}};
  for (const auto &f : files) {
    std::string path = dir / f.first;
    writeFile(path, f.second);
    Result full = open(path, "", info);
    REQUIRE(full.rc == ATTNRT_WEIGHTS_OK);
    checkValues(full.w, info, 0);
    for (size_t n = 0; n < f.second.size(); ++n) {
      writeFile(path, f.second.substr(0, n));
      Result r = open(path, "", info);
      INFO(f.first << " cut at " << n << ": " << r.err);
      REQUIRE(r.rc != ATTNRT_WEIGHTS_OK);
      REQUIRE_THAT(r.err, Contains(f.first));
    }
  }
  // A truncated .npy in a directory names the file.
  TempDir d2;
  for (size_t i = 0; i < info.names.size(); ++i) {
    std::string bytes = npy(info.make(i, int(i)));
    writeFile(d2 / (info.names[i] + ".npy"), i == 2 ? bytes.substr(0, bytes.size() - 3) : bytes);
  }
  Result r = open(d2.path, "", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_FORMAT);
  CHECK_THAT(r.err, Contains("out_proj.weight.npy") && Contains("truncated data"));
}

TEST_CASE("weights: C API arguments and error names", "[weights]") {
  Info info(ATTNC_LAYOUT_GPT2_CONV1D, 4, 4, true);
  attnrt_weights *w = reinterpret_cast<attnrt_weights *>(1);
  char err[128];
  CHECK(attnrt_weights_open(nullptr, "", &info.info, &w, err, sizeof err) ==
        ATTNRT_WEIGHTS_ERR_ARG);
  CHECK(w == nullptr);
  CHECK(attnrt_weights_open("/nonexistent/x.safetensors", nullptr, &info.info,
                            &w, err, sizeof err) == ATTNRT_WEIGHTS_ERR_IO);
  CHECK_THAT(std::string(err), Contains("/nonexistent/x.safetensors: cannot open"));
  // A short error buffer is truncated, still terminated.
  char tiny[8];
  CHECK(attnrt_weights_open("/nonexistent/x.safetensors", nullptr, &info.info,
                            &w, tiny, sizeof tiny) == ATTNRT_WEIGHTS_ERR_IO);
  CHECK(std::strlen(tiny) == 7);
  CHECK(attnrt_weights_count(nullptr) == 0);
  CHECK(attnrt_weights_data(nullptr) == nullptr);
  CHECK(attnrt_weights_note(nullptr, 0) == nullptr);
  attnrt_weights_close(nullptr);
  CHECK(std::string(attnrt_weights_strerror(ATTNRT_WEIGHTS_ERR_SHAPE)) == "shape");
  // A file that is none of the formats.
  TempDir dir;
  writeFile(dir / "x.bin", "hello, world: not weights");
  CHECK(attnrt_weights_open((dir / "x.bin").c_str(), "", &info.info, &w, err,
                            sizeof err) == ATTNRT_WEIGHTS_ERR_FORMAT);
  CHECK_THAT(std::string(err), Contains("x.bin"));
  writeFile(dir / "one.npy", npy(tensor({4}, 0)));
  CHECK(attnrt_weights_open((dir / "one.npy").c_str(), "", &info.info, &w, err,
                            sizeof err) == ATTNRT_WEIGHTS_ERR_FORMAT);
  CHECK_THAT(std::string(err), Contains("give the directory"));
}

TEST_CASE("weights: a fused QKV tensor without the config.json that gives its layout",
          "[weights]") {
  TempDir dir;
  Info info(ATTNC_LAYOUT_SEPARATE, 8, 8, false);
  info.info.heads = 2;
  info.info.kv_heads = 2;
  info.info.head_dim = 4;
  std::vector<std::tuple<std::string, std::string, T>> ts = {
      {"h.0.self_attention.query_key_value.weight", "F32", tensor({24, 8}, 1)},
      {"h.0.self_attention.dense.weight", "F32", tensor({8, 8}, 2)}};
  writeFile(dir / "model.safetensors", safetensors(ts));
  // No config.json: the error says the fused tensor's layout needs it.
  Result r = open(dir.path, "h.0.self_attention.", info);
  CHECK(r.rc == ATTNRT_WEIGHTS_ERR_MISSING);
  CHECK_THAT(r.err, Contains("the checkpoint fuses Q/K/V in "
                             "'h.0.self_attention.query_key_value.weight'") &&
                        Contains(dir.path + "/config.json (its model_type): there is none"));
  // A model type without a fused layout names it.
  writeFile(dir / "config.json", "{\"model_type\": \"llama\"}");
  r = open(dir.path, "h.0.self_attention.", info);
  CHECK_THAT(r.err, Contains("model_type 'llama' does not give"));
  // BLOOM's: cut per head, and loaded.
  writeFile(dir / "config.json", "{\"model_type\": \"bloom\"}");
  r = open(dir.path, "h.0.self_attention.", info);
  INFO(r.err);
  CHECK(r.rc == ATTNRT_WEIGHTS_OK);
}
