"""Tried as a new user would (issue 38, "Answers that read wrong"): each bullet of the
issue's list, run the way the user ran it, and the answer that now reads right.

1. `plot_trace` drew no lower bound, and a "primal + gap" line above the upper bound;
2. the message said "proven gap 841" while the certified interval was 71.6 nats wide;
3. the `.PR` file `fwcore infer` writes held log10 of the upper bound, nothing said so;
4. every `max_time` run had ``success=False`` whatever it proved;
5. `fwcore infer model.uai --option time_limit=3` silently switched `auto` to Barrier FW;
6. `fwcore map --option foo=1` listed `time_limit`, then refused `--option time_limit=...`.
"""
import math
import re

import numpy as np
import pytest

import fwcore
from fwcore.cli import main
from fwcore.results import Status

#: a 14x14 grid past exact reach at this memory (its elimination needs ~50 MB), answered
#: by weighted mini-bucket with both bounds, samples and an estimate
MEMORY = 2**22


@pytest.fixture(scope="module")
def grid():
    return fwcore.random_grid(14, 14, coupling=1.0, seed=0)


@pytest.fixture(scope="module")
def exact_log_z(grid):
    return fwcore.exact_inference(grid).log_z


@pytest.fixture(scope="module")
def budget_run(grid):
    """A run stopped by its time budget, past exact reach."""
    return fwcore.infer(grid, method="wmb", memory_limit=MEMORY, max_time=2.0, seed=0)


def numbers(text):
    return [float(x) for x in re.findall(r"-?\d+\.\d+(?:e[+-]?\d+)?", text)]


def test_1_plot_trace_draws_both_bounds_and_the_estimate(budget_run):
    pytest.importorskip("matplotlib", reason="the plots need matplotlib (pip install "
                        "'fwcore[plot]')")
    import matplotlib
    matplotlib.use("Agg")
    from fwcore.plot import plot_trace
    ax = plot_trace(budget_run)
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert {"certified upper bound", "certified lower bound"} <= set(lines)
    assert not any("gap" in label for label in lines)       # no estimate drawn as a bound
    upper, lower = lines["certified upper bound"], lines["certified lower bound"]
    assert upper.get_ydata()[-1] == pytest.approx(budget_run.log_z_upper)
    assert lower.get_ydata()[-1] == pytest.approx(budget_run.log_z_lower)
    assert (np.asarray(upper.get_ydata()) >= budget_run.log_z_upper - 1e-9).all()
    labels = ax.get_legend_handles_labels()[1]
    assert "sampled estimate (0.95 interval)" in labels
    estimate = [c for c in ax.containers if c.get_label().startswith("sampled")][0]
    assert estimate.lines[0].get_ydata()[0] == pytest.approx(budget_run.log_z_estimate)


def test_2_the_message_states_the_certified_interval(budget_run, exact_log_z):
    res = budget_run
    text = res.message
    assert res.log_z_lower <= exact_log_z <= res.log_z_upper
    width = res.log_z_upper - res.log_z_lower
    # the interval is written out, its width (the proven gap, res.gap) said once
    assert res.gap == pytest.approx(width) and text.count(f"{width:.3g}") == 1
    interval = f"{res.log_z_lower:.10g} <= log Z <= {res.log_z_upper:.10g}"
    assert f"{interval} (certified, width {width:.3g})" in text
    assert f"log Z ~ {res.log_z_estimate:.10g}" in text and "(sampled)" in text


def test_2_on_a_shared_model_with_evidence(instances):
    folder = instances / "uai2014-beyond"
    model = fwcore.read_model(folder / "Promedus_17.uai")
    evidence = fwcore.read_evid(folder / "Promedus_17.uai.evid")
    log_z = fwcore.read_pr(folder / "Promedus_17.uai.PR")
    res = fwcore.infer(fwcore.apply_evidence(model, evidence), max_time=10.0, seed=0)
    assert res.log_z_lower - 1e-6 <= log_z <= res.log_z_upper + 1e-6
    width = res.log_z_upper - res.log_z_lower
    assert f"certified, width {width:.3g}" in res.message
    assert res.gap == pytest.approx(width) and res.success


