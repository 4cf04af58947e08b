/// \file core/engine/device_round_stats.h
/// What one device did in one round: the counters the round fills on the device's worker, the
/// batch policies read, and RoundRecord reports. Apart from ReplicaSet so that a result record
/// can hold them without pulling in the worker threads.
#pragma once

#include "core/types.h"

namespace hetsgd {

/// What one device did in one round.
struct DeviceRoundStats {
  index_t updates = 0;     ///< n_i: optimiser steps (sync: shares computed)
  index_t samples = 0;     ///< m_i: points trained
  index_t batch_size = 0;  ///< b_i used in this round
  double busy_s = 0.0;     ///< seconds spent in batch assembly and device calls
  double lr = 0.0;         ///< learning rate of the device's last step
};

}  // namespace hetsgd
