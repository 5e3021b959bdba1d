"""The run fingerprint is a stored contract: a run written by one version must resume under the next.

``resume`` refuses a run whose recorded fingerprint differs from the one it computes for the same dataset,
template, scorers and model, so a change to what the fingerprint covers, or to how it is serialised, would
make every existing run refuse to resume. These constants are what this version computes for fixed inputs
(the conftest task root's files); a change that alters them must come with a way to resume old runs.
"""

from __future__ import annotations

from conftest import TaskRoot, adder_run_config

from eval_harness.planning import plan_run

# sha256 of the sorted-key JSON of the fingerprint parts, as plan_run computed it on 2026-11-30 (e963276)
ADDER_MOCK = "989537cf13736b823187f86358f3a22ef85ae212a5751693b9f8e366e18f679f"
ADDER_MOCK_WITH_JUDGE_AND_SEED = "158c843f84916bd390cfa2ea285286571d89cbe62fdefa7b51c7635f72353e98"


def test_the_fingerprint_of_fixed_inputs_is_unchanged(task_root: TaskRoot) -> None:
    plan = plan_run(adder_run_config(task_root))
    assert plan.manifest.fingerprint == ADDER_MOCK


def test_the_fingerprint_with_a_judge_model_arguments_and_a_seed_is_unchanged(task_root: TaskRoot) -> None:
    config = adder_run_config(task_root, judge_model="mock/j", model_args={"skill": "0.5"}, seed=7)
    assert plan_run(config).manifest.fingerprint == ADDER_MOCK_WITH_JUDGE_AND_SEED
