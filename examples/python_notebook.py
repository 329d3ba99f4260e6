# %% [markdown]
# # meshsim from Python
#
# A notebook in the percent format (`# %%` cells): open it in Jupyter with jupytext, in VS Code
# or in Spyder, or run it whole with `/usr/bin/python3 examples/python_notebook.py`. It needs the
# meshsim module: `tools/setup.sh` and a built preset (see the README's "Python" section).

# %%
import meshsim

print(meshsim.models())
print(meshsim.hardware_profiles())

# %% [markdown]
# One training step: keyword arguments are `meshsim step`'s flags; the result has the fields of
# `meshsim step --json` (`step_time` is `step_time_s`).

# %%
r = meshsim.step(model="llama3-8b", gpus=16, tp=2, pp=2, cp=2, seq=8192, gbs=16,
                 recompute="selective")
print(f"step {r.step_time:.3f} s, MFU {100 * r.mfu:.1f} %, "
      f"peak memory {r.memory['peak_bytes'] / 1e9:.1f} GB")
print(r.breakdown)

# %% [markdown]
# Models and hardware profiles are objects: change a field and pass them back.

# %%
model = meshsim.model("llama3-8b")
print(f"{model.name}: {model.parameters / 1e9:.2f} B parameters")
deeper = model.replace(name="llama3-8b-48L", layers=48)
print(f"{deeper.name}: {deeper.parameters / 1e9:.2f} B parameters, "
      f"step {meshsim.step(model=deeper, gpus=16, tp=2, pp=2, cp=2, gbs=16).step_time:.3f} s")

hw = meshsim.hardware("h100-sxm")
print(hw.name, hw.gpus_per_node, "GPUs per node")

# %% [markdown]
# A sweep: lists are the sweep's comma-separated lists; one row per valid plan.

# %%
rows = meshsim.sweep(model="llama3-8b", gpus=16, tp=[2, 4], pp=[1, 2], cp=[1, 2], vp=[1],
                     mbs=[1], schedule=["1f1b"], seq=4096, gbs=32)
best = min((row for row in rows if row.step_time is not None), key=lambda row: row.step_time)
print(f"{len(rows)} plans; fastest: tp {best.tp} pp {best.pp} cp {best.cp} dp {best.dp}, "
      f"{best.step_time:.3f} s")

# %%
try:
    import pandas  # noqa: F401
except ImportError:
    print("pandas is not installed: to_pandas() needs it (apt install python3-pandas)")
else:
    print(rows.to_pandas()[["tp", "pp", "cp", "dp", "step_time_s", "mfu", "mem_gb"]])
