"""What the run fingerprint covers is one table (``types.FINGERPRINT_PARTS``): each part, and where the manifest
records it. A resume reads the recorded parts from there, so the table must say where each hashed value is."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from conftest import TaskRoot, adder_run_config

from eval_harness.planning import judge_info, plan_run
from eval_harness.providers.base import ProviderOptions
from eval_harness.templates import PromptTemplate
from eval_harness.types import FINGERPRINT_PARTS, ModelInfo

# the package re-exports a function named _fingerprint, which hides the module of that name from attribute access
fingerprinting = importlib.import_module("eval_harness.planning._fingerprint")


def test_the_manifest_holds_each_recorded_part_of_the_fingerprint_where_the_table_says(task_root: TaskRoot) -> None:
    plan = plan_run(adder_run_config(task_root, judge_model="mock/j", model_args={"skill": "0.5"}, seed=7))
    setup = fingerprinting.ScoringSetup(list(plan.task.spec.scorers), plan.pass_threshold, plan.task)
    hashed = fingerprinting._fingerprint_parts(
        plan.dataset_report.sha256, plan.template, plan.task, setup, plan.scoring, plan.manifest.model,
        judge_info(plan.judge), 7,
    )  # fmt: skip
    assert fingerprinting._fingerprint(hashed) == plan.manifest.fingerprint  # the parts the run hashed
    assert hashed.keys() == FINGERPRINT_PARTS.keys()
    recorded = fingerprinting._recorded_parts(plan.manifest)
    assert recorded == {name: hashed[name] for name, path in FINGERPRINT_PARTS.items() if path is not None}


@dataclass
class _Now:
    """The fingerprint's parts as a resume would find them now (``_fingerprint._Fingerprinted``)."""

    template: PromptTemplate
    setup: Any
    model: ModelInfo
    fingerprint_parts: dict[str, Any]
    prompt_inputs_sha256: str
    model_options: type[ProviderOptions] = ProviderOptions
    judge_options: type[ProviderOptions] | None = None


def test_a_changed_part_that_no_line_of_its_own_names_is_named_by_its_recorded_and_current_values(
    task_root: TaskRoot,
) -> None:
    # the seed has no line of its own (a resume takes it from the manifest): it stands for a part added to the table
    plan = plan_run(adder_run_config(task_root, seed=7))
    setup = fingerprinting.ScoringSetup(list(plan.task.spec.scorers), plan.pass_threshold, plan.task)
    parts = {**fingerprinting._recorded_parts(plan.manifest), "scorer_fingerprints": plan.scoring.fingerprints()}
    assert fingerprinting._fingerprint(parts) == plan.manifest.fingerprint  # nothing else changed
    now = _Now(plan.template, setup, plan.manifest.model, {**parts, "seed": 8}, str(plan.prompt_inputs_sha256))
    changes = fingerprinting._changes(plan.manifest, plan.task, plan.dataset_report, now)
    assert changes == ["seed (7 → 8)"]
