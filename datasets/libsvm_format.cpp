#include "datasets/libsvm_format.h"

#include "core/error.h"
#include "core/file_io.h"
#include "datasets/sparse_text.h"

namespace hetsgd::datasets {

Dataset parse_libsvm(std::string_view text, const std::string& name, index_t num_features,
                     index_t num_labels, bool one_based_features, const TextReadOptions& options) {
  if (num_features < 0 || num_labels < 0) {
    throw InvalidArgument("read_libsvm " + name + ": negative size (num_features " +
                          std::to_string(num_features) + ", num_labels " +
                          std::to_string(num_labels) + ")");
  }
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    throw IoError(name + ":1: empty file (expected LIBSVM lines 'l1,l2 f:v ...')");
  }
  check_text_memory(text.size(), name);
  SparseTextOptions sparse;
  sparse.num_features = num_features > 0 ? num_features : -1;
  sparse.num_labels = num_labels > 0 ? num_labels : -1;
  sparse.feature_base = one_based_features ? 1 : 0;
  sparse.chunk_bytes = options.chunk_bytes;
  return parse_sparse_lines(text, name, /*first_line=*/1, sparse);
}

Dataset read_libsvm(const std::string& path, index_t num_features, index_t num_labels,
                    bool one_based_features, const TextReadOptions& options) {
  const MappedFile file(path);
  return parse_libsvm(file.view(), path, num_features, num_labels, one_based_features, options);
}

}  // namespace hetsgd::datasets
