//===- Checksum.h - the CRC-32 a kernel library carries ---------*- C++ -*-===//
//
// A shared object attnc writes has an ELF section ATTNC_CHECKSUM_SECTION
// holding an attnc_checksum record (abi.h): zlib's CRC-32 of the whole file
// with the record's crc32 field read as zero. attnc stamps it after linking
// (stampChecksum); the loader verifies it before dlopen() (verifyChecksum),
// so bit flips anywhere in the file (code, data, headers) are refused with
// a message instead of crashing the process that runs the kernel.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_CHECKSUM_H
#define ATTNC_RUNTIME_CHECKSUM_H

#include <cstdint>
#include <string>

namespace attnrt {

/// Where the checksum record lies in an ELF image.
struct ChecksumSection {
  bool found = false;
  uint64_t offset = 0; ///< file offset of the attnc_checksum record
};

/// Finds ATTNC_CHECKSUM_SECTION in the ELF64 image `bytes` (n bytes).
/// False with `why` when the section headers are malformed or the section
/// is too small or lacks the magic; true with found = false when there is
/// no such section.
bool findChecksumSection(const unsigned char *bytes, uint64_t n, ChecksumSection &out,
                         std::string &why);

/// CRC-32 of `bytes` with the four bytes at `fieldOffset` read as zero.
uint32_t fileChecksum(const unsigned char *bytes, uint64_t n, uint64_t fieldOffset);

/// Computes and writes the checksum into the shared object at `path`
/// (which must have the section). False with `why` on any failure.
bool stampChecksum(const std::string &path, std::string &why);

/// The verdict on the file at `path`: empty when it has a valid checksum
/// (`*present` = true) or no checksum section (`*present` = false);
/// otherwise the reason ("checksum mismatch: ...").
std::string verifyChecksum(const std::string &path, bool *present);

} // namespace attnrt

#endif // ATTNC_RUNTIME_CHECKSUM_H
