//===- FuzzSpec.cpp - libFuzzer harness: YAML spec parser + validator -----===//
//
// Input: the bytes of a spec file. Checks, beyond "no crash, no sanitizer
// report": every rejected spec gets exactly one line "fuzz.yaml:L:C: error:
// ..." (L, C >= 1); every accepted spec satisfies the documented limits
// (docs/limits.md) and relations, and its printers and hash do not crash.
//
//===----------------------------------------------------------------------===//
#include "attnc/Spec/Spec.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

static void expect(bool ok, const char *what, const std::string &detail) {
  if (ok)
    return;
  std::fprintf(stderr, "fuzz-spec: invariant violated: %s\n%s\n", what,
               detail.c_str());
  std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  attnc::SpecResult r = attnc::parseSpecString(text, "fuzz.yaml");
  if (!r) {
    const std::string &e = r.error;
    unsigned line = 0, col = 0;
    int n = 0;
    bool located = std::sscanf(e.c_str(), "fuzz.yaml:%u:%u: error: %n", &line,
                               &col, &n) == 2 &&
                   n > 0 && line >= 1 && col >= 1;
    expect(located, "a spec error is 'fuzz.yaml:LINE:COL: error: ...'", e);
    expect(e.find('\n') == std::string::npos, "a spec error is one line", e);
    expect(e.size() < 4096, "a spec error is short", e.substr(0, 200));
    return 0;
  }
  const attnc::Spec &s = *r.spec;
  std::string dump = attnc::printSpec(s);
  expect(s.dModel >= 1 && s.dModel <= 65536, "1 <= d_model <= 65536", dump);
  expect(s.heads >= 1 && s.heads <= 1024, "1 <= heads <= 1024", dump);
  expect(s.kvHeads >= 1 && s.kvHeads <= 1024 && s.heads % s.kvHeads == 0,
         "kv_heads in [1, 1024] divides heads", dump);
  expect(s.headDim >= 1 && s.headDim <= 1024, "1 <= head_dim <= 1024", dump);
  expect(s.maxSeqLen >= 0 && s.maxSeqLen <= (int64_t(1) << 24),
         "0 <= max_seq_len <= 2^24", dump);
  expect(s.window >= 0 && s.window <= (int64_t(1) << 24), "0 <= window <= 2^24",
         dump);
  expect(!s.name.empty() && s.name.size() <= 128, "a name of 1..128 chars", dump);
  expect((s.fullHeads + 2 * s.fullKvHeads + (s.outProj ? s.fullHeads : 0)) * s.headDim *
                 s.dModel < (int64_t(1) << 31),
         "Q/K/V and W_O weight elements < 2^31", dump);
  // The printed spec (attnc-dump --stage spec) is a spec: it reads back
  // into one that prints the same (its default scale then written).
  attnc::SpecResult again = attnc::parseSpecString(dump, "dump.yaml");
  expect(again.spec.has_value(), "the printed spec reads back", dump + "\n" + again.error);
  if (again.spec) {
    std::string want = dump;
    const std::string autoNote = "  # auto: 1/sqrt(head_dim)";
    if (size_t at = want.find(autoNote); at != std::string::npos)
      want.erase(at, autoNote.size());
    expect(attnc::printSpec(*again.spec) == want, "the printed spec prints the same", dump);
  }
  double scale = s.effectiveScale();
  expect(scale > 0 && scale < 1e300, "a positive finite scale", dump);
  (void)attnc::specHash(s);
  std::string unsupported = attnc::unsupportedFeature(s);
  expect(unsupported.empty() || unsupported.rfind("fuzz.yaml:", 0) == 0,
         "an unsupported feature is a located error", unsupported);
  return 0;
}
