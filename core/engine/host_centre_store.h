/// \file core/engine/host_centre_store.h
/// The host CentreStore (core/centre_store.h): the centre is the Centre's host copy itself,
/// merged through a Communicator's host calls, and moved row-sparse where the replicas allow.
///
/// Sparse merges. Invariant between merges, once known: every replica equals Z outside (rows
/// it touched since the last merge) ∪ D ∪ M, where D (divergent) is empty after a restart
/// (beta >= 1: every replica equals Z) and the rows the last pull moved otherwise, and M
/// (moving) lists the rows where Z != Z_prev (empty unless mu != 0). On a row outside that
/// union every replica holds Z, so A = Z there exactly (the weights sum to 1 and the sum is
/// taken in double), and Z' = Z + mu (Z - Z_prev) = Z: the dense merge would leave that row
/// alone. So a merge moves only the union, in pieces of bounded size, and gives the dense
/// merge's Z, Z_prev and replicas bit for bit. Until the invariant is known (a resume, a write
/// of the host copy, or after a dense merge with beta < 1 or mu != 0) a merge moves every row;
/// when any replica has no row exchange (Device::row_exchange() null, e.g. CUDA) or the
/// communicator cannot merge rows (Communicator::merges_rows()), the merge is dense. Where
/// every replica's parameters are in host memory (RowExchange::host_params) a restart merge
/// averages them in place.
///
/// Memory: scratch of one piece; the dense path allocates its model-sized average and pull
/// buffers on first use.
///
/// The factory, make_host_centre_store(), is declared beside the interface in
/// core/centre_store.h, so that a backend falling back on it needs no engine header.
#pragma once

#include "core/centre_store.h"
#include "core/communicator.h"
