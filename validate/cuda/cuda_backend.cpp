#include "validate/cuda/cuda_backend.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdlib>
#include <map>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "validate/cuda/cuda_check.hpp"
#include "validate/cuda/cuda_ops.hpp"
#include "validate/cuda/device_memory.hpp"
#include "validate/cuda/event_timing.hpp"
#include "validate/cuda/gpu_binding.hpp"
#include "validate/cuda/nccl_plan.hpp"
#include "validate/mpi/mpi_check.hpp"
#include "validate/run/launch_plan.hpp"

namespace meshsim {
namespace {

bool mpi_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

int mpi_world_size() {
  if (!mpi_running()) return 1;
  int size = 1;
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  return size;
}

int local_rank() {
  if (const auto r = local_rank_from_env([](const char* name) { return std::getenv(name); })) {
    return *r;
  }
  if (!mpi_running()) return 0;
  MPI_Comm node = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(node, &rank));
  MPI_CHECK(MPI_Comm_free(&node));
  return rank;
}

ncclDataType_t nccl_data_type(NcclType t) {
  switch (t) {
    case NcclType::uint8:
      return ncclUint8;
    case NcclType::bf16:
      return ncclBfloat16;
    case NcclType::fp16:
      return ncclFloat16;
    case NcclType::fp32:
      return ncclFloat32;
    case NcclType::fp64:
      return ncclFloat64;
  }
  return ncclUint8;
}

// The device side of one run: one allocation holding the rank's TensorStore, a start and an end
// event per op (by local index) and the origin every event is timed from; released however the
// run ends.
struct RunDevice {
  explicit RunDevice(int ops)
      : start(static_cast<std::size_t>(ops)), end(static_cast<std::size_t>(ops)) {}
  ~RunDevice() {
    for (cudaEvent_t e : start) (void)cudaEventDestroy(e);
    for (cudaEvent_t e : end) (void)cudaEventDestroy(e);
    if (origin != nullptr) (void)cudaEventDestroy(origin);
    if (base != nullptr) (void)cudaFree(base);
  }
  RunDevice(const RunDevice&) = delete;
  RunDevice& operator=(const RunDevice&) = delete;

  std::byte* base = nullptr;
  std::vector<cudaEvent_t> start, end;
  cudaEvent_t origin = nullptr;
};

// Allocates the run's device memory, uploads the TensorStore into it and creates the events; the
// device is idle on return.
void prepare_device(RunDevice& d, const DeviceMemoryPlan& memory) {
  CUDA_CHECK(cudaMalloc(&d.base, static_cast<std::size_t>(std::max<std::int64_t>(
                                     memory.total_bytes(), kDeviceAlignment))));
  for (const DeviceRegion& r : memory.regions()) {
    CUDA_CHECK(cudaMemcpy(d.base + r.offset, r.host, static_cast<std::size_t>(r.bytes),
                          cudaMemcpyHostToDevice));
  }
  for (std::size_t i = 0; i < d.start.size(); ++i) {
    CUDA_CHECK(cudaEventCreate(&d.start[i]));
    CUDA_CHECK(cudaEventCreate(&d.end[i]));
  }
  CUDA_CHECK(cudaEventCreate(&d.origin));
  CUDA_CHECK(cudaDeviceSynchronize());
}

// Copies the run's results from the device back into the TensorStore.
void download_store(const RunDevice& d, const DeviceMemoryPlan& memory) {
  for (const DeviceRegion& r : memory.regions()) {
    CUDA_CHECK(cudaMemcpy(r.host, d.base + r.offset, static_cast<std::size_t>(r.bytes),
                          cudaMemcpyDeviceToHost));
  }
}

// What rank_run_from_events() reads, per op in schedule order.
struct RunEvents {
  std::vector<OpId> op_ids;
  std::vector<std::vector<std::int32_t>> recvs;  // the transfers a p2p op receives
  std::vector<OpEventTimes> times;
};

}  // namespace

CudaDevice bind_cuda_device() {
  CudaDevice device;
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  device.local_rank = local_rank();
  device.index = device_for_local_rank(device.local_rank, count);
  CUDA_CHECK(cudaSetDevice(device.index));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device.index));
  device.name = prop.name;
  return device;
}

struct CudaBackend::Impl {
  Impl(const Program& p, const CommPlan& c, int r, InjectedFault f)
      : program(p), plan(c), rank(r), fault(f) {}
  ~Impl();

  void create_communicators();
  void issue_comm(const Op& op, const CommArgs& args, const DeviceMemoryPlan& memory,
                  std::byte* base, cudaStream_t stream);
  // Every stream with ops waits for the origin, recorded on the first stream.
  void start_streams(const RankSchedule& schedule, cudaEvent_t origin);
  // One step of launch_plan(): its cross-stream waits, the start event, the kernel or the NCCL
  // call, the end event.
  void launch(const LaunchStep& step, const RankSetup& setup, CudaOps& ops,
              const DeviceMemoryPlan& memory, const RunDevice& d);
  // Once the device is idle: each op's id, received transfers and times since the origin.
  RunEvents read_events(const RankSetup& setup, const RunDevice& d) const;

