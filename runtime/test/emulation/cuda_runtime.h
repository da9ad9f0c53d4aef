// The CUDA runtime, emulated on the host: see cuda_runtime_api.h.
#include "cuda_runtime_api.h"
