// The training recipe in one vocabulary, shared by the trainer and the planner (plan/state_bytes.h):
// the precision (--dtype, --mixed, --grad-accum-dtype, --master), the optimizer and its hyperparameters,
// and which model states a recipe keeps (claims C1–C3). Each setting is an enum with one spelling table
// (core/spelling.h): the words are read where text enters, and nothing past that compares strings.
#pragma once
#include <string>

#include "core/ledger.h"
#include "core/spelling.h"

namespace shardlab {

enum class Optimizer { adamw, sgd, adam8bit };  // adam8bit: plan only, never trained
enum class Dtype { f32, f64 };                  // --dtype; with mixed bf16 compute is f32
enum class Mixed { none, bf16 };                // --mixed
enum class GradAccum { bf16, fp32 };            // --grad-accum-dtype (only with mixed bf16)
enum class Master { fp32, none };               // --master (only with mixed bf16)
enum class LrSchedule { constant, cosine };     // --lr-schedule, after warmup

inline constexpr Spelling<Optimizer> kOptimizerWords[] = {
    {"adamw", Optimizer::adamw}, {"sgd", Optimizer::sgd}, {"adam8bit", Optimizer::adam8bit}};
inline constexpr Spelling<Optimizer> kTrainedOptimizerWords[] = {{"adamw", Optimizer::adamw}, {"sgd", Optimizer::sgd}};
inline constexpr Spelling<Dtype> kDtypeWords[] = {{"f32", Dtype::f32}, {"f64", Dtype::f64}};
inline constexpr Spelling<Mixed> kMixedWords[] = {{"none", Mixed::none}, {"bf16", Mixed::bf16}};
inline constexpr Spelling<GradAccum> kGradAccumWords[] = {{"bf16", GradAccum::bf16}, {"fp32", GradAccum::fp32}};
inline constexpr Spelling<Master> kMasterWords[] = {{"fp32", Master::fp32}, {"none", Master::none}};
inline constexpr Spelling<LrSchedule> kLrScheduleWords[] = {{"constant", LrSchedule::constant},
                                                            {"cosine", LrSchedule::cosine}};

// The optimizer's model states (the memory ledger's categories after param and grad), in ledger order.
inline constexpr Mem kOptimizerStates[] = {Mem::master, Mem::adam_m, Mem::adam_v, Mem::momentum};

// One recipe: what the model states are. The defaults are the chapter's C1 recipe (AdamW, bf16 mixed, fp32
// master); the trainer's own default is pure f32 (train/train_config.h).
struct Recipe {
  Optimizer optimizer = Optimizer::adamw;
  Mixed mixed = Mixed::bf16;
  Dtype dtype = Dtype::f32;
  GradAccum grad_accum = GradAccum::bf16;
  Master master = Master::fp32;
  double momentum = 0.9;  // SGD only; 0 → no momentum state

  bool bf16() const { return mixed == Mixed::bf16; }
  bool f64() const { return !bf16() && dtype == Dtype::f64; }  // mixed bf16 computes in f32
  int compute_bytes() const { return f64() ? 8 : 4; }          // an element of the compute type: activations, messages
  bool keeps_fp32_grads() const { return bf16() && grad_accum == GradAccum::fp32; }  // claim C3
  // Does the recipe keep this model-state category? param and grad always; master with mixed bf16 and
  // --master fp32; adam_m and adam_v with AdamW (and 8-bit Adam); momentum with SGD and momentum > 0.
  bool keeps(Mem category) const;
};

// The optimizer's hyperparameters (which states exist is the recipe's).
struct OptimizerSettings {
  double lr = 4e-3;
  LrSchedule schedule = LrSchedule::cosine;
  int warmup = 20;
  double min_lr_ratio = 0.1;  // cosine decays to lr · ratio
  double weight_decay = 0.1;
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double clip = 1.0;  // max global grad norm; 0 = no clipping
};

inline const char* optimizer_name(Optimizer o) { return word_of(kOptimizerWords, o); }
inline const char* dtype_name(Dtype d) { return word_of(kDtypeWords, d); }
inline const char* mixed_name(Mixed m) { return word_of(kMixedWords, m); }
inline const char* grad_accum_name(GradAccum g) { return word_of(kGradAccumWords, g); }
inline const char* master_name(Master m) { return word_of(kMasterWords, m); }
inline bool parse_optimizer(const std::string& s, Optimizer* out) { return read_word(kOptimizerWords, s, out); }
inline bool parse_dtype(const std::string& s, Dtype* out) { return read_word(kDtypeWords, s, out); }
inline bool parse_mixed(const std::string& s, Mixed* out) { return read_word(kMixedWords, s, out); }
inline bool parse_grad_accum(const std::string& s, GradAccum* out) { return read_word(kGradAccumWords, s, out); }
inline bool parse_master(const std::string& s, Master* out) { return read_word(kMasterWords, s, out); }
std::string recipe_label(const Recipe& r);  // e.g. "adamw, mixed bf16, grad accum bf16, master fp32"

}  // namespace shardlab
