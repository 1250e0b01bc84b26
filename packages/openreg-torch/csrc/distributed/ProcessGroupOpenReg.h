#pragma once

// openreg's c10d backend ("orccl"), after ProcessGroupNCCL: the backend torch.distributed
// uses for openreg tensors. Device memory is host memory seen through a kernel view, so
// the transport is a gloo backend (created through PyTorch's public API, see
// openreg_torch/distributed.py) handed CPU tensors that alias the device tensors. Every
// collective is issued in order on the current openreg stream of the group's device;
// Work::wait() returns once the transport has finished (raising its error, if any), so
// all work issued after it is ordered after the collective.

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "distributed/CollectiveLaunch.h"
#include "runtime/OpenRegMacros.h"

namespace c10d::openreg {

constexpr const char* kBackendName = "orccl";

class OPENREG_TORCH_API ProcessGroupOpenReg : public Backend {
 public:
  // DOC START: work-class
  // The Work of one collective: the transport's Work plus what completes it on the
  // openreg side (results staged in host copies, a future over the device tensors).
  class WorkOpenReg : public Work {
   public:
    WorkOpenReg(int rank, OpType op_type, c10::intrusive_ptr<Work> transport,
                std::vector<at::Tensor> outputs, c10::Device device, LaunchRecord record);

    bool isCompleted() override;
    bool isSuccess() const override;
    std::exception_ptr exception() const override;
    int sourceRank() const override;
    std::vector<at::Tensor> result() override;
    void synchronize() override;
    bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
    void abort() override;
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
    uint64_t getSequencenumber() const override;

   private:
    // Runs once, after the transport finished: copies staged results back.
    void finish();

    c10::intrusive_ptr<Work> transport_;
    std::vector<at::Tensor> outputs_;
    c10::Device device_;
    std::mutex finish_mutex_;
    bool finished_ = false;
    LaunchRecord record_;
    std::once_flag future_once_;
    c10::intrusive_ptr<c10::ivalue::Future> future_;
  };
  // DOC END: work-class

  // `transport` is the gloo backend of the same store, rank and size. Without one, the
  // backend only raises `unavailable_reason` (registered where openreg tensors cannot be
  // served: a group whose CPU backend is not gloo), so that the error names the fix.
  ProcessGroupOpenReg(int rank, int size, c10::intrusive_ptr<Backend> transport,
                      std::string unavailable_reason = {});
  ~ProcessGroupOpenReg() override;

  // Destroying the transport joins gloo's threads, and one of them may need the GIL to
  // finish (a Python callback chained on a collective's future is released there), while
  // the last owner of this backend (a Reducer, a Python object) may drop it holding the
  // GIL. The Python bindings install `run_without_gil`, which runs `fn(arg)` with the GIL
  // released when the calling thread holds it (this library does not link Python).
  using RunWithoutGil = void (*)(void (*fn)(void*), void* arg);
  static void set_run_without_gil(RunWithoutGil run_without_gil);

  // This backend's options (getBackendOptions): a type of its own, so that Python can
  // copy them (dist.split_group deep-copies the accelerator backend's options).
  struct OrcclOptions : Options {
    explicit OrcclOptions(std::chrono::milliseconds timeout) : Options(kBackendName, timeout) {}
  };

  // A split group's transport is a gloo backend made from PyTorch's gloo options, which
  // only Python can make here (the wheel ships no gloo headers): the Python bindings
  // install `split_transport`, which returns the gloo backend of `ranks` of `transport`
  // rendezvousing through `store`, or nullptr when this rank is not among them.
  using SplitTransport = c10::intrusive_ptr<Backend> (*)(
      const c10::intrusive_ptr<Backend>& transport, const c10::intrusive_ptr<Store>& store,
      const std::vector<int>& ranks, const c10::intrusive_ptr<Options>& opts);
  static void set_split_transport(SplitTransport split_transport);

  const std::string getBackendName() const override { return kBackendName; }
  c10::intrusive_ptr<Backend> transport() const { return transport_; }

