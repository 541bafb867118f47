"""Issue 31: fwcore as its users' tools expect it, checked the way a user would use them
from a fresh clone (each test that needs an optional package skips, naming it):
scikit-learn's model selection on the learners, mypy on a user's snippet, the command
line and every example of its help, model files written by pyAgrum and pgmpy (the
shipped copies in ``tests/data`` always; fresh ones when the peers are installed),
evidence by name on a converted pgmpy network, the README's docs command, a clear
message when fwcore is imported from an unbuilt source tree, and short result reprs on
a 100x100 grid."""
import contextlib
import dataclasses
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import fwcore
from fwcore.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
#: the folder holding the fwcore these tests import (the installed one, or a checkout
#: built in place): subprocesses run it, from another folder
IMPORTED = str(Path(fwcore.__file__).resolve().parents[1])


def _run(args, cwd, **kwargs):
    """``python ARGS`` in ``cwd`` on the fwcore these tests import."""
    env = {**os.environ, "PYTHONPATH": IMPORTED}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd,
                          env=env, **kwargs)


# -- scikit-learn -----------------------------------------------------------------------

def test_grid_search_over_a_learner():
    pytest.importorskip("sklearn", reason="scikit-learn is not installed (pip install "
                        "'fwcore[sklearn]')")
    from sklearn.model_selection import GridSearchCV
    from fwcore.learn import CRF, SSVM
    from fwcore.learn.datasets import synthetic_segmentation
    X, Y = synthetic_segmentation(6, size=5, seed=0)
    search = GridSearchCV(SSVM(max_iter=3, model=CRF(oracle="qpbo")), {"reg": [0.01, 1.0]},
                          cv=2).fit(X, Y)
    assert set(search.cv_results_["param_reg"]) == {0.01, 1.0}
    assert repr(search.best_estimator_).startswith("SSVM(max_iter=3, model=CRF(")


# -- mypy -------------------------------------------------------------------------------

_SNIPPET = """\
    import numpy as np
    import fwcore
    from fwcore.learn import CRF, SSVM
    from fwcore.learn.datasets import synthetic_segmentation

    m = fwcore.random_grid(3, 3, seed=0)
    res = fwcore.barrier_fw(m, oracle="exact", max_time=10.0)
    best = fwcore.infer_map(m, method="icm", max_time=1.0)
    lz: float = res.log_z_upper + best.score + fwcore.exact_inference(m).log_z
    fwcore.write_uai(m, "m.uai")
    fwcore.write_mar("m.MAR", fwcore.read_mar("m.MAR"))
    m2 = fwcore.apply_evidence(fwcore.read_uai("m.uai"), fwcore.read_evid("m.evid"))
    X, Y = synthetic_segmentation(2, size=4, seed=0)
    learner = SSVM(reg=0.1, max_iter=2, model=CRF(oracle="qpbo")).fit(X, Y)
    accuracy: float = learner.score(X, Y)
"""


def _mypy(tmp_path, code, *flags):
    """(exit code, output) of mypy on ``code`` against the fwcore these tests import."""
    pytest.importorskip("mypy", reason="mypy is not installed (pip install mypy)")
    (tmp_path / "user.py").write_text(textwrap.dedent(code))
    env = dict(os.environ)
    if (Path(IMPORTED) / "fwcore" / "_kernels.pyx").is_file():  # a checkout, not installed
        env["MYPYPATH"] = IMPORTED  # (mypy finds an installed fwcore by itself)
    run = subprocess.run(
        [sys.executable, "-m", "mypy", *flags, "--follow-imports=silent", "--cache-dir",
         str(tmp_path / "cache"), "user.py"], capture_output=True, text=True, cwd=tmp_path,
        env=env)
    return run.returncode, run.stdout + run.stderr


