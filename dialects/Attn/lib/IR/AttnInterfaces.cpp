//===- AttnInterfaces.cpp - how attn ops are tiled ------------------------===//
#include "attnc/Dialect/Attn/IR/AttnInterfaces.h"
#include "attnc/Dialect/Attn/IR/AttnKernelsInterface.h"

attnc::attn::PhaseContext::~PhaseContext() = default;

#include "attnc/Dialect/Attn/IR/AttnInterfaces.cpp.inc"
#include "attnc/Dialect/Attn/IR/AttnKernelsInterface.cpp.inc"
