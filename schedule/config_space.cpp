#include "schedule/config_space.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>
#include <set>

#include "base/error.h"

namespace kiln {

std::vector<std::vector<int64_t>> split_options(int64_t extent, int parts, const std::vector<int64_t>& candidates,
                                                int64_t max_inner) {
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t> inner;  // factors after the outer one, outer-most first
  std::function<void(int, int64_t)> rec = [&](int remaining, int64_t product) {
    if (remaining == 0) {
      std::vector<int64_t> f{(extent + product - 1) / product};
      f.insert(f.end(), inner.begin(), inner.end());
      out.push_back(f);
      return;
    }
    for (int64_t c : candidates) {
      if (product * c > extent) continue;
      if (remaining == 1 && max_inner > 0 && c > max_inner) continue;
      inner.push_back(c);
      rec(remaining - 1, product * c);
      inner.pop_back();
    }
  };
  rec(parts - 1, 1);
  return out;
}

namespace {
std::vector<int64_t> default_candidates(int64_t extent) {
  std::set<int64_t> c;
  for (int64_t d = 1; d * d <= extent; ++d)
    if (extent % d == 0) {
      c.insert(d);
      c.insert(extent / d);
    }
  for (int64_t p = 1; p <= extent; p *= 2) c.insert(p);
  return {c.begin(), c.end()};
}
}  // namespace

void ConfigSpace::add(Knob k) {
  user_check(!k.name.empty()) << "config space: a knob needs a name";
  for (auto& other : knobs_) user_check(other.name != k.name) << "config space: knob '" << k.name << "' defined twice";
  user_check(!k.options.empty()) << "config space: knob '" << k.name << "' has no options";
  knobs_.push_back(std::move(k));
}

void ConfigSpace::define_split(const std::string& name, int64_t extent, int parts, int64_t max_inner) {
  define_split_with(name, extent, parts, default_candidates(extent));
  if (max_inner > 0) {
    Knob& k = knobs_.back();
    k.options = split_options(extent, parts, default_candidates(extent), max_inner);
  }
}

void ConfigSpace::define_split_with(const std::string& name, int64_t extent, int parts,
                                    const std::vector<int64_t>& candidates) {
  user_check(extent >= 1 && parts >= 1) << "config space: split '" << name << "' needs extent >= 1 and parts >= 1";
  Knob k{Knob::kSplit, name, split_options(extent, parts, candidates, 0), {}};
  add(std::move(k));
}

void ConfigSpace::define_split_levels(const std::string& name, int64_t extent,
                                      const std::vector<std::vector<int64_t>>& levels, bool added_later) {
  split_levels(name, extent, levels, added_later, false);
}

void ConfigSpace::define_exact_split_levels(const std::string& name, int64_t extent,
                                            const std::vector<std::vector<int64_t>>& levels, bool added_later) {
  split_levels(name, extent, levels, added_later, true);
}

void ConfigSpace::split_levels(const std::string& name, int64_t extent, const std::vector<std::vector<int64_t>>& levels,
                               bool added_later, bool exact) {
  user_check(extent >= 1) << "config space: split '" << name << "' needs extent >= 1";
  std::vector<std::vector<int64_t>> options;
  std::vector<int64_t> inner;
  std::function<void(size_t, int64_t)> rec = [&](size_t level, int64_t product) {
    if (level == levels.size()) {
      if (exact && extent % product != 0) return;
      std::vector<int64_t> f{(extent + product - 1) / product};
      f.insert(f.end(), inner.begin(), inner.end());
      options.push_back(f);
      return;
    }
    for (int64_t c : std::set<int64_t>(levels[level].begin(), levels[level].end())) {
      if (c < 1 || product * c > extent) continue;
      inner.push_back(c);
      rec(level + 1, product * c);
      inner.pop_back();
    }
  };
  rec(0, 1);
  user_check(!options.empty()) << "config space: no factors of split '" << name << "' fit the extent " << extent
                                << (exact ? " (exactly dividing it)" : "");
  Knob k{Knob::kSplit, name, std::move(options), {}};
  k.added_later = added_later;
  add(std::move(k));
}

void ConfigSpace::define_reorder(const std::string& name, const std::vector<std::vector<int64_t>>& permutations) {
  Knob k{Knob::kReorder, name, permutations, {}};
  add(std::move(k));
}

void ConfigSpace::define_annotate(const std::string& name, const std::vector<std::string>& choices,
                                  bool added_later) {
  Knob k{Knob::kAnnotate, name, {}, choices};
  k.added_later = added_later;
  for (size_t i = 0; i < choices.size(); ++i) k.options.push_back({static_cast<int64_t>(i)});
  add(std::move(k));
}

void ConfigSpace::define_choice(const std::string& name, const std::vector<int64_t>& values, bool added_later) {
  Knob k{Knob::kChoice, name, {}, {}};
  k.added_later = added_later;
  for (int64_t v : values) k.options.push_back({v});
  add(std::move(k));
}

bool Config::has(const std::string& name) const {
  if (!space_) return false;
  for (const Knob& k : space_->knobs())
    if (k.name == name) return true;
  return false;
}

int ConfigSpace::knob_index(const std::string& name) const {
  for (size_t i = 0; i < knobs_.size(); ++i)
    if (knobs_[i].name == name) return static_cast<int>(i);
  user_error() << "config space has no knob named '" << name << "'";
}

const Knob& ConfigSpace::knob(const std::string& name) const { return knobs_[knob_index(name)]; }

uint64_t ConfigSpace::size() const {
  uint64_t n = 1;
  for (auto& k : knobs_) {
    if (n > UINT64_MAX / k.size()) return UINT64_MAX;
    n *= k.size();
  }
  return n;
}

Config ConfigSpace::get(uint64_t index) const {
  user_check(index < size()) << "config index " << index << " is outside the space (size " << size() << ")";
  std::vector<int> choices(knobs_.size());
  for (size_t i = knobs_.size(); i-- > 0;) {
    choices[i] = static_cast<int>(index % knobs_[i].size());
    index /= knobs_[i].size();
  }
  return Config(this, choices);
}

Config ConfigSpace::random(std::mt19937_64& rng) const {
  std::vector<int> choices;
  for (auto& k : knobs_) choices.push_back(std::uniform_int_distribution<int>(0, static_cast<int>(k.size()) - 1)(rng));
  return Config(this, choices);
}

Config ConfigSpace::random_neighbor(const Config& c, std::mt19937_64& rng) const {
  std::vector<int> movable;
  for (size_t i = 0; i < knobs_.size(); ++i)
    if (knobs_[i].size() > 1) movable.push_back(static_cast<int>(i));
  if (movable.empty()) return c;
  std::vector<int> choices = c.choices();
  int k = movable[std::uniform_int_distribution<size_t>(0, movable.size() - 1)(rng)];
  int n = static_cast<int>(knobs_[k].size());
  int step = std::uniform_int_distribution<int>(1, n - 1)(rng);
  choices[k] = (choices[k] + step) % n;
  return Config(this, choices);
}

namespace {

// A JSON integer that fits int64_t (JSON floats, and integers past the
// range, are no knob value: converting them would be undefined).
bool json_int64(const nlohmann::json& v, int64_t* out) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(v.get<uint64_t>());
    return true;
  }
  if (!v.is_number_integer()) return false;
  *out = v.get<int64_t>();
  return true;
}

