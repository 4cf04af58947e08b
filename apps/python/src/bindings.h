/// \file apps/python/src/bindings.h
/// The pieces of the `_hetsgd` extension module (apps/python/hetsgd wraps them in the public
/// Python API). Every function that runs long releases the GIL; every hetsgd::Error crosses
/// into Python as the matching class of hetsgd/_errors.py with the command line's message.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "core/dataset.h"

namespace hetsgd::python {

namespace py = pybind11;

/// A usage error: an option name or value the command line's parser refuses (what() is the
/// parser's message, as `hetsgd train` prints it before exiting 2).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Copies CSR arrays (indptr and indices int32 or int64, values float32, all 1-D and
/// contiguous) into a Dataset and validates it (core/dataset.h's rules); `what` names the
/// input in messages ("X", "val[0]"...). Empty `x_values` means "all ones" (a label-only
/// matrix is passed as features of nothing).
Dataset dataset_from_csr(const py::array& x_indptr, const py::array& x_indices,
                         const py::array& x_values, index_t num_features, const py::array& y_indptr,
                         const py::array& y_indices, index_t num_labels, const std::string& what);

/// Registers Dataset, the readers and the writers.
void bind_data(py::module_& m);
/// Registers Model (predict, save, load, evaluate).
void bind_model(py::module_& m);
/// Registers train(), compare() and parse_train_options().
void bind_train(py::module_& m);
/// Registers the ranking metrics of core/metrics.h.
void bind_metrics(py::module_& m);

}  // namespace hetsgd::python
