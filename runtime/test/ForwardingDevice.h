//===- ForwardingDevice.h - a Device that hands every call on ----*- C++
//-*-===//
//
// For tests that change one thing about a device (DeviceCheck's broken
// device, ActionsTest's device with run marks): every call goes to the
// inner device unless the test overrides it.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_FORWARDINGDEVICE_H
#define TPCRT_TEST_FORWARDINGDEVICE_H

#include "tpcrt/Device.h"

#include <memory>
#include <utility>
#include <vector>

namespace tpcrt::test {

class ForwardingDevice : public Device {
public:
  explicit ForwardingDevice(std::unique_ptr<Device> inner)
      : inner_(std::move(inner)) {}

  const char *name() const override { return inner_->name(); }
  Status allocateArena(uint64_t bytes) override {
    return inner_->allocateArena(bytes);
  }
  uint64_t arenaBytes() const override { return inner_->arenaBytes(); }
  Status copyToArena(uint64_t offset, const void *source,
                     uint64_t bytes) override {
    return inner_->copyToArena(offset, source, bytes);
  }
  Status copyFromArena(uint64_t offset, void *destination,
                       uint64_t bytes) override {
    return inner_->copyFromArena(offset, destination, bytes);
  }
  Status prepare(const Program &program,
                 const std::vector<Communicator *> &groups) override {
    return inner_->prepare(program, groups);
  }
  uint64_t workspaceBytes() const override { return inner_->workspaceBytes(); }
  Status execute(const KernelCall &call, const StepContext &context) override {
    return inner_->execute(call, context);
  }
  Status synchronize() override { return inner_->synchronize(); }

protected:
  Device &inner() { return *inner_; }

private:
  std::unique_ptr<Device> inner_;
};

} // namespace tpcrt::test

#endif // TPCRT_TEST_FORWARDINGDEVICE_H
