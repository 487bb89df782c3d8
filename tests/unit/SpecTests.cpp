//===- SpecTests.cpp - Unit tests of the YAML spec parser ------*- C++ -*-===//
//
// Every error kind of attnc::parseSpecString with its exact located message,
// the accepted spec with its defaults, unsupportedFeature, printSpec and the
// stability of specHash. The Catch2 main lives in tests/unit/main.cpp.
//
//===----------------------------------------------------------------------===//

#include "attnc/Spec/BlockParams.h"
#include "attnc/Spec/Spec.h"
#include "attnc/runtime/Block.h"
#include "attnc/runtime/Limits.h"

#include <catch2/catch.hpp>

#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace attnc;

namespace {

/// The spec body shared by many tests (lines 1-3).
const std::string kBase = "name: attn\nd_model: 768\nheads: 12\n";

/// Parses `text` as "t.yaml" and returns the error ("" on success).
std::string errorOf(const std::string &text) {
  SpecResult r = parseSpecString(text, "t.yaml");
  if (r) {
    REQUIRE(r.error.empty());
    return "";
  }
  REQUIRE_FALSE(r.error.empty());
  return r.error;
}

/// Parses `text` and requires success.
Spec specOf(const std::string &text) {
  SpecResult r = parseSpecString(text, "t.yaml");
  INFO(r.error);
  REQUIRE(r);
  return *r.spec;
}

} // namespace

//===----------------------------------------------------------------------===//
// Accepted specs.
//===----------------------------------------------------------------------===//

TEST_CASE("gpt2-small spec with every key", "[spec]") {
  const std::string text = "# examples/gpt2-small.yaml\n"
                           "name: gpt2_small_attn\n"
                           "d_model: 768\n"
                           "heads: 12\n"
                           "kv_heads: 12\n"
                           "head_dim: 64\n"
                           "mask: causal\n"
                           "causal_align: bottom_right\n"
                           "bias: true\n"
                           "out_proj: true\n"
                           "scale: auto\n"
                           "weights: gpt2_conv1d\n"
                           "max_seq_len: 2048\n"
                           "dtype: f32\n"
                           "outputs: [y]\n"
                           "decode: false\n"
                           "cross_attention: false\n";
  Spec s = specOf(text);
  CHECK(s.file == "t.yaml");
  CHECK(s.name == "gpt2_small_attn");
  CHECK(s.dModel == 768);
  CHECK(s.heads == 12);
  CHECK(s.kvHeads == 12);
  CHECK(s.headDim == 64);
  CHECK(s.mask == MaskKind::Causal);
  CHECK(s.causalAlign == CausalAlign::BottomRight);
  CHECK(s.window == 0);
  CHECK(s.biasMask == attnc::kAllBiases);
  CHECK(s.outProj);
  CHECK_FALSE(s.scale.has_value());
  CHECK(s.effectiveScale() == 0.125);
  CHECK(s.weights == WeightLayout::Gpt2Conv1D);
  CHECK(s.maxSeqLen == 2048);
  CHECK(s.dtype == DType::F32);
  CHECK(s.outputs == std::vector<std::string>{"y"});
  CHECK_FALSE(s.decode);
  CHECK_FALSE(s.crossAttention);
  CHECK(s.qWidth() == 768);
  CHECK(s.kvWidth() == 768);
  CHECK(s.posOf("heads").line == 4);
  CHECK(s.posOf("heads").col == 1);
  CHECK(s.valuePosOf("heads").line == 4);
  CHECK(s.valuePosOf("heads").col == 8);
  CHECK(s.posOf("window").line == 0);
  CHECK(s.valuePosOf("outputs[0]").col == 11);
  CHECK(unsupportedFeature(s).empty());
}

TEST_CASE("defaults of a minimal spec", "[spec]") {
  Spec s = specOf(kBase);
  CHECK(s.kvHeads == 12);
  CHECK(s.headDim == 64);
  CHECK(s.mask == MaskKind::None);
  CHECK(s.causalAlign == CausalAlign::BottomRight);
  CHECK(s.biasMask == attnc::kAllBiases);
  CHECK(s.outProj);
  CHECK_FALSE(s.scale.has_value());
  CHECK(s.weights == WeightLayout::Gpt2Conv1D);
  CHECK(s.maxSeqLen == 0);
  CHECK(s.outputs == std::vector<std::string>{"y"});
  CHECK_FALSE(s.decode);
  CHECK_FALSE(s.crossAttention);
  CHECK(s.keyPos.size() == 3);
}

TEST_CASE("GQA with separate weights and an explicit scale", "[spec]") {
  Spec s = specOf("name: llama_attn\nd_model: 4096\nheads: 32\nkv_heads: 8\n"
                  "head_dim: 128\nweights: separate\nbias: false\n"
                  "out_proj: false\nscale: 0.0883883\ncausal_align: top_left\n"
                  "mask: causal\n");
  CHECK(s.kvHeads == 8);
  CHECK(s.qWidth() == 4096);
  CHECK(s.kvWidth() == 1024);
  CHECK(s.weights == WeightLayout::Separate);
  CHECK(s.biasMask == 0u);
  CHECK_FALSE(s.outProj);
  REQUIRE(s.scale.has_value());
  CHECK(*s.scale == 0.0883883);
  CHECK(s.effectiveScale() == 0.0883883);
  CHECK(s.causalAlign == CausalAlign::TopLeft);
}

TEST_CASE("head_dim independent of d_model with separate weights", "[spec]") {
  Spec s = specOf("name: gemma\nd_model: 2048\nheads: 8\nhead_dim: 256\n"
                  "kv_heads: 1\nweights: separate\n");
  CHECK(s.qWidth() == 2048);
  CHECK(s.kvWidth() == 256);
  s = specOf("name: odd\nd_model: 770\nheads: 12\nhead_dim: 64\n"
             "weights: separate\n");
  CHECK(s.headDim == 64);
}

TEST_CASE("quoted strings, comments, flow mapping and document markers",
          "[spec]") {
  Spec s = specOf("%YAML 1.2\n---\n{name: \"a_b\", d_model: 64, heads: 4, "
                  "mask: 'causal'} # trailing comment\n...\n");
  CHECK(s.name == "a_b");
  CHECK(s.headDim == 16);
  CHECK(s.mask == MaskKind::Causal);
  s = specOf(kBase + "bias: False\nout_proj: TRUE\nweights: torch_in_proj\n");
  CHECK(s.biasMask == 0u);
  CHECK(s.outProj);
  CHECK(s.weights == WeightLayout::TorchInProj);
}

