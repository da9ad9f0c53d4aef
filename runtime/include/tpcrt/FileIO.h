//===- FileIO.h - opening and atomically writing files ---------*- C++ -*-===//

#ifndef TPCRT_FILEIO_H
#define TPCRT_FILEIO_H

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
/// `path`; on error the temporary file is removed. A `path` that exists and
/// is neither a regular file nor a directory (/dev/null, a FIFO) is written
/// in place instead.
Status writeFileAtomically(const std::string &path,
                           const std::vector<ByteRange> &pieces);

/// Opens `path` read-only and checks that it is a regular file; on success
/// `fd` is open (the caller closes it) and `size` is the file's size.
/// Errors read `<path>: cannot open: <reason>`, `<path>: cannot stat: ...` or
/// `<path>: not a regular file`.
Status openRegularFile(const std::string &path, int &fd, uint64_t &size);

/// Makes a rename in `path`'s directory durable (fsync of the directory;
/// where the file system refuses, nothing).
void syncParentDirectory(const std::string &path);

/// Reads bytes [0, size) of the open file `fd` into `out` (`path` names it
/// in errors). A file that ends sooner, because it was truncated since its
/// size was taken, is an error, `<path>: cannot read: the file shrank from
/// <size> to <n> bytes while it was read (changed on disk?)`, never a short
/// read taken for the whole.
Status readFully(int fd, const std::string &path, void *out, uint64_t size);

/// `name` inside `directory` (its trailing slashes dropped).
std::string joinPath(std::string directory, const std::string &name);

/// Whether `path` names a directory (following links).
bool isDirectory(const std::string &path);

/// Removes `path` and everything below it (links not followed); ok when it
/// does not exist. Tries every entry; the error names the first it could
/// not remove.
Status removeTree(const std::string &path);

} // namespace tpcrt

#endif // TPCRT_FILEIO_H
