#pragma once
// The built-in profiles' host figure (host_op_us, the host issue clock of ARCHITECTURE.md §3) and
// its sources, used by sim/builtin_hardware.cpp.
namespace meshsim::builtin {

// Host time to issue one op on a DGX H100 host (Intel Xeon Platinum 8480C): the CPU time of one
// PyTorch nn.Linear forward (one cuBLAS GEMM launch with autograd recording), BF16, hidden 2048,
// 8192 tokens, measured at 13.48 us (NVIDIA/TransformerEngine issue #2053, "[PyTorch] High CPU
// overhead on Grace systems", table "H100 DGX | torch"). A meshsim op often stands for several
// framework ops (a Transformer Engine Linear cost 2.7x torch's on the Grace hosts of the same
// table; its DGX H100 figure is not quoted), so this is the host's lower bound.
inline constexpr double kDgxH100HostOpUs = 13.48;
inline constexpr const char* kDgxH100HostSource =
    "DGX H100 host (Xeon Platinum 8480C): CPU time of one PyTorch nn.Linear forward, 13.48 us "
    "(NVIDIA/TransformerEngine issue #2053, BF16, hidden 2048, 8192 tokens); a lower bound for "
    "a meshsim op, which can stand for several framework ops";
inline constexpr const char* kAssumedHostSource =
    "Assumed: the DGX H100 host's 13.48 us per op (NVIDIA/TransformerEngine issue #2053, CPU time "
    "of one PyTorch nn.Linear forward on a Xeon Platinum 8480C); no public figure for this "
    "GPU's hosts";

}  // namespace meshsim::builtin
