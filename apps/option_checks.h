/// \file apps/option_checks.h
/// The command line's option vocabulary: enumerations bound straight to their values through
/// the library's name tables (core/enum_names.h), and numeric ranges checked at parse time.
/// A bad value is a usage error (exit 2) that names the option, the value and what it accepts.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>

#include "core/enum_names.h"

namespace hetsgd::app {

/// A validator accepting finite numbers in [lo, hi] (NaN and infinities are refused, which
/// CLI::Range lets through).
inline CLI::Validator in_range(double lo, double hi) {
  std::ostringstream d;
  d << std::setprecision(12) << "in [" << lo << ", " << hi << "]";
  const std::string desc = d.str();
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double v = 0.0;
        std::size_t used = 0;
        try {
          v = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size()) return "'" + text + "' is not a number";
        if (!std::isfinite(v)) return "'" + text + "' is not finite";
        if (v < lo || v > hi) {
          std::ostringstream os;
          os << text << " is outside [" << lo << ", " << hi << "]";
          return os.str();
        }
        return std::string();
      },
      desc);
}

/// A validator running `parse` (which throws hetsgd::Error on a bad value) at parse time, so
/// a malformed list is a usage error naming the option instead of a failure after loading.
/// Values in `passthrough` (such as "auto") are resolved later and accepted as they are.
template <class Parse>
CLI::Validator parsed_by(Parse parse, std::string passthrough = std::string()) {
  return CLI::Validator(
      [parse, passthrough](std::string& text) -> std::string {
        if (!passthrough.empty() && text == passthrough) return std::string();
        try {
          parse(text);
          return std::string();
        } catch (const std::exception& e) {
          return e.what();
        }
      },
      "");
}

/// Largest count accepted where only "positive" is meaningful (keeps sizes far from overflow).
inline constexpr double kMaxCount = 1e12;

/// in_range(lo, hi) that also takes "auto", read as `auto_value` (the option's own sentinel,
/// outside the range); bind it with transform(), which may change the text.
inline CLI::Validator auto_or_in_range(double lo, double hi, double auto_value) {
  const CLI::Validator range = in_range(lo, hi);
  return CLI::Validator(
      [range, auto_value](std::string& text) -> std::string {
        if (text != "auto") return range(text);
        std::ostringstream os;
        os << auto_value;
        text = os.str();
        return std::string();
      },
      "auto or " + range.get_description());
}

/// Largest seed accepted: 2^53, every integer up to it exact in the double in_range reads.
inline constexpr double kMaxSeed = 9007199254740992.0;

/// Binds `--flag` to the enumeration `*target`: the value must be one of name_table<E>()'s
/// names (a usage error listing them otherwise); --help shows the choices and the default.
template <class E>
CLI::Option* add_enum_option(CLI::App* cmd, const std::string& flag, E* target,
                             const std::string& help, const char* what) {
  std::string names;
  for (const auto& entry : name_table<E>()) names += (names.empty() ? "" : "|") + entry.first;
  CLI::Option* opt = cmd->add_option_function<std::string>(
      flag, [target, what](const std::string& v) { *target = parse_enum<E>(v, what); }, help);
  opt->check(CLI::Validator(
      [what](std::string& v) -> std::string {
        try {
          parse_enum<E>(v, what);
          return std::string();
        } catch (const std::exception& e) {
          return e.what();
        }
      },
      ""));
  opt->type_name("{" + names + "}");
  opt->default_str(enum_name(*target));
  return opt;
}

}  // namespace hetsgd::app
