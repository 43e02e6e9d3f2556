// Task -> MeasureRequest (see measure_spec.h).
#include "rpc/client/measure_spec.h"

namespace kiln::rpc {

MeasureRequest measure_spec(const Task& task, const kiln::MeasureOptions& options) {
  MeasureRequest r;
  for (const BufferArg& a : task.args) {
    BufferSpec* b = r.add_args();
    b->set_name(a.name);
    b->set_dtype(a.dtype.str());
    for (int64_t d : a.shape) b->add_shape(d);
  }
  r.set_num_inputs(static_cast<int32_t>(task.num_inputs));
  r.set_input_seed(task.input_seed);
  for (const ReferenceSample& ref : task.reference) {
    ReferenceSpec* s = r.add_reference();
    s->set_output(ref.output);
    for (int64_t i : ref.flat_index) s->add_flat_index(i);
    for (double v : ref.expected) s->add_expected(v);
    s->set_tolerance(ref.tolerance);
  }
  kiln::rpc::MeasureOptions* o = r.mutable_options();
  o->set_number(options.number);
  o->set_repeat(options.repeat);
  o->set_min_repeat_ms(options.min_repeat_ms);
  o->set_warmup(options.warmup);
  o->set_cooldown_ms(options.cooldown_ms);
  o->set_flush_cache(options.flush_cache);
  o->set_run_timeout_s(options.run_timeout_s);
  return r;
}

}  // namespace kiln::rpc
