// The target that owns the precompiled MLIR headers (cmake/MlirPch.h).
