//===- Status.h - errors as values ------------------------------*- C++ -*-===//
//
// Nothing in the runtime throws across its API: every fallible call returns a
// Status (or a Result<T>) that the caller checks.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_STATUS_H
#define TPCRT_STATUS_H

#include <string>
#include <utility>

namespace tpcrt {

class Status {
public:
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.failed_ = true;
    s.message_ = std::move(message);
    return s;
  }

  bool isOk() const { return !failed_; }
  explicit operator bool() const { return isOk(); }
  const std::string &message() const { return message_; }

  /// Prefixes the message with context, e.g. the file being read.
  Status withContext(const std::string &context) const;

private:
  bool failed_ = false;
  std::string message_;
};

} // namespace tpcrt

#endif // TPCRT_STATUS_H
