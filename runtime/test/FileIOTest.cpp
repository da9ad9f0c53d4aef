//===- FileIOTest.cpp - writeFileAtomically -------------------------------===//

#include "tpcrt/FileIO.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tpcrt;

namespace {

std::string makeTempDir() {
  char pattern[] = "/tmp/tpcrt-fileio.XXXXXX";
  const char *dir = ::mkdtemp(pattern);
  return dir ? dir : "";
}

TEST(FileIOTest, ARegularFileIsReplacedWhole) {
  std::string dir = makeTempDir();
  ASSERT_FALSE(dir.empty());
  std::string path = dir + "/out.bin";
  ASSERT_TRUE(writeFileAtomically(path, {{"old contents", 12}}));
  ASSERT_TRUE(writeFileAtomically(path, {{"new", 3}, {"er", 2}}));
  struct stat info;
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_TRUE(S_ISREG(info.st_mode));
  EXPECT_EQ(info.st_size, 5);
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

// `tpc-compile -o /dev/null` must not rename a file over the device node
// (run as root, that replaced /dev/null with a regular file): a path that
// is not a regular file is written in place. A FIFO stands for the device.
TEST(FileIOTest, APipeOrDeviceIsWrittenInPlace) {
  std::string dir = makeTempDir();
  ASSERT_FALSE(dir.empty());
  std::string path = dir + "/pipe";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  // Holding a read end open lets the write proceed without a reader thread.
  int reader = ::open(path.c_str(), O_RDWR | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  Status s = writeFileAtomically(path, {{"hello", 5}});
  EXPECT_TRUE(s) << s.message();
  struct stat info;
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  char bytes[8] = {};
  EXPECT_EQ(::read(reader, bytes, sizeof(bytes)), 5);
  EXPECT_EQ(std::string(bytes, 5), "hello");
  ::close(reader);
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

// A file cut short between taking its size and reading it is an error that
// says so, not a short read taken for the whole.
TEST(FileIOTest, ReadFullyRefusesAFileThatShrank) {
  std::string dir = makeTempDir();
  ASSERT_FALSE(dir.empty());
  std::string path = dir + "/in.bin";
  ASSERT_TRUE(writeFileAtomically(path, {{"0123456789", 10}}));
  int fd = -1;
  uint64_t size = 0;
  ASSERT_TRUE(openRegularFile(path, fd, size));
  EXPECT_EQ(size, 10u);
  char bytes[10] = {};
  ASSERT_TRUE(readFully(fd, path, bytes, size));
  EXPECT_EQ(std::string(bytes, 10), "0123456789");
  ASSERT_EQ(::truncate(path.c_str(), 4), 0);
  Status s = readFully(fd, path, bytes, size);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), path + ": cannot read: the file shrank from 10 to 4 "
                                "bytes while it was read (changed on disk?)");
  ::close(fd);
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

} // namespace
