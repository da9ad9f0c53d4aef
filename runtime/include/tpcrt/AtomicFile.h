//===- AtomicFile.h - write a file so readers never see it half-written ----===//

#ifndef TPCRT_ATOMICFILE_H
#define TPCRT_ATOMICFILE_H

#include "tpcrt/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tpcrt {

/// A run of bytes to write; the caller keeps it alive during the call.
struct ByteRange {
  const void *data;
  uint64_t size;
};

/// Writes the concatenation of `pieces` to `path.tmp.<pid>`, syncs it,
/// renames it over `path` and syncs the directory. A crash or an error leaves
/// either the old file or the complete new one, never a partial file under
/// `path`; on error the temporary file is removed.
Status writeFileAtomically(const std::string &path,
                           const std::vector<ByteRange> &pieces);

} // namespace tpcrt

#endif // TPCRT_ATOMICFILE_H
