"""The trial after every other call sees a forward that hands the work to PyTorch late.

The timed calls run without the op recorder (their outputs are checked, not how they were
made), so a forward counting its calls could run its kernel in the trials and PyTorch's
``x + y`` afterwards (found 2026-12-05). On a GPU the late trial follows the timed calls
(``test_adversarial.py::test_pytorch_after_the_trials_is_caught_by_the_late_trial``); here,
with no timing, it follows the trials, which is where such a forward switches.
"""

from __future__ import annotations

from tests.verify.conftest import GOOD_ADD
from upskills.verify import CheckOptions, Verifier
from upskills.verify.verdict import ErrorClass

LATE_SWITCH = GOOD_ADD.replace(
    "    def forward(self, x, y):\n",
    "    calls = 0\n\n    def forward(self, x, y):\n"
    "        type(self).calls += 1\n"
    "        if type(self).calls > TRIALS:  # the trials are over: PyTorch does the work\n"
    "            out = torch.empty_like(x)\n"
    "            add_kernel[(1,)](x, y, out, 0, BLOCK=16)  # a launch of its own, of nothing\n"
    "            return x + y\n",
)


def test_a_forward_that_switches_to_pytorch_after_the_trials_is_caught(add_task):
    options = CheckOptions(seeds=1, timeout_s=300, random_shape=False)
    with Verifier("cpu", options) as verifier:
        honest = verifier.check(add_task, GOOD_ADD)
        trials = len(honest.variants)
        cheat = LATE_SWITCH.replace("TRIALS", str(trials))
        unseen = verifier.check(add_task, cheat)  # no late trial: the switch is never called
        late = verifier.check(
            add_task, cheat, options=options.model_copy(update={"late_trial": True})
        )
        honest_late = verifier.check(
            add_task, GOOD_ADD, options=options.model_copy(update={"late_trial": True})
        )
    assert honest.passed and unseen.passed, (honest.message, unseen.message)
    assert not late.passed and late.error_class == ErrorClass.GUARD, late.message
    assert late.guard == "torch_compute", late.message
    assert "the trial after every other call" in late.message
    assert honest_late.passed, honest_late.message
    assert len(honest_late.variants) == trials  # the late trial is no variant of the verdict
