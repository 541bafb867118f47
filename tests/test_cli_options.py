"""Issue 28: the CLI's ``--option KEY=VALUE``. Its help example works, an option the
solver does not take is named with the ones it takes, and a seeded fuzz of keys and values
only ever exits 0, or 2 with a one-line message (never a traceback)."""
import inspect

import numpy as np
import pytest

import fwcore
from fwcore.cli import main
from fwcore.oracles.base import _registry

_EXAMPLE = ["--example", "grid5x5"]


def _run(argv, capsys):
    """(exit code, stdout, stderr) of ``fwcore ARGV``; argparse's refusals exit 2 too."""
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


def test_help_example_option_works_for_map_and_infer(capsys):
    for argv in (["map", *_EXAMPLE, "--method", "trws", "--option", "max_iter=50"],
                 ["infer", *_EXAMPLE, "--method", "barrier-fw", "--oracle", "trws",
                  "--option", "max_iter=50"],
                 ["map", *_EXAMPLE, "--method", "portfolio", "--time-limit", "0.5",
                  "--option", "anytime=false"]):
        code, out, err = _run(argv, capsys)
        assert code == 0, err


@pytest.mark.parametrize("command, flag", [("map", ["--method"]),
                                           ("infer", ["--method", "barrier-fw", "--oracle"])])
def test_unknown_option_names_the_solver_and_its_options(command, flag, capsys):
    code, _, err = _run([command, *_EXAMPLE, *flag, "auto", "--option", "time_limit=10",
                         "--option", "colour=blue"], capsys)
    assert code == 2 and len(err.splitlines()) == 1
    if command == "map":  # infer_map's own argument
        assert "--option time_limit=...: map takes it as --max-time SECONDS" in err
    else:  # auto chose an oracle the user did not name; the message names both
        assert "unknown options colour, time_limit for oracle" in err
        assert "(chosen for 'auto'); its options: " in err


_KEYS = ["time_limit", "seed", "method", "model", "anytime", "members", "threads", "sweeps",
         "t_start", "t_end", "max_iter", "tol", "warm_start", "damping", "max_sweeps",
         "max_states", "memory_limit", "max_cover", "mip_rel_gap", "scale", "solver",
         "max_cycles", "options", "colour", "", "x y", "ünï", "-", "__init__", "self"]
_VALUES = ["0", "1", "2", "-1", "50", "0.5", "-0.5", "1e-9", "1e308", "nan", "inf", "-inf",
           "true", "False", "yes", "", "trws", "icm,qpbo", "None", "[1]", "=", "1=2",
           "9" * 5000]
_SOLVERS = ["auto", "exact", "trws", "icm", "qpbo", "anneal", "expansion", "swap",
            "portfolio", "elimination", "bruteforce", "maxproduct", "tree", "nosuch"]


def _takes(solver):
    """The options the oracle named ``solver`` takes (none for the others)."""
    cls = _registry.get(solver)
    return [] if cls is None else [k for k in inspect.signature(cls).parameters if k != "model"]


def test_option_fuzz_exits_0_or_2_with_one_line(tmp_path, capsys):
    model = str(tmp_path / "grid.uai")  # 3x3: every solver, brute force too, in milliseconds
    fwcore.write_uai(fwcore.random_grid(3, seed=0), model)
    rng = np.random.default_rng(28)
    for case in range(300):
        solver = str(rng.choice(_SOLVERS))
        keys = _takes(solver) or _KEYS
        options = []
        for _ in range(rng.integers(1, 4)):  # mostly options the solver takes
            key = str(rng.choice(keys if rng.random() < 0.8 else _KEYS))
            value = str(rng.choice(_VALUES))
            options += ["--option", f"{key}={value}" if rng.random() < 0.95 else key]
        if rng.random() < 0.7:
            argv = ["map", model, "--method", solver, "--time-limit", "0.2"]
        else:
            argv = ["infer", model, "--method", "barrier-fw", "--oracle", solver,
                    "--max-time", "0.5", "--quiet"]
        code, _, err = _run(argv + options, capsys)
        assert code in (0, 2), (case, argv + options, err)
        if code == 2:
            lines = err.splitlines()
            assert "Traceback" not in err and (len(lines) == 1 or lines[0].startswith(
                "usage:")), (case, argv + options, err)
