#include "sim/program_json.hpp"

#include <limits>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/json_fields.hpp"
#include "sim/kernel_operand_check.hpp"

namespace meshsim {
namespace {

using ojson = nlohmann::ordered_json;
constexpr std::int64_t kMaxInt = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50;

ojson ranges_to_json(const std::vector<TokenRange>& ranges) {
  ojson a = ojson::array();
  for (const auto& r : ranges) a.push_back(ojson::array({r.begin, r.end}));
  return a;
}

}  // namespace

ojson kernel_to_json(const KernelCall& k) {
  ojson j;
  j["kind"] = to_string(k.kind);
  j["dtype"] = to_string(k.dtype);
  if (const auto* g = std::get_if<GemmShape>(&k.shape)) {
    j["gemm"] = {{"m", g->m},
                 {"n", g->n},
                 {"k", g->k},
                 {"trans_a", g->trans_a},
                 {"trans_b", g->trans_b},
                 {"accumulate", g->accumulate}};
  } else if (const auto* a = std::get_if<AttentionShape>(&k.shape)) {
    j["attention"] = {{"batch", a->batch},          {"heads_q", a->heads_q},
                      {"heads_kv", a->heads_kv},    {"head_dim", a->head_dim},
                      {"mask", to_string(a->mask)}, {"q", ranges_to_json(a->q)},
                      {"k", ranges_to_json(a->k)}};
  } else {
    const auto& v = std::get<VectorShape>(k.shape);
    j["elements"] = v.elements;
    if (v.operands != VectorShape{}.operands) j["operands"] = v.operands;
    if (v.mask_bytes != 0) j["mask_bytes"] = v.mask_bytes;
  }
  j["inputs"] = k.inputs;
  j["outputs"] = k.outputs;
  if (k.fn != ElementwiseFn::none) j["fn"] = to_string(k.fn);
  if (k.quant != QuantFormat::none) j["quant"] = to_string(k.quant);
  if (k.sm_share != 1.0) j["sm_share"] = k.sm_share;
  return j;
}

namespace {

ojson transfers_to_json(const std::vector<Transfer>& v) {
  ojson a = ojson::array();
  for (const auto& t : v) {
    a.push_back({{"peer", t.peer}, {"bytes", t.bytes}, {"tag", t.tag}, {"slot", t.slot}});
  }
  return a;
}

ojson op_to_json(const Op& op, std::span<const OpId> deps) {
  ojson j;
  j["rank"] = op.rank;
  j["stream"] = op.stream;
  j["name"] = op.name.view();
  ojson labels = ojson::object();
  if (op.labels.phase != Phase::none) labels["phase"] = to_string(op.labels.phase);
  if (op.labels.layer >= 0) labels["layer"] = op.labels.layer;
  if (op.labels.microbatch >= 0) labels["microbatch"] = op.labels.microbatch;
  if (op.labels.step >= 0) labels["step"] = op.labels.step;
  if (op.labels.chunk >= 0) labels["chunk"] = op.labels.chunk;
  j["labels"] = labels;
  j["deps"] = std::vector<OpId>(deps.begin(), deps.end());
  if (op.fixed_ns >= 0) j["fixed_ns"] = op.fixed_ns;
  if (op.host_wait >= 0) j["host_wait"] = op.host_wait;
  if (const auto* k = std::get_if<KernelCall>(&op.body)) {
    j["kernel"] = kernel_to_json(*k);
  } else if (const auto* p = std::get_if<P2PCall>(&op.body)) {
    j["p2p"] = {{"sends", transfers_to_json(p->sends)}, {"recvs", transfers_to_json(p->recvs)}};
  } else {
    const auto& c = std::get<CollectiveCall>(op.body);
    j["collective"] = {{"kind", to_string(c.kind)},   {"group", c.group}, {"bytes", c.bytes},
                       {"dtype", to_string(c.dtype)}, {"shift", c.shift}, {"input", c.input},
                       {"output", c.output}};
    if (c.algo != CollectiveAlgo::automatic) j["collective"]["algo"] = to_string(c.algo);
  }
  return j;
}

int to_int(const JsonField& f, std::int64_t min, std::int64_t max) {
  return static_cast<int>(f.as_int(min, max));
}

DType dtype_field(const JsonField& f) {
  const auto d = parse_dtype(f.as_string());
  if (!d) f.fail("one of bf16, fp16, fp32, fp64");
  return *d;
}

std::vector<std::int32_t> int_list(const JsonField& f, std::int64_t min, std::int64_t max) {
  std::vector<std::int32_t> v(f.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = to_int(f.at(i), min, max);
  return v;
}

std::vector<TokenRange> ranges_field(const JsonField& f) {
  std::vector<TokenRange> v(f.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const JsonField r = f.at(i);
    if (r.size() != 2) r.fail("a [begin, end) pair");
    v[i].begin = r.at(0).as_int(0, kMaxBytes);
    v[i].end = r.at(1).as_int(v[i].begin, kMaxBytes);
  }
  return v;
}

}  // namespace

KernelCall kernel_from_json(const JsonField& f) {
  KernelCall k;
  const JsonField kind = f["kind"];
  const auto parsed = parse_kernel_kind(kind.as_string());
  if (!parsed) kind.fail("a kernel kind such as gemm, attention_fwd, lse_merge, copy");
  k.kind = *parsed;
  k.dtype = dtype_field(f["dtype"]);
  if (f.has("fn")) {
    const JsonField fn = f["fn"];
    const auto parsed_fn = parse_elementwise_fn(fn.as_string());
    if (!parsed_fn) fn.fail("none, bias_add, bias_grad, relu or gelu");
    k.fn = *parsed_fn;
  }
  if (f.has("quant")) {
    const JsonField quant = f["quant"];
    const auto parsed_quant = parse_quant_format(quant.as_string());
    if (!parsed_quant) quant.fail("none, fp8, fp8_block, mxfp8 or nvfp4");
    if (*parsed_quant != QuantFormat::none && k.kind != KernelKind::gemm &&
        k.kind != KernelKind::copy) {
      quant.fail("none: only gemm and copy kernels take a quantized format");
    }
    k.quant = *parsed_quant;
  }
  if (f.has("sm_share")) {
    const JsonField share = f["sm_share"];
    const double v = share.as_positive();
    if (v > 1.0 || k.kind != KernelKind::gemm) share.fail("a gemm's share of the SMs in (0, 1]");
    k.sm_share = v;
  }
  const bool row_accumulate = k.kind == KernelKind::accumulate && f.has("attention");
  switch (row_accumulate ? 1 : expected_shape_index(k.kind)) {
    case 0: {
      f.expect_keys({"kind", "dtype", "gemm", "inputs", "outputs", "fn", "quant", "sm_share"});
      const JsonField g = f["gemm"];
      g.expect_keys({"m", "n", "k", "trans_a", "trans_b", "accumulate"});
      k.shape = GemmShape{g["m"].as_int(0, kMaxBytes), g["n"].as_int(0, kMaxBytes),
                          g["k"].as_int(0, kMaxBytes), g["trans_a"].as_bool(),
                          g["trans_b"].as_bool(),      g["accumulate"].as_bool()};
      break;
    }
    case 1: {
      f.expect_keys({"kind", "dtype", "attention", "inputs", "outputs", "fn", "quant"});
      const JsonField a = f["attention"];
      a.expect_keys({"batch", "heads_q", "heads_kv", "head_dim", "mask", "q", "k"});
      AttentionShape s;
      s.batch = a["batch"].as_int(1, kMaxInt);
      s.heads_q = a["heads_q"].as_int(1, kMaxInt);
      s.heads_kv = a["heads_kv"].as_int(1, kMaxInt);
      s.head_dim = a["head_dim"].as_int(1, kMaxInt);
      const JsonField mask = a["mask"];
      const auto m = parse_mask_mode(mask.as_string());
      if (!m) mask.fail("none or causal");
      s.mask = *m;
      s.q = ranges_field(a["q"]);
      s.k = ranges_field(a["k"]);
      k.shape = std::move(s);
      break;
    }
    default:
      f.expect_keys({"kind", "dtype", "elements", "operands", "mask_bytes", "inputs", "outputs",
                     "fn", "quant"});
      VectorShape v{f["elements"].as_int(0, kMaxBytes)};
      if (f.has("operands")) v.operands = to_int(f["operands"], 1, kMaxVectorOperands);
      if (f.has("mask_bytes")) v.mask_bytes = to_int(f["mask_bytes"], 0, kMaxVectorMaskBytes);
      k.shape = v;
  }
  k.inputs = int_list(f["inputs"], -1, kMaxInt);
  k.outputs = int_list(f["outputs"], -1, kMaxInt);
  return k;
}

namespace {

std::vector<Transfer> transfers_from_json(const JsonField& f) {
  std::vector<Transfer> v(f.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const JsonField t = f.at(i);
    t.expect_keys({"peer", "bytes", "tag", "slot"});
    v[i] = Transfer{to_int(t["peer"], 0, kMaxInt), t["bytes"].as_int(0, kMaxBytes),
                    to_int(t["tag"], std::numeric_limits<std::int32_t>::min(), kMaxInt),
                    to_int(t["slot"], -1, kMaxInt)};
  }
  return v;
}

Op op_from_json(const JsonField& f, OpId id, std::vector<OpId>& deps) {
  f.expect_keys({"rank", "stream", "name", "labels", "deps", "fixed_ns", "host_wait", "kernel",
                 "p2p", "collective"});
  Op op;
  op.id = id;
  op.rank = to_int(f["rank"], 0, kMaxInt);
  op.stream = to_int(f["stream"], 0, kMaxInt);
  op.name = f["name"].as_string();
  const JsonField labels = f["labels"];
  labels.expect_keys({"phase", "layer", "microbatch", "step", "chunk"});
  if (labels.has("phase")) {
    const JsonField ph = labels["phase"];
    const auto p = parse_phase(ph.as_string());
    if (!p) ph.fail("one of none, fwd, bwd, wgrad, optimizer");
    op.labels.phase = *p;
  }
  if (labels.has("layer")) op.labels.layer = to_int(labels["layer"], 0, kMaxInt);
  if (labels.has("microbatch")) op.labels.microbatch = to_int(labels["microbatch"], 0, kMaxInt);
  if (labels.has("step")) op.labels.step = to_int(labels["step"], 0, kMaxInt);
  if (labels.has("chunk")) op.labels.chunk = to_int(labels["chunk"], 0, kMaxInt);
  deps = int_list(f["deps"], 0, kMaxInt);
  if (f.has("fixed_ns")) op.fixed_ns = f["fixed_ns"].as_int(0, kMaxBytes);
  if (f.has("host_wait")) op.host_wait = to_int(f["host_wait"], 0, kMaxInt);
  const int bodies =
      (f.has("kernel") ? 1 : 0) + (f.has("p2p") ? 1 : 0) + (f.has("collective") ? 1 : 0);
  if (bodies != 1) f.fail("exactly one of 'kernel', 'p2p', 'collective'");
  if (f.has("kernel")) {
    op.body = kernel_from_json(f["kernel"]);
  } else if (f.has("p2p")) {
    const JsonField p = f["p2p"];
    p.expect_keys({"sends", "recvs"});
    op.body = P2PCall{transfers_from_json(p["sends"]), transfers_from_json(p["recvs"])};
  } else {
    const JsonField c = f["collective"];
    c.expect_keys({"kind", "group", "bytes", "dtype", "shift", "input", "output", "algo"});
    CollectiveCall call;
    const JsonField kind = c["kind"];
    const auto k = parse_collective_kind(kind.as_string());
    if (!k) kind.fail("a collective kind such as all_reduce, all_gather, permute");
    call.kind = *k;
    call.group = to_int(c["group"], 0, kMaxInt);
    call.bytes = c["bytes"].as_int(0, kMaxBytes);
    call.dtype = dtype_field(c["dtype"]);
    call.shift = to_int(c["shift"], -kMaxInt, kMaxInt);
    if (c.has("algo")) {
      const JsonField algo = c["algo"];
      const auto parsed = parse_collective_algo(algo.as_string());
      if (!parsed) algo.fail("one of automatic, ring, tree, nvls, userbuffers");
      call.algo = *parsed;
    }
    call.input = to_int(c["input"], -1, kMaxInt);
    call.output = to_int(c["output"], -1, kMaxInt);
    op.body = call;
  }
  return op;
}

}  // namespace

nlohmann::ordered_json program_to_json(const Program& p) {
  ojson j;
  j["schema_version"] = kProgramSchemaVersion;
  j["description"] = p.description;
  ojson dims = ojson::array();
  for (const auto& d : p.mesh.dims()) dims.push_back({{"name", d.name}, {"size", d.size}});
  j["mesh"] = {{"dims", dims}, {"gpus_per_node", p.mesh.gpus_per_node()}};
  j["single_queue"] = p.single_queue;
  if (p.host_issue) j["host_issue"] = true;
  j["streams"] = p.streams;
  ojson groups = ojson::array();
  for (const auto& g : p.groups) {
    ojson group = {{"dim", g.dim}, {"ranks", g.ranks}};
    if (!g.timed_as.empty()) group["timed_as"] = g.timed_as;
    groups.push_back(std::move(group));
  }
  j["groups"] = groups;
  ojson slots = ojson::array();
  for (const auto& s : p.slots) {
    ojson slot = {
        {"rank", s.rank}, {"name", s.name}, {"dtype", to_string(s.dtype)}, {"shape", s.shape}};
    if (!s.tokens.empty()) slot["tokens"] = ranges_to_json(s.tokens);
    slots.push_back(std::move(slot));
  }
  j["slots"] = slots;
  ojson ops = ojson::array();
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    ops.push_back(op_to_json(p.ops[i], p.deps(static_cast<OpId>(i))));
  }
  j["ops"] = std::move(ops);
  return j;
}

std::string program_to_text(const Program& program) {
  // One op per line keeps large programs diffable and greppable.
  ojson j = program_to_json(program);
  ojson ops = std::move(j["ops"]);
  j.erase("ops");
  std::string head = j.dump();
  head.pop_back();  // closing brace
  std::string out = head + ",\"ops\":[\n";
  for (std::size_t i = 0; i < ops.size(); ++i) {
    out += ops[i].dump();
    out += i + 1 < ops.size() ? ",\n" : "\n";
  }
  out += "]}\n";
  return out;
}

Program program_from_json(const nlohmann::json& j, std::string_view origin) {
  const JsonField top(j, std::string(origin));
  top.expect_keys({"schema_version", "description", "mesh", "single_queue", "host_issue", "streams",
                   "groups", "slots", "ops"});
  const JsonField version = top["schema_version"];
  if (version.as_int(0, kMaxInt) != kProgramSchemaVersion) {
    version.fail(fmt::format("{} (this meshsim reads program schema {})", kProgramSchemaVersion,
                             kProgramSchemaVersion));
  }
  Program p;
  p.description = top["description"].as_string();
  const JsonField mesh = top["mesh"];
  mesh.expect_keys({"dims", "gpus_per_node"});
  std::vector<MeshDim> dims;
  const JsonField dims_f = mesh["dims"];
  std::int64_t world = 1;
  for (std::size_t i = 0; i < dims_f.size(); ++i) {
    const JsonField d = dims_f.at(i);
    d.expect_keys({"name", "size"});
    dims.push_back(MeshDim{d["name"].as_string(), to_int(d["size"], 1, 1 << 20)});
    world *= dims.back().size;
    if (world > (1 << 20)) d["size"].fail("a mesh of at most 1048576 ranks");
  }
  p.mesh = Mesh(std::move(dims), to_int(mesh["gpus_per_node"], 1, 1024));
  p.single_queue = top["single_queue"].as_bool();
  if (top.has("host_issue")) p.host_issue = top["host_issue"].as_bool();
  const JsonField streams = top["streams"];
  for (std::size_t i = 0; i < streams.size(); ++i) p.streams.push_back(streams.at(i).as_string());
  const JsonField groups = top["groups"];
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const JsonField g = groups.at(i);
    g.expect_keys({"dim", "ranks", "timed_as"});
    p.groups.push_back(
        Group{static_cast<GroupId>(i), g["dim"].as_string(), int_list(g["ranks"], 0, kMaxInt),
              g.has("timed_as") ? int_list(g["timed_as"], 0, kMaxInt) : std::vector<int>{}});
  }
  const JsonField slots = top["slots"];
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const JsonField s = slots.at(i);
    s.expect_keys({"rank", "name", "dtype", "shape", "tokens"});
    TensorSlot slot{static_cast<SlotId>(i),
                    to_int(s["rank"], 0, kMaxInt),
                    s["name"].as_string(),
                    dtype_field(s["dtype"]),
                    {}};
    const JsonField shape = s["shape"];
    for (std::size_t k = 0; k < shape.size(); ++k)
      slot.shape.push_back(shape.at(k).as_int(0, kMaxBytes));
    if (s.has("tokens")) slot.tokens = ranges_field(s["tokens"]);
    p.slots.push_back(std::move(slot));
  }
  const JsonField ops = top["ops"];
  p.ops.reserve(ops.size());
  p.dep_offsets.reserve(ops.size() + 1);
  std::vector<OpId> deps;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    Op op = op_from_json(ops.at(i), static_cast<OpId>(i), deps);
    p.append(std::move(op), deps);
  }
  check_kernel_operands(p, origin);
  return p;
}

Program load_program_file(const std::string& path) {
  const std::string text = read_text_file(path);
  return program_from_json(parse_json_text(text, path), path);
}

}  // namespace meshsim
