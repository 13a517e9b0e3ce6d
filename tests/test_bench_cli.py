"""`minigrad bench`: arguments, errors, the JSON it writes, a tiny run end to end. Never timings."""

import json
import sys
import types

import pytest

import minigrad
from minigrad.__main__ import main as top_main
from minigrad.bench import cli
from minigrad.bench.suites import SUITES, models

TINY = ["--repeat", "2", "--min-time", "0.0002", "--max-size", "4096", "--threads", "1", "--no-progress"]


def bench(*args):
    return top_main(["bench", *args])


def test_defaults_select_every_suite_and_both_peers():
    args = cli.parse_args([])
    assert args.suites == list(SUITES)
    assert args.peers == ["torch", "numpy"]
    assert not args.quick and args.threads is None and args.json is None


def test_suites_peers_and_numbers_are_parsed():
    args = cli.parse_args(["matmul", "elementwise", "matmul", "--quick", "--threads", "3", "--compare", "numpy",
                           "--repeat", "4", "--min-time", "0.5", "--max-size", "100"])
    assert args.suites == ["matmul", "elementwise"]
    assert args.peers == ["numpy"] and args.quick and args.threads == 3
    assert (args.repeat, args.min_time, args.max_size) == (4, 0.5, 100)


def test_every_suite_named_in_the_issue_exists():
    assert set(SUITES) == {"elementwise", "reduce", "matmul", "conv", "overhead", "train", "memory", "gpu"}