// Whether v is a JSON array of exactly these integers.
bool json_int_list_equals(const nlohmann::json& v, const std::vector<int64_t>& values) {
  if (!v.is_array() || v.size() != values.size()) return false;
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t x = 0;
    if (!json_int64(v[i], &x) || x != values[i]) return false;
  }
  return true;
}

bool option_matches(const Knob& k, size_t o, const nlohmann::json& v) {
  switch (k.kind) {
    case Knob::kSplit:
    case Knob::kReorder:
      return json_int_list_equals(v, k.options[o]);
    case Knob::kChoice: {
      int64_t x = 0;
      return json_int64(v, &x) && x == k.options[o][0];
    }
    case Knob::kAnnotate:
      return v.is_string() && v.get<std::string>() == k.labels[o];
  }
  return false;
}

// Option o of k as a config's JSON writes it.
nlohmann::json option_json(const Knob& k, size_t o) {
  switch (k.kind) {
    case Knob::kSplit:
    case Knob::kReorder:
      return k.options[o];
    case Knob::kChoice:
      return k.options[o][0];
    case Knob::kAnnotate:
      return k.labels[o];
  }
  return nullptr;
}

}  // namespace

void ConfigSpace::pin(const std::string& name, const nlohmann::json& value) {
  int i = -1;
  for (size_t n = 0; n < knobs_.size(); ++n)
    if (knobs_[n].name == name) i = static_cast<int>(n);
  if (i < 0) {
    std::string names;
    for (const Knob& k : knobs_) names += (names.empty() ? "" : ", ") + k.name;
    user_error() << "cannot fix knob '" << name << "': the template has no such knob (its knobs: " << names << ")";
  }
  Knob& k = knobs_[static_cast<size_t>(i)];
  std::string options;
  for (size_t o = 0; o < k.size(); ++o) {
    if (option_matches(k, o, value)) {
      if (k.kind == Knob::kAnnotate) {
        k.labels = {k.labels[o]};
        k.options = {{0}};
      } else {
        k.options = {k.options[o]};
      }
      k.absent = o == 0 ? 0 : -1;
      return;
    }
    options += (options.empty() ? "" : ", ") + option_json(k, o).dump();
  }
  user_error() << "cannot fix knob '" << name << "' to " << value.dump() << ": its options are " << options;
}

