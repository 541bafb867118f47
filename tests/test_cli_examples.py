"""The command line, the shipped example models and the python/ example scripts."""
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fwcore
from fwcore.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(fwcore.__file__).resolve().parent / "data"


def test_shipped_examples_are_generated_by_our_script(tmp_path, monkeypatch):
    script = runpy.run_path(str(ROOT / "python" / "make_example_models.py"))
    for name, make in script["EXAMPLES"].items():
        shipped = fwcore.read_uai(DATA / name)
        fresh = make()
        np.testing.assert_array_equal(shipped.edges, fresh.edges)
        np.testing.assert_allclose(shipped.theta, fresh.theta, rtol=1e-12, atol=1e-14)


def test_cli_exact_prints_log_z_and_writes_answers(tmp_path, capsys):
    out = tmp_path / "ans"
    assert main(["exact", str(DATA / "grid5x5.uai"), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    exact = fwcore.exact_inference(fwcore.read_uai(DATA / "grid5x5.uai"))
    assert f"log Z = {exact.log_z:.10g}" in text
    assert abs(fwcore.read_pr(f"{out}.PR") - exact.log_z) < 1e-9
    for a, b in zip(fwcore.read_mar(f"{out}.MAR"), exact.node_marginals):
        np.testing.assert_allclose(a, b, atol=1e-9)


def test_cli_reports_bad_files_without_a_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.uai"
    bad.write_text("MARKOV\n2\n2 2\n1\n1 5\n2\n1 1\n")
    assert main(["exact", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "error" in err and "bad.uai" in err


def test_python_m_fwcore_help(tmp_path):
    # run outside the source tree, so that the installed package (with its kernels) is used
    res = subprocess.run([sys.executable, "-m", "fwcore", "--help"], capture_output=True,
                         text=True, cwd=tmp_path)
    assert res.returncode == 0 and "exact" in res.stdout


@pytest.mark.parametrize("script, args", [
    ("clique_marginals.py", ["--n", "6"]),
    ("large_grid.py", ["--side", "8", "--max-time", "10", "--rho-updates", "1"]),
    ("uai_marginals.py", []),
    ("learn_segmentation.py", []),
    ("paper_large_models.py", ["--size", "6", "--max-time", "2"]),
    ("map_portfolio.py", ["--side", "6", "--max-time", "0.2"]),
])
def test_python_examples_run(script, args, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [script, *args])
    runpy.run_path(str(ROOT / "python" / script), run_name="__main__")
    assert capsys.readouterr().out.strip()


def test_cli_infer_writes_a_certified_bound(tmp_path, capsys):
    out = tmp_path / "inf"
    assert main(["infer", str(DATA / "clique10.uai"), "--quiet", "--rho-updates", "2",
                 "--method", "barrier-fw", "--oracle", "exact", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "(certified" in text
    exact = fwcore.exact_inference(fwcore.read_uai(DATA / "clique10.uai"))
    assert fwcore.read_pr(f"{out}.PR") >= exact.log_z - 1e-9
    assert len(fwcore.read_mar(f"{out}.MAR")) == 10


def test_cli_infer_says_what_its_answer_is(capsys):
    model = str(DATA / "grid5x5.uai")
    assert main(["infer", model, "--quiet"]) == 0  # small: exact marginals
    assert "exact marginals by elimination" in capsys.readouterr().out
    main(["infer", model, "--quiet", "--method", "barrier-fw", "--oracle", "icm",
          "--rho-updates", "1"])
    text = capsys.readouterr().out
    # ICM proves no bound; the tree-decomposition bound certifies one anyway
    assert "(certified" in text and "status converged" not in text


def test_cli_map_writes_the_optimum(tmp_path, capsys):
    out = tmp_path / "map"
    assert main(["map", str(DATA / "grid5x5.uai"), "--out", str(out)]) == 0
    model = fwcore.read_uai(DATA / "grid5x5.uai")
    assert np.isclose(model.score(fwcore.read_map(f"{out}.MAP")), fwcore.exact_map(model).score)
    assert main(["map", str(DATA / "grid5x5.uai"), "--method", "nope"]) == 2
    assert "valid" in capsys.readouterr().err


def test_readme_python_blocks_run():
    import re
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    namespace = {}  # later blocks use the names of earlier ones
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)


def test_readme_has_no_relative_links():
    """PyPI shows the README away from the repository: a relative link or image breaks."""
    import re
    text = (ROOT / "README.md").read_text()
    assert re.findall(r"\]\((?!https?://)([^)]*)\)", text) == []


def test_cli_writes_its_files_and_exits_quietly_when_stdout_closes(tmp_path):
    # a 6000-variable chain (exact marginals at once): --all prints over the 64 KiB a pipe
    # holds, so `head -1` closes it while the marginals are printed
    n = 6000
    chain = fwcore.PairwiseMRF(np.full(n, 2), np.zeros((n, 2)),
                               np.stack([np.arange(n - 1), np.arange(1, n)], axis=1),
                               [np.array([[1.0, 0.0], [0.0, 1.0]])] * (n - 1))
    fwcore.write_uai(chain, str(tmp_path / "chain.uai"))
    cmd = f"{sys.executable} -m fwcore infer chain.uai --quiet --all --out res | head -1"
    res = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True,
                         text=True, cwd=tmp_path)
    assert res.stdout.startswith("chain.uai: 6000 variables")
    assert res.returncode == 141 and res.stderr == ""
    assert (tmp_path / "res.MAR").exists() and (tmp_path / "res.PR").exists()


def test_example_models_are_reachable_from_the_package():
    script = runpy.run_path(str(ROOT / "python" / "make_example_models.py"))
    assert fwcore.datasets.names() == tuple(sorted(Path(n).stem for n in script["EXAMPLES"]))
    for name in fwcore.datasets.names():
        assert fwcore.datasets.path(name) == DATA / f"{name}.uai"
        np.testing.assert_array_equal(fwcore.datasets.load(name).theta,
                                      fwcore.read_uai(DATA / f"{name}.uai").theta)
    with pytest.raises(ValueError, match="valid names: clique10, grid5x5"):
        fwcore.datasets.path("grid6x6")


def test_readme_first_command_runs_outside_the_tree(tmp_path):
    # `fwcore infer --example grid5x5`, from a folder with no model in it
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert "pip install . && fwcore infer --example grid5x5\n" in readme
    res = subprocess.run([sys.executable, "-m", "fwcore", "infer", "--example", "grid5x5",
                          "--quiet"], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "25 variables" in res.stdout and "exact marginals" in res.stdout
    assert "log Z = " in res.stdout


def test_cli_version_and_help(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"fwcore {fwcore.__version__}\n"
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "fwcore infer --example grid5x5" in text and "PREFIX.MAR" in text
    assert "130  interrupted" in text
    with pytest.raises(SystemExit) as stop:  # a model file and --example: which one?
        main(["infer", str(DATA / "grid5x5.uai"), "--example", "grid5x5"])
    assert stop.value.code == 2


def test_progress_bar_counts_seconds_and_waits_for_valid_arguments(capsys):
    pytest.importorskip("tqdm", reason="tqdm is not installed (pip install 'fwcore[progress]')")
    model = str(DATA / "clique10.uai")
    barrier_fw = ["--method", "barrier-fw", "--oracle", "exact", "--rho-updates", "2"]
    assert main(["infer", model, *barrier_fw, "--tol", "-1"]) == 2
    assert capsys.readouterr().err == "fwcore infer: error: tol must be a number > 0; got -1\n"
    assert main(["infer", model, *barrier_fw, "--max-time", "30"]) == 0
    last = capsys.readouterr().err.split("\r")[-1]
    assert last.startswith("fwcore: ") and "/30 s, rho 2" in last and "proven gap" in last


def test_progress_lines_without_tqdm_and_none_when_quiet(tmp_path, capsys, monkeypatch):
    import fwcore.cli
    monkeypatch.setattr(fwcore.cli, "_tqdm", lambda: None)
    model = str(DATA / "clique10.uai")
    assert main(["infer", model, "--method", "barrier-fw", "--oracle", "exact",
                 "--rho-updates", "1"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("fwcore: rho 0 it 0") and err[-1].startswith("fwcore: rho 1 ")
    assert "-" not in "".join(line.split("gap")[1][:3] for line in err if "gap" in line)
    grid = str(tmp_path / "grid.uai")  # too large for exact elimination in 0.5 s
    fwcore.write_uai(fwcore.random_grid(30, 30, coupling=2.0, seed=0), grid)
    assert main(["map", grid, "--method", "portfolio", "--max-time", "0.5"]) == 0
    assert capsys.readouterr().err.startswith("fwcore: ")
    assert main(["infer", model, "--quiet"]) == 0 and capsys.readouterr().err == ""
    monkeypatch.setattr(fwcore.cli, "_HINT_AFTER", 0.0)  # a run without --max-time says it
    assert main(["infer", model, "--method", "barrier-fw", "--oracle", "exact",
                 "--rho-updates", "1"]) == 0
    assert "--max-time SECONDS bounds a run" in capsys.readouterr().err