TEST_CASE("the variants parse and are lowered", "[spec]") {
  Spec s = specOf(kBase + "mask: sliding_window\nwindow: 256\n");
  CHECK(s.mask == MaskKind::SlidingWindow);
  CHECK(s.window == 256);
  CHECK(unsupportedFeature(s).empty());
  s = specOf(kBase + "mask: padding\n");
  CHECK(s.mask == MaskKind::Padding);
  CHECK(unsupportedFeature(s).empty());
  s = specOf(kBase + "mask: causal+padding\ncausal_align: top_left\n");
  CHECK(s.mask == MaskKind::CausalPadding);
  CHECK(s.causalAlign == CausalAlign::TopLeft);
  CHECK(unsupportedFeature(s).empty());
  s = specOf(kBase + "cross_attention: true\n");
  CHECK(s.crossAttention);
  CHECK(unsupportedFeature(s).empty());
  // A window or chunk with padding lengths: both parts.
  s = specOf(kBase + "mask: sliding_window+padding\nwindow: 4096\n");
  CHECK(s.mask == MaskKind::SlidingWindowPadding);
  CHECK(s.window == 4096);
  CHECK((s.paddingMask() && s.slidingMask() && s.causalMask() && !s.chunkedMask()));
  CHECK(std::string(toString(s.mask)) == "sliding_window+padding");
  CHECK(unsupportedFeature(s).empty());
  s = specOf(kBase + "mask: chunked+padding\nchunk: 8192\n");
  CHECK(s.mask == MaskKind::ChunkedPadding);
  CHECK((s.paddingMask() && s.chunkedMask() && s.causalMask() && !s.slidingMask()));
  CHECK(std::string(toString(s.mask)) == "chunked+padding");
  CHECK(specHash(s) != specHash(specOf(kBase + "mask: chunked\nchunk: 8192\n")));
  // EmbeddingGemma's window: both sides, not causal, with or without lengths.
  s = specOf(kBase + "mask: bidirectional_window\nwindow: 257\n");
  CHECK(s.mask == MaskKind::BidirectionalWindow);
  CHECK(s.window == 257);
  CHECK((s.slidingMask() && !s.causalMask() && !s.paddingMask() && !s.chunkedMask()));
  CHECK(unsupportedFeature(s).empty());
  s = specOf(kBase + "mask: bidirectional_window+padding\nwindow: 3\n");
  CHECK(s.mask == MaskKind::BidirectionalWindowPadding);
  CHECK((s.slidingMask() && !s.causalMask() && s.paddingMask()));
  CHECK(maskWithLengths(MaskKind::BidirectionalWindow) == MaskKind::BidirectionalWindowPadding);
  CHECK(errorOf(kBase + "mask: bidirectional_window\n") ==
        "t.yaml:4:7: error: mask: expected a 'window' key with mask: "
        "bidirectional_window, found none");
  // A decode step has no keys ahead of it: refused.
  CHECK(errorOf(kBase + "mask: bidirectional_window\nwindow: 4\ndecode: true\n")
            .find("expected a causal mask") != std::string::npos);
}

TEST_CASE("features this version cannot lower parse and are reported",
          "[spec]") {
  Spec s;
  s = specOf(kBase + "mask: causal\ndecode: true\n");
  CHECK(s.decode);
  CHECK(unsupportedFeature(s).empty());
  s = specOf(kBase + "mask: causal\ncross_attention: true\ndecode: true\n");
  CHECK(unsupportedFeature(s) ==
        "t.yaml:6:9: error: decode: true with cross_attention: true is not "
        "supported by this version of attnc (decode is self-attention with a "
        "KV cache)");

  s = specOf(kBase + "outputs: [y, probs]\n");
  CHECK(s.outputs == std::vector<std::string>{"y", "probs"});
  CHECK(unsupportedFeature(s).empty());
}

TEST_CASE("decode is accepted with every causal mask", "[spec]") {
  CHECK(errorOf(kBase + "mask: causal+padding\ndecode: true\n").empty());
  CHECK(errorOf(kBase + "mask: sliding_window\nwindow: 8\ndecode: true\n")
            .empty());
  CHECK(errorOf(kBase + "mask: chunked\nchunk: 8192\ndecode: true\n").empty());
  CHECK(errorOf(kBase + "mask: sliding_window+padding\nwindow: 8\ndecode: true\n").empty());
  CHECK(errorOf(kBase + "mask: chunked+padding\nchunk: 8\ndecode: true\n").empty());
}

TEST_CASE("mask kinds: names, parts, and the kind with lengths", "[spec]") {
  int kinds = 0;
  for (int k = 0; k <= int(kLastMaskKind); ++k, ++kinds) {
    const MaskKind m = MaskKind(k);
    INFO(toString(m));
    REQUIRE(maskKindNamed(toString(m)) == m);
    // the spec parser takes every name, and the parts are the Spec's
    const Spec s = specOf(kBase + "mask: " + toString(m) + "\n" +
                          (maskIsSliding(m)   ? "window: 4\n"
                           : maskIsChunked(m) ? "chunk: 4\n"
                                              : ""));
    CHECK(s.mask == m);
    CHECK(s.paddingMask() == maskHasLengths(m));
    // adding lengths keeps the rest of the mask
    const MaskKind l = maskWithLengths(m);
    CHECK(maskHasLengths(l));
    CHECK(maskIsCausal(l) == maskIsCausal(m));
    CHECK(maskIsSliding(l) == maskIsSliding(m));
    CHECK(maskIsChunked(l) == maskIsChunked(m));
    CHECK((l == m) == maskHasLengths(m));
  }
  CHECK(kinds == 10);
  CHECK(maskIsBidirectional(MaskKind::BidirectionalWindowPadding));
  CHECK(!maskIsBidirectional(MaskKind::SlidingWindow));
  CHECK(maskWithLengths(MaskKind::Causal) == MaskKind::CausalPadding);
  CHECK(maskWithLengths(MaskKind::None) == MaskKind::Padding);
  CHECK(!maskKindNamed("causal + padding"));
  CHECK(!maskKindNamed("Causal"));
  CHECK(!maskKindNamed(""));
}

TEST_CASE("Llama 4: the chunked mask, the weightless QK-norm, temperature tuning",
          "[spec]") {
  Spec s = specOf(kBase + "mask: chunked\nchunk: 8192\n");
  CHECK(s.mask == MaskKind::Chunked);
  CHECK(s.window == 8192);
  CHECK(std::string(toString(MaskKind::Chunked)) == "chunked");
  CHECK(errorOf(kBase + "mask: chunked\n") ==
        "t.yaml:4:7: error: mask: expected a 'chunk' key (the chunk size, Llama 4's "
        "attention_chunk_size) with mask: chunked, found none");
  CHECK(errorOf(kBase + "mask: causal\nchunk: 8\n") ==
        "t.yaml:5:8: error: chunk: expected no chunk unless mask: chunked (or chunked+padding), "
        "found mask: causal");
  CHECK(errorOf(kBase + "mask: chunked\nwindow: 8\n").find("expected a 'chunk' key") !=
        std::string::npos);
  CHECK(errorOf(kBase + "mask: chunked\nchunk: 0\n").find("expected a positive integer") !=
        std::string::npos);
  // Weightless QK-norm: no q_norm / k_norm tensors, no bias.
  s = specOf(kBase + "weights: separate\nqk_norm: {width: head, weight: none, eps: 1e-5}\n");
  CHECK(s.qkNormNoWeight);
  CHECK(!s.qkNormPerHead);
  CHECK(errorOf(kBase + "weights: separate\nqk_norm: {width: head, weight: none, bias: true}\n")
            .find("qk_norm.bias: expected no bias with weight: none") != std::string::npos);
  CHECK(errorOf(kBase + "weights: separate\nqk_norm: {width: head, weight: all}\n")
            .find("expected one of shared, per_head, none") != std::string::npos);
  // Temperature tuning: defaults 8192 and 0.1; ranges; not with cross-attention.
  s = specOf(kBase + "temperature_tuning: {}\n");
  REQUIRE(s.temperature);
  CHECK(s.temperature->floorScale == 8192);
  CHECK(s.temperature->attnScale == 0.1);
  s = specOf(kBase + "temperature_tuning: {floor_scale: 4, attn_scale: 0.25}\n");
  CHECK(s.temperature->floorScale == 4);
  CHECK(errorOf(kBase + "temperature_tuning: {attn_scale: -1}\n")
            .find("temperature_tuning.attn_scale") != std::string::npos);
  CHECK(errorOf(kBase + "temperature_tuning: {floor_scale: 0}\n")
            .find("temperature_tuning.floor_scale") != std::string::npos);
  CHECK(errorOf(kBase + "temperature_tuning: {floor: 4}\n").find("unknown key 'floor'") !=
        std::string::npos);
  CHECK(errorOf(kBase + "cross_attention: true\ntemperature_tuning: {}\n")
            .find("expected no temperature_tuning with cross_attention") != std::string::npos);
  // Each changes the spec's hash.
  CHECK(specHash(specOf(kBase + "mask: chunked\nchunk: 8\n")) !=
        specHash(specOf(kBase + "mask: chunked\nchunk: 16\n")));
  CHECK(specHash(specOf(kBase + "temperature_tuning: {}\n")) != specHash(specOf(kBase)));
  CHECK(specHash(specOf(kBase + "weights: separate\nqk_norm: {width: head, weight: none}\n")) !=
        specHash(specOf(kBase + "weights: separate\nqk_norm: {width: head}\n")));
}

