// The settings a divergence names (see divergence.h).
#include "train/divergence.h"

#include <vector>

#include "core/flags.h"

namespace shardlab {

namespace {

struct Suspect {
  std::string flag;
  double value;
  std::string implausible;  // why the value cannot be right, or ""
};

// What sizes an update, and so the weights every update makes.
std::vector<Suspect> update_suspects(const TrainConfig& cfg) {
  const OptimizerSettings& o = cfg.optimizer;
  std::vector<Suspect> s{
      {"--lr", o.lr, o.lr > 1 ? "a learning rate is at most 1; AdamW on GPTs uses 1e-4 to 1e-3" : ""}};
  // Judged at a plausible --lr only: past that, 1 − lr·wd is out of bounds because of the --lr.
  if (o.weight_decay > 0)
    s.push_back({"--weight-decay", o.weight_decay,
                 o.lr <= 1 && o.lr * o.weight_decay >= 1
                     ? "each update multiplies a decayed weight by 1 − lr·wd = " +
                           exact_number(1 - o.lr * o.weight_decay) + " at the peak --lr; it must stay within (0, 1)"
                     : ""});
  // The optimizer runs in f32 unless --dtype f64 (mixed precision keeps fp32 states).
  if (cfg.recipe.optimizer == Optimizer::adamw && !cfg.recipe.f64() && static_cast<float>(o.eps) == 0.0f)
    s.push_back({"--eps", o.eps, "it is 0 in f32, so m/(√v + eps) divides 0 by 0 wherever a gradient is 0"});
  return s;
}

// What scales the gradients of a finite loss.
std::vector<Suspect> gradient_suspects(const TrainConfig& cfg) {
  const MoeConfig& m = cfg.model.moe;
  if (!m.on()) return {};
  return {{"--moe-aux-loss", m.aux_loss,
           m.aux_loss > 1 ? "a load-balancing loss weight is at most 1; Switch uses 0.01" : ""},
          {"--moe-z-loss", m.z_loss, m.z_loss > 1 ? "a z-loss weight is at most 1; ST-MoE uses 0.001" : ""}};
}

}  // namespace

std::string divergence_suspects(const TrainConfig& cfg, Diverged what, int step, int first_step) {
  if (what == Diverged::start) return "; no update has been made yet, so no optimizer setting could have caused it";
  std::vector<Suspect> all = what == Diverged::gradients ? gradient_suspects(cfg) : update_suspects(cfg);
  const bool updated = what == Diverged::gradients && step > first_step;  // the weights came from updates too
  if (updated)
    for (const Suspect& s : update_suspects(cfg)) all.push_back(s);
  if (all.empty()) return "; no setting scales them";
  std::string bad, rest;
  bool lr_listed = false;
  for (const Suspect& s : all) {
    const std::string named = s.flag + " " + exact_number(s.value);
    if (!s.implausible.empty()) {
      bad += "; " + named + " is implausible (" + s.implausible + ")";
    } else {
      rest += (rest.empty() ? "" : ", ") + named;
      lr_listed = lr_listed || s.flag == "--lr";
    }
  }
  const std::string role = what == Diverged::weights ? "sizing an update"
                           : updated                 ? "scaling the gradients or sizing the updates before"
                                                     : "scaling the gradients";
  if (!bad.empty()) return bad + (rest.empty() ? "" : "; also " + role + ": " + rest);
  return "; the settings " + role + ": " + rest +
         ", none implausible: " + (lr_listed ? "try a lower --lr" : "try smaller values");
}

}  // namespace shardlab
