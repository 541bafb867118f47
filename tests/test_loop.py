"""The one run loop (`fwcore.loop`): its stopping ladder, callbacks, Ctrl-C and deadlines on
a toy task whose criterion halves at every step."""
import logging

import pytest

from fwcore.loop import (Callbacks, Deadline, Guard, Stopping, TimeUp, budget_status,
                         run_loop, stopped_on_budget)
from fwcore.results import Record, Status


class Halving:
    """Criterion 2^-k after k steps; ``fail`` maps a step to the exception it raises."""

    def __init__(self, fail=None):
        self.fail, self.steps, self.measured = fail or {}, [], []

    def measure(self, k):
        self.measured.append(k)
        return Record(iteration=k, time=0.0, primal=2.0 ** -k, n_oracle_calls=2 * k), 2.0 ** -k

    def step(self, k):
        if k in self.fail:
            raise self.fail[k]
        self.steps.append(k)


_STOPPING = Stopping(100, tol=0.1)


def run(task=None, stopping=_STOPPING, callbacks=None, **kw):
    task = task or Halving()
    return task, run_loop(task.measure, task.step, stopping, callbacks or Callbacks(), **kw)


def test_converges_on_a_fresh_criterion_and_keeps_every_record():
    task, out = run()
    assert out.status is Status.CONVERGED and out.n_iter == 4  # 2^-4 <= 0.1
    assert [r.iteration for r in out.trace] == [0, 1, 2, 3, 4] and out.last is out.trace[-1]
    _, out = run(proof=False)  # a criterion that is no proof: stalled
    assert out.status is Status.STALLED


def test_the_ladder_converged_then_time_then_budget_then_callback():
    stop_now = Callbacks(lambda r: False)
    _, out = run(stopping=Stopping(0, tol=1.0, deadline=Deadline(0.0)), callbacks=stop_now)
    assert out.status is Status.CONVERGED
    _, out = run(stopping=Stopping(0, deadline=Deadline(0.0)), callbacks=stop_now)
    assert out.status is Status.MAX_TIME
    _, out = run(stopping=Stopping(0), callbacks=stop_now)
    assert out.status is Status.MAX_ITER
    _, out = run(stopping=Stopping(5, max_oracle_calls=6))
    assert out.status is Status.MAX_ITER and out.n_iter == 3
    _, out = run(stopping=Stopping(5), callbacks=Callbacks(lambda r: r.iteration < 2))
    assert out.status is Status.INTERRUPTED and out.n_iter == 2 and len(out.trace) == 3


def test_ctrl_c_and_time_up_in_a_step_keep_what_was_measured():
    task, out = run(Halving({2: KeyboardInterrupt()}), Stopping(5))
    assert out.status is Status.INTERRUPTED and out.n_iter == 1 and task.steps == [1]
    assert out.last.iteration == 1 and len(out.trace) == 2
    _, out = run(Halving({3: TimeUp()}), Stopping(5))
    assert out.status is Status.MAX_TIME and out.n_iter == 2 and out.last.iteration == 2


def ctrl_c():
    raise KeyboardInterrupt


def test_a_guard_fired_inside_a_measure_ends_the_run_without_that_record():
    guard, task = Guard(), Halving()

    def measure(k):  # as BP keeps the messages of its sweeps up to Ctrl-C
        if k == 2:
            guard(ctrl_c)
        return task.measure(k)

    out = run_loop(measure, task.step, Stopping(5), Callbacks(), guard=guard)
    assert out.status is Status.INTERRUPTED and out.last.iteration == 1 and len(out.trace) == 2


def test_without_a_measure_of_the_start_point_the_first_step_comes_first():
    task, out = run(stopping=Stopping(3), measure_start=False)
    assert task.steps == [1, 2, 3] and task.measured == [1, 2, 3]
    assert out.status is Status.MAX_ITER and out.n_iter == 3


def test_callbacks_compose_the_trace_the_progress_line_and_the_user(capsys):
    seen = []
    callbacks = Callbacks(seen.append, trace=False, line=lambda r: f"it {r.iteration}",
                          verbose=True)
    _, out = run(stopping=Stopping(3), callbacks=callbacks)
    assert len(out.trace) == 0 and [r.iteration for r in seen] == [0, 1, 2, 3]
    # the first line, then at most one a second, and the last
    assert capsys.readouterr().err == "fwcore: it 0\nfwcore: it 3\n" and not callbacks.stopped


def test_progress_goes_to_the_fwcore_logger_and_to_stderr_only_when_asked(capsys, caplog):
    line = lambda r: f"it {r.iteration}"  # noqa: E731
    run(stopping=Stopping(1), callbacks=Callbacks(line=line))
    assert capsys.readouterr().err == ""  # not asked: nothing printed
    with caplog.at_level(logging.INFO, logger="fwcore"):
        run(stopping=Stopping(1), callbacks=Callbacks(line=line, verbose=True))
    assert [r.getMessage() for r in caplog.records] == ["it 0", "it 1"]
    assert capsys.readouterr().err == ""  # logging shows it: not printed twice


def test_deadline_and_budget_helpers():
    assert not Deadline().passed() and Deadline().left() is None
    assert Deadline(0.0).passed() and Deadline(60.0).left() == pytest.approx(60.0, abs=1.0)
    with pytest.raises(TimeUp):
        Deadline(0.0).left()
    assert budget_status() is Status.MAX_ITER and budget_status(True) is Status.MAX_TIME
    assert stopped_on_budget(Status.MAX_ITER) and stopped_on_budget(Status.MAX_TIME)
    assert not stopped_on_budget(Status.CONVERGED)