TEST_CASE("BERT's relative_key: the table size, key_query, the limits", "[spec]") {
  const std::string sep = kBase + "weights: separate\n";
  Spec s = specOf(sep + "relative_key: {max_position_embeddings: 512}\n");
  CHECK(s.relKeyPositions == 512);
  CHECK(!s.relKeyQuery);
  CHECK(s.maxSeqLen == 512); // the table's reach is the call's limit
  s = specOf(sep + "max_seq_len: 128\nrelative_key: {max_position_embeddings: 512, "
                   "key_query: true}\n");
  CHECK(s.relKeyQuery);
  CHECK(s.maxSeqLen == 128);
  CHECK(errorOf(sep + "max_seq_len: 513\nrelative_key: {max_position_embeddings: 512}\n")
            .find("max_seq_len: expected max_seq_len <= relative_key.max_position_embeddings "
                  "(512), found 513") != std::string::npos);
  CHECK(errorOf(sep + "relative_key: {key_query: true}\n")
            .find("expected a 'max_position_embeddings' key") != std::string::npos);
  CHECK(errorOf(kBase + "relative_key: {max_position_embeddings: 8}\n")
            .find("expected weights: separate with relative_key") != std::string::npos);
  CHECK(errorOf(sep + "relative_key: {max_position_embeddings: 0}\n")
            .find("relative_key.max_position_embeddings") != std::string::npos);
  CHECK(errorOf(sep + "relative_key: {max_position_embeddings: 8, query: true}\n")
            .find("unknown key 'query'") != std::string::npos);
  // Each changes the spec's hash.
  CHECK(specHash(specOf(sep + "relative_key: {max_position_embeddings: 8}\n")) !=
        specHash(specOf(sep + "relative_key: {max_position_embeddings: 8, key_query: true}\n")));
  CHECK(specHash(specOf(sep + "relative_key: {max_position_embeddings: 8}\n")) !=
        specHash(specOf(sep + "relative_key: {max_position_embeddings: 9}\n")));
}

//===----------------------------------------------------------------------===//
// Hash, printing, enum names.
//===----------------------------------------------------------------------===//

TEST_CASE("specHash ignores key order, comments, file and defaults",
          "[spec][hash]") {
  uint64_t a = specHash(specOf(kBase + "mask: causal\n"));
  uint64_t b = specHash(*parseSpecString("# a comment\nmask: causal   # c\n"
                                         "heads: 12\n\nd_model: 768\n"
                                         "name: attn\nkv_heads: 12\n"
                                         "head_dim: 64\nscale: auto\n",
                                         "other/file.yaml")
                             .spec);
  CHECK(a == b);
  CHECK(a == specHash(specOf(kBase + "mask: causal\n")));
}

TEST_CASE("specHash changes with every semantic field", "[spec][hash]") {
  uint64_t base = specHash(specOf(kBase));
  CHECK(base != specHash(specOf("name: attn\nd_model: 768\nheads: 16\n")));
  CHECK(base != specHash(specOf("name: attn2\nd_model: 768\nheads: 12\n")));
  CHECK(base != specHash(specOf(kBase + "mask: causal\n")));
  CHECK(base != specHash(specOf(kBase + "bias: false\n")));
  CHECK(base != specHash(specOf(kBase + "scale: 0.1\n")));
  CHECK(base != specHash(specOf(kBase + "max_seq_len: 1024\n")));
  CHECK(base != specHash(specOf(kBase + "weights: separate\n")));
  CHECK(base != specHash(specOf(kBase + "outputs: [y, probs]\n")));
}

TEST_CASE("specHash is a known constant (stable across runs)", "[spec][hash]") {
  // FNV-1a 64 of the canonical v1 string; update deliberately only.
  CHECK(specHash(specOf("name: gpt2_small_attn\nd_model: 768\nheads: 12\n"
                        "mask: causal\n")) == 0x73a41bea90c1f1b7ULL);
}

TEST_CASE("printSpec resolves defaults in schema order", "[spec]") {
  CHECK(printSpec(specOf(kBase + "mask: causal\n")) ==
        "name: attn\n"
        "d_model: 768\n"
        "heads: 12\n"
        "kv_heads: 12\n"
        "head_dim: 64\n"
        "mask: causal\n"
        "causal_align: bottom_right\n"
        "bias: true\n"
        "out_proj: true\n"
        "scale: 0.125  # auto: 1/sqrt(head_dim)\n"
        "weights: gpt2_conv1d\n"
        "# max_seq_len: unbounded (no key)\n"
        "dtype: f32\n"
        "weight_dtype: f32\n"
        "outputs: [y]\n"
        "decode: false\n"
        "cross_attention: false\n");
  std::string p =
      printSpec(specOf(kBase + "mask: sliding_window\nwindow: 64\nscale: 0.5\n"
                               "max_seq_len: 4096\noutputs: [y, probs]\n"));
  CHECK(p.find("window: 64\n") != std::string::npos);
  CHECK(p.find("scale: 0.5\n") != std::string::npos);
  CHECK(p.find("max_seq_len: 4096\n") != std::string::npos);
  CHECK(p.find("outputs: [y, probs]\n") != std::string::npos);
}

TEST_CASE("enum spellings", "[spec]") {
  CHECK(std::string(toString(MaskKind::None)) == "none");
  CHECK(std::string(toString(MaskKind::Causal)) == "causal");
  CHECK(std::string(toString(MaskKind::Padding)) == "padding");
  CHECK(std::string(toString(MaskKind::CausalPadding)) == "causal+padding");
  CHECK(std::string(toString(MaskKind::SlidingWindow)) == "sliding_window");
  CHECK(std::string(toString(WeightLayout::Gpt2Conv1D)) == "gpt2_conv1d");
  CHECK(std::string(toString(WeightLayout::TorchInProj)) == "torch_in_proj");
  CHECK(std::string(toString(WeightLayout::Separate)) == "separate");
  CHECK(std::string(toString(DType::F32)) == "f32");
  CHECK(std::string(toString(CausalAlign::BottomRight)) == "bottom_right");
  CHECK(std::string(toString(CausalAlign::TopLeft)) == "top_left");
}

//===----------------------------------------------------------------------===//
// Document-level errors.
//===----------------------------------------------------------------------===//

TEST_CASE("empty and comment-only documents", "[spec][error]") {
  const std::string msg = "t.yaml:1:1: error: expected a mapping of spec "
                          "keys, found an empty document";
  CHECK(errorOf("") == msg);
  CHECK(errorOf("# only a comment\n\n# another\n") == msg);
  CHECK(errorOf("\n\n~\n") == "t.yaml:3:1: error: expected a mapping of spec "
                              "keys, found an empty document");
}

TEST_CASE("a document that is not a mapping", "[spec][error]") {
  CHECK(errorOf("- name: attn\n- heads: 12\n") ==
        "t.yaml:1:1: error: expected a mapping of spec keys, found a "
        "sequence");
  CHECK(errorOf("# c\ngpt2\n") == "t.yaml:2:1: error: expected a mapping of "
                                  "spec keys, found a scalar 'gpt2'");
}