  bool supportsSplitting() const override { return transport_ != nullptr; }
  c10::intrusive_ptr<Backend> split(const c10::intrusive_ptr<Store>& store,
                                    const std::vector<int>& ranks,
                                    const c10::intrusive_ptr<Options>& opts) override;

  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<Work> endCoalescing() override;

  void setTimeout(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<Options> getBackendOptions() override;
  void setGroupUid(const std::string& pg_uid) override;
  void setSequenceNumberForGroup() override;
  uint64_t getSequenceNumberForGroup() override;
  void abort() override;
  void shutdown() override;

  c10::intrusive_ptr<Work> broadcast(std::vector<at::Tensor>& tensors,
                                     const BroadcastOptions& opts) override;
  c10::intrusive_ptr<Work> allreduce(std::vector<at::Tensor>& tensors,
                                     const AllreduceOptions& opts) override;
  // Sparse COO tensors (c10d::allreduce_ of a sparse openreg tensor, distributed/Ops):
  // gloo's sparse all_reduce on CPU sparse tensors over their members; each tensor then
  // holds the coalesced sum in device memory, as gloo leaves a CPU tensor.
  c10::intrusive_ptr<Work> allreduce_sparse(std::vector<at::Tensor>& tensors,
                                            const AllreduceOptions& opts) override;
  c10::intrusive_ptr<Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                               const AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<Work> reduce(std::vector<at::Tensor>& tensors,
                                  const ReduceOptions& opts) override;
  c10::intrusive_ptr<Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                     std::vector<at::Tensor>& inputs,
                                     const AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                           const AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                               std::vector<at::Tensor>& inputs,
                                               const AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                  std::vector<at::Tensor>& inputs,
                                  const GatherOptions& opts) override;
  c10::intrusive_ptr<Work> scatter(std::vector<at::Tensor>& outputs,
                                   std::vector<std::vector<at::Tensor>>& inputs,
                                   const ScatterOptions& opts) override;
  c10::intrusive_ptr<Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                          std::vector<std::vector<at::Tensor>>& inputs,
                                          const ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                const ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                         std::vector<int64_t>& output_split_sizes,
                                         std::vector<int64_t>& input_split_sizes,
                                         const AllToAllOptions& opts) override;
  c10::intrusive_ptr<Work> alltoall(std::vector<at::Tensor>& outputs,
                                    std::vector<at::Tensor>& inputs,
                                    const AllToAllOptions& opts) override;
  c10::intrusive_ptr<Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                int tag) override;
  c10::intrusive_ptr<Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                int tag) override;
  c10::intrusive_ptr<Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<Work> barrier(const BarrierOptions& opts) override;
  void monitoredBarrier(const BarrierOptions& opts, bool wait_all_ranks) override;

 private:
  // The transport, or the error saying why this group serves no openreg tensors (or no
  // longer: destroyed or aborted).
  Backend& transport_or_throw(const char* op) const;
  // The device of this group's collectives (checked against every tensor): the bound
  // device (init_process_group(device_id=...)), else the device of the first collective.
  // Tensors must have `layout` (sparse COO for allreduce_sparse only).
  c10::Device device_for(const char* op, const std::vector<const at::Tensor*>& tensors,
                         c10::Layout layout = c10::kStrided);
  c10::Device default_device();

  // Issues one collective on `tensors` (all of its device tensors): `prepare(launch)`
  // makes the CPU tensors for gloo, `call(gloo)` hands them to gloo in stream order.
  // `outputs` are the Work's result and its future's value.
  template <typename Prepare, typename Call>
  c10::intrusive_ptr<Work> collective(const char* op, OpType op_type,
                                      const std::vector<const at::Tensor*>& tensors,
                                      std::vector<at::Tensor> outputs, Prepare&& prepare,
                                      Call&& call, c10::Layout layout = c10::kStrided);

  c10::intrusive_ptr<Backend> transport_;
  std::string unavailable_reason_;
  // Set by shutdown() (destroy_process_group) and abort(): later collectives raise.
  std::atomic<bool> terminated_{false};
  std::mutex device_mutex_;
  std::optional<c10::Device> first_device_;
  std::atomic<bool> coalescing_{false};
  std::vector<c10::intrusive_ptr<Work>> coalesced_;
};

} // namespace c10d::openreg
