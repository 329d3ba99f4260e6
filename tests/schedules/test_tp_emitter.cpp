#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "schedules/tp_emitter.hpp"
#include "tests/schedules/recording_tp_host.hpp"

using namespace meshsim;

namespace {

using test::kNames;
using test::RecordingHost;

TpLayerSpec column_spec(bool sp, bool sync) {
  TpLayerSpec s;
  s.column = true;
  s.tokens = 1024;
  s.local_tokens = sp ? 256 : 1024;
  s.n = 512;  // D_out / t
  s.k = 2048;
  s.sequence_parallel = sp;
  s.comm = true;
  s.sync = sync;
  s.tensors = false;
  s.dtype = DType::bf16;
  return s;
}

}  // namespace

TEST_CASE("TpLayerEmitter column backward: the overlap order of Megatron's layer") {
  RecordingHost h;
  TpLayerEmitter(column_spec(true, false)).backward(h, {}, kNames, true);
  // gather X, dX GEMM, reduce-scatter dX, dW GEMM (after the gather), then dX is waited for.
  CHECK(h.names() == std::vector<std::string>{"xg bwd", "dgrad", "dx rs", "wgrad"});
  CHECK(h.calls[3].waits == std::vector<OpId>{0});
  CHECK(h.pending == std::vector<OpId>{2});
  // Every column collective moves the whole [T, D_in] activation: 1024 x 2048 x 2 bytes.
  CHECK(h.calls[0].bytes == 1024 * 2048 * 2);
  // W stored [out, in]: dX [T, k] = dY [T, n] W, no transpose; dW [n, k] = dY^T X.
  CHECK(h.calls[1].gemm == GemmShape{1024, 2048, 512, false, false, false});
  CHECK(h.calls[3].gemm == GemmShape{512, 2048, 1024, true, false, true});
}

TEST_CASE("TpLayerEmitter: sync waits at once; the split backward leaves dW for wgrad()") {
  RecordingHost sync;
  TpLayerEmitter(column_spec(true, true)).backward(sync, {}, kNames, true);
  CHECK(sync.calls[1].waits == std::vector<OpId>{0});  // dX GEMM waits for the gather
  RecordingHost split;
  const TpLayerEmitter e(column_spec(true, false));
  e.backward(split, {}, kNames, false);
  CHECK(split.names() == std::vector<std::string>{"dgrad", "dx rs"});
  e.wgrad(split, {}, kNames);
  CHECK(split.names() == std::vector<std::string>{"dgrad", "dx rs", "xg w", "wgrad"});
}

TEST_CASE("TpLayerEmitter row forward: all-reduce without SP, reduce-scatter with it") {
  TpLayerSpec s = column_spec(false, false);
  s.column = false;
  s.n = 2048;  // D_out
  s.k = 128;   // D_in / t
  RecordingHost ar;
  TpLayerEmitter(s).forward(ar, {}, kNames, Phase::fwd);
  CHECK(ar.names() == std::vector<std::string>{"fwd", "y ar"});
  CHECK(ar.calls[1].bytes == 1024 * 2048 * 2);  // the whole [T, D_out] output
  s.sequence_parallel = true;
  RecordingHost rs;
  TpLayerEmitter(s).forward(rs, {}, kNames, Phase::fwd);
  CHECK(rs.names() == std::vector<std::string>{"fwd", "y rs"});
  s.comm = false;  // t = 1: no collective at all
  RecordingHost solo;
  TpLayerEmitter(s).forward(solo, {}, kNames, Phase::fwd);
  CHECK(solo.names() == std::vector<std::string>{"fwd"});
}