TEST_CASE("non-UTF-8 and binary content", "[spec][error]") {
  CHECK(errorOf("name: caf\xe9\n") ==
        "t.yaml:1:10: error: expected UTF-8 text, found byte 0xe9 (is this a "
        "binary file?)");
  CHECK(errorOf(std::string("name: attn\nx\0y\n", 15)) ==
        "t.yaml:2:2: error: expected UTF-8 text, found control byte 0x00 (is "
        "this a binary file?)");
  CHECK(errorOf("\xff\xfe"
                "n") == "t.yaml:1:1: error: expected UTF-8 text, found byte "
                        "0xff (is this a binary file?)");
  // Overlong encoding of '/'.
  CHECK(errorOf("name: \xc0\xaf\n") ==
        "t.yaml:1:7: error: expected UTF-8 text, found byte 0xc0 (is this a "
        "binary file?)");
  // Valid UTF-8 (and a BOM) is fine up to the identifier check.
  CHECK(errorOf("\xef\xbb\xbfname: caf\xc3\xa9\nd_model: 8\nheads: 2\n") ==
        "t.yaml:1:7: error: name: expected a C identifier (letters, digits "
        "and '_', not starting with a digit), found 'caf\xc3\xa9'");
}

TEST_CASE("a spec larger than 1 MiB", "[spec][error]") {
  std::string big = kBase + "#" + std::string(1 << 20, 'x') + "\n";
  CHECK(errorOf(big) ==
        "t.yaml:1:1: error: expected a spec of at most 1 MiB, found " +
            std::to_string(big.size()) + " bytes");
}

TEST_CASE("tab indentation", "[spec][error]") {
  CHECK(errorOf("name: attn\n\td_model: 768\n") ==
        "t.yaml:2:1: error: malformed YAML: expected spaces for indentation, "
        "found a tab character");
  CHECK(errorOf("outputs:\n  \t- y\n") ==
        "t.yaml:2:3: error: malformed YAML: expected spaces for indentation, "
        "found a tab character");
  // Tabs as separation after the colon are plain YAML.
  CHECK(errorOf("name:\tattn\nd_model:\t768\nheads: 12\n").empty());
}

TEST_CASE("unclosed brackets and other malformed YAML", "[spec][error]") {
  CHECK(errorOf(kBase + "outputs: [y\nmask: causal\n") ==
        "t.yaml:5:5: error: malformed YAML: end of sequence flow not found "
        "(the '[' at 4:10 is never closed)");
  CHECK(errorOf("name: attn\nd_model: {v: 768\n") ==
        "t.yaml:3:1: error: malformed YAML: end of map flow not found (the "
        "'{' at 2:10 is never closed)");
  CHECK(errorOf(kBase + "outputs: [y]]\n") ==
        "t.yaml:4:13: error: malformed YAML: illegal flow end");
  CHECK(errorOf("name: attn heads: 12\n") ==
        "t.yaml:1:17: error: malformed YAML: illegal map value");
}

TEST_CASE("multiple documents", "[spec][error]") {
  CHECK(errorOf(kBase + "---\nname: other\n") ==
        "t.yaml:4:1: error: expected a single YAML document, found a second "
        "document");
  CHECK(errorOf(kBase + "---\n") == "t.yaml:4:1: error: expected a single "
                                    "YAML document, found a second document");
}

TEST_CASE("anchors and aliases", "[spec][error]") {
  CHECK(errorOf(kBase + "kv_heads: &h 12\nmax_seq_len: *h\n") ==
        "t.yaml:4:11: error: kv_heads: expected a plain value, found anchor "
        "'&h' (anchors and aliases are not allowed in a spec)");
  CHECK(errorOf("&top\nname: attn\n") ==
        "t.yaml:1:1: error: expected a plain value, found anchor '&top' "
        "(anchors and aliases are not allowed in a spec)");
  CHECK(errorOf("max_seq_len: *nope\n") ==
        "t.yaml:1:14: error: malformed YAML: the referenced anchor is not "
        "defined");
}

TEST_CASE("alias bomb is rejected at its first anchor", "[spec][error]") {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n";
  std::string prev = "a";
  for (char c = 'b'; c <= 'k'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 9; ++i)
      bomb += (i ? ", *" : "*") + prev;
    bomb += "]\n";
    prev = std::string(1, c);
  }
  CHECK(errorOf(bomb) == "t.yaml:1:4: error: a: expected a plain value, "
                         "found anchor '&a' (anchors and aliases are not "
                         "allowed in a spec)");
}

TEST_CASE("absurd nesting", "[spec][error]") {
  CHECK(errorOf(kBase + "outputs: [[[[y]]]]\n") ==
        "t.yaml:4:13: error: outputs: expected at most 4 levels of nesting, "
        "found a deeper sequence");
  // Deep enough to overflow a recursive parser's stack (yaml-cpp reads the
  // unclosed brackets as implicit flow-mapping keys).
  std::string deep = "outputs: " + std::string(200000, '[');
  CHECK(errorOf(deep) == "t.yaml:1:12: error: outputs: expected at most 4 "
                         "levels of nesting, found a deeper mapping");
  // Four levels are parsed, then rejected by type.
  CHECK(errorOf("outputs: [[[y]]]\nname: attn\nd_model: 8\nheads: 2\n") ==
        "t.yaml:1:11: error: outputs: expected y or probs, found a sequence");
}

//===----------------------------------------------------------------------===//
// Key errors.
//===----------------------------------------------------------------------===//

TEST_CASE("unknown key close to a known one", "[spec][error]") {
  CHECK(errorOf("name: attn\nd_model: 768\nhead: 12\n") ==
        "t.yaml:3:1: error: unknown key 'head': did you mean 'heads'?");
  CHECK(errorOf("name: attn\ndModel: 768\n") ==
        "t.yaml:2:1: error: unknown key 'dModel': did you mean 'd_model'?");
  CHECK(errorOf(kBase + "  # indented comment\nkvheads: 4\n") ==
        "t.yaml:5:1: error: unknown key 'kvheads': did you mean 'kv_heads'?");
  CHECK(errorOf(kBase + "max_seqlen: 4\n") ==
        "t.yaml:4:1: error: unknown key 'max_seqlen': did you mean "
        "'max_seq_len'?");
}

TEST_CASE("unknown key far from every known one", "[spec][error]") {
  CHECK(errorOf(kBase + "frobnicate: 1\n") ==
        "t.yaml:4:1: error: unknown key 'frobnicate': expected one of name, "
        "d_model, heads, kv_heads, head_dim, mask, causal_align, window, "
        "bias, out_proj, scale, weights, max_seq_len, dtype, weight_dtype, outputs, "
        "decode, cross_attention, rope, alibi, softcap, qk_norm, clip_qkv, sinks, t5_bias, "
        "tensor_parallel, chunk, temperature_tuning, relative_key");
  CHECK(errorOf(kBase + "x: 1\n").find("unknown key 'x': expected one of") !=
        std::string::npos);
}

TEST_CASE("keys that are not names", "[spec][error]") {
  CHECK(errorOf(kBase + "? [a, b]\n: 1\n") ==
        "t.yaml:4:3: error: expected a key name, found a sequence");
  CHECK(errorOf(kBase + "? {a: 1}\n: 1\n") ==
        "t.yaml:4:3: error: expected a key name, found a mapping");
}

TEST_CASE("missing required keys", "[spec][error]") {
  CHECK(errorOf("name: attn\nd_model: 768\n") ==
        "t.yaml:1:1: error: heads: expected a positive integer (required "
        "key), found no 'heads' key");
  CHECK(errorOf("# header\nd_model: 768\nheads: 12\n") ==
        "t.yaml:2:1: error: name: expected a C identifier (required key), "
        "found no 'name' key");
  CHECK(errorOf("name: attn\nheads: 12\n") ==
        "t.yaml:1:1: error: d_model: expected a positive integer (required "
        "key), found no 'd_model' key");
}