void ConfigSpace::set_refine(const std::string& name) { knobs_[static_cast<size_t>(knob_index(name))].refine = true; }

void ConfigSpace::hold_refine_knobs() {
  for (const Knob& k : std::vector<Knob>(knobs_))
    if (k.refine && k.size() > 1) pin(k.name, option_json(k, 0));
}

Config ConfigSpace::from_json(const nlohmann::json& j) const {
  user_check(j.is_object()) << "a config must be a JSON object of knob values, got " << j.dump();
  std::vector<int> choices;
  for (auto& k : knobs_) {
    if (!j.contains(k.name) && k.added_later) {
      user_check(k.absent >= 0) << "config " << j.dump() << " lacks knob '" << k.name
                                << "', which means its first option, and the space leaves that out (pinned)";
      choices.push_back(k.absent);
      continue;
    }
    user_check(j.contains(k.name)) << "config " << j.dump() << " lacks knob '" << k.name << "'";
    const auto& v = j.at(k.name);
    int found = -1;
    for (size_t o = 0; o < k.size() && found < 0; ++o)
      if (option_matches(k, o, v)) found = static_cast<int>(o);
    user_check(found >= 0) << "config value " << v.dump() << " is not an option of knob '" << k.name << "'";
    choices.push_back(found);
  }
  for (auto it = j.begin(); it != j.end(); ++it) knob_index(it.key());  // no unknown keys
  return Config(this, choices);
}

