//===- Files.h - how attnc's tools read and write files ---------*- C++ -*-===//
//
// Inputs: every file attnc and attnc-run read (specs, config.json, kernel
// libraries, .npy/.npz/.safetensors weights, --x inputs) is opened through
// openRegularFile: O_NONBLOCK, so a FIFO without a writer cannot hang
// open(), then fstat() on the open descriptor (no race between the check
// and the read), and anything that is not a regular file is refused with
// what it is ("a FIFO", "a directory", ...).
//
// Outputs: sameFile() compares device and inode, so an output that is one
// of the inputs is refused whatever its spelling; writeFileAtomically()
// writes a temporary in the output's directory and renames it over the
// output, so a full disk or a kill leaves the previous file intact. The
// temporaries are named PREFIX-PID-XXXXXX.tmp, and removeStaleTemporaries()
// deletes those whose process is gone (a SIGKILLed run leaves nothing
// behind past the next run).
//
// Header-only and POSIX-only: the spec library and the compiler (no
// libattnrt) and libattnrt both include it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_REGULARFILE_H
#define ATTNC_RUNTIME_REGULARFILE_H

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <dirent.h>
#include <functional>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <climits>
#include <sys/stat.h>
#include <unistd.h>

namespace attnrt {

/// What a non-regular file is, for messages ("a directory", "a FIFO", ...).
inline const char *fileKind(mode_t m) {
  if (S_ISDIR(m))
    return "a directory";
  if (S_ISFIFO(m))
    return "a FIFO";
  if (S_ISCHR(m))
    return "a character device";
  if (S_ISBLK(m))
    return "a block device";
  if (S_ISSOCK(m))
    return "a socket";
  return "not a regular file";
}

/// Closes a descriptor at the end of a scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// Opens `path` read-only (O_CLOEXEC) without blocking and returns the
/// descriptor when it names a regular file, with its size in `*size`;
/// otherwise -1 and `why` ("cannot open: No such file or directory", "is a
/// FIFO, not a regular file", ...). The descriptor is left blocking.
inline int openRegularFile(const std::string &path, std::string &why,
                           uint64_t *size = nullptr) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    why = std::string("cannot open: ") + std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    why = std::string("cannot stat: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    why = std::string("is ") + fileKind(st.st_mode) + ", not a regular file";
    ::close(fd);
    return -1;
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  if (size)
    *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

/// The whole content of the regular file `path` when it has at most
/// `maxBytes` bytes; otherwise false and `why` (the openRegularFile reasons,
/// "N bytes, more than the limit of M", "read error: ..."); `*size`, when
/// given, is the file's size (0 when it could not be opened).
inline bool readRegularFile(const std::string &path, uint64_t maxBytes,
                            std::string &text, std::string &why,
                            uint64_t *sizeOut = nullptr) {
  uint64_t size = 0;
  int fd = openRegularFile(path, why, &size);
  if (sizeOut)
    *sizeOut = size;
  if (fd < 0)
    return false;
  FdCloser closer{fd};
  if (size > maxBytes) {
    why = std::to_string(size) + " bytes, more than the limit of " +
          std::to_string(maxBytes);
    return false;
  }
  text.assign(static_cast<size_t>(size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t r = ::read(fd, &text[got], text.size() - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      why = std::string("read error: ") + std::strerror(errno);
      return false;
    }
    if (r == 0)
      break; // shrank while reading: take what is there
    got += static_cast<size_t>(r);
  }
  text.resize(got);
  return true;
}

/// True when `a` and `b` both exist and are the same file (device and
/// inode: also through links and other spellings).
inline bool sameFile(const std::string &a, const std::string &b) {
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/// The directory part of `path` ("." for a bare name).
inline std::string parentDirectory(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// Removes the entries `dir`/PREFIX-PID-*.tmp (files, or directories of
/// files) whose process PID no longer exists: what a killed run of a tool
/// left behind. Entries of live processes (a concurrent run) and anything
/// else are left alone. Best effort: errors are ignored.
inline void removeStaleTemporaries(const std::string &dir, const std::string &prefix) {
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return;
  std::string lead = prefix + "-";
  while (dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, lead.size(), lead) != 0 || name.size() < lead.size() + 5 ||
        name.compare(name.size() - 4, 4, ".tmp") != 0)
      continue;
    size_t i = lead.size(), j = i;
    while (j < name.size() && name[j] >= '0' && name[j] <= '9')
      ++j;
    if (j == i || j - i > 9 || name[j] != '-')
      continue;
    long pid = std::stol(name.substr(i, j - i));
    if (pid <= 0 || ::kill(pid_t(pid), 0) == 0 || errno != ESRCH)
      continue; // alive, or not ours to judge
    std::string full = dir + "/" + name;
    struct stat st;
    if (::lstat(full.c_str(), &st) != 0)
      continue;
    if (S_ISDIR(st.st_mode)) {
      if (DIR *sub = ::opendir(full.c_str())) {
        while (dirent *f = ::readdir(sub))
          if (std::strcmp(f->d_name, ".") && std::strcmp(f->d_name, ".."))
            ::unlink((full + "/" + f->d_name).c_str());
        ::closedir(sub);
      }
      ::rmdir(full.c_str());
    } else if (S_ISREG(st.st_mode)) {
      ::unlink(full.c_str());
    }
  }
  ::closedir(d);
}

/// A new temporary `dir`/PREFIX-PID-XXXXXX.tmp (a file, or a directory when
/// `directory`), after removing stale ones of dead processes; its path, or
/// "" with `why`.
inline std::string makeTemporary(const std::string &dir, const std::string &prefix,
                                 bool directory, std::string &why, int *fd = nullptr) {
  removeStaleTemporaries(dir, prefix);
  std::string model = dir + "/" + prefix + "-" + std::to_string(::getpid()) + "-XXXXXX.tmp";
  std::string path = model;
  if (directory) {
    // mkdtemp wants the Xs last: make NAME-XXXXXX, then rename to NAME.tmp.
    std::string stem = model.substr(0, model.size() - 4);
    if (!::mkdtemp(&stem[0])) {
      why = std::string("cannot create a temporary directory in ") + dir + ": " +
            std::strerror(errno);
      return "";
    }
    path = stem + ".tmp";
    if (::rename(stem.c_str(), path.c_str()) != 0) {
      why = std::string("cannot create a temporary directory in ") + dir + ": " +
            std::strerror(errno);
      ::rmdir(stem.c_str());
      return "";
    }
    return path;
  }
  int f = ::mkostemps(&path[0], 4, O_CLOEXEC);
  if (f < 0) {
    why = std::string("cannot create a temporary file in ") + dir + ": " +
          std::strerror(errno);
    return "";
  }
  if (fd)
    *fd = f;
  else
    ::close(f);
  return path;
}

/// Where writing `path` goes: the file a symbolic link names (written
/// through, as compilers and shell redirection do: the link stays a link;
/// a dangling link's file is created, as `> link` creates it), else `path`
/// itself (also for a chain of links that loops).
inline std::string outputTarget(const std::string &path) {
  struct stat st;
  char buf[PATH_MAX];
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode))
    return path;
  if (::realpath(path.c_str(), buf))
    return buf;
  // Dangling: follow the chain to the name that does not exist yet.
  std::string cur = path;
  for (int hop = 0; hop < 40; ++hop) {
    if (::lstat(cur.c_str(), &st) != 0)
      return errno == ENOENT ? cur : path;
    if (!S_ISLNK(st.st_mode))
      return cur;
    ssize_t n = ::readlink(cur.c_str(), buf, sizeof buf - 1);
    if (n <= 0)
      return path;
    std::string next(buf, size_t(n));
    if (next[0] != '/') {
      size_t slash = cur.rfind('/');
      next = (slash == std::string::npos ? "" : cur.substr(0, slash + 1)) + next;
    }
    cur = next;
  }
  return path;
}

/// Writes `path` through `write` (which gets a FILE* and returns false on
/// its own failure) all or nothing: into a temporary beside it
/// (.PREFIX-PID-XXXXXX.tmp), flushed, then renamed over `path` (over the
/// file a symbolic link names: outputTarget). An existing
/// `path` that is not a regular file (/dev/null, a FIFO, a device) is
/// written straight to, as compilers do; a directory is refused. On failure
/// `path` is as it was and `why` says what failed.
inline bool writeFileAtomically(const std::string &given,
                                const std::function<bool(std::FILE *)> &write,
                                std::string &why, const char *prefix = ".attnc-run") {
  const std::string path = outputTarget(given);
  struct stat st;
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    why = "cannot write: is a directory";
    return false;
  }
  if (exists && !S_ISREG(st.st_mode)) {
    std::FILE *f = std::fopen(path.c_str(), "wb");
    if (!f) {
      why = std::string("cannot open for writing: ") + std::strerror(errno);
      return false;
    }
    bool ok = write(f);
    int e = ok ? 0 : errno;
    if (std::fclose(f) != 0 && ok) {
      ok = false;
      e = errno;
    }
    if (!ok)
      why = std::string("write error: ") + std::strerror(e ? e : EIO);
    return ok;
  }
  int fd = -1;
  std::string tmp = makeTemporary(parentDirectory(path), prefix, false, why, &fd);
  if (tmp.empty())
    return false;
  std::FILE *f = ::fdopen(fd, "wb");
  if (!f) {
    why = std::string("cannot write: ") + std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return false;
  }
  bool ok = write(f);
  int e = ok ? 0 : errno;
  if (ok && std::fflush(f) != 0) {
    ok = false;
    e = errno;
  }
  if (ok && ::fsync(fileno(f)) != 0 && errno != EINVAL) {
    ok = false;
    e = errno;
  }
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    e = errno;
  }
  if (ok && exists)
    ::chmod(tmp.c_str(), st.st_mode & 07777); // keep the old file's mode
  else if (ok) {
    mode_t mask = ::umask(0);
    ::umask(mask);
    ::chmod(tmp.c_str(), 0666 & ~mask);
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    e = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    why = std::string("write error: ") + std::strerror(e ? e : EIO) +
          " (the previous file, if any, is unchanged)";
  }
  return ok;
}

} // namespace attnrt

#endif // ATTNC_RUNTIME_REGULARFILE_H
