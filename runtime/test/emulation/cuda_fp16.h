// IEEE half on the host (../CudaEmulation.h): see cuda_runtime_api.h.
#include "../CudaEmulation.h"
