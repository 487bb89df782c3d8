//===- ToolSupport.h - shared bits of the attnc tool mains ------*- C++ -*-===//
#ifndef ATTNC_TOOLS_TOOLSUPPORT_H
#define ATTNC_TOOLS_TOOLSUPPORT_H

#include "attnc/Spec/Spec.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace attnc::tools {

/// Parses and validates a spec, printing the one located error on stderr.
/// Also rejects features this version cannot lower yet.
inline std::optional<Spec> loadSpec(const std::string &path) {
  SpecResult r = parseSpecFile(path);
  if (!r) {
    llvm::errs() << r.error << "\n";
    return std::nullopt;
  }
  std::string unsupported = unsupportedFeature(*r.spec);
  if (!unsupported.empty()) {
    llvm::errs() << unsupported << "\n";
    return std::nullopt;
  }
  return r.spec;
}

/// Prints MLIR diagnostics as `FILE:LINE:COL: error: message`, using the
/// innermost file location (attnc's IR points at spec lines).
inline void installDiagnostics(mlir::MLIRContext &ctx) {
  ctx.getDiagEngine().registerHandler([](mlir::Diagnostic &d) {
    std::string where;
    d.getLocation()->walk([&](mlir::Location l) {
      if (auto f = llvm::dyn_cast<mlir::FileLineColLoc>(l)) {
        where = (f.getFilename().str() + ":" + std::to_string(f.getLine()) +
                 ":" + std::to_string(f.getColumn()) + ": ");
        return mlir::WalkResult::interrupt();
      }
      return mlir::WalkResult::advance();
    });
    const char *sev = d.getSeverity() == mlir::DiagnosticSeverity::Error ? "error"
                      : d.getSeverity() == mlir::DiagnosticSeverity::Warning
                          ? "warning"
                          : "note";
    llvm::errs() << where << sev << ": " << d.str() << "\n";
    // Notes that dump whole operations are for compiler developers
    // (--mlir-print-op-on-diagnostic in attnc-opt); users get the message.
    for (auto &n : d.getNotes())
      if (!llvm::StringRef(n.str()).starts_with("see current operation"))
        llvm::errs() << "  note: " << n.str() << "\n";
    return mlir::success();
  });
}

} // namespace attnc::tools

#endif
