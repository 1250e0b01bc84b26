#include "distributed/ProcessGroupOpenReg.h"

#include <ATen/ThreadLocalPythonObjects.h>
#include <ATen/core/jit_type.h>
#include <ATen/ops/scalar_tensor.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <algorithm>
#include <mutex>
#include <utility>

namespace c10d::openreg {
namespace {

using TensorRefs = std::vector<const at::Tensor*>;

// Hides the Python objects stashed in this thread's TLS while gloo copies the TLS into a
// Work or a future callback. Since torch 2.13 a backward pass stashes the caller's
// contextvars context there, and DDP issues its collectives from backward. gloo destroys
// a finished Work (and the Works chained before it) on its own thread after wait() has
// returned; if the interpreter is finalizing by then, dropping the Python object needs
// the GIL, Python ends that thread inside a noexcept destructor and the process aborts
// ("terminate called without an active exception", about one exit in eight). gloo's
// threads run CPU copies and reductions only: they need no Python object from the caller.
class PythonObjectsHiddenFromTransport {
 public:
  PythonObjectsHiddenFromTransport() : saved_(at::impl::ThreadLocalPythonObjects::get_state()) {
    at::impl::ThreadLocalPythonObjects::set_state({});
  }
  ~PythonObjectsHiddenFromTransport() {
    at::impl::ThreadLocalPythonObjects::set_state(std::move(saved_));
  }
  PythonObjectsHiddenFromTransport(const PythonObjectsHiddenFromTransport&) = delete;
  PythonObjectsHiddenFromTransport& operator=(const PythonObjectsHiddenFromTransport&) = delete;

 private:
  at::impl::ThreadLocalPythonObjects saved_;
};

void add(TensorRefs& refs, const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& tensor : tensors) {
    refs.push_back(&tensor);
  }
}

void add(TensorRefs& refs, const std::vector<std::vector<at::Tensor>>& lists) {
  for (const auto& tensors : lists) {
    add(refs, tensors);
  }
}

std::vector<at::Tensor> flatten(const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<at::Tensor> flat;
  for (const auto& tensors : lists) {
    flat.insert(flat.end(), tensors.begin(), tensors.end());
  }
  return flat;
}

// Every device tensor of a collective's arguments (lists or lists of lists).
template <typename... Lists>
TensorRefs refs_of(const Lists&... lists) {
  TensorRefs refs;
  (add(refs, lists), ...);
  return refs;
}

// The CPU tensors gloo reads (`inputs_of`) or writes (`outputs_of`, `inouts_of`) for a
// list of device tensors, staged on `launch` in list order.
std::vector<at::Tensor> inputs_of(CollectiveLaunch& launch, const std::vector<at::Tensor>& tensors,
                                  const at::Tensor& scale = {}) {
  std::vector<at::Tensor> cpu;
  for (const auto& tensor : tensors) {
    cpu.push_back(launch.input(tensor, scale));
  }
  return cpu;
}

std::vector<at::Tensor> outputs_of(CollectiveLaunch& launch,
                                   const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> cpu;
  for (const auto& tensor : tensors) {
    cpu.push_back(launch.output(tensor));
  }
  return cpu;
}

std::vector<at::Tensor> inouts_of(CollectiveLaunch& launch, const std::vector<at::Tensor>& tensors,
                                  const at::Tensor& scale = {}) {
  std::vector<at::Tensor> cpu;
  for (const auto& tensor : tensors) {
    cpu.push_back(launch.inout(tensor, scale));
  }
  return cpu;
}

std::vector<std::vector<at::Tensor>> inputs_of(CollectiveLaunch& launch,
                                               const std::vector<std::vector<at::Tensor>>& lists,
                                               const at::Tensor& scale = {}) {
  std::vector<std::vector<at::Tensor>> cpu;
  for (const auto& tensors : lists) {
    cpu.push_back(inputs_of(launch, tensors, scale));
  }
  return cpu;
}

std::vector<std::vector<at::Tensor>> outputs_of(
    CollectiveLaunch& launch, const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<std::vector<at::Tensor>> cpu;
  for (const auto& tensors : lists) {
    cpu.push_back(outputs_of(launch, tensors));
  }
  return cpu;
}

// Gloo has no PREMUL_SUM: it becomes a SUM of inputs multiplied by the factor first.
// Returns the options to hand gloo and the factor (undefined for every other op).
template <typename Options>
std::pair<Options, at::Tensor> without_premul(const Options& opts) {
  if (opts.reduceOp.op_ != ReduceOp::PREMUL_SUM) {
    return {opts, at::Tensor()};
  }
  // PREMUL_SUM is only ever made with this supplement (c10d::makePreMulSum).
  const auto* supplement = static_cast<const PreMulSumSupplement*>(opts.reduceOp.supplement_.get());
  TORCH_CHECK_VALUE(supplement != nullptr, "ProcessGroupOpenReg: PREMUL_SUM without a factor");
  Options sum = opts;
  sum.reduceOp = ReduceOp(ReduceOp::SUM);
  at::Tensor factor = supplement->tensor_factor.defined()
      ? supplement->tensor_factor
      : at::scalar_tensor(supplement->double_factor, at::kDouble);
  return {sum, factor};
}

// The whole-group buffer of _allgather_base / _reduce_scatter_base may be given as the
// concatenation of `world_size` pieces or as their stack; gloo takes the concatenation
// only. Both are the same bytes: view a (contiguous) stack as the concatenation.
at::Tensor as_concatenation(const at::Tensor& buffer, const at::Tensor& piece, int world_size) {
  if (piece.dim() == 0 || buffer.dim() != piece.dim() + 1 || !buffer.is_contiguous()) {
    return buffer;
  }
  std::vector<int64_t> sizes = piece.sizes().vec();
  sizes[0] *= world_size;
  return buffer.view(sizes);
}

bool is_p2p(OpType op_type) {
  return op_type == OpType::SEND || op_type == OpType::RECV || op_type == OpType::RECVANYSOURCE;
}

// The Work of a coalesced block (startCoalescing/endCoalescing): all of its collectives.
class CoalescedWork : public Work {
 public:
  CoalescedWork(int rank, std::vector<c10::intrusive_ptr<Work>> works)
      : Work(rank, OpType::COALESCED), works_(std::move(works)) {}

