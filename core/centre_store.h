/// \file core/centre_store.h
/// CentreStore: where the centre model Z of a merging algorithm lives between merges, and the
/// merge that moves it (core/engine/README.md describes the merge, kernels/README.md the
/// stores).
///
/// The engine's Centre (core/engine/centre.h) owns one store and the host copy of Z and
/// Z_prev. A Communicator may offer a store that keeps Z next to its replicas
/// (Communicator::make_centre_store(); the CUDA communicator keeps it in GPU memory); without
/// one the Centre uses the host store (core/engine/host_centre_store.h), for which the host
/// copy is Z itself. The Centre tells the store when it wrote the host copy and asks it for
/// the centre only when the host copy is needed (evaluation, checkpoint, moving average,
/// final model), so a device store moves Z through the host link only at those points.
///
/// Calls come from the scheduler thread while every device is idle.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/device.h"
#include "core/types.h"

namespace hetsgd {

/// The Centre's host copy of the centre, as a store reads and writes it.
struct HostCentre {
  std::vector<float>* z = nullptr;  ///< Z, layout.total() floats
  /// Z_prev: layout.total() floats, or empty while no history is kept (Z_prev = Z, mu = 0).
  std::vector<float>* z_prev = nullptr;
};

class CentreStore {
 public:
  virtual ~CentreStore() = default;

  /// The host copy was written (a start, a resume, an EASGD exchange, a refresh from a
  /// replica): the next merge starts from it (a device store uploads it then), and the
  /// replicas may differ from Z anywhere.
  virtual void host_written() = 0;
  /// Every replica of `devices` holds Z now (a fresh start's broadcast), so the next merge
  /// may move only what the replicas change from here on.
  virtual void replicas_hold_centre(const std::vector<Device*>& devices) = 0;
  /// One normalised merge over `live` with weights `w` (sum 1): A = sum_i w_i W_i,
  /// Z_prev, Z = Z, Z + alpha (A - Z) + mu (Z - Z_prev) (core/math/centre_update.h), then
  /// every replica restarts from the new Z (beta >= 1) or is pulled W_i += beta (Z - W_i).
  /// `host` is the Centre's copy; after the call it may be stale until read_back().
  virtual void merge(const HostCentre& host, const std::vector<Device*>& live,
                     const std::vector<double>& w, double alpha, double beta, double mu) = 0;
  /// Brings `host` up to date with the last merge (Z, and Z_prev when the host keeps one).
  /// A no-op where the host copy is the centre.
  virtual void read_back(const HostCentre& host) = 0;
  /// Floats the last merge moved per replica (diagnostics; the whole model when dense).
  virtual index_t last_merge_floats() const = 0;
  /// Bytes of the centre moved between host and device memory since the store was made
  /// (uploads and read-backs; 0 for the host store).
  virtual std::uint64_t transfer_bytes() const { return 0; }
};

class Communicator;

/// The host store of a centre of `param_count` floats, merging through `comm` (which outlives
/// it): the store the Centre uses where the communicator offers none, and a device store's
/// fallback (kernels/registry.cpp). Row-sparse where the replicas allow; its design is in
/// core/engine/host_centre_store.h, its code in the engine.
std::unique_ptr<CentreStore> make_host_centre_store(Communicator& comm, index_t param_count);

}  // namespace hetsgd