TEST_CASE("duplicate keys", "[spec][error]") {
  CHECK(errorOf(kBase + "mask: causal\nheads: 16\n") ==
        "t.yaml:5:1: error: duplicate key 'heads': expected each key once, "
        "already given at 3:1");
  CHECK(errorOf("{name: a, name: b}\n") ==
        "t.yaml:1:11: error: duplicate key 'name': expected each key once, "
        "already given at 1:2");
}

//===----------------------------------------------------------------------===//
// Value errors.
//===----------------------------------------------------------------------===//

TEST_CASE("sizes that are not integers", "[spec][error]") {
  CHECK(errorOf("name: attn\nd_model: 768\nheads: twelve\n") ==
        "t.yaml:3:8: error: heads: expected a positive integer, found "
        "'twelve'");
  CHECK(errorOf("name: attn\nd_model: 768\nheads: \"12\"\n") ==
        "t.yaml:3:8: error: heads: expected a positive integer, found the "
        "quoted string '12'");
  CHECK(errorOf(kBase + "head_dim: 64.5\n") ==
        "t.yaml:4:11: error: head_dim: expected a positive integer, found "
        "'64.5'");
  CHECK(errorOf(kBase + "head_dim: 1e2\n") ==
        "t.yaml:4:11: error: head_dim: expected a positive integer, found "
        "'1e2'");
  CHECK(errorOf(kBase + "kv_heads: [4]\n") ==
        "t.yaml:4:11: error: kv_heads: expected a positive integer, found a "
        "sequence");
  CHECK(errorOf(kBase + "kv_heads: {n: 4}\n") ==
        "t.yaml:4:11: error: kv_heads: expected a positive integer, found a "
        "mapping");
  CHECK(errorOf(kBase + "kv_heads: !!int 4\n") ==
        "t.yaml:4:11: error: kv_heads: expected a positive integer, found '4' "
        "with tag 'tag:yaml.org,2002:int'");
  CHECK(errorOf(kBase + "kv_heads: 012\n") ==
        "t.yaml:4:11: error: kv_heads: expected a positive integer, found "
        "'012'");
  CHECK(errorOf(kBase + "kv_heads: 0x4\n") ==
        "t.yaml:4:11: error: kv_heads: expected a positive integer, found "
        "'0x4'");
}

TEST_CASE("missing values", "[spec][error]") {
  CHECK(errorOf("name: attn\nd_model: 768\nheads:\nmask: causal\n") ==
        "t.yaml:3:1: error: heads: expected a positive integer, found no "
        "value");
  CHECK(errorOf("name: attn\nd_model: ~\nheads: 12\n") ==
        "t.yaml:2:10: error: d_model: expected a positive integer, found no "
        "value");
}

TEST_CASE("zero and negative sizes", "[spec][error]") {
  CHECK(errorOf("name: attn\nd_model: 768\nheads: 0\n") ==
        "t.yaml:3:8: error: heads: expected a positive integer, found '0'");
  CHECK(errorOf("name: attn\nd_model: -768\nheads: 12\n") ==
        "t.yaml:2:10: error: d_model: expected a positive integer, found "
        "'-768'");
  CHECK(errorOf(kBase + "max_seq_len: 0\n") ==
        "t.yaml:4:14: error: max_seq_len: expected a positive integer, found "
        "'0'");
}

TEST_CASE("sizes that are too large", "[spec][error]") {
  CHECK(errorOf("name: attn\nd_model: 2000000\nheads: 16\n") ==
        "t.yaml:2:10: error: d_model: expected a positive integer <= "
        "65536, found '2000000'");
  CHECK(errorOf("name: attn\nd_model: 99999999999999999999999\n") ==
        "t.yaml:2:10: error: d_model: expected a positive integer <= "
        "65536, found '99999999999999999999999'");
  CHECK(errorOf("name: attn\nd_model: -99999999999999999999999\n") ==
        "t.yaml:2:10: error: d_model: expected a positive integer, found "
        "'-99999999999999999999999'");
  CHECK(errorOf(kBase + "max_seq_len: 16777217\n") ==
        "t.yaml:4:14: error: max_seq_len: expected a positive integer <= "
        "16777216, found '16777217'");
  CHECK(errorOf(kBase + "max_seq_len: 16777216\n").empty());
}

TEST_CASE("each size key has its own limit (docs/limits.md)", "[spec][error]") {
  // One past each limit is refused with the limit in the message ...
  CHECK(errorOf("name: attn\nd_model: 65537\nheads: 1\n") ==
        "t.yaml:2:10: error: d_model: expected a positive integer <= 65536, "
        "found '65537'");
  CHECK(errorOf("name: attn\nd_model: 2048\nheads: 1025\n") ==
        "t.yaml:3:8: error: heads: expected a positive integer <= 1024, found "
        "'1025'");
  CHECK(errorOf(kBase + "kv_heads: 1025\nweights: separate\n") ==
        "t.yaml:4:11: error: kv_heads: expected a positive integer <= 1024, "
        "found '1025'");
  CHECK(errorOf(kBase + "head_dim: 1025\nweights: separate\n") ==
        "t.yaml:4:11: error: head_dim: expected a positive integer <= 1024, "
        "found '1025'");
  CHECK(errorOf(kBase + "mask: sliding_window\nwindow: 16777217\n") ==
        "t.yaml:5:9: error: window: expected a positive integer <= 16777216, "
        "found '16777217'");
  // (head_dim from d_model / heads: the same limit)
  CHECK(errorOf("name: attn\nd_model: 2050\nheads: 2\n") ==
        "t.yaml:3:8: error: heads: d_model / heads = 2050 / 2 = 1025 is head_dim, "
        "expected a head_dim <= 1024 (docs/limits.md)");
  // ... and the limit itself is accepted.
  CHECK(errorOf("name: attn\nd_model: 2048\nheads: 2\n").empty());
  CHECK(errorOf("name: attn\nd_model: 65536\nheads: 1024\nhead_dim: 7\n"
                "weights: separate\n").empty());
  CHECK(errorOf(kBase + "head_dim: 1024\nweights: separate\n").empty());
  CHECK(errorOf("name: attn\nd_model: 1024\nheads: 1024\nkv_heads: 1024\n")
            .empty());
  CHECK(errorOf(kBase + "mask: sliding_window\nwindow: 16777216\n").empty());
}

TEST_CASE("weight element count overflow", "[spec][error]") {
  CHECK(errorOf("name: attn\nd_model: 65536\nheads: 64\nhead_dim: 1024\n"
                "weights: separate\n") ==
        "t.yaml:2:10: error: d_model: expected fewer than 2^31 weight elements in the "
        "block's tensors, found 17180131328: (heads + 2*kv_heads) * head_dim * d_model = "
        "(64 + 2*64) * 1024 * 65536 = 12884901888 for Q/K/V, heads * head_dim * d_model = "
        "4294967296 for W_O, 262144 in biases and tables");
  CHECK(errorOf("name: attn\nd_model: 65536\nheads: 1024\nhead_dim: "
                "1024\nweights: separate\nout_proj: false\nbias: false\n") ==
        "t.yaml:2:10: error: d_model: expected fewer than 2^31 weight elements in the "
        "block's tensors, found 206158430208: (heads + 2*kv_heads) * head_dim * d_model = "
        "(1024 + 2*1024) * 1024 * 65536 = 206158430208 for Q/K/V, 0 in biases and tables");
  // Just below the limit is accepted: (12 + 2*2 + 12) * 1024 * 65536 + biases < 2^31.
  CHECK(errorOf("name: attn\nd_model: 65536\nheads: 12\nkv_heads: 2\n"
                "head_dim: 1024\nweights: separate\n")
            .empty());
}