  bool isCompleted() override {
    for (auto& work : works_) {
      if (!work->isCompleted()) {
        return false;
      }
    }
    return true;
  }

  bool wait(std::chrono::milliseconds timeout) override {
    for (auto& work : works_) {
      work->wait(timeout);
    }
    return true;
  }

  void synchronize() override { wait(kNoTimeout); }

  std::vector<at::Tensor> result() override { return results_of(works_); }

  // Completed with every member's results once all members' futures are (the first error
  // otherwise). Sends and receives have none, as alone: their members say so.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    std::call_once(future_once_, [this] {
      c10::List<c10::intrusive_ptr<c10::ivalue::Future>> members(
          c10::FutureType::create(c10::ListType::ofTensors()));
      std::vector<c10::Device> devices;
      for (auto& work : works_) {
        c10::intrusive_ptr<c10::ivalue::Future> member = work->getFuture();
        members.push_back(member);
        for (const c10::Device& device : member->devices()) {
          if (std::find(devices.begin(), devices.end(), device) == devices.end()) {
            devices.push_back(device);
          }
        }
      }
      auto future = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors(),
                                                             std::move(devices));
      c10::collectAll(members)->addCallback([future, works = works_](c10::ivalue::Future& all) {
        if (all.hasError()) {
          future->setError(all.exception_ptr());
          return;
        }
        try {
          future->markCompleted(c10::IValue(results_of(works)));
        } catch (...) {
          future->setError(std::current_exception());
        }
      });
      future_ = std::move(future);
    });
    return future_;
  }

 private:
  static std::vector<at::Tensor> results_of(const std::vector<c10::intrusive_ptr<Work>>& works) {
    std::vector<at::Tensor> results;
    for (const auto& work : works) {
      auto tensors = work->result();
      results.insert(results.end(), tensors.begin(), tensors.end());
    }
    return results;
  }

  std::vector<c10::intrusive_ptr<Work>> works_;
  std::once_flag future_once_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

} // namespace

