//===- NcclUnavailable.cpp - Nccl.h where the build found no nccl.h -------===//
//
// The CUDA backend built without NCCL's header (TPCRT_NCCL_INCLUDE_DIR not
// found): one GPU works, communication is refused with the reason.
//
//===----------------------------------------------------------------------===//

#include "Nccl.h"

using namespace tpcrt;
using namespace tpcrt::cuda;

namespace {
Status unavailable() {
  return Status::error("this CUDA backend was built without NCCL (no nccl.h "
                       "at configure time: set TPCRT_NCCL_INCLUDE_DIR)");
}
} // namespace

struct NcclGroup::Impl {};
Status cuda::loadNccl(std::string *) { return unavailable(); }
NcclGroup::NcclGroup() = default;
NcclGroup::~NcclGroup() = default;
Status NcclGroup::create(Communicator &, int, const std::string &,
                         std::unique_ptr<NcclGroup> &) {
  return unavailable();
}
int NcclGroup::rank() const { return 0; }
int NcclGroup::size() const { return 1; }
const std::string &NcclGroup::label() const {
  static const std::string none;
  return none;
}
Status NcclGroup::allReduce(const void *, void *, size_t, Storage, bool,
                            cudaStream_t) {
  return unavailable();
}
Status NcclGroup::allGather(const void *, void *, size_t, cudaStream_t) {
  return unavailable();
}
Status NcclGroup::reduceScatter(const void *, void *, size_t, Storage,
                                cudaStream_t) {
  return unavailable();
}
Status NcclGroup::allToAll(const void *, void *, size_t, cudaStream_t) {
  return unavailable();
}
Status NcclGroup::send(const void *, size_t, int, cudaStream_t) {
  return unavailable();
}
Status NcclGroup::recv(void *, size_t, int, cudaStream_t) {
  return unavailable();
}
Status NcclGroup::groupStart() { return Status::ok(); }
Status NcclGroup::groupEnd() { return Status::ok(); }
Status NcclGroup::asyncError() { return Status::ok(); }
void NcclGroup::abort() {}
Status cuda::waitEvent(cudaEvent_t event, NcclGroup *const *, size_t,
                       const char *, const std::string *) {
  cudaError_t err = cudaEventSynchronize(event);
  if (err == cudaSuccess)
    return Status::ok();
  return Status::error(std::string("CUDA: ") + cudaGetErrorString(err));
}
