//===- Outputs.h - all-or-nothing output files of one compile ---*- C++ -*-===//
//
// attnc writes several files (the .so, the header). A failed compile must
// leave every earlier output exactly as it was, so each output is first
// written to a temporary and commit() moves them all into place at the end:
//
//   - a path that does not exist or is a regular file gets a temporary in
//     the same directory (created up front, so an unwritable directory fails
//     before any work) that commit() renames over it;
//   - an existing path that is not a regular file (/dev/null, a FIFO, a
//     character device) is written straight to at commit time, as clang
//     does: the node itself is never replaced. Its temporary lives in the
//     system temp directory;
//   - a directory is refused.
//
// commit() writes the direct outputs first (they cannot be rolled back: a
// failing one, such as --header /dev/full, fails the commit before any
// regular output changed), then renames the regular outputs; when a rename
// fails, the outputs already renamed are put back from hard-link backups
// (or removed when they did not exist), so the set changes all together or
// not at all. Uncommitted temporaries are removed by the destructor (and on
// signals); they are named .attnc-PID-XXXXXXXX.tmp, and the ones a SIGKILL
// left behind (their PID is gone) are removed by the next compile that
// writes to the same directory.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TARGET_OUTPUTS_H
#define ATTNC_TARGET_OUTPUTS_H

#include "llvm/ADT/StringRef.h"

#include <memory>
#include <string>
#include <vector>

namespace attnc {

class OutputFiles {
public:
  OutputFiles();
  ~OutputFiles();
  OutputFiles(const OutputFiles &) = delete;
  OutputFiles &operator=(const OutputFiles &) = delete;

  /// Registers the output `path` and creates its temporary. Returns its
  /// index, or -1 with `error` set ("cannot create 'PATH': ...").
  int add(const std::string &path, std::string &error);

  /// The temporary to write output `i` to (a regular file that exists).
  const std::string &tempPath(int i) const;

  /// Replaces the content of output `i`'s temporary with `text`.
  bool write(int i, llvm::StringRef text, std::string &error);

  /// Moves every output into place (see above). On failure no regular
  /// output has changed and `error` says why.
  bool commit(std::string &error);

private:
  struct Entry;
  std::vector<std::unique_ptr<Entry>> entries;
};

/// True when `a` and `b` name the same file, whatever the spelling (./x,
/// dir/../x, symbolic or hard links), also when neither exists yet.
bool samePath(const std::string &a, const std::string &b);

} // namespace attnc

#endif
