/// \file kernels/cpu/output_layer.h
/// The output layer without a batch x L buffer: labels scored in chunks of labels (full
/// scoring) or over a per-batch candidate list (shortlist).
///
/// The output weights W are stored by label, row-major [L x hidden] (row j is label j's
/// vector; param_layout.h), the bias b has L entries, and H = the last hidden layer's post-ReLU
/// output [rows x hidden]. A chunk of labels is a contiguous block of W and is scored in place;
/// a candidate list is gathered into a contiguous [cols x hidden] block. Both go through the
/// transposed-weight kernels of dense.h, so every buffer here is O(rows x cols) with cols <=
/// chunk (full) or the candidate count (shortlist).
///
/// Losses follow loss.h's reductions (softmax: mean over rows; bce: mean over rows x L). Full
/// scoring uses a two-pass streaming log-sum-exp for the softmax (pass one: per-row running max
/// and sum; pass two: gradient chunk by chunk); evaluation keeps a running top-k per row.
/// All functions run in the caller's arena.
#pragma once

#include <vector>

#include "core/dataset.h"
#include "core/model_config.h"
#include "core/types.h"

namespace hetsgd::cpu {

/// Buffers of the output layer, reused between batches (grow only).
struct OutputWorkspace {
  std::vector<float> w;          ///< gathered candidate weights [cols x hidden]
  std::vector<float> b;          ///< gathered candidate bias [cols]
  std::vector<float> z;          ///< scores, then dLoss/dz [rows x cols]
  std::vector<float> dw;         ///< weight gradient of the candidates [cols x hidden]
  std::vector<float> db;         ///< bias gradient of the candidates [cols]
  std::vector<float> dh;         ///< one chunk's input gradient [rows x hidden]
  std::vector<float> row_max;    ///< per-row running max (softmax)
  std::vector<float> row_sum;    ///< per-row running sum of exp(z - row_max)
  std::vector<float> row_label;  ///< per-row sum of the label logits (softmax) or loss (bce)
  std::vector<float> row_loss;
  std::vector<float> top_scores;  ///< running top-k [rows x k]
  std::vector<col_t> top_ids;     ///< running top-k [rows x k]
  std::vector<float> chunk_scores;
  std::vector<col_t> chunk_ids;

  /// The largest buffer held, in floats (ids count as one each): the test hook that proves
  /// no batch x L buffer exists.
  std::size_t largest_floats() const;
};

/// Copies rows ids[0..n) of W ([L x hidden]) into `out` [n x hidden].
void gather_rows(const float* w, index_t hidden, const col_t* ids, index_t n, float* out);

/// Full-softmax / BCE loss and gradient over all L labels in chunks of `chunk` columns.
/// Writes `scale` times the gradient of the mean loss into `gw` (the output weights' slot of
/// the gradient buffer, [L x hidden]) and `gb` ([L]), and into `dh` ([rows x hidden]) the
/// gradient w.r.t. H masked by H > 0 (the ReLU below). Returns the mean loss. Throws
/// InvalidArgument when a label id is >= L.
float chunked_loss_grad(const CsrBatch& batch, const float* h, index_t hidden, const float* w,
                        const float* b, index_t num_labels, Loss loss, float scale, index_t chunk,
                        float* gw, float* gb, float* dh, OutputWorkspace* ws);

/// Mean loss over all L labels and the exact top-`k` labels of each row (best first, ids -1 /
/// scores -inf padding), scored in chunks of `chunk` columns; same results as scoring the full
/// logits at once, up to float rounding of the loss.
float chunked_loss_topk(const CsrBatch& batch, const float* h, index_t hidden, const float* w,
                        const float* b, index_t num_labels, Loss loss, index_t chunk, int k,
                        col_t* labels, float* scores, OutputWorkspace* ws);

/// Candidate labels of one shortlisted step.
struct CandidateSet {
  std::vector<col_t> ids;                ///< distinct label ids, ascending
  std::vector<float> weight;             ///< importance weight per candidate (1 for fixed ones)
  std::vector<std::int32_t> label_slot;  ///< candidate index of each batch label entry (or -1)
  /// Per batch label entry: 1 when it is one of its row's targets this step, 0 when it is left
  /// out of the row's loss (ShortlistConfig::max_positives). Empty: every entry is a target.
  std::vector<std::uint8_t> label_used;
};

/// Loss and gradient over the candidates only: scores z_c = H . W[ids_c, :] + b_c, softmax-CE
/// over the candidates with the sampling correction z_c + log(weight_c) (the uniform negatives
/// stand for all non-candidate labels), or BCE summed with weight_c and divided by rows x L.
/// With every label a candidate (all weights 1) this is the full loss. Leaves `scale` times
/// the gradient of the candidates' rows in ws->dw ([C x hidden]) and ws->db ([C]), and the
/// masked gradient w.r.t. H in `dh`. Returns the mean loss.
float shortlist_loss_grad(const CsrBatch& batch, const float* h, index_t hidden, const float* w,
                          const float* b, index_t num_labels, Loss loss, float scale,
                          const CandidateSet& cand, float* dh, OutputWorkspace* ws);

}  // namespace hetsgd::cpu
