/// \file datasets/npz_format.h
/// scipy's sparse `.npz` files (scipy.sparse.save_npz / load_npz), the format pyxclib and most
/// Python XMC code keep features and labels in: a zip archive (stored, or deflated for
/// save_npz's default `compressed=True`; zlib) of `.npy` arrays `data`, `indices`, `indptr`,
/// `format` ("csr") and `shape`. Features and labels are two files, as in the XC Repository's
/// Python tools (X.npz, Y.npz); a label is a stored entry of the label matrix.
#pragma once

#include <string>
#include <vector>

#include "core/dataset.h"
#include "core/types.h"

namespace hetsgd::datasets {

/// One CSR matrix as scipy stores it.
struct NpzCsr {
  index_t rows = 0;             ///< shape[0]
  index_t cols = 0;             ///< shape[1]
  std::vector<index_t> indptr;  ///< rows + 1 offsets
  std::vector<col_t> indices;   ///< column ids
  std::vector<float> data;      ///< values
};

/// Reads a scipy CSR `.npz` (stored or deflated members; zip64 extras read). Values float32 or
/// float64 (narrowed) or int32/64, ids (`indices`, `indptr`, `shape`) int32 or int64 only: a
/// float id array is refused, not truncated. Every zip and `.npy` header field is checked
/// against the bytes that hold it before anything is allocated (datasets/zip_reader.h). Throws
/// IoError naming the file and the member or array for a broken archive, a missing member, a
/// format other than "csr", an unsupported dtype, a malformed header, or arrays whose lengths
/// disagree with the shape or their bytes; MemoryBudgetExceeded when a member does not fit.
NpzCsr read_npz(const std::string& path);

/// Writes `m` as scipy.sparse.save_npz does (members deflated when `compressed`), atomically:
/// data float32, indices int32, indptr int64, format "csr", shape int64. Throws IoError.
void write_npz(const std::string& path, const NpzCsr& m, bool compressed = true);

/// The Dataset of a features file and a labels file (same rows), checked by validate_csr
/// (sorted unique ids per row, finite values): throws IoError naming both files otherwise.
Dataset read_npz_pair(const std::string& features_path, const std::string& labels_path);

/// Writes the features and the labels (values 1) of `data` as two scipy `.npz` files.
void write_npz_pair(const Dataset& data, const std::string& features_path,
                    const std::string& labels_path, bool compressed = true);

}  // namespace hetsgd::datasets