@pytest.mark.parametrize("argv, words", [
    (["nosuch"], "unknown suite 'nosuch'"),
    (["--compare", "torch,jax"], "unknown peer 'jax'"),
    (["--threads", "0"], "expected a positive number"),
    (["--threads", "two"], "expected a positive number"),
    (["--repeat", "-1"], "expected a positive number"),
    (["--min-time", "0"], "expected a positive number"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_arguments_exit_2_with_a_message(argv, words, capsys):
    assert bench(*argv) == 2
    err = capsys.readouterr().err
    assert words in err and "usage: minigrad bench" in err


def test_unknown_command_and_help(capsys):
    assert top_main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err
    assert top_main(["bench", "--help"]) == 0
    assert "--compare" in capsys.readouterr().out


def test_list_names_every_suite(capsys):
    assert bench("--list") == 0
    out = capsys.readouterr().out
    assert all(name in out for name in SUITES)


def test_plot_without_matplotlib_is_refused_before_running(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert bench("overhead", "--plot", str(tmp_path / "p.png")) == 2
    assert "pip install 'minigrad[plot]'" in capsys.readouterr().err
    assert not (tmp_path / "p.png").exists()


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One tiny run of the timing suites with every output (shared by the schema tests)."""
    d = tmp_path_factory.mktemp("bench")
    paths = {k: d / name for k, name in (("json", "run.json"), ("plot", "run.png"), ("md", "run.md"))}
    rc = bench("elementwise", "reduce", "matmul", "overhead", "gpu", *TINY, "--json", str(paths["json"]),
               "--plot", str(paths["plot"]), "--markdown", str(paths["md"]))
    return rc, paths, json.loads(paths["json"].read_text())


def test_tiny_run_succeeds_and_writes_every_file(tiny_run):
    rc, paths, _ = tiny_run
    assert rc == 0
    assert paths["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = paths["md"].read_text()
    assert md.startswith("| suite | case | minigrad | torch | numpy | mg/torch | mg/numpy |")


def test_json_describes_the_machine_and_the_configuration(tiny_run):
    _, _, run = tiny_run
    assert run["schema"] == "minigrad-bench/1"
    m = run["machine"]
    for key in ("python", "platform", "cpu", "cores_available", "minigrad", "minigrad_debug_build", "threads",
                "peers", "copy_bandwidth_gbps"):
        assert key in m
    assert m["threads"]["requested"] == 1 and "RAYON_NUM_THREADS=1" in m["threads"]["minigrad"]
    assert set(m["peers"]) == {"torch", "numpy"} and m["copy_bandwidth_gbps"] > 0
    c = run["config"]
    assert c["libraries"] == ["minigrad", "torch", "numpy"]
    assert (c["rounds"], c["sample_s"], c["max_size"], c["threads"]) == (2, 0.0002, 4096, 1)
    assert run["errors"] == [] and run["duration_s"] > 0


def test_json_holds_every_raw_figure(tiny_run):
    _, _, run = tiny_run
    results = run["results"]
    assert {r["suite"] for r in results} == {"elementwise", "reduce", "matmul", "overhead"}
    for r in results:
        assert r["kind"] == "time" and set(r) >= {"suite", "case", "params", "metrics", "ratios"}
        assert "minigrad" in r["metrics"]
        for lib, m in r["metrics"].items():
            assert len(m["samples_s"]) == 2 and m["inner_loops"] >= 1
            assert m["min_s"] <= m["median_s"] <= m["max_s"]
        for peer in ("torch", "numpy"):
            if peer in r["metrics"]:
                assert r["ratios"][f"minigrad/{peer}"] == pytest.approx(
                    r["metrics"]["minigrad"]["median_s"] / r["metrics"][peer]["median_s"])
    # --max-size 4096 keeps only 1e3-element elementwise cases; each op in and out of place
    elementwise = [r for r in results if r["suite"] == "elementwise"]
    assert {r["params"]["numel"] for r in elementwise} == {1000}
    assert {(r["params"]["op"], r["params"]["inplace"]) for r in elementwise} == {
        (op, ip) for op in ("relu", "tanh", "add", "mul", "add_row") for ip in (False, True)}
    add = next(r for r in elementwise if r["params"] == {"op": "add", "numel": 1000, "inplace": False, "dtype": "float32"})
    assert add["bytes_per_call"] == 12000
    assert all(m["gbps"] > 0 and m["fraction_of_copy_bandwidth"] > 0 for m in add["metrics"].values())
    mm = next(r for r in results if r["suite"] == "matmul")
    assert mm["flops_per_call"] == 2 * mm["params"]["n"] ** 3 and mm["metrics"]["minigrad"]["gflops"] > 0
    # autograd overheads have no NumPy counterpart
    chain = next(r for r in results if r["case"] == "chain 100 ops fwd+bwd")
    assert set(chain["metrics"]) == {"minigrad", "torch"} and "minigrad/numpy" not in chain["ratios"]


def test_gpu_suite_says_why_it_skipped(tiny_run):
    _, _, run = tiny_run
    (gpu,) = [s for s in run["skipped"] if s["suite"] == "gpu"]
    assert "CuPy is not installed" in gpu["reason"] or "no CUDA" in gpu["reason"]
    assert "this minigrad has no CUDA backend" in gpu["reason"]


def test_missing_peer_is_reported_and_left_out(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    out = tmp_path / "r.json"
    assert bench("overhead", *TINY, "--json", str(out)) == 0
    err = capsys.readouterr().err
    assert "peer 'torch' is not installed" in err and "pip install torch" in err
    run = json.loads(out.read_text())
    assert run["config"]["libraries"] == ["minigrad", "numpy"]
    assert all("torch" not in r["metrics"] for r in run["results"])


def test_suites_needing_nn_say_skipped_when_minigrad_lacks_it(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(minigrad, "nn", types.SimpleNamespace(), raising=False)
    monkeypatch.delattr(minigrad, "optim", raising=False)
    out = tmp_path / "r.json"
    assert bench("conv", "train", *TINY, "--json", str(out)) == 0
    err = capsys.readouterr().err
    assert "conv: skipped: minigrad.nn is not available" in err
    assert "train: skipped: minigrad.nn / minigrad.optim is not available" in err
    run = json.loads(out.read_text())
    assert run["results"] == [] and {s["suite"] for s in run["skipped"]} == {"conv", "train"}


def test_require_names_what_is_missing():
    lib = types.SimpleNamespace(nn=types.SimpleNamespace(Linear=object))
    models.require(lib, ("nn.Linear",))
    with pytest.raises(Exception, match=r"minigrad.nn is not available \(minigrad lacks nn.ReLU, optim.SGD\)"):
        models.require(lib, ("nn.Linear", "nn.ReLU", "optim.SGD"))


def test_model_code_runs_under_torch():
    """The suites' models are written against torch's API; torch itself runs them."""
    import torch

    x = torch.randn(4, 1, 8, 8)
    for adaptive in (True, False):
        assert models.convnet(torch, inplace=True, adaptive_pool=adaptive)(x).shape == (4, 10)
    assert models.mlp(torch)(torch.randn(4, 784)).shape == (4, 10)


def test_memory_suite_counts_exact_gradient_bytes(tmp_path):
    out = tmp_path / "m.json"
    assert bench("memory", "--quick", "--threads", "1", "--no-progress", "--json", str(out)) == 0
    run = json.loads(out.read_text())
    tensor_cases = [r for r in run["results"] if r["params"]["model"] == "mlp_tensor_ops"]
    assert {r["params"]["inplace"] for r in tensor_cases} == {False, True}
    for r in tensor_cases:
        p = r["params"]
        grads = p["depth"] * p["width"] * p["width"] * 4
        for lib in ("minigrad", "torch"):
            m = r["metrics"][lib]
            assert m["retained_bytes"] == grads  # one float32 gradient per weight survives
            assert m["peak_bytes"] >= grads
        assert r["metrics"]["minigrad"]["source"] == "minigrad.memory.track"
        assert r["ratios"]["minigrad/torch"] == r["metrics"]["minigrad"]["peak_bytes"] / r["metrics"]["torch"]["peak_bytes"]
    # the same nn MLP plain, with in-place ReLUs, and checkpointed: checkpointing lowers the peak in
    # both libraries and keeps the same gradients (retained bytes)
    nn_cases = {(r["params"]["inplace"], r["params"]["checkpoint_segments"]): r for r in run["results"]
                if r["params"]["model"] == "mlp_nn"}
    assert len(nn_cases) == 3 and (False, 0) in nn_cases and (True, 0) in nn_cases
    (ckpt_key,) = [k for k in nn_cases if k[1] > 0]
    plain, ckpt = nn_cases[(False, 0)]["metrics"], nn_cases[ckpt_key]["metrics"]
    for lib in ("minigrad", "torch"):
        assert ckpt[lib]["peak_bytes"] < plain[lib]["peak_bytes"]
        assert ckpt[lib]["retained_bytes"] == plain[lib]["retained_bytes"]


def test_python_dash_m_runs_the_cli():
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "minigrad", "bench", "--list"], capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHONPATH": ":".join(sys.path)}, timeout=60)
    assert proc.returncode == 0 and "elementwise" in proc.stdout


def test_the_command_line_bench_runs_with_numpys_blas_threads_idle(tmp_path):
    # OpenBLAS reads OPENBLAS_THREAD_TIMEOUT when it loads; the command sets it by starting again
    import os
    import subprocess

    out = tmp_path / "run.json"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    env["PYTHONPATH"] = ":".join(sys.path)
    proc = subprocess.run([sys.executable, "-m", "minigrad", "bench", "matmul", *TINY, "--compare", "numpy",
                           "--case", "64x64", "--json", str(out)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    run = json.loads(out.read_text())
    assert run["machine"]["openblas_thread_timeout"] == "4"
    assert [r["case"] for r in run["results"]] == ["matmul 64x64"]


def test_case_option_keeps_only_matching_cases(tmp_path):
    out = tmp_path / "run.json"
    assert bench("overhead", *TINY, "--compare", "numpy", "--case", "100 elem", "--case", "nothing such",
                 "--json", str(out)) == 0
    run = json.loads(out.read_text())
    assert run["results"] and all("100 elem" in r["case"] for r in run["results"])
    assert run["config"]["case"] == ["100 elem", "nothing such"]


def test_a_debug_build_is_warned_about(monkeypatch, capsys):
    monkeypatch.setattr(minigrad._C, "_debug_build", True)
    assert bench("overhead", *TINY, "--compare", "numpy") == 0
    assert "WARNING: minigrad's extension is a debug build" in capsys.readouterr().err


def test_the_extension_reports_its_build_type():
    assert isinstance(minigrad._C._debug_build, bool)


def test_nn_suites_run_end_to_end_on_a_library_that_has_nn():
    """torch stands in for a minigrad with nn/optim: every conv, train and nn-memory case builds,
    runs and records figures (the real minigrad runs them once its nn package is merged)."""
    import torch

    from minigrad.bench.peers import Peer
    from minigrad.bench.runner import Context

    ctx = Context(torch, {"torch": Peer("torch", torch)}, quick=True, max_size=float("inf"))
    ran = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the CLI does; an oversubscribed OpenMP pool is very slow
    try:
        _run_nn_cases(ctx, ran)
    finally:
        torch.set_num_threads(threads)
    assert {n for n, _ in ran} == {"conv", "train", "memory"}
    assert {p["model"] for n, p in ran if n == "memory"} == {"mlp_nn", "convnet"}


def _run_nn_cases(ctx, ran):
    from minigrad.bench.runner import run_case

    for name in ("conv", "train", "memory"):
        for case in SUITES[name].cases(ctx):
            if name == "memory":
                if case.params["model"] == "mlp_tensor_ops":
                    continue
                ctx.libs = ["torch"]  # minigrad.memory has no torch counterpart; torch's profiler does
            r = run_case(ctx, name, case, rounds=1, sample_s=1e-4, copy_gbps=10.0)
            ctx.libs = ["minigrad", "torch"]
            ran.append((name, r["params"]))
            for m in r["metrics"].values():
                assert (m["peak_bytes"] > 0 and m["retained_bytes"] > 0) if name == "memory" else m["median_s"] > 0


def test_a_slow_case_gets_fewer_rounds_within_its_budget():
    import time

    from minigrad.bench.timing import compare

    slow = compare({"a": lambda: time.sleep(0.02), "b": lambda: None}, rounds=50, sample_s=0.001, warmup=0,
                   budget_s=0.03)
    assert [len(m["samples_s"]) for m in slow.values()] == [3, 3]  # never fewer than 3
    fast = compare({"a": lambda: None}, rounds=4, sample_s=0.0001, warmup=0, budget_s=100.0)
    assert len(fast["a"]["samples_s"]) == 4  # never more than asked


def test_every_sample_of_every_library_follows_the_same_pause(monkeypatch):
    """The pause that lets a spinning thread pool go idle is symmetric: one sleep of `pause_s`
    before each sample and each calibration, whichever library comes next; none for one library."""
    from minigrad.bench import timing

    events = []
    monkeypatch.setattr(timing.time, "sleep", lambda s: events.append(("pause", s)))

    def timer(fn, loops):
        events.append(("sample", fn()))
        return 1e-3

    timing.compare({"a": lambda: "a", "b": lambda: "b"}, rounds=4, sample_s=1e-3, warmup=0, timer=timer,
                   pause_s=0.25)
    samples = [i for i, e in enumerate(events) if e[0] == "sample"]
    after_pause = [events[i][1] for i in samples if i > 0 and events[i - 1] == ("pause", 0.25)]
    assert after_pause.count("a") == after_pause.count("b") == 4 + 1  # 4 rounds and the calibration
    assert all(e == ("pause", 0.25) for e in events if e[0] == "pause")
    events.clear()
    timing.compare({"a": lambda: "a"}, rounds=4, sample_s=1e-3, warmup=0, timer=timer, pause_s=0.25)
    assert not [e for e in events if e[0] == "pause"]


def test_pause_option_reaches_the_json(tmp_path):
    out = tmp_path / "run.json"
    assert bench("overhead", *TINY, "--compare", "numpy", "--pause", "0.001", "--json", str(out)) == 0
    import json

    assert json.loads(out.read_text())["config"]["pause_s"] == 0.001


def test_a_case_timer_replaces_the_host_clock_and_its_bandwidth_the_hosts():
    """The GPU suite's cases time with CUDA events and compare with the device's copy bandwidth:
    a case's `timer` and `copy_gbps` reach every sample and the GB/s fraction."""
    from minigrad.bench.runner import run_case
    from minigrad.bench.suites._case import TimeCase

    seen = []

    def timer(fn, loops):
        seen.append(loops)
        for _ in range(loops):
            fn()
        return 0.001  # a fixed "device time" per call

    case = TimeCase(name="t", build=lambda ctx: {"minigrad": lambda: None, "torch": lambda: None}, bytes=10**6,
                    timer=timer, copy_gbps=4.0)
    rec = run_case(None, "gpu", case, rounds=3, sample_s=0.01, copy_gbps=100.0)
    assert seen and rec["copy_bandwidth_gbps"] == 4.0
    for m in rec["metrics"].values():
        assert m["median_s"] == 0.001 and m["gbps"] == pytest.approx(1.0)
        assert m["fraction_of_copy_bandwidth"] == pytest.approx(0.25)
    assert rec["ratios"]["minigrad/torch"] == 1.0


def test_an_output_in_a_missing_folder_is_refused_before_running(capsys, tmp_path):
    assert bench("overhead", "--json", str(tmp_path / "nope" / "r.json")) == 2
    assert "--json: the folder of" in capsys.readouterr().err


def test_a_failing_case_is_reported_and_the_run_goes_on(monkeypatch, capsys, tmp_path):
    from minigrad.bench.suites import matmul

    def broken(ctx, n):
        raise RuntimeError("kernel exploded")
    monkeypatch.setattr(matmul, "_build", broken)
    out = tmp_path / "r.json"
    assert bench("matmul", "overhead", *TINY, "--compare", "numpy", "--json", str(out)) == 1
    assert "matmul: matmul 64x64: error: RuntimeError: kernel exploded" in capsys.readouterr().err
    run = json.loads(out.read_text())
    assert run["errors"] == [{"suite": "matmul", "case": "matmul 64x64", "error": "RuntimeError: kernel exploded"}]
    assert {r["suite"] for r in run["results"]} == {"overhead"}


def test_require_imports_subpackages_and_shows_why_one_is_broken(tmp_path, monkeypatch):
    pkg = tmp_path / "fakelib"
    (pkg / "nn").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "nn" / "__init__.py").write_text("Linear = object\n")
    (pkg / "optim").mkdir()
    (pkg / "optim" / "__init__.py").write_text("from .nothing_here import SGD\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    lib = importlib.import_module("fakelib")
    models.require(lib, ("nn.Linear",))  # imported on demand, as `import torch` gives torch.nn
    with pytest.raises(Exception, match=r"lacks optim.SGD; importing fakelib.optim failed: ModuleNotFoundError"):
        models.require(lib, ("nn.Linear", "optim.SGD"))


def test_without_rich_the_table_is_plain_text(monkeypatch, capsys):
    for name in [m for m in sys.modules if m == "rich" or m.startswith("rich.")] + ["rich", "tqdm"]:
        monkeypatch.setitem(sys.modules, name, None)
    assert top_main(["bench", "overhead", *TINY[:-1], "--compare", "numpy"]) == 0  # progress bar on
    out = capsys.readouterr().out
    assert "suite     case" in out and "mg/numpy" in out and "add 1 elem" in out
