"""bench/beyond.py's helpers (issue 29): ζ with evidence excluded, Merlin's output parsed,
the .PR precision, the cache rule, the verdicts; and one run on a small model written
here, without Merlin and without the shared instances."""
import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

import fwcore
from fwcore.io import write_evid, write_mar, write_pr, write_uai

RUNNER = Path(__file__).resolve().parents[1] / "bench" / "beyond.py"
pytestmark = pytest.mark.skipif(not RUNNER.exists(),
                                reason="bench/ is not beside tests/ (installed package)")


@pytest.fixture(scope="module")
def beyond():
    spec = importlib.util.spec_from_file_location("beyond", RUNNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Merlin's MAR output (wmb.cpp write_solution, UAI format): ln Z, then the marginals, the
# observed variable 1 as a point mass
MERLIN_MAR = """PR
-3.250000 (3.877421e-02)
STATUS
true: Consistent evidence
MAR
3 2 0.250000 0.750000 3 0.000000 1.000000 0.000000 2 0.500000 0.500000
"""


def test_zeta_is_half_the_l1_distance_averaged_over_variables(beyond):
    mu = [np.array([0.2, 0.8]), np.array([1.0, 0.0, 0.0])]
    ref = [np.array([0.4, 0.6]), np.array([0.0, 1.0, 0.0])]
    assert beyond.zeta(mu, ref) == pytest.approx((0.2 + 1.0) / 2)


def test_zeta_leaves_out_the_excluded_variables(beyond):
    mu = [[0.2, 0.8], [1.0, 0.0], [0.5, 0.5]]
    ref = [[0.4, 0.6], [0.0, 1.0], [0.5, 0.5]]
    assert beyond.zeta(mu, ref, excluded={1: 1}) == pytest.approx(0.1)
    assert math.isnan(beyond.zeta(mu[:1], ref[:1], excluded={0: 0}))


def test_zeta_refuses_mismatched_marginals(beyond):
    with pytest.raises(ValueError, match="2 marginals against 1"):
        beyond.zeta([[1.0], [1.0]], [[1.0]])
    with pytest.raises(ValueError, match="variable 0"):
        beyond.zeta([[0.5, 0.5]], [[0.2, 0.3, 0.5]])


def test_merlin_mar_output_is_parsed(beyond):
    log_z, marginals = beyond.parse_merlin_mar(MERLIN_MAR)
    assert log_z == -3.25
    assert marginals == [[0.25, 0.75], [0.0, 1.0, 0.0], [0.5, 0.5]]


@pytest.mark.parametrize("text", ["", "MAR\n1 2 0.5 0.5\n", MERLIN_MAR.split("MAR\n")[0] + "MAR\n",
                                  MERLIN_MAR.replace(" 0.500000\n", "\n"),
                                  MERLIN_MAR.replace("\n3 2", "\n2 2"),
                                  MERLIN_MAR.replace("\n3 2", "\n4 2")])
def test_merlin_output_cut_short_or_foreign_is_an_error(beyond, text):
    with pytest.raises(ValueError):
        beyond.parse_merlin_mar(text)


def test_merlin_trajectory_is_read_from_its_pass_lines(beyond):
    printed = ("[WMB] Begin message passing over join graph ...\n"
               "  logZ:   806.696638 (inf) \td=8.066966e+02\t time=0.007772\ti=1\n"
               "  logZ:   -7.5 (5.5e-04) \td=1.2e+00\t time=1.5\ti=2\n"
               "[WMB] Converged after 2 iterations in 1.6 seconds\n")
    assert beyond.parse_merlin_trajectory(printed) == [(0.007772, 806.696638), (1.5, -7.5)]
    assert beyond.parse_merlin_trajectory("") == []


def test_merlin_command_passes_the_evidence_file(beyond, tmp_path):
    case = beyond.Case(name="m", path=tmp_path / "m.uai", model=None, evidence={1: 1},
                       marginals=[], log_z=0.0, log_z_tolerance=0.0, unverified=False, key="k")
    cmd = beyond.merlin_command("merlin", case, 10, 100, tmp_path / "out", tmp_path / "e")
    assert cmd[cmd.index("--ibound") + 1] == "10"
    assert cmd[cmd.index("--task") + 1] == "MAR"
    assert cmd[cmd.index("--evidence-file") + 1] == str(tmp_path / "e")
    assert "--evidence-file" not in beyond.merlin_command("merlin", case, 5, 100, "o", None)


def test_pr_tolerance_is_half_the_last_printed_digit_in_nats(beyond, tmp_path):
    (tmp_path / "a.PR").write_text("PR\n-9.4592\n")
    (tmp_path / "b.PR").write_text("PR\n1\n1.5e+01\n")
    assert beyond.pr_tolerance(tmp_path / "a.PR") == pytest.approx(0.5e-4 * math.log(10))
    assert beyond.pr_tolerance(tmp_path / "b.PR") == pytest.approx(0.5 * math.log(10))
    (tmp_path / "c.PR").write_text("PR\n-inf\n")
    assert beyond.pr_tolerance(tmp_path / "c.PR") == 0.0


def test_cached_failures_are_reused_only_under_limits_as_generous(beyond):
    timeout = {"status": "timeout", "timeout": 120.0, "memory_gib": 8.0, "seconds": 120.0}
    assert beyond.reusable({"status": "ok", "timeout": 1, "memory_gib": 1}, 600, 16)
    assert beyond.reusable(timeout, 60, 8)
    assert not beyond.reusable(timeout, 600, 8)
    assert not beyond.reusable(None, 60, 8)
    out_of_memory = {**timeout, "status": "out of memory", "seconds": 20.0}
    assert beyond.reusable(out_of_memory, 600, 8)
    assert not beyond.reusable(out_of_memory, 60, 16)
    assert not beyond.reusable({**timeout, "status": "failed (exit 1: x)"}, 60, 8)


def _row(method, zeta, upper, seconds, certified=True, **extra):
    return {"method": method, "zeta": zeta, "upper_minus_log_z": upper,
            "lower_minus_log_z": None, "seconds": seconds, "certified": certified, **extra}


def test_verdicts_and_violations(beyond):
    case = beyond.Case(name="m", path=Path("m.uai"), model=None, evidence={}, marginals=[],
                       log_z=0.0, log_z_tolerance=1e-3, unverified=False, key="k")
    rows = [_row("merlin-wmb i=5", 0.1, 0.5, 2.0, trajectory=[(1.0, 0.7), (2.0, 0.5)]),
            _row("merlin-wmb i=20", 0.0, 0.0, 90.0, trajectory=[(80.0, 0.1), (90.0, 0.0)]),
            _row("loopy-bp", 0.02, -0.3, 1.0, certified=False),
            _row("trbp", 0.05, 3.0, 5.0, certified=False),
            _row("infer", 0.024, 0.4, 60.0, ours=True)]
    v = beyond.verdicts(case, rows)
    assert v["ζ ≤ min(BP)+.005"] == "yes" and v["ζ < both BP"] == "no"
    assert v["bound ≥ log Z"] == "yes" and v["bound ≤ TRBP"] == "yes"
    assert v["bound ≤ WMB same time"] == "yes"  # i=20 took longer than ours: not compared
    assert beyond.merlin_bound_by(rows, 60.0) == 0.5 and beyond.merlin_bound_by(rows, 85) == 0.1
    assert beyond.merlin_bound_by(rows, 0.5) is None
    assert beyond.bound_violations(case, rows) == []

    rows[-1] = _row("infer", 0.024, -0.01, 60.0, ours=True)
    assert beyond.verdicts(case, rows)["bound ≥ log Z"] == "VIOLATED"
    assert beyond.bound_violations(case, rows) == [("infer", "upper bound below log Z", -0.01)]


def test_missing_merlin_gives_a_reason(beyond, tmp_path, monkeypatch):
    monkeypatch.delenv("MERLIN", raising=False)
    assert beyond.find_merlin(None)[0] is None
    path, why = beyond.find_merlin(str(tmp_path / "merlin"))
    assert path is None and "not an executable" in why


@pytest.fixture
def small_model_with_answers(tmp_path):
    """A 3x3 grid written as UAI with evidence on variable 4 and its exact answers."""
    model = fwcore.random_grid(3, 3, seed=0)
    evidence = {4: 1}
    exact = fwcore.exact_inference(fwcore.apply_evidence(model, evidence))
    path = tmp_path / "grid.uai"
    write_uai(model, path)
    write_evid(f"{path}.evid", evidence)
    write_mar(f"{path}.MAR", exact.node_marginals)
    write_pr(f"{path}.PR", exact.log_z)
    return path


def test_the_case_applies_evidence_and_excludes_it_from_zeta(beyond, small_model_with_answers):
    case = beyond.load_case(small_model_with_answers)
    assert case.name == "grid" and case.evidence == {4: 1}
    point_mass = [0.0] * len(case.marginals[4])
    point_mass[0] = 1.0  # the wrong state for the observed variable: not counted
    marginals = [m if i != 4 else np.array(point_mass) for i, m in enumerate(case.marginals)]
    row = beyond.scored({"log_z_upper": case.log_z + 1.0, "log_z_lower": None}, marginals,
                        case)
    assert row["zeta"] == pytest.approx(0.0, abs=1e-12)
    assert row["upper_minus_log_z"] == pytest.approx(1.0)


def test_a_run_without_merlin_prints_tables_and_summary(beyond, small_model_with_answers,
                                                        tmp_path, capsys):
    beyond.main([str(small_model_with_answers), "--merlin", str(tmp_path / "none"),
                 "--max-time", "2", "--cache", str(tmp_path / "cache.json"),
                 "--method", "wmb"])
    out = capsys.readouterr().out
    assert "Merlin rows skipped" in out and "### grid" in out
    assert "| loopy-bp |" in out and "| trbp |" in out and "## Summary" in out
    assert "!!!" not in out
