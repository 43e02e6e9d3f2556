// ConfigSpace: the tunable knobs of a schedule template, and Config, one
// point of the space (one choice per knob).
//
// Knob kinds (as in AutoTVM): a split of an extent into N factors (outer
// first; the outer factor is ceil(extent / product of the others), so
// non-divisible tilings are allowed), a reorder among listed permutations,
// an annotation among named choices ("none", "unroll", "vec"...), and a
// plain choice among integers. A Config maps to and from its index in the
// space (mixed radix over the knobs, first knob most significant) and a
// JSON object {"knob": value}; it can be drawn at random and has neighbours
// that differ in one knob (the annealer's moves).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln {

struct Knob {
  enum Kind { kSplit, kReorder, kAnnotate, kChoice };
  Kind kind;
  std::string name;
  // One entry per option: split -> the factors (outer first); reorder -> a
  // permutation; choice -> {value}; annotate -> {index into labels}.
  std::vector<std::vector<int64_t>> options;
  std::vector<std::string> labels;  // annotate only
  // A knob added to a template after configs of it were stored: a stored
  // config without it means its first option (so databases stay valid).
  bool added_later = false;
  // The option a stored config without this knob means (added_later): 0,
  // or -1 once pin() has left that option out.
  int absent = 0;
  // Tuned last (ConfigSpace::set_refine): a search holds it at its first
  // option, then the fastest configs found are measured with each of its
  // other options (tuner/tuning_loop.h's refine_task). For knobs whose effect
  // adds to the rest's, such as a prefetch distance: they do not widen the
  // search, and a tuned result is never slower than the search without them.
  bool refine = false;
  size_t size() const { return options.size(); }
};

class ConfigSpace;

class Config {
 public:
  Config() = default;
  Config(const ConfigSpace* space, std::vector<int> choices);

  const ConfigSpace* space() const { return space_; }
  const std::vector<int>& choices() const { return choices_; }
  uint64_t index() const;

  // Values by knob name (user_error when the name or the kind is wrong).
  const std::vector<int64_t>& split(const std::string& name) const;
  const std::vector<int64_t>& reorder(const std::string& name) const;
  const std::string& annotate(const std::string& name) const;
  int64_t choice(const std::string& name) const;
  // Whether the config's space has a knob of that name (knobs a template
  // offers only for some shapes or targets: tensorize, tensor_core).
  bool has(const std::string& name) const;

  nlohmann::json to_json() const;
  std::string str() const { return to_json().dump(); }
  bool operator==(const Config& o) const { return space_ == o.space_ && choices_ == o.choices_; }

 private:
  const ConfigSpace* space_ = nullptr;
  std::vector<int> choices_;
};

class ConfigSpace {
 public:
  // Splits `extent` into `parts` factors. Inner factors come from the
  // divisors of extent and the powers of two below it; their product is at
  // most extent (and at most max_inner for the innermost factor, if > 0).
  void define_split(const std::string& name, int64_t extent, int parts, int64_t max_inner = 0);
  // Splits into `parts` factors whose inner factors are taken only from
  // `candidates` (e.g. multiples of the vector width).
  void define_split_with(const std::string& name, int64_t extent, int parts, const std::vector<int64_t>& candidates);
  // Splits into levels.size() + 1 factors; inner factor p + 1 (outer-most
  // first) is taken from levels[p] (e.g. a cache block from the divisors,
  // then a register tile from multiples of the vector width). user_error
  // when no combination fits the extent.
  void define_split_levels(const std::string& name, int64_t extent, const std::vector<std::vector<int64_t>>& levels,
                           bool added_later = false);
  // The same, keeping only inner factors whose product divides extent (no
  // partial outer block).
  void define_exact_split_levels(const std::string& name, int64_t extent,
                                 const std::vector<std::vector<int64_t>>& levels, bool added_later = false);
  void define_reorder(const std::string& name, const std::vector<std::vector<int64_t>>& permutations);
  // `added_later`: see Knob::added_later (the first choice must be what the
  // template did before the knob existed).
  void define_annotate(const std::string& name, const std::vector<std::string>& choices, bool added_later = false);
  void define_choice(const std::string& name, const std::vector<int64_t>& values, bool added_later = false);

  // Keeps only the option of knob `name` whose value is `value` (as a
  // config's JSON writes it): every config of the space then has it, as
  // `kiln tune --fix` asks. user_error for an unknown knob or a value that
  // is not one of its options, naming the options.
  void pin(const std::string& name, const nlohmann::json& value);
  // Marks knob `name` as tuned last (Knob::refine).
  void set_refine(const std::string& name);
  // Pins every refine knob at its first option (what a search explores).
  void hold_refine_knobs();

  const std::vector<Knob>& knobs() const { return knobs_; }
  const Knob& knob(const std::string& name) const;
  int knob_index(const std::string& name) const;
  // Number of configs (saturates at UINT64_MAX).
  uint64_t size() const;

  Config get(uint64_t index) const;  // user_error when index >= size()
  Config random(std::mt19937_64& rng) const;
  // A config that differs from c in one knob, chosen uniformly.
  Config random_neighbor(const Config& c, std::mt19937_64& rng) const;
  // Parses {"knob": value, ...} (every knob required but those added later;
  // values must be options).
  Config from_json(const nlohmann::json& j) const;
  Config from_json_string(const std::string& text) const;
  // The config of this space closest to `j`, a config of a similar space
  // (another shape of the same template): per knob, the same value when it
  // is an option, else the nearest one (split and choice: the closest
  // factors on a log scale; reorder: the permutation with the most axes in
  // place; annotate: the same label). Knobs `j` lacks or gives in another
  // form take their first option. Never throws.
  Config nearest(const nlohmann::json& j) const;
  // The first config (index 0) is a valid default; templates may name a
  // better one by listing its values.
  Config make(const nlohmann::json& values) const { return from_json(values); }

 private:
  void add(Knob k);
  void split_levels(const std::string& name, int64_t extent, const std::vector<std::vector<int64_t>>& levels,
                    bool added_later, bool exact);
  std::vector<Knob> knobs_;
};

// The factor lists of a split knob (exposed for tests).
std::vector<std::vector<int64_t>> split_options(int64_t extent, int parts, const std::vector<int64_t>& candidates,
                                                int64_t max_inner);

}  // namespace kiln
