#!/usr/bin/env python3
"""Writes a small PyTorch profiler (Kineto) Chrome trace of one GPU's training-step kernels whose
durations follow a stated roofline, so that `meshsim calibrate --from-trace` can be checked
against the figures that generated it.

The trace has the structure torch.profiler's export_chrome_trace gives with record_shapes=True:
"cpu_op" events with "Input Dims" / "Input type" / "Concrete Inputs" and "External id", the
"cuda_runtime" cudaLaunchKernel inside the innermost operator (args.correlation), and the GPU
"kernel" event with the same correlation on device 0, stream 7. Collectives carry a
record_param_comms operator ("Collective name", "In msg nelems", "Out msg nelems", "Group size",
"dtype", "Process Group Ranks"), as PyTorch's ProcessGroupNCCL records them.

The truth (written to --truth as JSON):
  GEMM time    = 2 m n k / (peak x gemm_eff(2 m n k))
  attention    = F / (peak x attn_eff(F)), F = 4 b h d P forward and 10 b h d P backward, P the
                 query-key pairs (s (s + 1) / 2 with the causal mask)
  copy         = 2 N e / (hbm x mem_eff(2 N e)), N elements of e bytes
  all-reduce   = alpha + 2 (n - 1) / n x B / busbw over n GPUs of one node, B bytes per rank
  every kernel starts launch_gap after the previous one on the stream
where each efficiency is linear in log10(size) between the two end points given below.
"""

import argparse
import json
import math

PEAK = 989e12  # H100 SXM dense BF16 FLOP/s (NVIDIA H100 datasheet), as meshsim's h100-sxm
HBM = 3.35e12  # H100 SXM HBM3 bytes/s (same datasheet)
LAUNCH_GAP_US = 3.0
ALPHA_US = 20.0
BUSBW = 300e9  # bytes/s of the all-reduce's bus traffic

# (log10 size, efficiency) end points of each truth curve.
GEMM_EFF = ((9.0, 0.35), (12.5, 0.78))
ATTN_EFF = ((10.0, 0.30), (12.5, 0.62))
MEM_EFF = ((6.0, 0.30), (9.0, 0.90))


def eff(curve, size):
    (x0, e0), (x1, e1) = curve
    x = min(max(math.log10(size), x0), x1)
    return e0 + (e1 - e0) * (x - x0) / (x1 - x0)


class Trace:
    def __init__(self):
        self.events = []
        self.cpu_ts = 1000.0
        self.gpu_ts = 50000.0
        self.next_id = 1
        self.truth = {"gemm": [], "attention_fwd": [], "attention_bwd": [], "copy": [],
                      "all_reduce": []}

    def op(self, name, dims=None, types=None, concrete=None, extra=None, dur=30.0):
        """A CPU operator starting now; returns its event (children go inside it)."""
        args = {"External id": self.next_id}
        self.next_id += 1
        if dims is not None:
            args["Input Dims"] = dims
            args["Input type"] = types
            args["Concrete Inputs"] = concrete or [""] * len(dims)
        args.update(extra or {})
        ev = {"ph": "X", "cat": "cpu_op", "name": name, "pid": 100, "tid": 100,
              "ts": round(self.cpu_ts, 3), "dur": dur, "args": args}
        self.events.append(ev)
        self.cpu_ts += 1.0
        return ev

    def launch(self, op, kernel, seconds):
        corr = self.next_id
        self.next_id += 1
        ext = op["args"]["External id"]
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                            "pid": 100, "tid": 100, "ts": round(self.cpu_ts, 3), "dur": 2.0,
                            "args": {"External id": ext, "correlation": corr, "cbid": 211}})
        self.cpu_ts += 3.0
        dur = seconds * 1e6
        self.events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7,
                            "ts": round(self.gpu_ts, 3), "dur": round(dur, 3),
                            "args": {"External id": ext, "correlation": corr, "device": 0,
                                     "stream": 7, "grid": [132, 1, 1], "block": [128, 1, 1]}})
        self.gpu_ts += round(dur, 3) + LAUNCH_GAP_US
        self.cpu_ts = max(self.cpu_ts, op["ts"] + op["dur"]) + 1.0


def gemm(t, name, m, n, k, batch=1):
    flops = 2.0 * batch * m * n * k
    bf = "c10::BFloat16"
    if name == "aten::mm":
        dims, types = [[m, k], [k, n]], [bf, bf]
    elif name == "aten::addmm":
        dims, types = [[n], [m, k], [k, n], [], []], [bf, bf, bf, "Scalar", "Scalar"]
    else:  # aten::bmm
        dims, types = [[batch, m, k], [batch, k, n]], [bf, bf]
    outer = t.op("aten::linear") if name == "aten::addmm" else None
    op = t.op(name, dims, types)
    if outer:
        outer["dur"] = op["dur"] + 2.0
    t.launch(op, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas",
             flops / (PEAK * eff(GEMM_EFF, flops)))
    t.truth["gemm"].append([flops, eff(GEMM_EFF, flops)])