// ------------------------------------------------------------------------- WorkOpenReg

ProcessGroupOpenReg::WorkOpenReg::WorkOpenReg(int rank, OpType op_type,
                                              c10::intrusive_ptr<Work> transport,
                                              std::vector<at::Tensor> outputs,
                                              c10::Device device, LaunchRecord record)
    : Work(rank, op_type),
      transport_(std::move(transport)),
      outputs_(std::move(outputs)),
      device_(device),
      record_(std::move(record)) {}

void ProcessGroupOpenReg::WorkOpenReg::finish() {
  const std::lock_guard<std::mutex> guard(finish_mutex_);
  if (!finished_) {
    finished_ = true;
    record_.copy_back();
  }
}

bool ProcessGroupOpenReg::WorkOpenReg::isCompleted() {
  if (!transport_->isCompleted()) {
    return false;
  }
  if (transport_->isSuccess()) {
    finish();
  }
  return true;
}

bool ProcessGroupOpenReg::WorkOpenReg::isSuccess() const {
  return transport_->isSuccess();
}

std::exception_ptr ProcessGroupOpenReg::WorkOpenReg::exception() const {
  return transport_->exception();
}

int ProcessGroupOpenReg::WorkOpenReg::sourceRank() const {
  return transport_->sourceRank();
}

std::vector<at::Tensor> ProcessGroupOpenReg::WorkOpenReg::result() {
  return outputs_;
}

// DOC START: work-wait
// The transport runs on gloo's threads; waiting for it on the host orders everything
// issued afterwards, on any stream, after the collective, and surfaces its errors
// (gloo bounds every operation by the group's timeout).
bool ProcessGroupOpenReg::WorkOpenReg::wait(std::chrono::milliseconds timeout) {
  transport_->wait(timeout);
  finish();
  return true;
}
// DOC END: work-wait

// As for gloo's CPU tensors, and as c10d documents it: for callers that polled
// isCompleted() until it returned true. It never blocks: torch calls it holding the GIL,
// which a Python callback on gloo's thread may need before the transport completes.
void ProcessGroupOpenReg::WorkOpenReg::synchronize() {
  if (transport_->isCompleted() && transport_->isSuccess()) {
    finish();
  }
}

void ProcessGroupOpenReg::WorkOpenReg::abort() {
  transport_->abort();
}

uint64_t ProcessGroupOpenReg::WorkOpenReg::getSequencenumber() const {
  return transport_->getSequencenumber();
}

// DOC START: work-future
// A future over the device tensors (what DDP's communication hooks chain on), completed
// when gloo's own future completes. Its devices make Future::wait() and then() callbacks
// order their streams after the collective.
c10::intrusive_ptr<c10::ivalue::Future> ProcessGroupOpenReg::WorkOpenReg::getFuture() {
  TORCH_CHECK(!is_p2p(opType_),
              "ProcessGroupOpenReg: send and recv have no future (as with gloo); call wait() "
              "on their Work instead");
  std::call_once(future_once_, [this] {
    future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors(),
                                                        std::vector<c10::Device>{device_});
    auto self = c10::intrusive_ptr<WorkOpenReg>::reclaim_copy(this);
    PythonObjectsHiddenFromTransport hidden;  // the callback may be destroyed on gloo's thread
    transport_->getFuture()->addCallback([self](c10::ivalue::Future& transport) {
      if (transport.hasError()) {
        self->future_->setError(transport.exception_ptr());
        return;
      }
      try {
        self->finish();
        self->record_.complete(*self->future_, self->outputs_);
      } catch (...) {
        self->future_->setError(std::current_exception());
      }
    });
  });
  return future_;
}
// DOC END: work-future

// ------------------------------------------------------------------ ProcessGroupOpenReg