namespace {

// The integers of a JSON array (false when it is not one of that length).
bool json_ints(const nlohmann::json& v, size_t n, std::vector<int64_t>* out) {
  if (!v.is_array() || v.size() != n) return false;
  out->clear();
  for (const auto& x : v) {
    int64_t i = 0;
    if (!json_int64(x, &i)) return false;
    out->push_back(i);
  }
  return true;
}

double log_gap(int64_t a, int64_t b) {
  return std::abs(std::log2(static_cast<double>(std::max<int64_t>(a, 1))) -
                  std::log2(static_cast<double>(std::max<int64_t>(b, 1))));
}

// How far option `o` of knob `k` is from the value `v` (lower is nearer;
// infinity when v cannot be compared).
double option_distance(const Knob& k, size_t o, const nlohmann::json& v) {
  const double far = std::numeric_limits<double>::infinity();
  const std::vector<int64_t>& opt = k.options[o];
  std::vector<int64_t> x;
  switch (k.kind) {
    case Knob::kSplit: {
      if (!json_ints(v, opt.size(), &x)) return far;
      double d = 0;  // the inner factors: the outer one follows from them
      for (size_t i = 1; i < opt.size(); ++i) d += log_gap(opt[i], x[i]);
      return d;
    }
    case Knob::kReorder: {
      if (!json_ints(v, opt.size(), &x)) return far;
      double d = 0;
      for (size_t i = 0; i < opt.size(); ++i) d += opt[i] != x[i];
      return d;
    }
    case Knob::kChoice: {
      int64_t i = 0;
      if (!json_int64(v, &i)) return far;
      return i == opt[0] ? 0 : opt[0] > 0 && i > 0 ? log_gap(opt[0], i) : std::abs(static_cast<double>(opt[0] - i));
    }
    case Knob::kAnnotate: return v.is_string() && v.get<std::string>() == k.labels[o] ? 0 : far;
  }
  return far;
}

}  // namespace

Config ConfigSpace::nearest(const nlohmann::json& j) const {
  std::vector<int> choices;
  for (const Knob& k : knobs_) {
    int best = 0;
    double best_d = std::numeric_limits<double>::infinity();
    if (j.is_object() && j.contains(k.name))
      for (size_t o = 0; o < k.size(); ++o) {
        double d = option_distance(k, o, j[k.name]);
        if (d < best_d) {
          best_d = d;
          best = static_cast<int>(o);
        }
      }
    choices.push_back(best);
  }
  return Config(this, choices);
}

Config ConfigSpace::from_json_string(const std::string& text) const {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    user_error() << "config is not valid JSON: " << e.what();
  }
  return from_json(j);
}

Config::Config(const ConfigSpace* space, std::vector<int> choices) : space_(space), choices_(std::move(choices)) {
  internal_assert(space_ && choices_.size() == space_->knobs().size());
}

uint64_t Config::index() const {
  uint64_t idx = 0;
  for (size_t i = 0; i < choices_.size(); ++i) idx = idx * space_->knobs()[i].size() + static_cast<uint64_t>(choices_[i]);
  return idx;
}

static const Knob& typed_knob(const ConfigSpace* s, const std::string& name, Knob::Kind kind, int* idx) {
  *idx = s->knob_index(name);
  const Knob& k = s->knobs()[*idx];
  user_check(k.kind == kind) << "knob '" << name << "' is not of the requested kind";
  return k;
}

const std::vector<int64_t>& Config::split(const std::string& name) const {
  int i;
  return typed_knob(space_, name, Knob::kSplit, &i).options[choices_[i]];
}
const std::vector<int64_t>& Config::reorder(const std::string& name) const {
  int i;
  return typed_knob(space_, name, Knob::kReorder, &i).options[choices_[i]];
}
const std::string& Config::annotate(const std::string& name) const {
  int i;
  return typed_knob(space_, name, Knob::kAnnotate, &i).labels[choices_[i]];
}
int64_t Config::choice(const std::string& name) const {
  int i;
  return typed_knob(space_, name, Knob::kChoice, &i).options[choices_[i]][0];
}

nlohmann::json Config::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (size_t i = 0; i < choices_.size(); ++i) {
    const Knob& k = space_->knobs()[i];
    switch (k.kind) {
      case Knob::kSplit:
      case Knob::kReorder: j[k.name] = k.options[choices_[i]]; break;
      case Knob::kChoice: j[k.name] = k.options[choices_[i]][0]; break;
      case Knob::kAnnotate: j[k.name] = k.labels[choices_[i]]; break;
    }
  }
  return j;
}

}  // namespace kiln