def attention(t, b, h, hkv, s, d):
    pairs = s * (s + 1) // 2  # causal
    bf = "c10::BFloat16"
    for backward in (False, True):
        flops = (10.0 if backward else 4.0) * b * h * d * pairs
        outer = t.op("aten::scaled_dot_product_attention" if not backward else
                     "autograd::engine::evaluate_function: ScaledDotProductFlashAttentionBackward0")
        if backward:
            name = "aten::_scaled_dot_product_flash_attention_backward"
            dims = [[b, h, s, d], [b, h, s, d], [b, hkv, s, d], [b, hkv, s, d], [b, h, s, d],
                    [b, h, s], [], [], [], [], [], [], [], [], []]
            concrete = [""] * 11 + ["True"] + [""] * 3
            kernel = "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel"
        else:
            name = "aten::_scaled_dot_product_flash_attention"
            dims = [[b, h, s, d], [b, hkv, s, d], [b, hkv, s, d], [], [], [], []]
            concrete = ["", "", "", "0.", "True", "False", ""]
            kernel = "flash_fwd_kernel"
        op = t.op(name, dims, [bf] * len(dims), concrete)
        outer["dur"] = op["dur"] + 2.0
        t.launch(op, kernel, flops / (PEAK * eff(ATTN_EFF, flops)))
        t.truth["attention_bwd" if backward else "attention_fwd"].append(
            [flops, eff(ATTN_EFF, flops)])


def copy(t, n):
    moved = 2.0 * n * 2  # read + write of bf16
    op = t.op("aten::copy_", [[n], [n], []], ["c10::BFloat16", "c10::BFloat16", "Scalar"])
    t.launch(op, "void at::native::elementwise_kernel<128, 4, copy_kernel>",
             moved / (HBM * eff(MEM_EFF, moved)))
    t.truth["copy"].append([moved, eff(MEM_EFF, moved)])


def all_reduce(t, n_elements, group=8):
    size = n_elements * 2
    seconds = ALPHA_US * 1e-6 + 2.0 * (group - 1) / group * size / BUSBW
    outer = t.op("nccl:all_reduce")
    op = t.op("record_param_comms", extra={
        "Collective name": "allreduce", "dtype": "BFloat16", "In msg nelems": n_elements,
        "Out msg nelems": n_elements, "Group size": group,
        "Process Group Ranks": json.dumps(list(range(group)))})
    outer["dur"] = op["dur"] + 2.0
    t.launch(op, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
             seconds)
    t.truth["all_reduce"].append([size, seconds])


def unmatched(t):
    op = t.op("Optimizer.step#AdamW.step")
    t.launch(op, "void at::native::multi_tensor_apply_kernel<TensorListMetadata<4>>", 40e-6)


def build():
    t = Trace()
    for _ in range(3):  # repeats, as a step repeats its layers
        # Compute-bound shapes (the roofline's memory term below the compute term at these
        # efficiencies), as the linears of a transformer layer are.
        for m, n, k in ((1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096),
                        (8192, 28672, 8192)):
            gemm(t, "aten::mm", m, n, k)
        gemm(t, "aten::addmm", 8192, 6144, 4096)
        gemm(t, "aten::bmm", 2048, 2048, 512, batch=32)
        for s in (1024, 4096, 8192):
            attention(t, 1, 32, 8, s, 128)
        for n in (1 << 18, 1 << 22, 1 << 26):
            copy(t, n)
        for n in (1 << 16, 1 << 20, 1 << 24, 1 << 26):
            all_reduce(t, n)
        unmatched(t)
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="the trace (Chrome JSON)")
    ap.add_argument("--truth", help="the figures that generated it (JSON)")
    a = ap.parse_args()
    t = build()
    doc = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},
           "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
           "traceEvents": t.events, "displayTimeUnit": "ms"}
    with open(a.out, "w") as f:
        json.dump(doc, f)
    if a.truth:
        truth = dict(t.truth, launch_gap_us=LAUNCH_GAP_US, busbw=BUSBW, peak=PEAK, hbm=HBM)
        with open(a.truth, "w") as f:
            json.dump(truth, f, indent=1)


if __name__ == "__main__":
    main()
