#include "lnet/buffer.h"

#include <malloc.h>

namespace stria::lnet {

void KeepBulkBuffersOffMmap() {
  static const bool done = [] {
    // Up to 128 MiB blocks come from the heap; keep up to 512 MiB of freed heap untrimmed.
    mallopt(M_MMAP_THRESHOLD, 128 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    return true;
  }();
  (void)done;
}

}  // namespace stria::lnet
