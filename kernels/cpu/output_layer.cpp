#include "kernels/cpu/output_layer.h"

#include <math.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/math/sigmoid_bce.h"
#include "core/math/topk.h"
#include "core/resident.h"
#include "kernels/cpu/dense.h"
#include "kernels/cpu/loss.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_ops.h"

namespace hetsgd::cpu {
namespace {
constexpr index_t kRowBlock = 16;      // batch rows per task in the per-row loss loops
constexpr index_t kGatherBlock = 256;  // candidate rows per task when gathering weights

template <typename T>
void grow(std::vector<T>* v, index_t n) {
  if (static_cast<index_t>(v->size()) < n) resize_resident(v, static_cast<size_t>(n));
}

void check_labels(const CsrBatch& batch, index_t num_labels) {
  for (index_t r = 0; r < batch.rows(); ++r) {
    for (index_t p = batch.y_indptr[r]; p < batch.y_indptr[r + 1]; ++p) {
      const col_t l = batch.y_indices[p];
      HETSGD_CHECK(l >= 0 && l < num_labels,
                   "label id " << l << " outside [0, " << num_labels << ") in batch row " << r);
    }
  }
}

float row_scale_of(index_t rows, index_t num_labels, Loss loss, float scale) {
  if (rows == 0) return 0.0f;
  return scale /
         (static_cast<float>(rows) * (loss == Loss::kBce ? static_cast<float>(num_labels) : 1.0f));
}

// Scores labels [c0, c0 + n) of every row into ws->z ([rows x n]): their weights are the
// contiguous rows c0.. of W, read in place.
void score_chunk(const float* h, index_t rows, index_t hidden, const float* w, const float* b,
                 index_t c0, index_t n, OutputWorkspace* ws) {
  dense_forward_t(h, rows, hidden, n, w + c0 * hidden, b + c0, false, ws->z.data());
}

// Online log-sum-exp update of one row with the scores zr[0..n), whose max is `cm`.
void lse_update(const float* zr, index_t n, float cm, float* m, float* s) {
  if (!(cm > -INFINITY)) return;  // an empty or all -inf / NaN chunk adds nothing
  const float nm = cm > *m ? cm : *m;
  const float cs = vec::exp_shift(zr, n, nm, 0.0f, nullptr);
  *s = *s * expf(*m - nm) + cs;
  *m = nm;
}

// Max of zr[0..n) through the vectorised top-1 (which skips whole vectors below the best).
float chunk_max(const float* zr, index_t n) {
  float best = -INFINITY;
  col_t id = -1;
  vec::topk_row(zr, n, 1, &best, &id);
  return best;
}

// Every chunk of `chunk` labels in turn: scores it into ws->z, calls row(r, zr, c0, n) for each
// batch row (blocks of rows in parallel; zr is the row's n scores, which it may overwrite) and
// then chunk_done(c0, n).
template <class Row, class ChunkDone>
void for_each_chunk(const float* h, index_t rows, index_t hidden, const float* w, const float* b,
                    index_t num_labels, index_t chunk, OutputWorkspace* ws, const Row& row,
                    const ChunkDone& chunk_done) {
  for (index_t c0 = 0; c0 < num_labels; c0 += chunk) {
    const index_t n = std::min(chunk, num_labels - c0);
    score_chunk(h, rows, hidden, w, b, c0, n, ws);
    for_blocks(rows, kRowBlock, [&](index_t r0, index_t r1) {
      for (index_t r = r0; r < r1; ++r) row(r, ws->z.data() + r * n, c0, n);
    });
    chunk_done(c0, n);
  }
}

// Starts the per-row accumulators of a chunked pass: no score seen, no label logit, no loss.
void reset_row_sums(index_t rows, OutputWorkspace* ws) {
  ws->row_max.assign(static_cast<size_t>(rows), -INFINITY);
  ws->row_sum.assign(static_cast<size_t>(rows), 0.0f);
  ws->row_label.assign(static_cast<size_t>(rows), 0.0f);
  ws->row_loss.assign(static_cast<size_t>(rows), 0.0f);
}

// A row's softmax loss once every chunk is in: its log-sum-exp minus the mean of its label
// logits (0 for a row without labels).
float softmax_row_loss(const OutputWorkspace& ws, index_t r, index_t nl) {
  return nl == 0 ? 0.0f
                 : ws.row_max[r] + logf(ws.row_sum[r]) - ws.row_label[r] / static_cast<float>(nl);
}

// The chunk's weight and bias gradient straight into its rows of the gradient buffer, and its
// input gradient (masked by H > 0) into dh (first chunk) or added onto dh (later chunks).
void chunk_backward(const float* h, index_t rows, index_t hidden, const float* w, index_t c0,
                    index_t n, bool first, float* gw, float* gb, float* dh, OutputWorkspace* ws) {
  dense_weight_grad_t(h, ws->z.data(), rows, hidden, n, gw + c0 * hidden, gb + c0);
  float* dst = first ? dh : ws->dh.data();
  dense_input_grad_t(ws->z.data(), w + c0 * hidden, h, rows, hidden, n, dst);
  if (!first) {
    for_blocks(rows, kRowBlock, [&](index_t r0, index_t r1) {
      vec::add_to(dh + r0 * hidden, dst + r0 * hidden, (r1 - r0) * hidden);
    });
  }
}
}  // namespace

std::size_t OutputWorkspace::largest_floats() const {
  std::size_t m = 0;
  for (const std::vector<float>* v : {&w, &b, &z, &dw, &db, &dh, &row_max, &row_sum, &row_label,
                                      &row_loss, &top_scores, &chunk_scores}) {
    m = std::max(m, v->capacity());
  }
  return std::max({m, top_ids.capacity(), chunk_ids.capacity()});
}

void gather_rows(const float* w, index_t hidden, const col_t* ids, index_t n, float* out) {
  for_blocks(n, kGatherBlock, [&](index_t c0, index_t c1) {
    for (index_t c = c0; c < c1; ++c) {
      std::memcpy(out + c * hidden, w + static_cast<index_t>(ids[c]) * hidden,
                  sizeof(float) * hidden);
    }
  });
}

float chunked_loss_grad(const CsrBatch& batch, const float* h, index_t hidden, const float* w,
                        const float* b, index_t num_labels, Loss loss, float scale, index_t chunk,
                        float* gw, float* gb, float* dh, OutputWorkspace* ws) {
  check_labels(batch, num_labels);
  const index_t rows = batch.rows();
  const index_t cols = std::min(chunk, num_labels);
  grow(&ws->z, rows * cols);
  grow(&ws->dh, rows * hidden);
  reset_row_sums(rows, ws);
  const float rs = row_scale_of(rows, num_labels, loss, scale);
  const col_t* y = batch.y_indices.data();
  const index_t* yp = batch.y_indptr.data();

  if (loss == Loss::kSoftmax) {
    // Pass one: the log-sum-exp of every row over all labels, and the label logits.
    for_each_chunk(
        h, rows, hidden, w, b, num_labels, chunk, ws,
        [&](index_t r, const float* zr, index_t c0, index_t n) {
          lse_update(zr, n, chunk_max(zr, n), &ws->row_max[r], &ws->row_sum[r]);
          for (index_t p = yp[r]; p < yp[r + 1]; ++p) {
            if (y[p] >= c0 && y[p] < c0 + n) ws->row_label[r] += zr[y[p] - c0];
          }
        },
        [](index_t, index_t) {});
    for (index_t r = 0; r < rows; ++r) {
      const index_t nl = yp[r + 1] - yp[r];
      ws->row_loss[r] = softmax_row_loss(*ws, r, nl);
      // From here on row_max holds the row's log-sum-exp.
      ws->row_max[r] = ws->row_max[r] + logf(ws->row_sum[r]);
    }
  }
  // Pass two (the only pass for bce): gradient chunk by chunk.
  for_each_chunk(
      h, rows, hidden, w, b, num_labels, chunk, ws,
      [&](index_t r, float* zr, index_t c0, index_t n) {
        const index_t nl = yp[r + 1] - yp[r];
        if (loss == Loss::kSoftmax) {
          if (nl == 0) {
            std::fill(zr, zr + n, 0.0f);
            return;
          }
          const float lse = ws->row_max[r];
          vec::exp_shift(zr, n, lse, rs, zr);
          const float t = rs / static_cast<float>(nl);
          for (index_t p = yp[r]; p < yp[r + 1]; ++p) {
            if (y[p] >= c0 && y[p] < c0 + n) zr[y[p] - c0] -= t;
          }
        } else {
          float s = 0.0f;
          for (index_t p = yp[r]; p < yp[r + 1]; ++p) {
            if (y[p] >= c0 && y[p] < c0 + n) s -= zr[y[p] - c0];
          }
          for (index_t j = 0; j < n; ++j) {
            s += math::bce_loss(zr[j], 0.0f);
            zr[j] = rs * math::bce_grad(zr[j], 0.0f);
          }
          for (index_t p = yp[r]; p < yp[r + 1]; ++p) {
            if (y[p] >= c0 && y[p] < c0 + n) zr[y[p] - c0] -= rs;
          }
          ws->row_loss[r] += s;
        }
      },
      [&](index_t c0, index_t n) {
        chunk_backward(h, rows, hidden, w, c0, n, c0 == 0, gw, gb, dh, ws);
      });
  return mean_loss(ws->row_loss, rows, num_labels, loss);
}

float chunked_loss_topk(const CsrBatch& batch, const float* h, index_t hidden, const float* w,
                        const float* b, index_t num_labels, Loss loss, index_t chunk, int k,
                        col_t* labels, float* scores, OutputWorkspace* ws) {
  check_labels(batch, num_labels);
  const index_t rows = batch.rows();
  const index_t cols = std::min(chunk, num_labels);
  grow(&ws->z, rows * cols);
  reset_row_sums(rows, ws);
  grow(&ws->chunk_scores, rows * k);
  grow(&ws->chunk_ids, rows * k);
  std::vector<int> sizes(static_cast<size_t>(rows), 0);
  const col_t* y = batch.y_indices.data();
  const index_t* yp = batch.y_indptr.data();
  for_each_chunk(
      h, rows, hidden, w, b, num_labels, chunk, ws,
      [&](index_t r, const float* zr, index_t c0, index_t n) {
        // Chunk top-k first (its best entry is the chunk max for the log-sum-exp), then merged
        // into the row's running list: the order is total (score, then id), so the merged
        // list is the exact top-k of all labels scored so far.
        float* cs = ws->chunk_scores.data() + r * k;
        col_t* ci = ws->chunk_ids.data() + r * k;
        vec::topk_row(zr, n, k, cs, ci);
        if (loss == Loss::kSoftmax) {
          lse_update(zr, n, cs[0], &ws->row_max[r], &ws->row_sum[r]);
          for (index_t p = yp[r]; p < yp[r + 1]; ++p) {
            if (y[p] >= c0 && y[p] < c0 + n) ws->row_label[r] += zr[y[p] - c0];
          }
        } else {
          float s = 0.0f;
          for (index_t p = yp[r]; p < yp[r + 1]; ++p) {
            if (y[p] >= c0 && y[p] < c0 + n) s -= zr[y[p] - c0];
          }
          for (index_t j = 0; j < n; ++j) s += math::bce_loss(zr[j], 0.0f);
          ws->row_loss[r] += s;
        }
        float* ts = scores + r * k;
        col_t* ti = labels + r * k;
        for (int i = 0; i < k && ci[i] >= 0; ++i) {
          if (!math::topk_insert(ts, ti, k, sizes[r], cs[i], static_cast<col_t>(ci[i] + c0))) {
            break;  // the chunk list is sorted: nothing after a rejected entry can enter
          }
        }
      },
      [](index_t, index_t) {});
  for (index_t r = 0; r < rows; ++r) {
    for (int i = sizes[r]; i < k; ++i) {
      scores[r * k + i] = -INFINITY;
      labels[r * k + i] = -1;
    }
    if (loss == Loss::kSoftmax) {
      const index_t nl = yp[r + 1] - yp[r];
      ws->row_loss[r] = softmax_row_loss(*ws, r, nl);
    }
  }
  return mean_loss(ws->row_loss, rows, num_labels, loss);
}

float shortlist_loss_grad(const CsrBatch& batch, const float* h, index_t hidden, const float* w,
                          const float* b, index_t num_labels, Loss loss, float scale,
                          const CandidateSet& cand, float* dh, OutputWorkspace* ws) {
  const index_t rows = batch.rows();
  const auto nc = static_cast<index_t>(cand.ids.size());
  HETSGD_CHECK(static_cast<index_t>(cand.label_slot.size()) == batch.label_nnz(),
               "shortlist: " << cand.label_slot.size() << " label slots for " << batch.label_nnz()
                             << " batch labels");
  grow(&ws->w, hidden * nc);
  grow(&ws->b, nc);
  grow(&ws->z, rows * nc);
  grow(&ws->dw, hidden * nc);
  grow(&ws->db, nc);
  grow(&ws->row_sum, nc);  // log of each candidate's weight (softmax correction)
  ws->row_loss.assign(static_cast<size_t>(rows), 0.0f);
  gather_rows(w, hidden, cand.ids.data(), nc, ws->w.data());
  // The weights take few values (1 and the uniform draws' ratio): one logf per value change.
  float last_weight = 1.0f, last_log = 0.0f;
  for (index_t c = 0; c < nc; ++c) {
    ws->b[c] = b[cand.ids[c]];
    if (cand.weight[c] != last_weight) {
      last_weight = cand.weight[c];
      last_log = logf(last_weight);
    }
    ws->row_sum[c] = last_log;
  }
  dense_forward_t(h, rows, hidden, nc, ws->w.data(), ws->b.data(), false, ws->z.data());
  const float rs = row_scale_of(rows, num_labels, loss, scale);
  const index_t* yp = batch.y_indptr.data();
  const std::int32_t* slots = cand.label_slot.data();
  bool corrected = false;
  for (index_t c = 0; c < nc && !corrected; ++c) corrected = cand.weight[c] != 1.0f;
  const std::uint8_t* used = cand.label_used.empty() ? nullptr : cand.label_used.data();
  for_blocks(rows, kRowBlock, [&](index_t r0, index_t r1) {
    std::vector<std::int32_t> targets, left_out;  // a row's used and left-out label slots
    for (index_t r = r0; r < r1; ++r) {
      float* zr = ws->z.data() + r * nc;
      const std::int32_t* ys = slots + yp[r];
      index_t nl = yp[r + 1] - yp[r];
      if (used != nullptr) {  // only the drawn positives are targets; the others sit out
        targets.clear();
        left_out.clear();
        for (index_t p = yp[r]; p < yp[r + 1]; ++p) {
          if (used[p] != 0) {
            targets.push_back(slots[p]);
          } else if (slots[p] >= 0) {
            left_out.push_back(slots[p]);
          }
        }
        ys = targets.data();
        nl = static_cast<index_t>(targets.size());
      }
      if (loss == Loss::kSoftmax) {
        if (corrected) {
          for (index_t c = 0; c < nc; ++c) zr[c] += ws->row_sum[c];
        }
        for (std::int32_t c : left_out) zr[c] = -INFINITY;  // empty without label_used
        ws->row_loss[r] = vec::softmax_ce_row(zr, nc, ys, nl, rs, zr);
        for (std::int32_t c : left_out) zr[c] = 0.0f;
      } else {
        float s = 0.0f;
        for (std::int32_t c : left_out) s -= cand.weight[c] * math::bce_loss(zr[c], 0.0f);
        for (index_t i = 0; i < nl; ++i) s -= zr[ys[i]];
        for (index_t c = 0; c < nc; ++c) {
          const float wt = cand.weight[c];
          s += wt * math::bce_loss(zr[c], 0.0f);
          zr[c] = rs * wt * math::bce_grad(zr[c], 0.0f);
        }
        for (index_t i = 0; i < nl; ++i) zr[ys[i]] -= rs;
        for (std::int32_t c : left_out) zr[c] = 0.0f;
        ws->row_loss[r] = s;
      }
    }
  });
  dense_weight_grad_t(h, ws->z.data(), rows, hidden, nc, ws->dw.data(), ws->db.data());
  dense_input_grad_t(ws->z.data(), ws->w.data(), h, rows, hidden, nc, dh);
  return mean_loss(ws->row_loss, rows, num_labels, loss);
}

}  // namespace hetsgd::cpu
