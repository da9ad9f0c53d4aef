//===- CommandLine.h - what the runtime's tools read the same way -*- C++ -*-===//
//
// tpc-run and tpc-measure-hardware read unsigned flags (and the launchers'
// rank variables) by one rule, and turn a C++ exception escaping their work
// into a Status, so that every failure is one `error:` line.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_COMMANDLINE_H
#define TPCRT_COMMANDLINE_H

#include "tpcrt/Status.h"

#include <cstdint>
#include <exception>
#include <new>
#include <string>

namespace tpcrt {

/// `text` as an unsigned integer: 1 to 20 decimal digits, below 2^64; false
/// for anything else (a sign, spaces, an overflow).
inline bool parseDecimal(const std::string &text, uint64_t &value) {
  if (text.empty() || text.size() > 20)
    return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    if (__builtin_mul_overflow(value, 10, &value) ||
        __builtin_add_overflow(value, static_cast<uint64_t>(c - '0'), &value))
      return false;
  }
  return true;
}

/// parseDecimal for the value of `flag`, with the error saying which.
inline Status parseUnsigned(const std::string &flag, const std::string &text,
                            uint64_t &value) {
  if (!parseDecimal(text, value))
    return Status::error(flag + ": '" + text +
                         "' is not a non-negative integer below 2^64");
  return Status::ok();
}

/// Runs `body`, a C++ exception escaping it (out of memory, a library's)
/// becoming an error Status.
template <typename BodyFn> Status guarded(BodyFn body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return Status::error("out of memory");
  } catch (const std::exception &e) {
    return Status::error(e.what());
  }
}

} // namespace tpcrt

#endif // TPCRT_COMMANDLINE_H
