//===- Outputs.cpp - all-or-nothing output files of one compile -----------===//
//
// See Outputs.h. Only LLVM's Support library: TempFile removes its file on
// signals and when discarded.
//
//===----------------------------------------------------------------------===//
#include "attnc/Target/Outputs.h"
#include "attnc/runtime/Files.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <unistd.h>

using namespace llvm;

struct attnc::OutputFiles::Entry {
  std::string path;
  bool direct = false; ///< an existing non-regular file: written straight to
  std::optional<sys::fs::TempFile> tmp;
  std::string tmpName;
};

attnc::OutputFiles::OutputFiles() = default;

attnc::OutputFiles::~OutputFiles() {
  for (auto &e : entries)
    if (e->tmp)
      consumeError(e->tmp->discard());
}

int attnc::OutputFiles::add(const std::string &path, std::string &error) {
  auto e = std::make_unique<Entry>();
  // A symbolic link is written through (the file it names is replaced and
  // the link stays), as attnc-opt, attnc-run and compilers write it.
  e->path = attnrt::outputTarget(path);
  sys::fs::file_status st;
  bool exists = !sys::fs::status(e->path, st) && sys::fs::exists(st);
  if (exists && sys::fs::is_directory(st)) {
    error = "cannot write '" + path + "': it is a directory";
    return -1;
  }
  e->direct = exists && !sys::fs::is_regular_file(st);
  SmallString<256> model;
  std::string prefix;
  if (e->direct) {
    sys::path::system_temp_directory(/*ErasedOnReboot=*/true, model);
    prefix = "attnc";
  } else {
    // Next to the output, so that the final rename is atomic.
    StringRef dir = sys::path::parent_path(e->path);
    model = dir.empty() ? StringRef(".") : dir;
    prefix = ".attnc";
  }
  // PREFIX-PID-*.tmp: what a killed compile left here is removed now.
  attnrt::removeStaleTemporaries(std::string(model), prefix);
  sys::path::append(model, prefix + "-" + std::to_string(::getpid()) + "-%%%%%%%%.tmp");
  Expected<sys::fs::TempFile> tmp = sys::fs::TempFile::create(model);
  if (!tmp) {
    std::error_code ec = errorToErrorCode(tmp.takeError());
    error = "cannot create '" + path + "': " + ec.message();
    return -1;
  }
  e->tmpName = tmp->TmpName;
  e->tmp.emplace(std::move(*tmp));
  entries.push_back(std::move(e));
  return static_cast<int>(entries.size()) - 1;
}

const std::string &attnc::OutputFiles::tempPath(int i) const {
  return entries[i]->tmpName;
}

bool attnc::OutputFiles::write(int i, StringRef text, std::string &error) {
  const Entry &e = *entries[i];
  std::error_code ec;
  raw_fd_ostream os(e.tmpName, ec, sys::fs::OF_None);
  if (!ec) {
    os << text;
    os.close();
    ec = os.error();
    os.clear_error();
  }
  if (ec)
    error = "cannot write '" + e.path + "': " + ec.message();
  return !ec;
}

/// Copies the content of `from` into the existing node `to` (a device,
/// FIFO, ...), opened for writing like any file: the node stays.
static bool copyInto(const std::string &from, const std::string &to,
                     std::string &error) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buf =
      MemoryBuffer::getFile(from, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf) {
    error = "cannot read back the temporary for '" + to +
            "': " + buf.getError().message();
    return false;
  }
  std::error_code ec;
  raw_fd_ostream os(to, ec, sys::fs::OF_None);
  if (!ec) {
    os << (*buf)->getBuffer();
    os.close();
    ec = os.error();
    os.clear_error();
  }
  if (ec)
    error = "cannot write '" + to + "': " + ec.message();
  return !ec;
}

bool attnc::OutputFiles::commit(std::string &error) {
  // 1. Outputs that are not regular files (/dev/null, a FIFO, /dev/full)
  //    first: they cannot be rolled back, so a failing one must fail the
  //    commit before any regular output is replaced.
  for (auto &e : entries) {
    if (!e->direct)
      continue;
    bool ok = copyInto(e->tmpName, e->path, error);
    consumeError(e->tmp->discard());
    e->tmp.reset();
    if (!ok)
      return false;
  }
  // 2. Hard-link backups of the regular outputs that exist now.
  std::vector<std::string> backup(entries.size());
  auto dropBackups = [&] {
    for (const std::string &b : backup)
      if (!b.empty())
        sys::fs::remove(b);
  };
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry &e = *entries[i];
    if (e.direct || !sys::fs::exists(e.path))
      continue;
    StringRef dir = sys::path::parent_path(e.path);
    SmallString<256> model(dir.empty() ? StringRef(".") : dir), name;
    sys::path::append(model, ".attnc-" + std::to_string(::getpid()) + "-%%%%%%%%.bak.tmp");
    sys::fs::createUniquePath(model, name, /*MakeAbsolute=*/false);
    if (sys::fs::create_hard_link(e.path, name)) {
      dropBackups();
      error = "cannot back up '" + e.path + "' before replacing it";
      return false;
    }
    backup[i] = std::string(name);
  }
  // 3. Rename the regular outputs; undo them all when one fails.
  std::vector<size_t> done;
  for (size_t i = 0; i < entries.size(); ++i) {
    Entry &e = *entries[i];
    if (e.direct)
      continue;
    Error err = e.tmp->keep(e.path);
    e.tmp.reset();
    if (err) {
      error = "cannot write '" + e.path +
              "': " + errorToErrorCode(std::move(err)).message();
      sys::fs::remove(e.tmpName);
      for (size_t j : done) {
        if (backup[j].empty())
          sys::fs::remove(entries[j]->path);
        else if (!sys::fs::rename(backup[j], entries[j]->path))
          backup[j].clear();
      }
      dropBackups();
      return false;
    }
    done.push_back(i);
  }
  dropBackups();
  return true;
}

/// An absolute spelling of `p` with every symbolic link resolved; for a
/// path that does not exist, its directory's real path plus the file name.
static std::string canonicalPath(const std::string &p) {
  SmallString<256> real;
  if (!sys::fs::real_path(p, real))
    return std::string(real);
  StringRef parent = sys::path::parent_path(p);
  SmallString<256> dir;
  if (!sys::fs::real_path(parent.empty() ? StringRef(".") : parent, dir)) {
    sys::path::append(dir, sys::path::filename(p));
    return std::string(dir);
  }
  SmallString<256> abs(p);
  sys::fs::make_absolute(abs);
  sys::path::remove_dots(abs, /*remove_dot_dot=*/true);
  return std::string(abs);
}

bool attnc::samePath(const std::string &a, const std::string &b) {
  bool eq = false;
  if (!sys::fs::equivalent(a, b, eq) && eq)
    return true; // both exist: same device and inode (also hard links)
  return canonicalPath(a) == canonicalPath(b);
}
