#include "core/tenancy/nash_solver.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace hetsgd::tenancy {
namespace {

// In-place Cholesky solve of the dense SPD system H d = b (H is k x k, row-major). Returns false
// when H is not numerically positive definite.
bool cholesky_solve(std::vector<double> h, int k, std::vector<double>* b) {
  for (int c = 0; c < k; ++c) {
    double d = h[c * k + c];
    for (int p = 0; p < c; ++p) d -= h[c * k + p] * h[c * k + p];
    if (!(d > 0)) return false;
    d = std::sqrt(d);
    h[c * k + c] = d;
    for (int r = c + 1; r < k; ++r) {
      double v = h[r * k + c];
      for (int p = 0; p < c; ++p) v -= h[r * k + p] * h[c * k + p];
      h[r * k + c] = v / d;
    }
  }
  std::vector<double>& y = *b;
  for (int r = 0; r < k; ++r) {
    for (int p = 0; p < r; ++p) y[r] -= h[r * k + p] * y[p];
    y[r] /= h[r * k + r];
  }
  for (int r = k - 1; r >= 0; --r) {
    for (int p = r + 1; p < k; ++p) y[r] -= h[p * k + r] * y[p];
    y[r] /= h[r * k + r];
  }
  return true;
}

struct Var {
  int i;
  int j;
  double a;
};

}  // namespace

NashSolution solve_eisenberg_gale(const Matrix& a, const std::vector<double>& w) {
  const int n = a.rows;
  const int m = a.cols;
  HETSGD_CHECK(static_cast<int>(w.size()) == n,
               "Eisenberg-Gale: " << w.size() << " weights for " << n << " tenants");
  // Only pairs with a_ij > 0 are variables: giving a tenant a type it cannot use never helps,
  // and dropping those columns keeps the Newton system well conditioned.
  std::vector<Var> vars;
  std::vector<int> col_vars(m, 0);
  for (int i = 0; i < n; ++i) {
    bool any = false;
    for (int j = 0; j < m; ++j) {
      if (a(i, j) > 0) {
        vars.push_back({i, j, a(i, j)});
        ++col_vars[j];
        any = true;
      }
    }
    HETSGD_CHECK(any, "Eisenberg-Gale: tenant " << i << " values no device type");
    HETSGD_CHECK(w[i] > 0 && std::isfinite(w[i]),
                 "Eisenberg-Gale: weight " << w[i] << " of tenant " << i);
  }
  const int k = static_cast<int>(vars.size());
  std::vector<double> x(k);
  // Strictly interior start: each type split evenly among its claimants with a share left
  // over, so every x and every capacity slack is positive before the first log.
  for (int v = 0; v < k; ++v) x[v] = 1.0 / (col_vars[vars[v].j] + 1);

  double wsum = 0;
  for (double wi : w) wsum += wi;

  auto slacks = [&](const std::vector<double>& xs, std::vector<double>* s) {
    s->assign(m, 1.0);
    for (int v = 0; v < k; ++v) (*s)[vars[v].j] -= xs[v];
  };
  auto utilities = [&](const std::vector<double>& xs, std::vector<double>* u) {
    u->assign(n, 0.0);
    for (int v = 0; v < k; ++v) (*u)[vars[v].i] += vars[v].a * xs[v];
  };
  // The barrier objective: -sum w_i log u_i (Eisenberg-Gale, whose optimum is the weighted
  // Nash / CEEI allocation) plus -mu log of every x and every capacity slack, so Newton steps
  // stay inside x > 0, sum_i x_ij < 1 without handling constraints explicitly.
  auto barrier_obj = [&](const std::vector<double>& xs, double mu) {
    std::vector<double> u, s;
    utilities(xs, &u);
    slacks(xs, &s);
    double f = 0;
    for (int i = 0; i < n; ++i) f -= w[i] * std::log(u[i]);
    for (int v = 0; v < k; ++v) f -= mu * std::log(xs[v]);
    for (int j = 0; j < m; ++j) {
      if (col_vars[j] > 0) f -= mu * std::log(s[j]);
    }
    return f;
  };

  NashSolution sol;
  // mu is scaled by the total weight so the tolerances mean the same for any weights; 1e-16
  // leaves the duality gap (about mu per barrier term) far below the 1e-9 the properties
  // are checked at.
  const double mu_final = 1e-16 * wsum;
  const int kMaxSteps = 5000;
  double mu = wsum;
  std::vector<double> g(k), hess(static_cast<std::size_t>(k) * k), d(k), u, s;
  bool done = false;
  while (!done && sol.newton_steps < kMaxSteps) {
    // Centre for the current mu: Newton until the decrement is tiny.
    for (int it = 0; it < 100 && sol.newton_steps < kMaxSteps; ++it, ++sol.newton_steps) {
      utilities(x, &u);
      slacks(x, &s);
      std::fill(hess.begin(), hess.end(), 0.0);
      for (int p = 0; p < k; ++p) {
        const Var& vp = vars[p];
        // Gradient and Hessian of the barrier: the log-utility term couples a tenant's
        // variables, the slack term couples a type's; the Hessian is dense in k = #pairs,
        // which stays small (tenants x types) so a Cholesky solve is the simplest exact step.
        g[p] = -w[vp.i] * vp.a / u[vp.i] - mu / x[p] + mu / s[vp.j];
        for (int q = 0; q < k; ++q) {
          const Var& vq = vars[q];
          double h = 0;
          if (vq.i == vp.i) h += w[vp.i] * vp.a * vq.a / (u[vp.i] * u[vp.i]);
          if (vq.j == vp.j) h += mu / (s[vp.j] * s[vp.j]);
          hess[static_cast<std::size_t>(p) * k + q] = h;
        }
        hess[static_cast<std::size_t>(p) * k + p] += mu / (x[p] * x[p]);
      }
      for (int p = 0; p < k; ++p) d[p] = -g[p];
      // A Hessian that is not numerically positive definite means the iterate hugs a
      // boundary; the centring stops and mu shrinks, which is what moves it on.
      if (!cholesky_solve(hess, k, &d)) break;
      double decrement = 0;
      for (int p = 0; p < k; ++p) decrement -= g[p] * d[p];
      if (decrement < 1e-14 * wsum) break;
      // Largest step that keeps x > 0 and every slack > 0, then Armijo backtracking.
      double t = 1.0;
      for (int p = 0; p < k; ++p) {
        if (d[p] < 0) t = std::min(t, -0.99 * x[p] / d[p]);
      }
      std::vector<double> ds(m, 0.0);
      for (int p = 0; p < k; ++p) ds[vars[p].j] += d[p];
      for (int j = 0; j < m; ++j) {
        if (ds[j] > 0) t = std::min(t, 0.99 * s[j] / ds[j]);
      }
      const double f0 = barrier_obj(x, mu);
      std::vector<double> xn(k);
      for (int tries = 0; tries < 60; ++tries) {
        for (int p = 0; p < k; ++p) xn[p] = x[p] + t * d[p];
        if (barrier_obj(xn, mu) <= f0 - 0.25 * t * decrement) break;
        t *= 0.5;
      }
      x = xn;
    }
    // Shrinking mu tenfold per outer step keeps the previous centre a good Newton start.
    if (mu <= mu_final) {
      done = true;
    } else {
      mu = std::max(mu * 0.1, mu_final);
    }
  }
  sol.converged = done;
  sol.x = Matrix(n, m);
  for (int v = 0; v < k; ++v) sol.x(vars[v].i, vars[v].j) = x[v];
  utilities(x, &sol.utility);
  return sol;
}

}  // namespace hetsgd::tenancy
