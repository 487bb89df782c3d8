//===- BlockParams.h - a spec in the runtime's terms ------------*- C++ -*-===//
//
// The one mapping from a Spec to attnrt::BlockParams (the metadata
// record's codes): the back end writes it into the kernel, attnc-dump
// prints it, and attnc-run compares a kernel with the block that a
// checkpoint's config.json describes (specFromHf, then this). Needs no
// MLIR: attnc_spec, which attnc-run links.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SPEC_BLOCKPARAMS_H
#define ATTNC_SPEC_BLOCKPARAMS_H

#include "attnc/Spec/Spec.h"
#include "attnc/runtime/Block.h"

#include <string>
#include <vector>

namespace attnc {

/// The spec as the runtime describes a block (ABI enum values).
attnrt::BlockParams blockParams(const Spec &spec);

/// How block `kernel` computes something else than block `model` (the
/// block of a checkpoint's module): one entry per differing fact, "heads 4
/// (config.json: 8)". Only what changes the function of the block counts:
/// not the element types, the decode cache, the probs output, the padding
/// lengths of the mask or a tensor-parallel split (choices of a kernel of
/// the same module).
std::vector<std::string> modelDifferences(const attnrt::BlockParams &kernel,
                                          const attnrt::BlockParams &model);

} // namespace attnc

#endif
