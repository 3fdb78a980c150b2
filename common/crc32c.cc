#include "common/crc32c.h"

#include <isa-l/crc.h>

namespace stria {

uint32_t Crc32c(const void* data, size_t len, uint32_t crc) {
  // ISA-L's iSCSI CRC takes and returns the raw register; invert on both sides so that
  // results match the standard crc32c (and chained calls compose).
  return ~crc32_iscsi(static_cast<unsigned char*>(const_cast<void*>(data)),
                      static_cast<int>(len), ~crc);
}

}  // namespace stria
