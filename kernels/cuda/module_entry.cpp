// The table libhetsgd_cuda.so exports (kernels/cuda/backend_table.h). The module is linked with
// -Bsymbolic-functions, so these addresses are the module's own functions, not the binary's
// loader functions of the same names.
#include "kernels/cuda/api.h"
#include "kernels/cuda/backend_table.h"

extern "C" __attribute__((visibility("default"))) const hetsgd::cuda::BackendTable*
hetsgd_cuda_backend_table() {
  static const hetsgd::cuda::BackendTable table = [] {
    hetsgd::cuda::BackendTable t;
    t.device_count = &hetsgd::cuda::device_count;
    t.device_name = &hetsgd::cuda::device_name;
    t.make_device = &hetsgd::cuda::make_device;
    t.make_cuda_communicator = &hetsgd::cuda::make_cuda_communicator;
    t.nccl_cross_rank_offer = &hetsgd::cuda::nccl_cross_rank_offer;
    return t;
  }();
  return &table;
}