// The limit counts what the loader counts (every storage tensor's
// elements, W_O, biases and tables included: libattnrt refuses 2^31 or
// more), so a spec at the limit compiles into a library that loads. For
// each block shape, the first d_model whose storage tensors reach 2^31 is
// refused and the one before it accepted.
TEST_CASE("the weight limit is the loader's count of the storage tensors", "[spec]") {
  // (the fused layouts' head_dim is d_model / heads: d_model in steps of heads)
  const char *shapes[] = {
      "heads: 64\n",
      "heads: 64\nbias: false\n",
      "heads: 64\nweights: torch_in_proj\n",
      "heads: 16\nkv_heads: 4\nhead_dim: 1024\nweights: separate\nbias: [k, o]\n",
      "heads: 32\nkv_heads: 2\nhead_dim: 1024\nweights: separate\nout_proj: false\n",
      "heads: 32\nkv_heads: 8\nhead_dim: 512\nweights: separate\n"
      "qk_norm: {width: head, weight: per_head, bias: true, type: layer}\n",
      "heads: 32\nhead_dim: 512\nweights: separate\nqk_norm: {width: projection}\n",
      "heads: 32\nhead_dim: 512\nweights: separate\nqk_norm: {width: head}\n",
      "heads: 16\nhead_dim: 1024\nweights: separate\nsinks: true\n"
      "t5_bias: {num_buckets: 1024, max_distance: 4096}\nscale: 1\n",
      "heads: 16\nhead_dim: 1024\nweights: separate\n"
      "relative_key: {max_position_embeddings: 65536}\n",
      "heads: 16\nhead_dim: 1024\ntensor_parallel: {size: 4, rank: 1}\n"
      "weights: separate\n",
  };
  for (const char *shape : shapes) {
    INFO(shape);
    auto text = [&](int64_t d) {
      return "name: attn\nd_model: " + std::to_string(d) + "\n" + shape;
    };
    Spec s = specOf(text(1024));
    const bool fused = s.weights != WeightLayout::Separate;
    const int64_t step = fused ? s.heads : 1;
    auto storage = [&](int64_t steps) {
      Spec t = s;
      t.dModel = steps * step;
      if (fused)
        t.headDim = steps;
      int64_t n = 0;
      for (const auto &ts : attnrt::storageTensors(blockParams(t))) {
        int64_t e = 1;
        for (int64_t v : ts.shape)
          e *= v;
        n += e;
      }
      return n;
    };
    int64_t lo = 1, hi = 65536 / step; // storage(hi) >= 2^31 > storage(lo)
    REQUIRE(storage(hi) >= limits::kMaxWeightElements);
    while (hi - lo > 1) {
      int64_t mid = (lo + hi) / 2;
      (storage(mid) >= limits::kMaxWeightElements ? hi : lo) = mid;
    }
    CHECK(errorOf(text(lo * step)).empty());
    CHECK_THAT(errorOf(text(hi * step)), Catch::Matchers::Contains(
                                      "expected fewer than 2^31 weight elements"));
  }
}

TEST_CASE("heads must divide d_model when head_dim is absent",
          "[spec][error]") {
  CHECK(errorOf("name: attn\nd_model: 770\nheads: 12\n") ==
        "t.yaml:3:8: error: heads: 12 does not divide d_model 770 (d_model % "
        "heads = 2)");
}

TEST_CASE("kv_heads must divide heads", "[spec][error]") {
  CHECK(errorOf(kBase + "kv_heads: 5\nweights: separate\n") ==
        "t.yaml:4:11: error: kv_heads: 5 does not divide heads 12 (heads % "
        "kv_heads = 2)");
  CHECK(errorOf(kBase + "kv_heads: 24\nweights: separate\n") ==
        "t.yaml:4:11: error: kv_heads: 24 does not divide heads 12 (heads % "
        "kv_heads = 12)");
}

TEST_CASE("packed layouts need kv_heads == heads", "[spec][error]") {
  CHECK(errorOf(kBase + "kv_heads: 4\n") ==
        "t.yaml:4:11: error: kv_heads: expected kv_heads == heads (12) for "
        "weights: gpt2_conv1d, which packs Q/K/V as one (d_model, 3*d_model) "
        "tensor, found 4 (use weights: separate for GQA/MQA)");
  CHECK(errorOf(kBase + "kv_heads: 4\nweights: torch_in_proj\n") ==
        "t.yaml:4:11: error: kv_heads: expected kv_heads == heads (12) for "
        "weights: torch_in_proj, which packs Q/K/V as one (3*d_model, "
        "d_model) tensor, found 4 (use weights: separate for GQA/MQA)");
}

TEST_CASE("packed layouts need heads * head_dim == d_model", "[spec][error]") {
  CHECK(errorOf(kBase + "head_dim: 32\n") ==
        "t.yaml:4:11: error: head_dim: expected heads * head_dim == d_model "
        "(768) for weights: gpt2_conv1d, which packs Q/K/V as one (d_model, "
        "3*d_model) tensor, found 12 * 32 = 384 (use weights: separate)");
  CHECK(errorOf(kBase + "head_dim: 128\nweights: torch_in_proj\n") ==
        "t.yaml:4:11: error: head_dim: expected heads * head_dim == d_model "
        "(768) for weights: torch_in_proj, which packs Q/K/V as one "
        "(3*d_model, d_model) tensor, found 12 * 128 = 1536 (use weights: "
        "separate)");
}

TEST_CASE("dtype", "[spec][error]") {
  CHECK(errorOf(kBase + "dtype: f64\n") ==
        "t.yaml:4:8: error: dtype: expected one of f32, bf16, f16, found 'f64'");
  CHECK(errorOf(kBase + "weight_dtype: int8\n") ==
        "t.yaml:4:15: error: weight_dtype: expected one of f32, bf16, f16, found 'int8'");
  // weight_dtype defaults to dtype; either may differ from the other.
  attnc::Spec s = specOf(kBase + "dtype: bf16\n");
  CHECK(s.dtype == attnc::DType::BF16);
  CHECK(s.weightDtype == attnc::DType::BF16);
  s = specOf(kBase + "dtype: f16\nweight_dtype: f32\n");
  CHECK(s.dtype == attnc::DType::F16);
  CHECK(s.weightDtype == attnc::DType::F32);
  s = specOf(kBase);
  CHECK(s.dtype == attnc::DType::F32);
  CHECK(s.weightDtype == attnc::DType::F32);
}

TEST_CASE("window only with sliding_window, and required with it",
          "[spec][error]") {
  CHECK(errorOf(kBase + "mask: causal\nwindow: 256\n") ==
        "t.yaml:5:9: error: window: expected no window unless mask: "
        "sliding_window or bidirectional_window (or their +padding forms), found mask: causal");
  CHECK(errorOf(kBase + "window: 256\n") ==
        "t.yaml:4:9: error: window: expected no window unless mask: "
        "sliding_window or bidirectional_window (or their +padding forms), found mask: none");
  CHECK(errorOf(kBase + "mask: causal+padding\nwindow: 256\n") ==
        "t.yaml:5:9: error: window: expected no window unless mask: "
        "sliding_window or bidirectional_window (or their +padding forms), found mask: causal+padding");
  CHECK(errorOf(kBase + "mask: sliding_window\n") ==
        "t.yaml:4:7: error: mask: expected a 'window' key with mask: "
        "sliding_window, found none");
  CHECK(errorOf(kBase + "mask: sliding_window+padding\n") ==
        "t.yaml:4:7: error: mask: expected a 'window' key with mask: "
        "sliding_window+padding, found none");
  CHECK(errorOf(kBase + "mask: sliding_window+padding\nchunk: 8\n")
            .find("expected no chunk unless mask: chunked") != std::string::npos);
  CHECK(errorOf(kBase + "mask: chunked+padding\nwindow: 8\n")
            .find("expected a 'chunk' key (the chunk size, Llama 4's attention_chunk_size) "
                  "with mask: chunked+padding") != std::string::npos);
  CHECK(errorOf(kBase + "mask: chunked+padding\nchunk: 8\nwindow: 8\n")
            .find("expected no window unless mask: sliding_window") != std::string::npos);
  CHECK(errorOf(kBase + "mask: sliding_window\nwindow: -3\n") ==
        "t.yaml:5:9: error: window: expected a positive integer, found '-3'");
}

