//===- ExecutableDType.cpp - the element types of buffers -----------------===//

#include "tpcrt/ExecutableDType.h"

using namespace tpcrt;

uint64_t tpcrt::executableDTypeSize(fb::DType dtype) {
  switch (dtype) {
  case fb::DType::F32:
  case fb::DType::I32:
    return 4;
  case fb::DType::BF16:
  case fb::DType::F16:
    return 2;
  case fb::DType::I64:
    return 8;
  case fb::DType::U8:
    return 1;
  }
  return 0;
}

const char *tpcrt::executableDTypeName(fb::DType dtype) {
  switch (dtype) {
  case fb::DType::F32:
    return "f32";
  case fb::DType::BF16:
    return "bf16";
  case fb::DType::F16:
    return "f16";
  case fb::DType::I32:
    return "i32";
  case fb::DType::I64:
    return "i64";
  case fb::DType::U8:
    return "u8";
  }
  return "?";
}

bool tpcrt::isFloatDType(fb::DType dtype) {
  return dtype == fb::DType::F32 || dtype == fb::DType::BF16 ||
         dtype == fb::DType::F16;
}
