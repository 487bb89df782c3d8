//===- Checksum.cpp - the CRC-32 a kernel library carries -----------------===//
//
// See Checksum.h. The whole file is read (kernel libraries are a few
// hundred KB to a few MB). The CRC-32 is zlib's (IEEE 802.3, reflected,
// polynomial 0xEDB88320), computed here slicing by 8 so that the loader's
// library, libattnrt_core, needs no zlib.
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Checksum.h"
#include "attnc/runtime/Files.h"
#include "attnc/runtime/abi.h"

#include <cstdio>
#include <cstring>
#include <elf.h>
#include <vector>

namespace attnrt {

namespace {

/// Largest library read for its checksum.
constexpr uint64_t kMaxLibraryBytes = uint64_t(1) << 30;

bool readAll(const std::string &path, std::string &bytes, std::string &why) {
  return readRegularFile(path, kMaxLibraryBytes, bytes, why);
}

} // namespace

bool findChecksumSection(const unsigned char *b, uint64_t n, ChecksumSection &out,
                         std::string &why) {
  out = ChecksumSection();
  Elf64_Ehdr eh;
  if (n < sizeof(eh)) {
    why = "not an ELF file";
    return false;
  }
  std::memcpy(&eh, b, sizeof(eh));
  auto inside = [n](uint64_t off, uint64_t len) { return off <= n && len <= n - off; };
  if (eh.e_shnum == 0)
    return true;
  if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !inside(eh.e_shoff, uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr)) ||
      eh.e_shstrndx >= eh.e_shnum) {
    why = "corrupt ELF section headers";
    return false;
  }
  auto section = [&](unsigned i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, b + eh.e_shoff + uint64_t(i) * sizeof(sh), sizeof(sh));
    return sh;
  };
  Elf64_Shdr names = section(eh.e_shstrndx);
  if (names.sh_type != SHT_STRTAB || !inside(names.sh_offset, names.sh_size)) {
    why = "corrupt ELF section name table";
    return false;
  }
  const char *want = ATTNC_CHECKSUM_SECTION;
  const size_t wantLen = std::strlen(want) + 1;
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh = section(i);
    if (sh.sh_name >= names.sh_size || names.sh_size - sh.sh_name < wantLen ||
        std::memcmp(b + names.sh_offset + sh.sh_name, want, wantLen) != 0)
      continue;
    if (sh.sh_type != SHT_PROGBITS || sh.sh_size < sizeof(attnc_checksum) ||
        !inside(sh.sh_offset, sizeof(attnc_checksum)) ||
        std::memcmp(b + sh.sh_offset, ATTNC_CHECKSUM_MAGIC, 8) != 0) {
      why = std::string("corrupt ") + want + " section";
      return false;
    }
    out.found = true;
    out.offset = sh.sh_offset;
    return true;
  }
  return true;
}

namespace {
/// table[k][b]: the CRC of byte b followed by k zero bytes.
struct Crc32Table {
  uint32_t t[8][256];
  Crc32Table() {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t c = b;
      for (int k = 0; k < 8; ++k)
        c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
      t[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; ++b)
      for (int k = 1; k < 8; ++k)
        t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  }
};

/// zlib's crc32(crc, p, len): the running CRC (pre- and post-inverted).
uint32_t crc32Update(uint32_t crc, const unsigned char *p, uint64_t len) {
  static const Crc32Table table;
  const auto &t = table.t;
  crc = ~crc;
  for (; len >= 8; p += 8, len -= 8) {
    uint32_t lo = crc ^ (uint32_t(p[0]) | uint32_t(p[1]) << 8 |
                         uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24);
    crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^
          t[4][lo >> 24] ^ t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
  }
  for (; len > 0; ++p, --len)
    crc = (crc >> 8) ^ t[0][(crc ^ *p) & 0xFF];
  return ~crc;
}
} // namespace

uint32_t fileChecksum(const unsigned char *b, uint64_t n, uint64_t field) {
  const unsigned char zero[4] = {0, 0, 0, 0};
  uint32_t crc = 0;
  auto add = [&](const unsigned char *p, uint64_t len) {
    crc = crc32Update(crc, p, len);
  };
  uint64_t crcAt = field + offsetof(attnc_checksum, crc32);
  add(b, crcAt);
  add(zero, 4);
  add(b + crcAt + 4, n - crcAt - 4);
  return uint32_t(crc);
}

bool stampChecksum(const std::string &path, std::string &why) {
  std::string bytes;
  if (!readAll(path, bytes, why))
    return false;
  const auto *b = reinterpret_cast<const unsigned char *>(bytes.data());
  ChecksumSection cs;
  if (!findChecksumSection(b, bytes.size(), cs, why))
    return false;
  if (!cs.found) {
    why = std::string("the linked library has no ") + ATTNC_CHECKSUM_SECTION + " section";
    return false;
  }
  uint32_t crc = fileChecksum(b, bytes.size(), cs.offset);
  unsigned char le[4] = {uint8_t(crc), uint8_t(crc >> 8), uint8_t(crc >> 16),
                         uint8_t(crc >> 24)};
  std::FILE *f = std::fopen(path.c_str(), "r+b");
  bool ok = f && std::fseek(f, long(cs.offset + offsetof(attnc_checksum, crc32)), SEEK_SET) == 0 &&
            std::fwrite(le, 1, 4, f) == 4;
  if (f && std::fclose(f) != 0)
    ok = false;
  if (!ok)
    why = "cannot write the checksum into " + path;
  return ok;
}

std::string verifyChecksum(const std::string &path, bool *present) {
  *present = false;
  std::string bytes, why;
  if (!readAll(path, bytes, why))
    return why;
  const auto *b = reinterpret_cast<const unsigned char *>(bytes.data());
  ChecksumSection cs;
  if (!findChecksumSection(b, bytes.size(), cs, why))
    return "corrupt library (" + why + ")";
  if (!cs.found)
    return "";
  *present = true;
  uint32_t stored;
  std::memcpy(&stored, b + cs.offset + offsetof(attnc_checksum, crc32), 4);
  uint32_t computed = fileChecksum(b, bytes.size(), cs.offset);
  if (stored == computed)
    return "";
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "corrupt library: checksum mismatch (stored CRC-32 0x%08x, the "
                "file's 0x%08x): its bytes changed after attnc wrote it",
                stored, computed);
  return buf;
}

} // namespace attnrt
