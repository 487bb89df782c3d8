//===- AttnInterfaces.cpp - how attn ops are tiled ------------------------===//
#include "attnc/Dialect/Attn/IR/AttnInterfaces.h"

attnc::attn::PhaseContext::~PhaseContext() = default;

#include "attnc/Dialect/Attn/IR/AttnInterfaces.cpp.inc"
