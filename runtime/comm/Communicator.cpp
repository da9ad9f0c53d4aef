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

Status Communicator::checkSendRecv(const char *what, std::size_t sendBytes,
                                   int sendPeer, std::size_t recvBytes,
                                   int recvPeer, int tag) const {
  for (int peer : {sendPeer, recvPeer})
    if (peer < 0 || peer >= size())
      return Status::error(std::string(what) + ": peer rank " +
                           std::to_string(peer) + " is outside [0, " +
                           std::to_string(size()) + ")");
  if ((sendPeer == rank()) != (recvPeer == rank()))
    return Status::error(std::string(what) + ": sends to rank " +
                         std::to_string(sendPeer) + " and receives from rank " +
                         std::to_string(recvPeer) +
                         ": to use this rank, both peers must be it");
  if (sendPeer == rank() && sendBytes != recvBytes)
    return Status::error(
        std::string(what) + ": sends " + std::to_string(sendBytes) +
        " bytes to this rank, which receives " + std::to_string(recvBytes));
  return checkTag(what, tag);
}

Status Communicator::checkIdle(const char *what, const Request &request) const {
  if (request.inFlight())
    return Status::error(std::string(what) +
                         ": the request has a transfer in flight: wait for "
                         "it first");
  return Status::ok();
}

Status Communicator::sendRecv(const void *, std::size_t, int, void *,
                              std::size_t, int, int) {
  return Status::error("sendRecv: the " + backendName() +
                       " communicator does not support it");
}

Status Communicator::startSend(const void *, std::size_t, int, int, Request &) {
  return Status::error("startSend: the " + backendName() +
                       " communicator does not support it");
}

Status Communicator::startRecv(void *, std::size_t, int, int, Request &) {
  return Status::error("startRecv: the " + backendName() +
                       " communicator does not support it");
}

Status Communicator::prepareRequest(Request &request) {
  return checkIdle("prepareRequest", request);
}

Request::State::~State() = default;

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
  /// Only with this rank as both peers: a copy.
  Status sendRecv(const void *sendData, std::size_t sendBytes, int sendPeer,
                  void *recvData, std::size_t recvBytes, int recvPeer,
                  int tag) override {
    if (Status s = checkSendRecv("sendRecv", sendBytes, sendPeer, recvBytes,
                                 recvPeer, tag);
        !s)
      return s;
    if (sendBytes)
      std::memmove(recvData, sendData, sendBytes);
    return Status::ok();
  }
  /// Always an error: the only rank is this one.
  Status startSend(const void *, std::size_t, int peer, int tag,
                   Request &request) override {
    return checkStart("startSend", peer, tag, request);
  }
  Status startRecv(void *, std::size_t, int peer, int tag,
                   Request &request) override {
    return checkStart("startRecv", peer, tag, request);
  }
  Status barrier() override { return Status::ok(); }
  Status split(int, int, std::unique_ptr<Communicator> &result) override {
    result = createLocalCommunicator();
    return Status::ok();
  }

private:
  Status checkStart(const char *what, int peer, int tag,
                    const Request &request) const {
    if (Status s = checkPeer(what, peer); !s)
      return s;
    if (Status s = checkTag(what, tag); !s)
      return s;
    return checkIdle(what, request);
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