def test_mypy_catches_a_misspelled_keyword_and_passes_strict_use(tmp_path):
    code, out = _mypy(tmp_path, """\
        import fwcore
        m = fwcore.random_grid(3, 3, seed=0)
        fwcore.barrier_fw(m, orcle="exact")
    """)
    assert code == 1 and 'Unexpected keyword argument "orcle" for "barrier_fw"' in out, out
    code, out = _mypy(tmp_path, _SNIPPET, "--strict")
    assert code == 0, out


# -- the command line -------------------------------------------------------------------

def test_map_of_a_compressed_model_to_stdout(tmp_path):
    fwcore.write_uai(fwcore.random_grid(8, 8, coupling=2.0, seed=0), tmp_path / "model.uai.gz")
    run = _run(["-m", "fwcore", "map", "model.uai.gz", "--max-time", "5", "--out", "-"],
               tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("MAP\n64 ") and len(run.stdout.split()) == 66
    assert "model.uai.gz: 64 variables" in run.stderr and "status " in run.stderr


def _help_examples():
    """Every example command of `fwcore --help` and of each command's help, as argv."""
    commands = []
    for argv in (["--help"], ["exact", "--help"], ["infer", "--help"], ["map", "--help"],
                 ["sample", "--help"], ["mmap", "--help"]):
        text = io.StringIO()
        with contextlib.redirect_stdout(text), pytest.raises(SystemExit):
            main(argv)
        examples = text.getvalue().split("\nexamples:\n")[1].split("\n\n")[0]
        commands += [shlex.split(re.split(r"\s{2,}", line.strip())[0])
                     for line in examples.splitlines()]
    return commands


def test_every_help_example_runs(tmp_path, monkeypatch, capsys):
    examples = _help_examples()
    assert len(examples) >= 10 and all(argv[0] == "fwcore" for argv in examples)
    monkeypatch.chdir(tmp_path)  # the examples' model.uai, model.uai.gz, model.uai.evid
    model = fwcore.random_grid(6, 6, coupling=2.0, seed=0)
    fwcore.write_uai(model, "model.uai")
    fwcore.write_uai(model, "model.uai.gz")
    fwcore.write_evid("model.uai.evid", {0: 1})
    Path("model.uai.query").write_text("3 7 0 20\n")
    for argv in examples:
        assert main(argv[1:]) == 0, (argv, capsys.readouterr().err)
        out = capsys.readouterr().out
        if argv[-2:] == ["--out", "-"]:  # the answer file on stdout, nothing else
            assert out.startswith(("MAP\n", "MAR\n", "MMAP\n3 ", "x0,x1,")) and "score" not in out
    assert fwcore.read_map("model.uai.MAP").shape == (36,)  # --out alone: the model's name
    assert len(fwcore.read_mar("res.MAR")) == 36


# -- model files from peers -------------------------------------------------------------

def test_files_written_by_pyagrum_and_pgmpy():
    """The copies in tests/data: written by pyAgrum 3.3.1 (``gum.saveBN``, ``gum.saveMRF``:
    '#' comments, also after a count on its line, tables printed to 6 digits) and by
    pgmpy 1.1.2's ``UAIWriter`` (a BAYES file whose tables are not in the order of its
    scopes: refused, naming the factor)."""
    with pytest.warns(UserWarning, match="looks written by pyAgrum"):  # a CPT of 2 parents
        bn = fwcore.read_model(DATA / "pyagrum_bn.uai")
    assert abs(fwcore.exact_inference(bn).log_z) < 1e-5   # CPTs: Z = 1 to print precision
    np.testing.assert_allclose(  # LazyPropagation's marginal of its root A
        fwcore.exact_inference(bn).node_marginals[0], [0.4636923, 0.5363077], atol=1e-5)
    # read as the UAI format defines a table (the last variable of the scope fastest);
    # pyAgrum's own loadMRF orders MARKOV tables otherwise, so its marginals differ
    with pytest.warns(UserWarning, match="looks written by pyAgrum"):
        mrf = fwcore.read_model(DATA / "pyagrum_mrf.uai")
    assert (list(mrf.card) == [2, 2, 2, 3] and [s for s, _ in mrf.factors] ==
            [(1, 0, 2), (3, 2), (0, 2)])
    np.testing.assert_allclose(np.exp(mrf.factors[0][1][0, 0]), [0.924199, 0.779945])
    with pytest.raises(ValueError, match=r"pgmpy_sprinkler.uai: line \d+.*factor 2 .* is not "
                                         "a conditional probability table of its child x2"):
        fwcore.read_model(DATA / "pgmpy_sprinkler.uai")


def test_files_written_by_the_installed_pyagrum(tmp_path):
    """A network whose CPTs have at most one parent: pyAgrum's file then follows the UAI
    table order, and the marginals are pyAgrum's (with two or more parents it writes them
    in another order: `fwcore.io.uai`'s docstring)."""
    gum = pytest.importorskip("pyagrum", reason="pyAgrum is not installed (pip install "
                              "'fwcore[pyagrum]')")
    gum.initRandom(5)
    bn = gum.fastBN("A->B[3]->C[4];A->D;B->E")
    gum.saveBN(bn, str(tmp_path / "bn.uai"))
    res = fwcore.exact_inference(fwcore.read_model(tmp_path / "bn.uai"))
    assert abs(res.log_z) < 1e-5
    ie = gum.LazyPropagation(bn)
    ie.makeInference()
    for v in bn.nodes():  # the file's variable v is pyAgrum's node v
        np.testing.assert_allclose(res.node_marginals[v], ie.posterior(v).toarray(), atol=1e-5)


def _sprinkler():
    """The sprinkler network of the pgmpy tutorials, with default state names."""
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork
    bn = DiscreteBayesianNetwork([("Cloudy", "Sprinkler"), ("Cloudy", "Rain"),
                                  ("Sprinkler", "WetGrass"), ("Rain", "WetGrass")])
    bn.add_cpds(TabularCPD("Cloudy", 2, [[0.5], [0.5]]),
                TabularCPD("Sprinkler", 2, [[0.5, 0.9], [0.5, 0.1]], evidence=["Cloudy"],
                           evidence_card=[2]),
                TabularCPD("Rain", 2, [[0.8, 0.2], [0.2, 0.8]], evidence=["Cloudy"],
                           evidence_card=[2]),
                TabularCPD("WetGrass", 2, [[1.0, 0.1, 0.1, 0.01], [0.0, 0.9, 0.9, 0.99]],
                           evidence=["Sprinkler", "Rain"], evidence_card=[2, 2]))
    return bn


def test_pgmpy_network_by_name_and_its_written_file(tmp_path):
    pytest.importorskip("pgmpy", reason="pgmpy is not installed (pip install 'fwcore[pgmpy]')")
    from pgmpy.inference import VariableElimination
    from pgmpy.readwrite import UAIWriter
    bn = _sprinkler()
    model = fwcore.from_pgmpy(bn)
    wet = fwcore.exact_inference(fwcore.apply_evidence(model, {"WetGrass": 1}))
    ve = VariableElimination(bn)
    assert wet.log_z == pytest.approx(np.log(ve.query(["WetGrass"]).values[1]))
    np.testing.assert_allclose(model.named(wet.node_marginals)["Rain"],
                               ve.query(["Rain"], evidence={"WetGrass": 1}).values)
    UAIWriter(bn).write(str(tmp_path / "sprinkler.uai"))
    try:  # pgmpy's writer: correct, or refused with the factor named (never read wrong)
        written = fwcore.read_model(tmp_path / "sprinkler.uai")
    except ValueError as err:
        assert "is not a conditional probability table" in str(err)
    else:
        assert abs(fwcore.exact_inference(written).log_z) < 1e-9


# -- docs and the source tree -----------------------------------------------------------

def test_readme_docs_command_runs_from_the_checkout(tmp_path):
    """The README's ``python -m sphinx -b html docs docs/_build``, run in the checkout (the
    output in a temporary folder), with warnings as errors."""
    for extra in ("sphinx", "matplotlib"):
        pytest.importorskip(extra, reason=f"{extra} is not installed (pip install 'fwcore[docs]')")
    if not (ROOT / "docs" / "conf.py").is_file():
        pytest.skip(f"no docs at {ROOT / 'docs'} (an installed package without its sources)")
    readme = (ROOT / "README.md").read_text()
    assert "python -m sphinx -b html docs docs/_build" in readme
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-E", "-q", "-b", "html", "docs",
                          str(tmp_path / "html")], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "html" / "api.html").is_file()