def test_3_the_pr_file_is_documented_and_the_bounds_written_beside_it(grid, exact_log_z,
                                                                      tmp_path, capsys):
    fwcore.write_uai(grid, tmp_path / "g.uai")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "PREFIX.PR   log10 of Z (exact) or of the upper bound on Z" in \
        capsys.readouterr().out
    out = tmp_path / "res"
    assert main(["infer", str(tmp_path / "g.uai"), "--method", "wmb", "--memory-limit",
                 str(MEMORY), "--max-time", "2", "--seed", "0", "--quiet", "--out",
                 str(out)]) == 0
    said = capsys.readouterr().out
    assert f"{out}.PR (log10 of the upper bound on Z) and {out}.BOUNDS" in said
    rows = {line.split()[0]: line.split(maxsplit=3)
            for line in (tmp_path / "res.BOUNDS").read_text().splitlines()
            if not line.startswith("#")}
    assert set(rows) == {"log_z_lower", "log_z_upper", "log_z_estimate",
                         "log_z_estimate_lower", "log_z_estimate_upper"}
    ln = {k: float(v[1]) for k, v in rows.items()}
    for k, v in rows.items():
        assert float(v[2]) == pytest.approx(ln[k] / math.log(10), rel=1e-12)
    assert fwcore.read_pr(f"{out}.PR") == pytest.approx(ln["log_z_upper"], rel=1e-12)
    assert "the .PR value" in rows["log_z_upper"][3]
    assert ln["log_z_lower"] <= exact_log_z <= ln["log_z_upper"]
    assert ln["log_z_estimate_lower"] <= ln["log_z_estimate"] <= ln["log_z_estimate_upper"]
    assert "probability 0.95" in rows["log_z_estimate_upper"][3]
    # an exact answer: one line, log Z itself
    assert main(["exact", str(tmp_path / "g.uai"), "--out", str(tmp_path / "ex")]) == 0
    lines = (tmp_path / "ex.BOUNDS").read_text().splitlines()[1:]
    assert len(lines) == 1 and lines[0].startswith("log_z ")
    assert float(lines[0].split()[1]) == pytest.approx(exact_log_z, rel=1e-12)


def test_4_a_budget_stopped_certified_run_is_a_success(budget_run, grid):
    assert budget_run.status is Status.MAX_TIME and budget_run.certified
    assert budget_run.success and "stopped at the time limit" in budget_run.message
    mmap = fwcore.infer_mmap(grid, [0, 17, 100, 195], memory_limit=MEMORY, max_time=1.0,
                             seed=0)
    assert mmap.status is Status.MAX_TIME and mmap.certified and mmap.success
    sampled = fwcore.sample(grid, 5000, seed=0, memory_limit=MEMORY, max_time=0.5)
    # its bounds' passes stop at the time limit, or earlier when they stop tightening (CI)
    assert sampled.status in (Status.MAX_TIME, Status.STALLED) and sampled.success


def test_5_options_never_switch_auto_silently(grid, tmp_path, capsys):
    fwcore.write_uai(grid, tmp_path / "g.uai")
    assert main(["infer", str(tmp_path / "g.uai"), "--option", "time_limit=3"]) == 2
    assert "--option configures the MAP oracle given by --oracle" in capsys.readouterr().err
    assert main(["infer", str(tmp_path / "g.uai"), "--oracle", "trws"]) == 2
    err = capsys.readouterr().err
    assert "chosen by method='auto'" in err and "name the method" in err
    with pytest.raises(TypeError, match="chosen by method='auto'.*name the method"):
        fwcore.infer(grid, oracle="trws")
    # a time limit keeps auto's choice: exact where it fits
    assert main(["infer", str(tmp_path / "g.uai"), "--max-time", "30", "--quiet"]) == 0
    assert "exact marginals by elimination" in capsys.readouterr().out


def test_6_the_cli_option_lists_and_refusals_agree(grid, tmp_path, capsys):
    fwcore.write_uai(grid, tmp_path / "g.uai")
    assert main(["map", str(tmp_path / "g.uai"), "--option", "foo=1"]) == 2
    err = capsys.readouterr().err
    listed = err.split("its options:")[1]
    assert "unknown option foo" in err and "time_limit" not in listed
    assert main(["map", str(tmp_path / "g.uai"), "--option", "time_limit=1"]) == 2
    assert "map takes it as --max-time SECONDS" in capsys.readouterr().err
    for option in listed.replace(",", " ").split():
        assert main(["map", str(tmp_path / "g.uai"), "--option", f"{option}=1"]) in (0, 2)
        assert "unknown option" not in capsys.readouterr().err
