//===- HostServices.cpp - the process's services, kept --------------------===//

#include "HostServices.h"

#include <atomic>

using namespace tpcrt;

namespace {
std::atomic<void (*)(const char *, const std::string *)> beginWait{nullptr};
std::atomic<void (*)()> endWait{nullptr};
} // namespace

void cuda::setHostServices(const CudaHostServices &host) {
  beginWait.store(host.beginWait);
  endWait.store(host.endWait);
}

void cuda::hostBeginWait(const char *operation, const std::string *group) {
  if (auto f = beginWait.load())
    f(operation, group);
}

void cuda::hostEndWait() {
  if (auto f = endWait.load())
    f();
}
