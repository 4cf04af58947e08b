#include "core/tenancy/share_report.h"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"

namespace hetsgd::tenancy {

PolicyReport evaluate_policy(const Instance& inst, const std::string& policy,
                             const PolicyOptions& options) {
  const Allocation a = allocate(inst, policy, options);
  // Utilities are read on the normalised speeds (each tenant's best type = 1), so that a
  // tenant's u_i is comparable with its equal split's, whatever its absolute speed.
  const Matrix v = normalised(inst);
  const Matrix e = equal_split(inst);
  const auto envy = envy_margins(inst, a.x);
  const auto si = sharing_incentive_margins(inst, a.x);
  PolicyReport r;
  r.policy = a.policy;
  r.fallback = a.fallback;
  r.strategy_proof = a.strategy_proof;
  r.note = a.note;
  r.x = a.x;
  const int n = inst.num_tenants(), m = inst.num_types();
  for (int i = 0; i < n; ++i) {
    TenantShareReport t;
    t.name = inst.tenants[i];
    t.weight = inst.weights[i];
    t.share = a.x.row(i);
    t.utility = utility(v, inst.counts, a.x, i);
    t.utility_equal = utility(v, inst.counts, e, i);
    // Throughput in samples/s, on the measured (not normalised) speeds: what the tenant's job
    // would see.
    for (int j = 0; j < m; ++j) t.throughput += inst.s(i, j) * inst.counts[j] * a.x(i, j);
    t.envy_margin = envy[i];
    t.si_margin = si[i];
    r.total_utility += t.utility;
    r.total_throughput += t.throughput;
    r.tenants.push_back(std::move(t));
  }
  // A type's share left to nobody: a policy may leave devices idle (an envy-free cap), which
  // the table flags, since the shares need not sum to one.
  for (int j = 0; j < m; ++j) {
    double col = 0;
    for (int i = 0; i < n; ++i) col += a.x(i, j);
    r.unassigned.push_back(std::max(0.0, 1.0 - col));
  }
  // A property holds within kPropertyTol: the shares come from an LP, and a margin a hair
  // below 0 is its rounding, not a violation.
  r.envy_margin = *std::min_element(envy.begin(), envy.end());
  r.si_margin = *std::min_element(si.begin(), si.end());
  r.envy_free = r.envy_margin >= -kPropertyTol;
  r.sharing_incentive = r.si_margin >= -kPropertyTol;
  r.pareto = pareto_check(inst, a.x);
  return r;
}

ShareReport compare_policies(const Instance& inst, const std::vector<std::string>& policies,
                             const PolicyOptions& options) {
  validate(inst);
  ShareReport rep;
  rep.instance = inst;
  for (const auto& p : policies) rep.policies.push_back(evaluate_policy(inst, p, options));
  return rep;
}

void print_share_table(const ShareReport& report, std::ostream& os) {
  const Instance& inst = report.instance;
  std::ostringstream types;
  for (int j = 0; j < inst.num_types(); ++j) {
    types << (j ? "," : "") << inst.types[j] << "x" << inst.counts[j];
  }
  os << "devices: " << types.str();
  if (inst.emulated) os << "   (EMULATED speeds: throughputs come from emulation factors)";
  os << "\n";
  os << "EF and SI are weighted: EF u_i(x_i) >= (w_i/w_k) u_i(x_k), SI u_i(x_i) >= u_i(e_i) with "
        "e_i = w_i / sum w of every type\n";
  os << std::left << std::setw(26) << "policy" << std::setw(12) << "tenant" << std::right
     << std::setw(6) << "w"
     << "  " << std::left << std::setw(std::max(8, 6 * inst.num_types())) << "share" << std::right
     << std::setw(8) << "u_i" << std::setw(8) << "u_i(e)" << std::setw(12) << "samples/s"
     << std::setw(9) << "envy" << std::setw(9) << "SI"
     << "\n";
  os << std::fixed;
  for (const auto& p : report.policies) {
    for (const auto& t : p.tenants) {
      std::ostringstream share;
      share << std::fixed << std::setprecision(2);
      for (std::size_t j = 0; j < t.share.size(); ++j) share << (j ? "," : "") << t.share[j];
      os << std::left << std::setw(26) << p.policy << std::setw(12) << t.name << std::right
         << std::setprecision(2) << std::setw(6) << t.weight << "  " << std::left
         << std::setw(std::max(8, 6 * inst.num_types())) << share.str() << std::right
         << std::setprecision(3) << std::setw(8) << t.utility << std::setw(8) << t.utility_equal
         << std::setprecision(1) << std::setw(12) << t.throughput << std::setprecision(3)
         << std::setw(9) << t.envy_margin << std::setw(9) << t.si_margin << "\n";
    }
    // One TOTAL row a policy, its properties as flags: PE? where the Pareto LP was not solved
    // (no verdict either way), not-PE with the largest utility gain the LP found.
    std::ostringstream flags;
    flags << (p.envy_free ? "EF" : "not-EF") << ' ' << (p.sharing_incentive ? "SI" : "not-SI")
          << ' ';
    if (!p.pareto.solved) {
      flags << "PE?";
    } else if (p.pareto.efficient) {
      flags << "PE";
    } else {
      flags << "not-PE(+" << std::setprecision(3) << p.pareto.max_improvement << ")";
    }
    if (p.strategy_proof) flags << " SP";
    if (p.fallback) flags << " FALLBACK";
    double idle = 0;
    for (double u : p.unassigned) idle = std::max(idle, u);
    if (idle > 1e-6) flags << " idle<=" << std::setprecision(2) << idle;
    os << std::left << std::setw(26) << p.policy << std::setw(12) << "TOTAL" << std::right
       << std::setw(6) << ""
       << "  " << std::left << std::setw(std::max(8, 6 * inst.num_types())) << "" << std::right
       << std::setprecision(3) << std::setw(8) << p.total_utility << std::setw(8) << ""
       << std::setprecision(1) << std::setw(12) << p.total_throughput << "  " << flags.str()
       << "\n";
    if (!p.note.empty()) os << "  note: " << p.note << "\n";
  }
  os.unsetf(std::ios::floatfield);
}

nlohmann::json share_report_json(const ShareReport& report) {
  using nlohmann::json;
  const Instance& inst = report.instance;
  json j = {{"emulated", inst.emulated},
            {"types", inst.types},
            {"counts", inst.counts},
            {"tenants", inst.tenants},
            {"weights", inst.weights}};
  // The property checks below use the weighted definitions (properties.h).
  j["property_definitions"] = {
      {"envy_free", "weighted: u_i(x_i) >= (w_i / w_k) u_i(x_k) for every pair"},
      {"sharing_incentive", "weighted: u_i(x_i) >= u_i(e_i), e_i = w_i / sum w of every type"},
      {"pareto", "no allocation raises one u_i without lowering another"},
      {"strategy_proof", "by construction: no throughput misreport raises the true utility"}};
  json s = json::array();
  for (int i = 0; i < inst.num_tenants(); ++i) s.push_back(inst.s.row(i));
  j["throughput"] = s;
  j["policies"] = json::array();
  for (const auto& p : report.policies) {
    json pj = {{"policy", p.policy},
               {"fallback", p.fallback},
               {"strategy_proof", p.strategy_proof},
               {"note", p.note},
               {"total_utility", p.total_utility},
               {"total_throughput", p.total_throughput},
               {"envy_margin", p.envy_margin},
               {"si_margin", p.si_margin},
               {"envy_free", p.envy_free},
               {"sharing_incentive", p.sharing_incentive},
               {"pareto",
                {{"solved", p.pareto.solved},
                 {"efficient", p.pareto.efficient},
                 {"max_improvement", p.pareto.max_improvement}}},
               {"unassigned", p.unassigned},
               {"tenants", json::array()}};
    for (const auto& t : p.tenants) {
      pj["tenants"].push_back({{"name", t.name},
                               {"weight", t.weight},
                               {"share", t.share},
                               {"utility", t.utility},
                               {"utility_equal", t.utility_equal},
                               {"throughput", t.throughput},
                               {"envy_margin", t.envy_margin},
                               {"si_margin", t.si_margin}});
    }
    j["policies"].push_back(std::move(pj));
  }
  return j;
}

void write_share_json(const ShareReport& report, const std::string& path) {
  write_file_atomic(path, share_report_json(report).dump(2) + "\n");
}

namespace {

nlohmann::json rows_of(const Matrix& x) {
  nlohmann::json out = nlohmann::json::array();
  for (int i = 0; i < x.rows; ++i) out.push_back(x.row(i));
  return out;
}

}  // namespace

const char* tenant_status(const EnforcementResult& result, int i) {
  if (result.failed_round[i] >= 0) return "failed";
  if (result.finished_round[i] >= 0) return "finished";
  if (result.departed_round[i] >= 0) return "departed";
  return result.rounds_present[i] > 0 ? "present" : "never arrived";
}

nlohmann::json enforcement_json(const EnforcementResult& result, const Instance& inst,
                                double round_seconds) {
  nlohmann::json j;
  j["policy"] = result.policy;
  j["rounds"] = result.rounds;
  j["round_seconds"] = round_seconds;
  j["max_lag"] = result.max_lag;
  j["moves"] = result.moves;
  j["recomputes"] = result.recomputes;
  j["emulated"] = inst.emulated;
  j["types"] = inst.types;
  j["counts"] = inst.counts;
  nlohmann::json tenants = nlohmann::json::array();
  for (int i = 0; i < inst.num_tenants(); ++i) {
    const int present = result.rounds_present[i];
    // Rounds give whole devices: the deficit counters keep the realised share within one
    // device-round of its target, 1 / (c * present) over the rounds the tenant was present.
    std::vector<double> bound;
    for (int c : inst.counts) bound.push_back(present > 0 ? 1.0 / (c * present) : 0.0);
    tenants.push_back({{"name", inst.tenants[i]},
                       {"status", tenant_status(result, i)},
                       {"departed_round", result.departed_round[i]},
                       {"finished_round", result.finished_round[i]},
                       {"failed_round", result.failed_round[i]},
                       {"failure", result.failure[i]},
                       {"rounds_present", present},
                       {"samples", result.samples[i]},
                       {"updates", result.updates[i]},
                       {"train_seconds", result.train_seconds[i]},
                       {"x", result.last_x.row(i)},
                       {"target", result.target.row(i)},
                       {"realised", result.realised.row(i)},
                       {"bound", bound}});
  }
  j["tenants"] = tenants;
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : result.events) {
    events.push_back({{"round", e.round},
                      {"kind", event_kind_name(e.kind)},
                      {"tenant", e.tenant >= 0 ? inst.tenants[e.tenant] : ""},
                      {"text", e.text}});
  }
  j["events"] = events;
  nlohmann::json rounds = nlohmann::json::array();
  for (const auto& r : result.round_log) {
    rounds.push_back({{"round", r.round},
                      {"moves", r.moves},
                      {"present", r.present},
                      {"held", rows_of(r.held)},
                      {"target", rows_of(r.target)},
                      {"average_target", rows_of(r.average_target)},
                      {"realised", rows_of(r.realised)}});
  }
  j["round_log"] = rounds;
  j["throughput_estimate"] = rows_of(result.throughput_estimate);
  return j;
}

}  // namespace hetsgd::tenancy
