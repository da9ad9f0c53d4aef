//===- Weights.h - filling an executable's params ---------------*- C++ -*-===//
//
// Params are full Hugging Face tensors, whatever the layout the executable
// runs: loaded from safetensors by name, or made up deterministically.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_WEIGHTS_H
#define TPCRT_WEIGHTS_H

#include "tpcrt/Interpreter.h"
#include "tpcrt/Status.h"

#include <cstdint>
#include <string>

namespace tpcrt {

/// Loads every param of the interpreter's program from `path`, a
/// .safetensors file or a sharded checkpoint's model.safetensors.index.json.
/// A param's hf_name is looked up as is, else with the "transformer." prefix
/// removed or added (the published GPT-2 files have none); tensors no param
/// asks for (attn.bias, a tied lm_head.weight) are ignored. The tensor must
/// have the param's hf_shape exactly; F32, BF16, F16 and F64 sources are
/// converted to the buffer's dtype (rounding to nearest even). Errors name the
/// file and the tensor, e.g. "W.safetensors: missing tensor
/// 'transformer.h.0.ln_1.weight'".
Status loadWeights(const std::string &path, Interpreter &interpreter);

/// Initializes every param by its init kind: Normal draws element i of the
/// Hugging Face tensor as init_std * standardNormal(key, i) with key =
/// namedStreamKey(seed, hf_name) (tpcrt/Random.h), so a param's values
/// depend on the seed and its name only; Zeros and Ones fill.
Status initWeights(uint64_t seed, Interpreter &interpreter);

} // namespace tpcrt

#endif // TPCRT_WEIGHTS_H