TEST_CASE("decode only with a causal mask", "[spec][error]") {
  CHECK(errorOf(kBase + "decode: true\n") ==
        "t.yaml:4:9: error: decode: expected a causal mask (causal, "
        "causal+padding, sliding_window, chunked or their +padding forms) with "
        "decode: true, found mask: "
        "none");
  CHECK(errorOf(kBase + "mask: padding\ndecode: true\n") ==
        "t.yaml:5:9: error: decode: expected a causal mask (causal, "
        "causal+padding, sliding_window, chunked or their +padding forms) with "
        "decode: true, found mask: "
        "padding");
}

TEST_CASE("booleans", "[spec][error]") {
  CHECK(errorOf(kBase + "bias: yes\n") ==
        "t.yaml:4:7: error: bias: expected true, false or a list of "
        "projections such as [q, k, v], found 'yes'");
  CHECK(errorOf(kBase + "out_proj: 1\n") ==
        "t.yaml:4:11: error: out_proj: expected true or false, found '1'");
  CHECK(errorOf(kBase + "cross_attention: \"true\"\n") ==
        "t.yaml:4:18: error: cross_attention: expected true or false, found "
        "the quoted string 'true'");
}

TEST_CASE("name must be a C identifier", "[spec][error]") {
  const std::string expected = "expected a C identifier (letters, digits and "
                               "'_', not starting with a digit), found ";
  CHECK(errorOf("name: 2fast\n") ==
        "t.yaml:1:7: error: name: " + expected + "'2fast'");
  CHECK(errorOf("name: gpt-2\n") ==
        "t.yaml:1:7: error: name: " + expected + "'gpt-2'");
  CHECK(errorOf("name: \"\"\n") ==
        "t.yaml:1:7: error: name: " + expected + "the quoted string ''");
  CHECK(errorOf("name: [a]\n") ==
        "t.yaml:1:7: error: name: " + expected + "a sequence");
  CHECK(errorOf("name: " + std::string(129, 'a') + "\n") ==
        "t.yaml:1:7: error: name: expected a C identifier of at most 128 "
        "characters, found 129 characters");
}

TEST_CASE("scale", "[spec][error]") {
  const std::string expected =
      "error: scale: expected 'auto' or a positive finite number, found ";
  CHECK(errorOf(kBase + "scale: 0\n") == "t.yaml:4:8: " + expected + "'0'");
  CHECK(errorOf(kBase + "scale: -0.125\n") ==
        "t.yaml:4:8: " + expected + "'-0.125'");
  CHECK(errorOf(kBase + "scale: sqrt\n") ==
        "t.yaml:4:8: " + expected + "'sqrt'");
  CHECK(errorOf(kBase + "scale: .inf\n") ==
        "t.yaml:4:8: " + expected + "'.inf'");
  CHECK(errorOf(kBase + "scale: 1e999\n") ==
        "t.yaml:4:8: " + expected + "'1e999'");
  CHECK(errorOf(kBase + "scale: nan\n") == "t.yaml:4:8: " + expected + "'nan'");
  CHECK(errorOf(kBase + "scale: \"0.1\"\n") ==
        "t.yaml:4:8: " + expected + "the quoted string '0.1'");
  CHECK(specOf(kBase + "scale: 1\n").effectiveScale() == 1.0);
  CHECK(specOf(kBase + "scale: 1.25e-1\n").effectiveScale() == 0.125);
}

TEST_CASE("outputs", "[spec][error]") {
  CHECK(errorOf(kBase + "outputs: [probs]\n") ==
        "t.yaml:4:10: error: outputs: expected a list containing y, found "
        "[probs]");
  CHECK(errorOf(kBase + "outputs: []\n") ==
        "t.yaml:4:10: error: outputs: expected a list containing y, found "
        "[]");
  CHECK(errorOf(kBase + "outputs: y\n") ==
        "t.yaml:4:10: error: outputs: expected a sequence such as [y] or [y, "
        "probs], found 'y'");
  CHECK(errorOf(kBase + "outputs: [y, attn]\n") ==
        "t.yaml:4:14: error: outputs: expected y or probs, found 'attn'");
  CHECK(errorOf(kBase + "outputs:\n  - y\n  - y\n") ==
        "t.yaml:6:5: error: outputs: expected each output once, found 'y' "
        "again");
}

TEST_CASE("enumerations", "[spec][error]") {
  CHECK(errorOf(kBase + "mask: casual\n") ==
        "t.yaml:4:7: error: mask: expected one of none, causal, padding, "
        "causal+padding, sliding_window, chunked, sliding_window+padding, chunked+padding, "
        "bidirectional_window, bidirectional_window+padding, found 'casual'");
  CHECK(errorOf(kBase + "weights: huggingface\n") ==
        "t.yaml:4:10: error: weights: expected one of gpt2_conv1d, "
        "torch_in_proj, separate, found 'huggingface'");
  CHECK(errorOf(kBase + "causal_align: bottom_left\n") ==
        "t.yaml:4:15: error: causal_align: expected one of bottom_right, "
        "top_left, found 'bottom_left'");
  CHECK(errorOf(kBase + "mask: [causal]\n") ==
        "t.yaml:4:7: error: mask: expected one of none, causal, padding, "
        "causal+padding, sliding_window, chunked, sliding_window+padding, chunked+padding, "
        "bidirectional_window, bidirectional_window+padding, found a sequence");
}

TEST_CASE("the first error in file order wins", "[spec][error]") {
  CHECK(errorOf("name: attn\nd_model: x\nheads: y\nfoo: 1\n") ==
        "t.yaml:2:10: error: d_model: expected a positive integer, found 'x'");
  CHECK(errorOf("foo: 1\nheads: y\n") ==
        "t.yaml:1:1: error: unknown key 'foo': expected one of name, d_model, "
        "heads, kv_heads, head_dim, mask, causal_align, window, bias, "
        "out_proj, scale, weights, max_seq_len, dtype, weight_dtype, outputs, decode, "
        "cross_attention, rope, alibi, softcap, qk_norm, clip_qkv, sinks, t5_bias, tensor_parallel, "
        "chunk, temperature_tuning, relative_key");
}

TEST_CASE("found values are escaped and truncated", "[spec][error]") {
  CHECK(errorOf("name: \"a'b\\tc\"\n") ==
        "t.yaml:1:7: error: name: expected a C identifier (letters, digits "
        "and '_', not starting with a digit), found the quoted string "
        "'a\\'b\\tc'");
  CHECK(errorOf("name: attn\nd_model: " + std::string(60, 'z') + "\n") ==
        "t.yaml:2:10: error: d_model: expected a positive integer, found '" +
            std::string(40, 'z') + "...'");
}

TEST_CASE("parseSpecFile reports unreadable files", "[spec][error]") {
  SpecResult r = parseSpecFile("/nonexistent/attnc/spec.yaml");
  CHECK_FALSE(r);
  CHECK(r.error == "/nonexistent/attnc/spec.yaml: error: cannot read file: "
                   "No such file or directory");
  r = parseSpecFile("/");
  CHECK(r.error == "/: error: cannot read file: is a directory, not a regular file");
  // A FIFO is refused without blocking (no writer: open() would hang).
  char dir[] = "/tmp/attnc-spec-fifo-XXXXXX";
  REQUIRE(mkdtemp(dir));
  std::string fifo = std::string(dir) + "/spec.yaml";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  r = parseSpecFile(fifo);
  CHECK(r.error == fifo + ": error: cannot read file: is a FIFO, not a regular file");
  unlink(fifo.c_str());
  rmdir(dir);
}

