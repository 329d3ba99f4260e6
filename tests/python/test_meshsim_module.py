"""Tests of the meshsim Python module (python/meshsim_module.cpp), run by CTest with the module's
build folder on PYTHONPATH and the CLI binary in $MESHSIM: the module must give exactly what the
CLI prints, since both run the same C++ command."""

import json
import os
import re
import subprocess

import pytest

import meshsim

MESHSIM = os.environ["MESHSIM"]


def cli_json(*args):
    out = subprocess.run([MESHSIM, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_step_time_is_the_clis():
    # The done-when: meshsim.step(model='llama3-8b', gpus=8).step_time prints the number
    # `meshsim step --model llama3-8b --gpus 8 --json` gives as step_time_s (same code, same double).
    r = meshsim.step(model="llama3-8b", gpus=8)
    cli = cli_json("step", "--model", "llama3-8b", "--gpus", "8")
    assert r.step_time == cli["step_time_s"]
    assert r.step_time_s == cli["step_time_s"]
    assert repr(r.step_time) == repr(cli["step_time_s"])


def test_step_has_the_json_fields():
    args = dict(model="llama3-8b", gpus=16, tp=2, pp=2, cp=2, seq=8192, gbs=16,
                recompute="selective")
    r = meshsim.step(**args)
    cli = cli_json("step", "--model", "llama3-8b", "--gpus", "16", "--tp", "2", "--pp", "2",
                   "--cp", "2", "--seq", "8192", "--gbs", "16", "--recompute", "selective")
    assert r.keys() == list(cli.keys())
    for key in ("step_time_s", "tokens_per_s", "mfu", "memory", "breakdown", "critical_path",
                "plan", "ops"):
        assert r[key] == cli[key], key
    # dp is what is left of 16 GPUs after tp x pp x cp = 8.
    assert r.plan["dp"] == 2
    assert r.world_size == 16


def test_flags_from_keywords():
    # no_fold=True is --no-fold; the unfolded step builds all 8 ranks instead of tp index 0 (1 of
    # 8), and folding is exact, so the step time is the same (README: equal to the nanosecond).
    folded = meshsim.step(model="llama3-8b", gpus=8, tp=8, gbs=8)
    unfolded = meshsim.step(model="llama3-8b", gpus=8, tp=8, gbs=8, no_fold=True, trace=None)
    assert unfolded.plan["fold_tp"] is False
    assert unfolded.ops == 8 * folded.ops
    assert unfolded.step_time == pytest.approx(folded.step_time, abs=1e-9)


def test_bad_input_is_an_input_error_naming_the_flag():
    # 8 GPUs do not split over tp 3: the CLI's own message (exit 2 there), a ValueError here.
    with pytest.raises(meshsim.InputError, match=r"--gpus 8 must be divisible by --tp x --pp x"):
        meshsim.step(model="llama3-8b", gpus=8, tp=3)
    with pytest.raises(ValueError, match=r"unknown flag --bogus"):
        meshsim.step(bogus=1)
    # A flag that takes a value given as a switch is refused as such, not fed --json.
    with pytest.raises(meshsim.InputError) as bad_switch:
        meshsim.step(model="llama3-8b", gpus=16, tp=True)
    assert "--tp" in str(bad_switch.value) and "--json" not in str(bad_switch.value)
    with pytest.raises(meshsim.InputError, match="help: not a keyword"):
        meshsim.step(help=True)
    assert not hasattr(meshsim.step(model="llama3-8b", gpus=8), "no_such_field")


def test_model_objects():
    m = meshsim.model("llama3-8b")
    assert m.layers == 32 and m.hidden == 4096 and m.kv_heads == 8
    # Llama 3 8B: 8.03B parameters (model card). Exactly, with h 4096, 32 layers, 32 heads, 8 KV
    # heads, FFN 14336, vocabulary 128256, untied: 32 x (2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096
    # x 14336 + 2 x 4096) + 2 x 128256 x 4096 + 4096 = 8,030,261,248.
    assert m.parameters == 8_030_261_248
    # Half the layers: 16 fewer layers of 218,112,000 parameters each.
    half = m.replace(layers=16, name="llama3-8b-half")
    assert half.parameters == 8_030_261_248 - 16 * 218_112_000
    r = meshsim.step(model=half, gpus=8)
    assert r.plan["model"] == "llama3-8b-half"
    assert r.step_time < meshsim.step(model="llama3-8b", gpus=8).step_time
    with pytest.raises(meshsim.InputError, match="kv_heads"):
        m.replace(kv_heads=5)
    assert "llama3-70b" in meshsim.models()


def test_profile_objects():
    hw = meshsim.hardware("h100-sxm")
    assert hw.name == "h100-sxm"
    # The same profile as an object gives the same step as by name.
    by_name = meshsim.step(model="llama3-8b", gpus=8, hardware="h100-sxm")
    by_object = meshsim.step(model="llama3-8b", gpus=8, hardware=hw)
    assert by_object.step_time == by_name.step_time
    assert "h100-sxm" in meshsim.hardware_profiles()


SWEEP = dict(model="llama3-8b", gpus=16, tp=[2, 4], pp=[1, 2], cp=[1, 2], vp=[1], mbs=[1],
             schedule=["1f1b"], seq=4096, gbs=32, jobs=2)


def test_sweep_rows_are_the_clis():
    rows = meshsim.sweep(**SWEEP)
    cli = cli_json("sweep", "--model", "llama3-8b", "--gpus", "16", "--tp", "2,4", "--pp", "1,2",
                   "--cp", "1,2", "--vp", "1", "--mbs", "1", "--schedule", "1f1b", "--seq",
                   "4096", "--gbs", "32", "--jobs", "2")
    # tp 2,4 x pp 1,2 x cp 1,2 = 8 combinations, all valid on 16 GPUs (tp x pp x cp <= 16).
    assert len(rows) == 8
    assert rows.rows == cli["rows"]
    assert rows[0].tp == 2 and rows[-1].tp == 4
    with pytest.raises(IndexError):
        rows[8]


def test_sweep_rejections_and_explain():
    # mbs 3 never divides gbs 32 over dp x 3 (dp 2, 4 or 8): 4 combinations break rule gbs-dp-mbs.
    rows = meshsim.sweep(**dict(SWEEP, mbs=[1, 3], cp=[1]))
    assert rows.rejected["counts"] == {"gbs-dp-mbs": 4}
    assert rows.rejected["combinations"][0]["reason"].startswith(
        "--gbs 32 must be divisible by dp x --mbs = 24")
    e = meshsim.explain(model="llama3-8b", gpus=8, seq=2048, gbs=8)
    cli = cli_json("explain", "--model", "llama3-8b", "--gpus", "8", "--seq", "2048", "--gbs", "8")
    assert e.to_dict() == cli
    assert e.baseline_step_time == meshsim.step(model="llama3-8b", gpus=8, seq=2048,
                                                gbs=8).step_time


def test_to_pandas():
    pd = pytest.importorskip("pandas")
    r = meshsim.step(model="llama3-8b", gpus=8)
    frame = r.to_pandas()
    assert len(frame) == 1
    assert frame["step_time_s"][0] == r.step_time
    assert frame["plan.tp"][0] == 8
    rows = meshsim.sweep(**SWEEP).to_pandas()
    assert isinstance(rows, pd.DataFrame) and len(rows) == 8
    assert list(rows["tp"]) == [row["tp"] for row in meshsim.sweep(**SWEEP).rows]


def test_readme_python_examples_run():
    # Every ```python block of the README runs (in order, one namespace).
    with open(os.environ["MESHSIM_README"], encoding="utf-8") as f:
        blocks = re.findall(r"^```python\n(.*?)^```", f.read(), flags=re.S | re.M)
    assert blocks
    namespace = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)


def test_notebook_example_runs():
    import runpy
    root = os.path.dirname(os.environ["MESHSIM_README"])
    runpy.run_path(os.path.join(root, "examples", "python_notebook.py"), run_name="__main__")


def test_hugging_face_config():
    # data/hf/Meta-Llama-3-8B holds the Hub's config.json: the built-in llama3-8b's shape, so the
    # same 8,030,261,248 parameters (the card's 8.03B) and the same step to the last bit.
    folder = os.path.join(os.path.dirname(os.environ["MESHSIM_README"]), "data", "hf",
                          "Meta-Llama-3-8B")
    m = meshsim.model(folder)
    assert m.name == "Meta-Llama-3-8B"
    assert m.parameters == 8_030_261_248
    assert (meshsim.step(model=folder, gpus=8).step_time
            == meshsim.step(model="llama3-8b", gpus=8).step_time)
    # Mixtral's config is the built-in mixtral-8x7b's shape: the card's 46.7B parameters.
    mixtral = meshsim.model(os.path.join(os.path.dirname(folder), "Mixtral-8x7B-v0.1"))
    assert mixtral.parameters == meshsim.model("mixtral-8x7b").parameters == 46_702_792_704
