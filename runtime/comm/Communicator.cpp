//===- Communicator.cpp - the interface's shared checks and "local" -------===//

#include "tpcrt/Comm.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace tpcrt;

Communicator::~Communicator() = default;

void Communicator::abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

Status Communicator::checkPeer(const char *what, int peer) const {
  if (peer < 0 || peer >= size())
    return Status::error(std::string(what) + ": peer rank " +
                         std::to_string(peer) + " is outside [0, " +
                         std::to_string(size()) + ")");
  if (peer == rank())
    return Status::error(std::string(what) + ": peer rank " +
                         std::to_string(peer) + " is this rank");
  return Status::ok();
}

Status Communicator::checkTag(const char *what, int tag) const {
  if (tag < 0)
    return Status::error(std::string(what) + ": tag " + std::to_string(tag) +
                         " is negative");
  return Status::ok();
}

namespace {

/// One rank: every collective's result is its own contribution.
class LocalCommunicator final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backendName() const override { return "local"; }

  Status allReduceSum(float *, std::size_t) override { return Status::ok(); }
  Status allReduceSum(int64_t *, std::size_t) override { return Status::ok(); }
  Status allReduceMax(float *, std::size_t) override { return Status::ok(); }
  Status allToAll(const void *send, void *recv, std::size_t bytes) override {
    if (bytes)
      std::memmove(recv, send, bytes);
    return Status::ok();
  }
  Status allGather(const void *send, void *recv, std::size_t bytes) override {
    if (bytes)
      std::memmove(recv, send, bytes);
    return Status::ok();
  }
  Status reduceScatterSum(const float *send, float *recv,
                          std::size_t count) override {
    if (count)
      std::memmove(recv, send, count * sizeof(float));
    return Status::ok();
  }
  Status broadcast(void *, std::size_t, int root) override {
    if (root != 0)
      return Status::error("broadcast: root rank " + std::to_string(root) +
                           " is outside [0, 1)");
    return Status::ok();
  }
  Status send(const void *, std::size_t, int peer, int) override {
    return checkPeer("send", peer);
  }
  Status recv(void *, std::size_t, int peer, int) override {
    return checkPeer("recv", peer);
  }
  Status barrier() override { return Status::ok(); }
  Status split(int, int, std::unique_ptr<Communicator> &result) override {
    result = createLocalCommunicator();
    return Status::ok();
  }
};

} // namespace

std::unique_ptr<Communicator> tpcrt::createLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}

#ifndef TPCRT_HAVE_MPI
bool tpcrt::hasMpiBackend() { return false; }

Status tpcrt::createMpiWorldCommunicator(std::unique_ptr<Communicator> &) {
  return Status::error("this runtime was built without MPI (TPCRT_HAVE_MPI "
                       "off: install OpenMPI and reconfigure)");
}
#endif