ProcessGroupOpenReg::ProcessGroupOpenReg(int rank, int size, c10::intrusive_ptr<Backend> transport,
                                         std::string unavailable_reason)
    : Backend(rank, size),
      transport_(std::move(transport)),
      unavailable_reason_(std::move(unavailable_reason)) {
  TORCH_CHECK_VALUE(transport_ || !unavailable_reason_.empty(),
                    "ProcessGroupOpenReg needs a gloo backend as its transport");
}

namespace {
std::atomic<ProcessGroupOpenReg::RunWithoutGil> run_without_gil{nullptr};
} // namespace

void ProcessGroupOpenReg::set_run_without_gil(RunWithoutGil run) {
  run_without_gil.store(run);
}

ProcessGroupOpenReg::~ProcessGroupOpenReg() {
  const auto run = run_without_gil.load();
  if (transport_ && run != nullptr) {
    run([](void* self) { static_cast<ProcessGroupOpenReg*>(self)->transport_.reset(); }, this);
  }
}

Backend& ProcessGroupOpenReg::transport_or_throw(const char* op) const {
  TORCH_CHECK(transport_, op, " on openreg tensors: ", unavailable_reason_);
  TORCH_CHECK(!terminated_, "ProcessGroupOpenReg::", op,
              ": this process group was destroyed (destroy_process_group) or aborted; ",
              "create a new one (init_process_group, new_group) for further collectives");
  return *transport_;
}

c10::Device ProcessGroupOpenReg::default_device() {
  if (auto bound = getBoundDeviceId()) {
    return *bound;
  }
  const std::lock_guard<std::mutex> guard(device_mutex_);
  if (first_device_) {
    return *first_device_;
  }
  return c10::impl::VirtualGuardImpl(c10::kPrivateUse1).getDevice();
}

// DOC START: device-check
c10::Device ProcessGroupOpenReg::device_for(const char* op, const TensorRefs& tensors,
                                            c10::Layout layout) {
  std::optional<c10::Device> expected = getBoundDeviceId();
  const char* why = "init_process_group(device_id=...)";
  if (!expected) {
    const std::lock_guard<std::mutex> guard(device_mutex_);
    expected = first_device_;
    why = "its first collective";
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& tensor = *tensors[i];
    TORCH_CHECK_VALUE(tensor.defined(), "ProcessGroupOpenReg::", op, ": tensor ", i,
                      " is undefined");
    TORCH_CHECK_VALUE(
        tensor.device().type() == c10::kPrivateUse1, "ProcessGroupOpenReg::", op,
        ": expected openreg tensors, but tensor ", i, " is on ", tensor.device(), ". The '",
        kBackendName, "' backend serves openreg tensors only; to use CPU tensors as well, ",
        "give the group a CPU backend: init_process_group() or ",
        "init_process_group(\"cpu:gloo,openreg:", kBackendName, "\")");
    TORCH_CHECK_VALUE(tensor.layout() == layout, "ProcessGroupOpenReg::", op, ": expected ",
                      layout == c10::kStrided ? "strided tensors" : "sparse COO tensors",
                      ", tensor ", i, " has layout ", tensor.layout(),
                      " (sparse COO tensors: all_reduce with ReduceOp.SUM only)");
    if (!expected) {
      expected = tensor.device();
      why = "its first collective";
    }
    TORCH_CHECK_VALUE(tensor.device() == *expected, "ProcessGroupOpenReg::", op, ": tensor ", i,
                      " is on ", tensor.device(), " but this process group works on ", *expected,
                      " (set by ", why, "). Use one openreg device per process, e.g. ",
                      "torch.openreg.set_device(local_rank), and keep its tensors there");
  }
  if (!expected) {
    return default_device();
  }
  if (!getBoundDeviceId()) {
    const std::lock_guard<std::mutex> guard(device_mutex_);
    if (!first_device_) {
      first_device_ = expected;
    }
  }
  return *expected;
}
// DOC END: device-check