  const Program& program;
  const CommPlan& plan;
  int rank;
  InjectedFault fault;
  CudaDevice device;
  std::vector<cudaStream_t> streams;    // per Program stream
  std::vector<cublasHandle_t> blas;     // per Program stream, bound to it
  std::map<GroupId, ncclComm_t> comms;  // -1: the world
  float* barrier_word = nullptr;
};

CudaBackend::Impl::~Impl() {
  // Teardown errors cannot be reported from a destructor; the device is released with the process.
  for (auto& [group, comm] : comms) (void)ncclCommDestroy(comm);
  for (cublasHandle_t h : blas) (void)cublasDestroy(h);
  for (cudaStream_t s : streams) (void)cudaStreamDestroy(s);
  if (barrier_word != nullptr) (void)cudaFree(barrier_word);
}

void CudaBackend::Impl::create_communicators() {
  const std::vector<NcclCommSpec> specs = nccl_communicators(program, rank);
  const bool broadcast = mpi_world_size() > 1;
  std::vector<ncclUniqueId> ids(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].id_root == rank) NCCL_CHECK(ncclGetUniqueId(&ids[i]));
    if (broadcast) {
      MPI_CHECK(MPI_Bcast(&ids[i], static_cast<int>(sizeof(ncclUniqueId)), MPI_BYTE,
                          specs[i].id_root, MPI_COMM_WORLD));
    }
  }
  NCCL_CHECK(ncclGroupStart());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].position < 0) continue;
    ncclComm_t comm = nullptr;
    NCCL_CHECK(ncclCommInitRank(&comm, static_cast<int>(specs[i].members.size()), ids[i],
                                specs[i].position));
    comms[specs[i].group] = comm;
  }
  NCCL_CHECK(ncclGroupEnd());
}

void CudaBackend::Impl::issue_comm(const Op& op, const CommArgs& args,
                                   const DeviceMemoryPlan& memory, std::byte* base,
                                   cudaStream_t stream) {
  const NcclCall call = std::holds_alternative<P2PCall>(op.body)
                            ? nccl_call(args.p2p(op.id))
                            : nccl_call(args.collective(op.id));
  auto dev = [&](const std::byte* host) -> std::byte* {
    const std::int64_t offset = memory.offset_of(host);
    return offset < 0 ? nullptr : base + offset;
  };
  const auto it = comms.find(call.group);
  MESHSIM_CHECK(it != comms.end(), fmt::format("op {} '{}': no NCCL communicator for group {}",
                                               op.id, op.name, call.group));
  ncclComm_t comm = it->second;
  if (call.stage_bytes > 0) {
    CUDA_CHECK(cudaMemcpyAsync(dev(call.stage_to), dev(call.stage_from),
                               static_cast<std::size_t>(call.stage_bytes), cudaMemcpyDeviceToDevice,
                               stream));
  }
  const ncclDataType_t type = nccl_data_type(call.type);
  const auto count = static_cast<std::size_t>(call.count);
  switch (call.kind) {
    case NcclCallKind::all_reduce:
      NCCL_CHECK(ncclAllReduce(dev(call.send), dev(call.recv), count, type, ncclSum, comm, stream));
      return;
    case NcclCallKind::all_gather:
      NCCL_CHECK(ncclAllGather(dev(call.send), dev(call.recv), count, type, comm, stream));
      return;
    case NcclCallKind::reduce_scatter:
      NCCL_CHECK(
          ncclReduceScatter(dev(call.send), dev(call.recv), count, type, ncclSum, comm, stream));
      return;
    case NcclCallKind::broadcast:
      NCCL_CHECK(
          ncclBroadcast(dev(call.send), dev(call.recv), count, type, call.root, comm, stream));
      return;
    case NcclCallKind::barrier:
      NCCL_CHECK(ncclAllReduce(barrier_word, barrier_word, 1, ncclFloat32, ncclSum, comm, stream));
      return;
    case NcclCallKind::peer_group:
      NCCL_CHECK(ncclGroupStart());
      for (const NcclPeerCall& p : call.peers) {
        if (p.send) {
          NCCL_CHECK(ncclSend(dev(p.buffer), static_cast<std::size_t>(p.count), type, p.peer, comm,
                              stream));
        } else {
          NCCL_CHECK(ncclRecv(dev(p.buffer), static_cast<std::size_t>(p.count), type, p.peer, comm,
                              stream));
        }
      }
      NCCL_CHECK(ncclGroupEnd());
      return;
  }
}

CudaBackend::CudaBackend(const Program& program, const CommPlan& plan, int rank,
                         InjectedFault fault)
    : impl_(std::make_unique<Impl>(program, plan, rank, fault)) {
  // One hardware queue, so the device starts work in launch order (read when the context is
  // created, i.e. by cudaSetDevice below); an explicit setting in the environment wins.
  if (program.single_queue) setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 0);
  impl_->device = bind_cuda_device();
  for (std::size_t s = 0; s < program.streams.size(); ++s) {
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    impl_->streams.push_back(stream);
    cublasHandle_t handle = nullptr;
    CUBLAS_CHECK(cublasCreate(&handle));
    impl_->blas.push_back(handle);
    CUBLAS_CHECK(cublasSetStream(handle, stream));
  }
  CUDA_CHECK(cudaMalloc(&impl_->barrier_word, sizeof(float)));
  CUDA_CHECK(cudaMemset(impl_->barrier_word, 0, sizeof(float)));
  impl_->create_communicators();
}

