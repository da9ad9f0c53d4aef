//===- FileIO.cpp ---------------------------------------------------------===//

#include "tpcrt/FileIO.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tpcrt;

namespace {

bool writeAll(int fd, const void *bytes, uint64_t size) {
  const auto *p = static_cast<const uint8_t *>(bytes);
  while (size > 0) {
    // Linux writes at most ~2 GiB per call; ask for 1 GiB at a time.
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(size, 1u << 30));
    ssize_t n = ::write(fd, p, chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = EIO;
      return false;
    }
    p += n;
    size -= static_cast<uint64_t>(n);
  }
  return true;
}

} // namespace

Status tpcrt::writeFileAtomically(const std::string &path,
                                  const std::vector<ByteRange> &pieces) {
  // A device or a pipe (`-o /dev/null`, a FIFO) is written in place:
  // renaming a file over it would replace the device node itself.
  struct stat existing;
  if (::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode) &&
      !S_ISDIR(existing.st_mode)) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      return Status::error(path + ": cannot open: " + std::strerror(errno));
    for (const ByteRange &piece : pieces)
      if (!writeAll(fd, piece.data, piece.size)) {
        int err = errno;
        ::close(fd);
        return Status::error(path + ": cannot write: " + std::strerror(err));
      }
    if (::close(fd) != 0)
      return Status::error(path + ": cannot close: " + std::strerror(errno));
    return Status::ok();
  }
  std::string tmpPath = path + ".tmp." + std::to_string(::getpid());
  int fd =
      ::open(tmpPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::error(tmpPath + ": cannot create: " + std::strerror(errno));
  auto fail = [&](const std::string &what) {
    int err = errno;
    if (fd >= 0)
      ::close(fd);
    ::unlink(tmpPath.c_str());
    return Status::error(tmpPath + ": " + what + ": " + std::strerror(err));
  };
  for (const ByteRange &piece : pieces)
    if (!writeAll(fd, piece.data, piece.size))
      return fail("cannot write");
  // The data must be on disk before the rename makes it visible, or a crash
  // could leave a complete-looking name over incomplete contents.
  if (::fsync(fd) != 0)
    return fail("cannot sync");
  int closeResult = ::close(fd);
  fd = -1;
  if (closeResult != 0)
    return fail("cannot close");
  if (::rename(tmpPath.c_str(), path.c_str()) != 0)
    return fail("cannot rename to " + path);

  syncParentDirectory(path);
  return Status::ok();
}

void tpcrt::syncParentDirectory(const std::string &path) {
  // Some file systems refuse to sync a directory; what was renamed is
  // complete either way, so that is not an error.
  size_t slash = path.rfind('/');
  std::string directory = slash == std::string::npos
                              ? "."
                              : (slash == 0 ? "/" : path.substr(0, slash));
  int dirFd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    (void)::fsync(dirFd);
    ::close(dirFd);
  }
}

Status tpcrt::openRegularFile(const std::string &path, int &fd,
                              uint64_t &size) {
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(path + ": cannot open: " + std::strerror(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int err = errno;
    ::close(fd);
    fd = -1;
    return Status::error(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    fd = -1;
    return Status::error(path + ": not a regular file");
  }
  size = static_cast<uint64_t>(info.st_size);
  return Status::ok();
}

Status tpcrt::readFully(int fd, const std::string &path, void *out,
                        uint64_t size) {
  auto *bytes = static_cast<uint8_t *>(out);
  uint64_t done = 0;
  while (done < size) {
    // Linux reads at most ~2 GiB per call; ask for 1 GiB at a time.
    size_t chunk =
        static_cast<size_t>(std::min<uint64_t>(size - done, 1u << 30));
    ssize_t n = ::pread(fd, bytes + done, chunk, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Status::error(path + ": cannot read: " + std::strerror(errno));
    if (n == 0)
      return Status::error(path + ": cannot read: the file shrank from " +
                           std::to_string(size) + " to " +
                           std::to_string(done) +
                           " bytes while it was read (changed on disk?)");
    done += static_cast<uint64_t>(n);
  }
  return Status::ok();
}

std::string tpcrt::joinPath(std::string directory, const std::string &name) {
  while (directory.size() > 1 && directory.back() == '/')
    directory.pop_back();
  return directory == "/" ? directory + name : directory + "/" + name;
}

bool tpcrt::isDirectory(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

Status tpcrt::removeTree(const std::string &path) {
  // nftw's callback takes no context: the first failure goes through a
  // thread-local.
  static thread_local std::string firstError;
  firstError.clear();
  int result = ::nftw(
      path.c_str(),
      [](const char *entry, const struct stat *, int, struct FTW *) {
        if (::remove(entry) != 0 && errno != ENOENT && firstError.empty())
          firstError =
              std::string(entry) + ": cannot remove: " + std::strerror(errno);
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS);
  if (result != 0 && errno != ENOENT && firstError.empty())
    firstError = path + ": cannot remove: " + std::strerror(errno);
  if (!firstError.empty())
    return Status::error(firstError);
  return Status::ok();
}