TEST_CASE("the file name given is the one printed", "[spec][error]") {
  SpecResult r = parseSpecString("heads: x\n", "dir/My Spec.yaml");
  CHECK(r.error == "dir/My Spec.yaml:1:8: error: heads: expected a positive "
                   "integer, found 'x'");
}

TEST_CASE("scale must survive rounding to f32 and load", "[spec][errors]") {
  const std::string msg = "t.yaml:4:8: error: scale: expected a positive number "
                          "between the smallest normal float32 (about 1.2e-38) "
                          "and 1e6, found ";
  REQUIRE(errorOf(kBase + "scale: 1e39\n") == msg + "'1e39'");
  REQUIRE(errorOf(kBase + "scale: 1e-40\n") == msg + "'1e-40'");
  // The loader refuses a scale past 1e6 (attnc/runtime/Limits.h): so does
  // the parser, not only past float32.
  REQUIRE(errorOf(kBase + "scale: 3e38\n") == msg + "'3e38'");
  REQUIRE(errorOf(kBase + "scale: 1000000.1\n") == msg + "'1000000.1'");
  REQUIRE(specOf(kBase + "scale: 1e6\n").effectiveScale() == 1e6);
  REQUIRE(specOf(kBase + "scale: 1.2e-38\n").effectiveScale() == 1.2e-38);
}

TEST_CASE("CR-only line endings are named as such", "[spec][error]") {
  // Classic Mac OS line breaks: yaml-cpp sees one line and reports
  // something unrelated; the parser says what the file is.
  CHECK(errorOf("name: attn\rd_model: 8\rheads: 2\r") ==
        "t.yaml:1:11: error: the file uses CR line endings (a carriage return "
        "without a line feed, as classic Mac OS wrote them): expected LF or "
        "CRLF; convert it, for example with tr '\\r' '\\n'");
  CHECK(errorOf("name: attn\r\nd_model: 8\rheads: 2\r\n") ==
        "t.yaml:2:11: error: the file uses CR line endings (a carriage return "
        "without a line feed, as classic Mac OS wrote them): expected LF or "
        "CRLF; convert it, for example with tr '\\r' '\\n'");
  // CRLF is fine.
  CHECK(specOf("name: attn\r\nd_model: 8\r\nheads: 2\r\n").heads == 2);
}

TEST_CASE("columns after a UTF-8 BOM count from the first character", "[spec][error]") {
  // The byte order mark is not a character an editor shows: an error on
  // the first line points where it would without it (it was 3 columns off).
  CHECK(errorOf("\xef\xbb\xbfname: [attn\nd_model: 8\nheads: 2\n") ==
        errorOf("name: [attn\nd_model: 8\nheads: 2\n"));
  CHECK(errorOf("\xef\xbb\xbfheads: x\nname: a\nd_model: 8\n") ==
        "t.yaml:1:8: error: heads: expected a positive integer, found 'x'");
}

TEST_CASE("modelDifferences names what changes the block, not the kernel's choices",
          "[spec][hf]") {
  const char *base = "name: a\nd_model: 64\nheads: 4\nkv_heads: 2\nmask: causal\n"
                     "weights: separate\nrope:\n  theta: 10000\n";
  const attnrt::BlockParams model = blockParams(specOf(base));
  // The kernel's own choices: decode, max_seq_len, probs, padding lengths,
  // element types, a tensor-parallel split.
  CHECK(modelDifferences(blockParams(specOf(std::string(base) +
                                            "decode: true\nmax_seq_len: 512\n"
                                            "dtype: bf16\noutputs: [y, probs]\n")),
                         model)
            .empty());
  CHECK(modelDifferences(blockParams(specOf(std::string(base) + "tensor_parallel: {size: 2, rank: 1}\n")),
                         model)
            .empty());
  const char *alibi = "name: a\nd_model: 48\nheads: 6\nmask: causal\nweights: separate\n"
                      "alibi: true\n";
  CHECK(modelDifferences(blockParams(specOf(std::string(alibi) +
                                            "tensor_parallel: {size: 2, rank: 1}\n")),
                         blockParams(specOf(alibi)))
            .empty());
  std::string padded = base;
  padded.replace(padded.find("mask: causal"), 12, "mask: causal+padding");
  CHECK(modelDifferences(blockParams(specOf(padded)), model).empty());
  // What the module computes.
  std::string theta = base;
  theta.replace(theta.find("10000"), 5, "500000");
  CHECK(modelDifferences(blockParams(specOf(theta)), model) ==
        std::vector<std::string>{"rotary frequencies (rope_theta or rope_scaling) differ"});
  std::string heads = base;
  heads.replace(heads.find("heads: 4"), 8, "heads: 8");
  CHECK(modelDifferences(blockParams(specOf(heads)), model) ==
        std::vector<std::string>{"heads 8 (config.json: 4)", "head_dim 8 (config.json: 16)"});
  std::string bidir = base;
  bidir.replace(bidir.find("mask: causal"), 12, "mask: none");
  CHECK(modelDifferences(blockParams(specOf(bidir)), model) ==
        std::vector<std::string>{"mask bidirectional (config.json: causal)"});
  CHECK(modelDifferences(blockParams(specOf(std::string(base) + "bias: [q, k, v]\nsinks: true\n")),
                         model) ==
        std::vector<std::string>{"o bias no (config.json: yes)", "sinks yes (config.json: no)"});
  // In the spec's words: the window with its size, a QK-norm by its kind.
  std::string window = base;
  window.replace(window.find("mask: causal"), 12, "mask: sliding_window\nwindow: 6");
  CHECK(modelDifferences(blockParams(specOf(window)), model) ==
        std::vector<std::string>{"mask causal within a sliding window of 6 (config.json: causal)"});
  std::string window8 = base;
  window8.replace(window8.find("mask: causal"), 12, "mask: sliding_window\nwindow: 8");
  CHECK(modelDifferences(blockParams(specOf(window)), blockParams(specOf(window8))) ==
        std::vector<std::string>{"mask causal within a sliding window of 6 (config.json: causal "
                                 "within a sliding window of 8)"});
  CHECK(modelDifferences(model, blockParams(specOf(std::string(base) +
                                                   "qk_norm: {width: head, eps: 1e-6}\n"))) ==
        std::vector<std::string>{"qk_norm none (config.json: rms over each head)"});
}

TEST_CASE("yarn's attention factor follows _compute_yarn_parameters, a 0 mscale included",
          "[spec][rope]") {
  auto factorOf = [](const std::string &scaling) {
    return ropeAttentionFactor(specOf("name: a\nd_model: 64\nheads: 4\nweights: separate\n"
                                      "rope: {scaling: {type: yarn, factor: 4, "
                                      "original_max_position_embeddings: 64" +
                                      scaling + "}}\n"));
  };
  const double dflt = 0.1 * std::log(4.0) + 1.0; // get_mscale(4)
  CHECK(factorOf("") == Approx(dflt).epsilon(1e-15));
  CHECK(factorOf(", mscale: 2, mscale_all_dim: 1") ==
        Approx((0.2 * std::log(4.0) + 1.0) / dflt).epsilon(1e-15));
  // `if mscale and mscale_all_dim`: a 0 is false there, so the default.
  CHECK(factorOf(", mscale: 2, mscale_all_dim: 0") == Approx(dflt).epsilon(1e-15));
  CHECK(factorOf(", mscale: 0, mscale_all_dim: 2") == Approx(dflt).epsilon(1e-15));
  CHECK(factorOf(", mscale: 2") == Approx(dflt).epsilon(1e-15));
  CHECK(factorOf(", attention_factor: 0.5, mscale: 2, mscale_all_dim: 1") == 0.5);
}
