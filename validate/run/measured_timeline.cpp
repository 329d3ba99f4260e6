#include "validate/run/measured_timeline.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {

std::vector<std::int64_t> encode_rank_run(const RankRun& run) {
  std::vector<std::int64_t> out;
  out.reserve(4 + 4 * run.ops.size() + 2 * run.recv_ends.size());
  out.push_back(run.rank);
  out.push_back(run.wall);
  out.push_back(static_cast<std::int64_t>(run.ops.size()));
  for (const OpRecord& r : run.ops) {
    out.insert(out.end(), {r.op, r.start, r.end, r.dispatch_seq});
  }
  out.push_back(static_cast<std::int64_t>(run.recv_ends.size()));
  for (const TransferEnd& t : run.recv_ends) out.insert(out.end(), {t.transfer, t.end});
  return out;
}

RankRun decode_rank_run(std::span<const std::int64_t> data) {
  std::size_t at = 0;
  auto take = [&] {
    MESHSIM_CHECK(at < data.size(), "measured records: truncated");
    return data[at++];
  };
  RankRun run;
  run.rank = static_cast<int>(take());
  run.wall = take();
  const std::int64_t ops = take();
  MESHSIM_CHECK(ops >= 0 && static_cast<std::size_t>(ops) <= data.size(),
                "measured records: bad count");
  run.ops.resize(static_cast<std::size_t>(ops));
  for (auto& r : run.ops) {
    r.op = static_cast<OpId>(take());
    r.start = take();
    r.end = take();
    r.dispatch_seq = take();
  }
  const std::int64_t recvs = take();
  MESHSIM_CHECK(recvs >= 0 && static_cast<std::size_t>(recvs) <= data.size(),
                "measured records: bad count");
  run.recv_ends.resize(static_cast<std::size_t>(recvs));
  for (auto& t : run.recv_ends) {
    t.transfer = static_cast<std::int32_t>(take());
    t.end = take();
  }
  MESHSIM_CHECK(at == data.size(), "measured records: trailing data");
  return run;
}

namespace {

void fill_causes(const Program& program, Timeline& tl) {
  const std::size_t n = program.ops.size();
  std::vector<OpId> prev_on_stream(n, -1), prev_launch(n, -1);
  {
    std::vector<std::vector<OpId>> last(static_cast<std::size_t>(program.world_size()),
                                        std::vector<OpId>(program.streams.size(), -1));
    std::vector<OpId> last_launch(static_cast<std::size_t>(program.world_size()), -1);
    for (const Op& op : program.ops) {
      const auto r = static_cast<std::size_t>(op.rank);
      auto& l = last[r][static_cast<std::size_t>(op.stream)];
      prev_on_stream[static_cast<std::size_t>(op.id)] = l;
      l = op.id;
      prev_launch[static_cast<std::size_t>(op.id)] = last_launch[r];
      last_launch[r] = op.id;
    }
  }
  for (const Op& op : program.ops) {
    const auto i = static_cast<std::size_t>(op.id);
    OpCause cause;
    Nanos latest = -1;
    auto consider = [&](OpId other, Nanos t, bool by_dispatch) {
      if (other >= 0 && t > latest) {
        latest = t;
        cause = OpCause{other, by_dispatch};
      }
    };
    const OpId sp = prev_on_stream[i];
    if (sp >= 0) consider(sp, tl.ops[static_cast<std::size_t>(sp)].end, false);
    for (OpId d : program.deps(op.id)) consider(d, tl.ops[static_cast<std::size_t>(d)].end, false);
    const OpId lp = prev_launch[i];
    if (program.single_queue && lp >= 0) {
      consider(lp, tl.ops[static_cast<std::size_t>(lp)].start, true);
    }
    tl.causes[i] = cause;
  }
}

}  // namespace

Timeline measured_timeline(const Program& program, const CommPlan& plan,
                           const std::vector<RankRun>& runs) {
  const std::size_t n = program.ops.size();
  Timeline tl;
  tl.ops.assign(n, OpTiming{});
  tl.causes.assign(n, OpCause{});
  tl.completed_by.assign(n, -1);
  tl.transfers.assign(plan.transfers.size(), WindowTiming{});
  tl.collectives.assign(plan.collectives.size(), WindowTiming{});
  std::vector<Nanos> recv_end(plan.transfers.size(), -1);
  for (const RankRun& run : runs) {
    for (const OpRecord& r : run.ops) {
      MESHSIM_CHECK(r.op >= 0 && static_cast<std::size_t>(r.op) < n,
                    fmt::format("measured records: op {} outside the Program", r.op));
      tl.ops[static_cast<std::size_t>(r.op)].start = r.start;
      tl.ops[static_cast<std::size_t>(r.op)].end = r.end;
    }
    for (const TransferEnd& t : run.recv_ends) {
      MESHSIM_CHECK(t.transfer >= 0 && static_cast<std::size_t>(t.transfer) < recv_end.size(),
                    fmt::format("measured records: transfer {} outside the plan", t.transfer));
      recv_end[static_cast<std::size_t>(t.transfer)] = t.end;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    MESHSIM_CHECK(tl.ops[i].start >= 0 && tl.ops[i].end >= tl.ops[i].start,
                  fmt::format("measured records: {} has no complete record",
                              describe_op(program, static_cast<OpId>(i))));
    tl.makespan = std::max(tl.makespan, tl.ops[i].end);
  }
  for (std::size_t t = 0; t < plan.transfers.size(); ++t) {
    const MatchedTransfer& m = plan.transfers[t];
    const OpTiming& s = tl.ops[static_cast<std::size_t>(m.send_op)];
    const OpTiming& r = tl.ops[static_cast<std::size_t>(m.recv_op)];
    WindowTiming& w = tl.transfers[t];
    const bool receiver_later = r.start >= s.start;
    w.start = std::max(s.start, r.start);
    w.started_by = receiver_later ? m.recv_op : m.send_op;
    w.end = std::max(w.start, recv_end[t] >= 0 ? recv_end[t] : r.end);
    for (OpId side : {m.send_op, m.recv_op}) {
      OpTiming& o = tl.ops[static_cast<std::size_t>(side)];
      if (o.comm_start < 0 || w.start < o.comm_start) o.comm_start = std::min(w.start, o.end);
      auto& by = tl.completed_by[static_cast<std::size_t>(side)];
      if (by < 0 || tl.transfers[static_cast<std::size_t>(by)].end <= w.end) {
        by = static_cast<std::int32_t>(t);
      }
    }
  }
  for (std::size_t c = 0; c < plan.collectives.size(); ++c) {
    WindowTiming& w = tl.collectives[c];
    for (OpId m : plan.collectives[c].members) {
      const OpTiming& o = tl.ops[static_cast<std::size_t>(m)];
      if (o.start > w.start) {
        w.start = o.start;
        w.started_by = m;
      }
      w.end = std::max(w.end, o.end);
    }
    for (OpId m : plan.collectives[c].members) {
      OpTiming& o = tl.ops[static_cast<std::size_t>(m)];
      o.comm_start = std::min(w.start, o.end);
      tl.completed_by[static_cast<std::size_t>(m)] = static_cast<std::int32_t>(c);
    }
  }
  // A comm op without transfers (an empty p2p group) moved nothing.
  for (std::size_t i = 0; i < n; ++i) {
    if (!program.ops[i].is_compute() && tl.ops[i].comm_start < 0)
      tl.ops[i].comm_start = tl.ops[i].start;
  }
  fill_causes(program, tl);
  return tl;
}

}  // namespace meshsim