CudaBackend::~CudaBackend() = default;

std::string CudaBackend::describe() const {
  int version = 0;
  (void)ncclGetVersion(&version);
  return fmt::format("cuda+nccl ({}, device {}, NCCL {}.{}.{})", impl_->device.name,
                     impl_->device.index, version / 10000, version / 100 % 100, version % 100);
}

void CudaBackend::Impl::start_streams(const RankSchedule& schedule, cudaEvent_t origin) {
  // Every stream starts after the origin, so no event precedes it.
  if (!streams.empty()) CUDA_CHECK(cudaEventRecord(origin, streams.front()));
  for (int st = 0; st < schedule.stream_count(); ++st) {
    if (!schedule.stream(st).empty()) {
      CUDA_CHECK(cudaStreamWaitEvent(streams[static_cast<std::size_t>(st)], origin, 0));
    }
  }
}

void CudaBackend::Impl::launch(const LaunchStep& step, const RankSetup& setup, CudaOps& ops,
                               const DeviceMemoryPlan& memory, const RunDevice& d) {
  const ScheduledOp& so = setup.schedule.op(step.op);
  const Op& op = program.ops[static_cast<std::size_t>(so.op)];
  cudaStream_t stream = streams[static_cast<std::size_t>(so.stream)];
  for (const int w : step.wait_events) {
    CUDA_CHECK(cudaStreamWaitEvent(stream, d.end[static_cast<std::size_t>(w)], 0));
  }
  CUDA_CHECK(cudaEventRecord(d.start[static_cast<std::size_t>(step.op)], stream));
  if (const auto* call = std::get_if<KernelCall>(&op.body)) {
    ops.launch(op, *call, stream, blas[static_cast<std::size_t>(so.stream)]);
  } else {
    issue_comm(op, setup.comm, memory, d.base, stream);
  }
  CUDA_CHECK(cudaEventRecord(d.end[static_cast<std::size_t>(step.op)], stream));
}

RunEvents CudaBackend::Impl::read_events(const RankSetup& setup, const RunDevice& d) const {
  const int n = setup.schedule.size();
  RunEvents events;
  events.op_ids.resize(static_cast<std::size_t>(n));
  events.recvs.resize(static_cast<std::size_t>(n));
  events.times.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    events.op_ids[k] = setup.schedule.op(i).op;
    const Op& op = program.ops[static_cast<std::size_t>(events.op_ids[k])];
    if (std::holds_alternative<P2PCall>(op.body)) {
      for (const ResolvedTransfer& t : setup.comm.p2p(op.id).recvs) {
        events.recvs[k].push_back(t.transfer);
      }
    }
    CUDA_CHECK(cudaEventElapsedTime(&events.times[k].start_ms, d.origin, d.start[k]));
    CUDA_CHECK(cudaEventElapsedTime(&events.times[k].end_ms, d.origin, d.end[k]));
  }
  return events;
}

RankRun CudaBackend::run(RankSetup& setup, const std::function<void()>& align) {
  Impl& s = *impl_;
  const DeviceMemoryPlan memory(s.program, setup.store);
  RunDevice device(setup.schedule.size());
  prepare_device(device, memory);
  CudaOps ops(setup.store, memory, device.base, s.fault);
  const std::vector<LaunchStep> steps = launch_plan(setup.schedule);

  align();
  s.start_streams(setup.schedule, device.origin);
  for (const LaunchStep& step : steps) s.launch(step, setup, ops, memory, device);
  CUDA_CHECK(cudaDeviceSynchronize());

  const RunEvents events = s.read_events(setup, device);
  download_store(device, memory);
  return rank_run_from_events(s.rank, events.op_ids, events.recvs, events.times);
}

std::function<std::string()> use_cuda_backend(ValidateOptions& options, const Program& program,
                                              const CommPlan& plan, RunWorld& world,
                                              InjectedFault fault) {
  auto backend = std::make_shared<std::unique_ptr<CudaBackend>>();
  options.run_rank = [backend, &program, &plan, &world, fault, report = options.report_failure](
                         RankSetup& setup, const std::function<void()>& align) -> RankRun {
    try {
      if (!*backend) *backend = std::make_unique<CudaBackend>(program, plan, world.rank(), fault);
      return (*backend)->run(setup, align);
    } catch (const std::exception& e) {
      if (!world.can_unwind()) {
        if (report) report(e.what());
        world.abort(1);
      }
      throw ExecutionError(e.what());
    }
  };
  return [backend] { return *backend ? (*backend)->describe() : std::string("cuda+nccl"); };
}

}  // namespace meshsim
