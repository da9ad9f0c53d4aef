//===- Status.cpp ---------------------------------------------------------===//

#include "tpcrt/Status.h"

using namespace tpcrt;

Status Status::withContext(const std::string &context) const {
  if (isOk())
    return *this;
  return Status::error(context + ": " + message_);
}