// DOC START: collective
template <typename Prepare, typename Call>
c10::intrusive_ptr<Work> ProcessGroupOpenReg::collective(const char* op, OpType op_type,
                                                        const TensorRefs& tensors,
                                                        std::vector<at::Tensor> outputs,
                                                        Prepare&& prepare, Call&& call,
                                                        c10::Layout layout) {
  Backend& transport = transport_or_throw(op);
  const c10::Device device = device_for(op, tensors, layout);
  CollectiveLaunch launch(device);
  prepare(launch);
  c10::intrusive_ptr<Work> work;
  launch.run(op, [&] {
    PythonObjectsHiddenFromTransport hidden;
    work = call(transport);
  });
  auto result = c10::make_intrusive<WorkOpenReg>(rank_, op_type, std::move(work),
                                                 std::move(outputs), device,
                                                 std::move(launch).record());
  if (coalescing_) {
    coalesced_.push_back(result);
  }
  return result;
}
// DOC END: collective

void ProcessGroupOpenReg::startCoalescing() {
  TORCH_CHECK(!coalescing_, "ProcessGroupOpenReg: coalescing already started");
  coalesced_.clear();
  coalescing_ = true;
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::endCoalescing() {
  TORCH_CHECK(coalescing_, "ProcessGroupOpenReg: endCoalescing without startCoalescing");
  coalescing_ = false;
  return c10::make_intrusive<CoalescedWork>(rank_, std::exchange(coalesced_, {}));
}

void ProcessGroupOpenReg::setTimeout(std::chrono::milliseconds timeout) {
  transport_or_throw("setTimeout").setTimeout(timeout);
}

namespace {
std::atomic<ProcessGroupOpenReg::SplitTransport> split_transport{nullptr};
} // namespace

void ProcessGroupOpenReg::set_split_transport(SplitTransport split) {
  split_transport.store(split);
}

// DOC START: split
// dist.split_group (DeviceMesh uses it when the default group is bound to a device) splits
// every backend of the group with one store, the CPU tensors' gloo among them; that gloo
// may be this very transport (init_process_group() without a backend), so the split of
// the transport rendezvous under a prefix of its own.
c10::intrusive_ptr<Backend> ProcessGroupOpenReg::split(const c10::intrusive_ptr<Store>& store,
                                                       const std::vector<int>& ranks,
                                                       const c10::intrusive_ptr<Options>& opts) {
  transport_or_throw("split");
  const SplitTransport split = split_transport.load();
  TORCH_CHECK(split != nullptr, "ProcessGroupOpenReg::split: openreg's Python bindings are "
              "not loaded (import openreg_torch)");
  auto prefixed = c10::make_intrusive<PrefixStore>(std::string(kBackendName) + "/", store);
  c10::intrusive_ptr<Backend> transport = split(transport_, prefixed, ranks, opts);
  if (!transport) {
    return nullptr;  // this rank is in none of the new groups
  }
  auto group = c10::make_intrusive<ProcessGroupOpenReg>(transport->getRank(),
                                                        transport->getSize(), transport);
  group->setGroupUid(opts->group_name);
  group->setBoundDeviceId(getBoundDeviceId());
  return group;
}
// DOC END: split

c10::intrusive_ptr<Backend::Options> ProcessGroupOpenReg::getBackendOptions() {
  auto transport = transport_or_throw("getBackendOptions").getBackendOptions();
  auto options = c10::make_intrusive<OrcclOptions>(transport->timeout);
  options->group_name = transport->group_name;
  options->global_ranks_in_group = transport->global_ranks_in_group;
  return options;
}

void ProcessGroupOpenReg::setGroupUid(const std::string& pg_uid) {
  Backend::setGroupUid(pg_uid);
  if (transport_) {
    transport_->setGroupUid(pg_uid);
  }
}

void ProcessGroupOpenReg::setSequenceNumberForGroup() {
  transport_or_throw("setSequenceNumberForGroup").setSequenceNumberForGroup();
}

uint64_t ProcessGroupOpenReg::getSequenceNumberForGroup() {
  return transport_or_throw("getSequenceNumberForGroup").getSequenceNumberForGroup();
}

void ProcessGroupOpenReg::abort() {
  terminated_ = true;
  if (transport_) {
    transport_->abort();
  }
}

void ProcessGroupOpenReg::shutdown() {
  terminated_ = true;
  if (transport_) {
    transport_->shutdown();
  }
}

// ------------------------------------------------------------------------ collectives
// Each collective stages its device tensors as the CPU tensors gloo sees (prepare), then
// hands those to gloo when the stream reaches it (call).

c10::intrusive_ptr<Work> ProcessGroupOpenReg::broadcast(std::vector<at::Tensor>& tensors,
                                                       const BroadcastOptions& opts) {
  std::vector<at::Tensor> cpu;
  const bool root = rank_ == opts.rootRank;
  return collective(
      "broadcast", OpType::BROADCAST, refs_of(tensors), tensors,
      [&](CollectiveLaunch& launch) {
        cpu = root ? inputs_of(launch, tensors) : outputs_of(launch, tensors);
      },
      [&](Backend& gloo) { return gloo.broadcast(cpu, opts); });
}

// DOC START: allreduce
c10::intrusive_ptr<Work> ProcessGroupOpenReg::allreduce(std::vector<at::Tensor>& tensors,
                                                       const AllreduceOptions& opts) {
  auto [options, factor] = without_premul(opts);
  std::vector<at::Tensor> cpu;
  return collective(
      "allreduce", OpType::ALLREDUCE, refs_of(tensors), tensors,
      [&](CollectiveLaunch& launch) { cpu = inouts_of(launch, tensors, factor); },
      [&](Backend& gloo) { return gloo.allreduce(cpu, options); });
}
// DOC END: allreduce

// Gloo sums sparse tensors (ReduceOp.SUM only, as on the CPU) by gathering every rank's
// indices and values; it replaces the members of the CPU sparse tensors it is given.
c10::intrusive_ptr<Work> ProcessGroupOpenReg::allreduce_sparse(std::vector<at::Tensor>& tensors,
                                                              const AllreduceOptions& opts) {
  std::vector<at::Tensor> cpu;
  return collective(
      "allreduce_sparse", OpType::_ALLREDUCE_SPARSE, refs_of(tensors), tensors,
      [&](CollectiveLaunch& launch) {
        for (const at::Tensor& tensor : tensors) {
          cpu.push_back(launch.sparse_inout(tensor));
        }
      },
      [&](Backend& gloo) { return gloo.allreduce_sparse(cpu, opts); }, c10::kSparse);
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const AllreduceCoalescedOptions& opts) {
  auto [options, factor] = without_premul(opts);
  std::vector<at::Tensor> cpu;
  return collective(
      "allreduce_coalesced", OpType::ALLREDUCE_COALESCED, refs_of(tensors), tensors,
      [&](CollectiveLaunch& launch) { cpu = inouts_of(launch, tensors, factor); },
      [&](Backend& gloo) { return gloo.allreduce_coalesced(cpu, options); });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::reduce(std::vector<at::Tensor>& tensors,
                                                    const ReduceOptions& opts) {
  auto [options, factor] = without_premul(opts);
  std::vector<at::Tensor> cpu;
  const bool root = rank_ == opts.rootRank;
  return collective(
      "reduce", OpType::REDUCE, refs_of(tensors), tensors,
      [&](CollectiveLaunch& launch) {
        cpu = root ? inouts_of(launch, tensors, factor) : inputs_of(launch, tensors, factor);
      },
      [&](Backend& gloo) { return gloo.reduce(cpu, options); });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const AllgatherOptions& opts) {
  std::vector<std::vector<at::Tensor>> cpu_outputs;
  std::vector<at::Tensor> cpu_inputs;
  return collective(
      "allgather", OpType::ALLGATHER, refs_of(inputs, outputs), flatten(outputs),
      [&](CollectiveLaunch& launch) {
        cpu_inputs = inputs_of(launch, inputs);
        cpu_outputs = outputs_of(launch, outputs);
      },
      [&](Backend& gloo) { return gloo.allgather(cpu_outputs, cpu_inputs, opts); });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::_allgather_base(at::Tensor& output,
                                                             at::Tensor& input,
                                                             const AllgatherOptions& opts) {
  at::Tensor cpu_output;
  at::Tensor cpu_input;
  return collective(
      "_allgather_base", OpType::_ALLGATHER_BASE, {&input, &output}, {output},
      [&](CollectiveLaunch& launch) {
        cpu_input = launch.input(input);
        cpu_output = as_concatenation(launch.output(output), input, size_);
      },
      [&](Backend& gloo) { return gloo._allgather_base(cpu_output, cpu_input, opts); });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const AllgatherOptions& opts) {
  std::vector<std::vector<at::Tensor>> cpu_outputs;
  std::vector<at::Tensor> cpu_inputs;
  return collective(
      "allgather_coalesced", OpType::ALLGATHER_COALESCED, refs_of(inputs, outputs),
      flatten(outputs),
      [&](CollectiveLaunch& launch) {
        cpu_inputs = inputs_of(launch, inputs);
        cpu_outputs = outputs_of(launch, outputs);
      },
      [&](Backend& gloo) { return gloo.allgather_coalesced(cpu_outputs, cpu_inputs, opts); });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const AllgatherOptions& opts) {
  std::vector<at::Tensor> cpu_outputs;
  std::vector<at::Tensor> cpu_inputs;
  return collective(
      "allgather_into_tensor_coalesced", OpType::COALESCED, refs_of(inputs, outputs), outputs,
      [&](CollectiveLaunch& launch) {
        cpu_inputs = inputs_of(launch, inputs);
        cpu_outputs = outputs_of(launch, outputs);
      },
      [&](Backend& gloo) {
        return gloo.allgather_into_tensor_coalesced(cpu_outputs, cpu_inputs, opts);
      });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                    std::vector<at::Tensor>& inputs,
                                                    const GatherOptions& opts) {
  std::vector<std::vector<at::Tensor>> cpu_outputs;
  std::vector<at::Tensor> cpu_inputs;
  return collective(
      "gather", OpType::GATHER, refs_of(inputs, outputs), flatten(outputs),
      [&](CollectiveLaunch& launch) {
        cpu_inputs = inputs_of(launch, inputs);
        cpu_outputs = outputs_of(launch, outputs);
      },
      [&](Backend& gloo) { return gloo.gather(cpu_outputs, cpu_inputs, opts); });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::scatter(std::vector<at::Tensor>& outputs,
                                                     std::vector<std::vector<at::Tensor>>& inputs,
                                                     const ScatterOptions& opts) {
  std::vector<at::Tensor> cpu_outputs;
  std::vector<std::vector<at::Tensor>> cpu_inputs;
  return collective(
      "scatter", OpType::SCATTER, refs_of(inputs, outputs), outputs,
      [&](CollectiveLaunch& launch) {
        cpu_inputs = inputs_of(launch, inputs);
        cpu_outputs = outputs_of(launch, outputs);
      },
      [&](Backend& gloo) { return gloo.scatter(cpu_outputs, cpu_inputs, opts); });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const ReduceScatterOptions& opts) {
  auto [options, factor] = without_premul(opts);
  std::vector<at::Tensor> cpu_outputs;
  std::vector<std::vector<at::Tensor>> cpu_inputs;
  return collective(
      "reduce_scatter", OpType::REDUCE_SCATTER, refs_of(inputs, outputs), outputs,
      [&](CollectiveLaunch& launch) {
        cpu_inputs = inputs_of(launch, inputs, factor);
        cpu_outputs = outputs_of(launch, outputs);
      },
      [&](Backend& gloo) { return gloo.reduce_scatter(cpu_outputs, cpu_inputs, options); });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const ReduceScatterOptions& opts) {
  auto [options, factor] = without_premul(opts);
  at::Tensor cpu_output;
  at::Tensor cpu_input;
  return collective(
      "_reduce_scatter_base", OpType::_REDUCE_SCATTER_BASE, {&input, &output}, {output},
      [&](CollectiveLaunch& launch) {
        cpu_input = as_concatenation(launch.input(input, factor), output, size_);
        cpu_output = launch.output(output);
      },
      [&](Backend& gloo) { return gloo._reduce_scatter_base(cpu_output, cpu_input, options); });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const ReduceScatterOptions& opts) {
  auto [options, factor] = without_premul(opts);
  std::vector<at::Tensor> cpu_outputs;
  std::vector<at::Tensor> cpu_inputs;
  return collective(
      "reduce_scatter_tensor_coalesced", OpType::REDUCE_SCATTER_TENSOR_COALESCED,
      refs_of(inputs, outputs), outputs,
      [&](CollectiveLaunch& launch) {
        cpu_inputs = inputs_of(launch, inputs, factor);
        cpu_outputs = outputs_of(launch, outputs);
      },
      [&](Backend& gloo) {
        return gloo.reduce_scatter_tensor_coalesced(cpu_outputs, cpu_inputs, options);
      });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                           std::vector<int64_t>& output_split_sizes,
                                                           std::vector<int64_t>& input_split_sizes,
                                                           const AllToAllOptions& opts) {
  at::Tensor cpu_output;
  at::Tensor cpu_input;
  return collective(
      "alltoall_base", OpType::ALLTOALL_BASE, {&input, &output}, {output},
      [&](CollectiveLaunch& launch) {
        cpu_input = launch.input(input);
        cpu_output = launch.output(output);
      },
      [&](Backend& gloo) {
        return gloo.alltoall_base(cpu_output, cpu_input, output_split_sizes, input_split_sizes,
                                  opts);
      });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::alltoall(std::vector<at::Tensor>& outputs,
                                                      std::vector<at::Tensor>& inputs,
                                                      const AllToAllOptions& opts) {
  std::vector<at::Tensor> cpu_outputs;
  std::vector<at::Tensor> cpu_inputs;
  return collective(
      "alltoall", OpType::ALLTOALL, refs_of(inputs, outputs), outputs,
      [&](CollectiveLaunch& launch) {
        cpu_inputs = inputs_of(launch, inputs);
        cpu_outputs = outputs_of(launch, outputs);
      },
      [&](Backend& gloo) { return gloo.alltoall(cpu_outputs, cpu_inputs, opts); });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::send(std::vector<at::Tensor>& tensors, int dst_rank,
                                                  int tag) {
  std::vector<at::Tensor> cpu;
  return collective(
      "send", OpType::SEND, refs_of(tensors), {},
      [&](CollectiveLaunch& launch) { cpu = inputs_of(launch, tensors); },
      [&](Backend& gloo) { return gloo.send(cpu, dst_rank, tag); });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::recv(std::vector<at::Tensor>& tensors, int src_rank,
                                                  int tag) {
  std::vector<at::Tensor> cpu;
  return collective(
      "recv", OpType::RECV, refs_of(tensors), tensors,
      [&](CollectiveLaunch& launch) { cpu = outputs_of(launch, tensors); },
      [&](Backend& gloo) { return gloo.recv(cpu, src_rank, tag); });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::recvAnysource(std::vector<at::Tensor>& tensors,
                                                           int tag) {
  std::vector<at::Tensor> cpu;
  return collective(
      "recvAnysource", OpType::RECVANYSOURCE, refs_of(tensors), tensors,
      [&](CollectiveLaunch& launch) { cpu = outputs_of(launch, tensors); },
      [&](Backend& gloo) { return gloo.recvAnysource(cpu, tag); });
}

c10::intrusive_ptr<Work> ProcessGroupOpenReg::barrier(const BarrierOptions& opts) {
  return collective(
      "barrier", OpType::BARRIER, {}, {}, [](CollectiveLaunch&) {},
      [&](Backend& gloo) { return gloo.barrier(opts); });
}

void ProcessGroupOpenReg::monitoredBarrier(const BarrierOptions& opts, bool wait_all_ranks) {
  transport_or_throw("monitoredBarrier").monitoredBarrier(opts, wait_all_ranks);
}

} // namespace c10d::openreg