def test_import_from_an_unbuilt_source_tree_says_so(tmp_path):
    tree = tmp_path / "checkout"
    shutil.copytree(ROOT / "fwcore", tree / "fwcore",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c", "__pycache__"))
    # -S: no site-packages (so no other fwcore, nor numpy: the message comes first)
    run = subprocess.run([sys.executable, "-S", "-c", "import fwcore"], capture_output=True,
                         text=True, cwd=tree)
    assert run.returncode == 1
    assert "fwcore is being imported from its source tree" in run.stderr
    assert "run Python from another folder" in run.stderr


# -- results ----------------------------------------------------------------------------

def test_every_result_type_has_a_short_repr_on_a_100x100_grid():
    grid = fwcore.random_grid(100, 100, coupling=1.0, seed=0)
    comb = fwcore.PairwiseMRF.from_flat(  # the grid's variables on a tree: exact is cheap
        grid.card, [(r * 100 + c, r * 100 + c + 1) for r in range(100) for c in range(99)]
        + [(r * 100, (r + 1) * 100) for r in range(99)],
        np.zeros(int(grid.card.sum()) + 4 * 9999))
    results = [
        fwcore.barrier_fw(grid, oracle="icm", rho_updates=1, max_iter=3,
                     max_time=20),
        fwcore.infer(grid, max_time=5), fwcore.trbp(grid, max_iter=3),
        fwcore.infer_map(grid, method="icm"), fwcore.infer_lp(grid, max_iter=3),
        fwcore.exact_inference(comb),
        fwcore.perturb_and_map(grid, n_samples=1, marginals=None, oracle="icm", seed=0),
        fwcore.mean_field_lower_bound(grid, max_iter=3),
        fwcore.matching_marginals(np.random.default_rng(0).normal(size=(100, 100)),
                                  max_iter=3),
        fwcore.conditioned(grid, lambda m: fwcore.trbp(m, max_iter=2), [0], mean_field=False),
        fwcore.sample(comb, 5, seed=0), fwcore.query(comb, [0, 1, 2]),
        fwcore.infer_mmap(comb, [0, 9999]),
    ]
    domain = fwcore.fw.Simplex(10000)
    objective = fwcore.fw.Quadratic.least_squares(np.eye(10000)[:5], np.ones(5))
    results.append(fwcore.frank_wolfe(objective, domain, max_iter=3))
    produced = {type(r) for r in results}
    every = {obj for obj in vars(fwcore).values()
             if isinstance(obj, type) and fwcore.Result in obj.__mro__ and obj is not fwcore.Result}
    assert every <= produced, every - produced
    for res in results:
        text = repr(res)
        assert len(text.encode()) < 1024, text
        assert text.startswith(type(res).__name__) and "message: " in text
        folded = ("log_z_estimate_lower", "log_z_estimate_upper", "confidence")
        for f in dataclasses.fields(res):  # every field summarised on its own line ...
            if f.name in folded:  # ... but the estimate's interval, on the estimate's
                assert " log_z_estimate: " in text and f" {f.name}: " not in text
            else:
                assert f" {f.name}: " in text
    sampled = next(r for r in results if getattr(r, "log_z_estimate", None) is not None)
    assert (f"log_z_estimate: {sampled.log_z_estimate:.10g}, in "
            f"[{sampled.log_z_estimate_lower:.10g}, ") in repr(sampled)
