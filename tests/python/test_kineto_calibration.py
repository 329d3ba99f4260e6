"""`meshsim calibrate --from-trace` against the repository's sample Kineto trace
(examples/kineto/make_sample_trace.py): the fit must give back the figures that generated the
trace (the issue's bound: within 2 %), and bad traces must be refused with exit 2 and one line.
Run by CTest with the CLI binary in $MESHSIM."""

import json
import math
import os
import pathlib
import subprocess
import sys

import pytest

MESHSIM = os.environ["MESHSIM"]
ROOT = pathlib.Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "examples" / "kineto" / "make_sample_trace.py"


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    d = tmp_path_factory.mktemp("kineto")
    trace, truth, profile = d / "trace.json", d / "truth.json", d / "fitted.json"
    subprocess.run([sys.executable, str(GENERATOR), "--out", str(trace), "--truth", str(truth)],
                   check=True)
    out = subprocess.run([MESHSIM, "calibrate", "--from-trace", str(trace), "--base", "h100-sxm",
                          "--out", str(profile), "--json"],
                         check=True, capture_output=True, text=True)
    return (json.loads(truth.read_text()), json.loads(profile.read_text()),
            json.loads(out.stdout), trace)


def table_value(table, size):
    """The profile's efficiency at `size`: linear in log(size) between points, clamped."""
    if size <= table[0][0]:
        return table[0][1]
    for (s0, e0), (s1, e1) in zip(table, table[1:]):
        if size <= s1:
            t = (math.log(size) - math.log(s0)) / (math.log(s1) - math.log(s0))
            return e0 + t * (e1 - e0)
    return table[-1][1]


@pytest.mark.parametrize("kind", ["gemm", "attention_fwd", "attention_bwd"])
def test_compute_efficiencies_within_2_percent(fitted, kind):
    truth, profile, _, _ = fitted
    table = profile["compute_efficiency"][kind]
    for size, eff in truth[kind]:
        assert table_value(table, size) == pytest.approx(eff, rel=0.02), (kind, size)


def test_memory_efficiency_and_peaks_kept(fitted):
    truth, profile, _, _ = fitted
    # The datasheet figures the generator used, kept rather than fitted.
    assert profile["peak_tflops"]["bf16"] * 1e12 == pytest.approx(truth["peak"], rel=1e-9)
    assert profile["memory_tbps"] * 1e12 == pytest.approx(truth["hbm"], rel=1e-9)
    for size, eff in truth["copy"]:
        assert table_value(profile["memory_efficiency"], size) == pytest.approx(eff, rel=0.02)


def test_launch_gap_and_all_reduce_bus_bandwidth(fitted):
    truth, profile, _, _ = fitted
    assert profile["launch_overhead_us"] == pytest.approx(truth["launch_gap_us"], rel=0.02)
    link = profile["network"]["calibrated"]["all_reduce.nvlink"]
    assert link["bw_gbps"] * 1e9 == pytest.approx(truth["busbw"], rel=0.02)


def test_report_counts_the_kernels_it_could_not_use(fitted):
    _, _, report, _ = fitted
    # 3 repeats x (6 GEMMs + 6 attention + 3 copies + 4 all-reduces + 1 optimizer kernel).
    assert report["trace"]["kernels"] == 60
    assert report["trace"]["compute_samples"] == 45
    assert report["trace"]["comm_samples"] == 12
    assert [u["kernels"] for u in report["trace"]["not_used"]] == [3]


def run(*args):
    return subprocess.run([MESHSIM, *args], capture_output=True, text=True)


@pytest.mark.parametrize("content,message", [
    ("{not json", "not a JSON trace"),
    ('{"events": []}', "traceEvents: expected an array"),
    ('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": -1, "dur": 1}]}',
     "traceEvents[0].ts"),
    ('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}]}',
     "record_shapes=True"),
])
def test_bad_traces_exit_2_with_one_line(tmp_path, content, message):
    trace = tmp_path / "bad.json"
    trace.write_text(content)
    out = tmp_path / "p.json"
    r = run("calibrate", "--from-trace", str(trace), "--out", str(out))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and message in r.stderr
    assert not out.exists()


def test_missing_trace_file(tmp_path):
    r = run("calibrate", "--from-trace", str(tmp_path / "none.json"), "--out",
            str(tmp_path / "p.json"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_compare_kineto_sets_the_trace_beside_the_simulated_step(fitted, tmp_path):
    _, _, _, trace = fitted
    plan = ["--model", "llama3-8b", "--gpus", "8", "--tp", "8", "--gbs", "8", "--seq", "4096"]
    both = tmp_path / "both.json"
    r = subprocess.run([MESHSIM, "compare", "--kineto", str(trace), *plan, "--trace", str(both),
                        "--json"], check=True, capture_output=True, text=True)
    got = json.loads(r.stdout)
    events = json.loads(trace.read_text())["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    # measured: the kernels' own durations, summed per category (the generator's names: cuBLAS
    # GEMMs, flash attention, elementwise copies, NCCL; one optimizer kernel unrecognized)
    def total(pred):
        return sum(e["dur"] for e in kernels if pred(e["name"])) * 1e-6
    measured = {c["category"]: c["measured_s"] for c in got["categories"]}
    assert measured["gemm"] == pytest.approx(total(lambda n: "gemm" in n), rel=1e-9)
    assert measured["attention"] == pytest.approx(total(lambda n: "flash" in n), rel=1e-9)
    assert measured["communication"] == pytest.approx(total(lambda n: n.startswith("nccl")),
                                                      rel=1e-9)
    assert measured["other"] == pytest.approx(total(lambda n: "multi_tensor" in n), rel=1e-9)
    span = (max(e["ts"] + e["dur"] for e in kernels) - min(e["ts"] for e in kernels)) * 1e-6
    assert got["measured_span_s"] == pytest.approx(span, rel=1e-9)
    # simulated: the same step `meshsim step` simulates
    step = json.loads(subprocess.run([MESHSIM, "step", *plan, "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    assert got["simulated_step_s"] == pytest.approx(step["step_time_s"], rel=1e-9)
    names = [e["args"]["name"] for e in json.loads(both.read_text())["traceEvents"]
             if e.get("name") == "process_name"]
    assert "simulated: rank 0 (tp=0)" in names and "measured: rank 0 (profiled)" in names


def test_compare_kineto_refuses_a_rank_outside_the_mesh(fitted):
    _, _, _, trace = fitted
    r = run("compare", "--kineto", str(trace), "--model", "llama3-8b", "--gpus", "8", "--tp", "8",
            "--gbs", "8", "--rank", "8")
    assert r.returncode == 2 and "--rank" in r.stderr and r.stderr.count("\n") == 1


def test_the_checked_in_sample_is_the_generators_output(fitted):
    # data/kineto/ (used by the README's examples) must be what the generator writes today.
    _, _, _, trace = fitted
    assert (ROOT / "data" / "kineto" / "sample_trace.json").read_bytes() == trace.read_bytes()
    assert (json.loads((ROOT / "data" / "kineto" / "sample_truth.json").read_text()) ==
            json.loads((trace.parent / "truth.json").read_text()))
