// Datasets across the boundary: numpy CSR arrays in (one copy, checked before anything is
// used), numpy arrays out, and the command line's readers and writers.
#include <pybind11/stl.h>

#include <cstdint>
#include <limits>
#include <string>

#include "apps/python/src/bindings.h"
#include "core/error.h"
#include "datasets/binary_cache.h"
#include "datasets/load.h"
#include "datasets/xc_format.h"

namespace hetsgd::python {
namespace {

void check_1d(const py::array& a, const std::string& what) {
  HETSGD_CHECK(a.ndim() == 1, what << " has " << a.ndim() << " dimensions, expected 1");
  HETSGD_CHECK(a.ndim() == 0 || a.strides(0) == a.itemsize() || a.size() <= 1,
               what << " is not contiguous (numpy.ascontiguousarray makes it so)");
}

// An integer array (int32 or int64) copied into `out` as T; every value must be in
// [0, max]. The first bad entry is named with its position.
template <typename T, typename Src>
void copy_ints(const py::array& a, std::int64_t max, const std::string& what, std::vector<T>* out) {
  const Src* p = static_cast<const Src*>(a.data());
  const auto n = static_cast<std::size_t>(a.size());
  out->resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = static_cast<std::int64_t>(p[i]);
    HETSGD_CHECK(v >= 0, what << "[" << i << "] = " << v << " is negative");
    HETSGD_CHECK(v <= max, what << "[" << i << "] = " << v << " > " << max);
    (*out)[i] = static_cast<T>(v);
  }
}

template <typename T>
void ints_from(const py::array& a, std::int64_t max, const std::string& what, std::vector<T>* out) {
  check_1d(a, what);
  const char kind = a.dtype().kind();
  HETSGD_CHECK((kind == 'i' || kind == 'u') && (a.itemsize() == 4 || a.itemsize() == 8),
               what << " has dtype " << py::str(a.dtype()).cast<std::string>()
                    << ": expected int32 or int64");
  if (kind == 'u') {
    // Unsigned ids beyond int64 cannot be valid anyway; read them as signed and let the
    // bound check name them.
    if (a.itemsize() == 4) {
      copy_ints<T, std::uint32_t>(a, max, what, out);
    } else {
      copy_ints<T, std::int64_t>(a, max, what, out);
    }
  } else if (a.itemsize() == 4) {
    copy_ints<T, std::int32_t>(a, max, what, out);
  } else {
    copy_ints<T, std::int64_t>(a, max, what, out);
  }
}

template <typename T>
py::array_t<T> to_numpy(const std::vector<T>& v) {
  py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

}  // namespace

Dataset dataset_from_csr(const py::array& x_indptr, const py::array& x_indices,
                         const py::array& x_values, index_t num_features, const py::array& y_indptr,
                         const py::array& y_indices, index_t num_labels, const std::string& what) {
  constexpr std::int64_t kMaxId = std::numeric_limits<col_t>::max();
  HETSGD_CHECK(num_features >= 1 && num_features <= kMaxId + 1,
               what << ": " << num_features << " features, expected [1, 2^31]");
  HETSGD_CHECK(num_labels >= 1 && num_labels <= kMaxId + 1,
               what << ": " << num_labels << " labels, expected [1, 2^31]");
  Dataset d;
  d.num_features = num_features;
  d.num_labels = num_labels;
  constexpr std::int64_t kMaxOffset = std::numeric_limits<index_t>::max();
  ints_from(x_indptr, kMaxOffset, what + " features indptr", &d.x_indptr);
  ints_from(x_indices, kMaxId, what + " features indices", &d.x_indices);
  ints_from(y_indptr, kMaxOffset, what + " labels indptr", &d.y_indptr);
  ints_from(y_indices, kMaxId, what + " labels indices", &d.y_indices);
  check_1d(x_values, what + " features data");
  HETSGD_CHECK(x_values.dtype().kind() == 'f' && x_values.itemsize() == 4,
               what << " features have dtype " << py::str(x_values.dtype()).cast<std::string>()
                    << ": expected float32 (convert with .astype(numpy.float32))");
  HETSGD_CHECK(x_values.size() == static_cast<py::ssize_t>(d.x_indices.size()),
               what << " features: " << x_values.size() << " values for " << d.x_indices.size()
                    << " indices");
  const float* v = static_cast<const float*>(x_values.data());
  d.x_values.assign(v, v + x_values.size());
  HETSGD_CHECK(d.x_indptr.size() == d.y_indptr.size(),
               what << ": features have " << d.x_indptr.size() - 1 << " rows, labels "
                    << d.y_indptr.size() - 1);
  HETSGD_CHECK(!d.x_indptr.empty(), what << " features indptr is empty (expected rows + 1)");
  d.validate(what);
  return d;
}

void bind_data(py::module_& m) {
  py::class_<Dataset>(m, "Dataset", "rows of sparse features with their label sets (CSR)")
      .def_property_readonly("rows", &Dataset::rows)
      .def_property_readonly("nnz", &Dataset::nnz)
      .def_property_readonly("label_nnz", &Dataset::label_nnz)
      .def_readonly("num_features", &Dataset::num_features)
      .def_readonly("num_labels", &Dataset::num_labels)
      .def(
          "arrays",
          [](const Dataset& d) {
            py::dict r;
            r["x_indptr"] = to_numpy(d.x_indptr);
            r["x_indices"] = to_numpy(d.x_indices);
            r["x_data"] = to_numpy(d.x_values);
            r["y_indptr"] = to_numpy(d.y_indptr);
            r["y_indices"] = to_numpy(d.y_indices);
            return r;
          },
          "copies of the CSR arrays (indptr int64, indices int32, data float32)");
  m.def("dataset_from_csr", &dataset_from_csr, py::arg("x_indptr"), py::arg("x_indices"),
        py::arg("x_data"), py::arg("num_features"), py::arg("y_indptr"), py::arg("y_indices"),
        py::arg("num_labels"), py::arg("what"));
  m.def(
      "read_dataset",
      [](const std::string& path, index_t num_features, index_t num_labels) {
        py::gil_scoped_release unlocked;
        return datasets::load_dataset(path, {num_features, num_labels});
      },
      py::arg("path"), py::arg("num_features") = 0, py::arg("num_labels") = 0,
      "reads XC text, LIBSVM or a binary cache (format detected, as the command line does)");
  m.def(
      "write_dataset",
      [](const Dataset& d, const std::string& path, const std::string& format) {
        py::gil_scoped_release unlocked;
        if (format == "xc") {
          datasets::write_xc(d, path);
        } else if (format == "cache") {
          datasets::save_cache(d, path);
        } else {
          throw InvalidArgument("format '" + format + "': expected xc or cache");
        }
      },
      py::arg("dataset"), py::arg("path"), py::arg("format"));
}

}  // namespace hetsgd::python
