"""Re-scoring without re-generating: a new run whose "model" replays the outputs of an earlier run.

The new run is an ordinary run in every other way (manifest, samples.jsonl, summary, resume); its
manifest names the source run, keeps the source's model and dataset, and lists the new scorers. It reads
the source's dataset file again (refused when its sha256 changed), so its records name the dataset lines
the source's records name (and name one where a source record written before lines were recorded has none).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from eval_harness.aggregate import load_run_columns
from eval_harness.artifacts import RunPaths, observed_status, read_manifest
from eval_harness.config import RunConfig, credential_parameter, invalid_config, without_credentials
from eval_harness.errors import ArtifactError, ConfigError, ResumeMismatchError
from eval_harness.planning import (
    RunPlan,
    check_expected_records_counted,
    dataset_reading_change,
    files_changed,
    plan_run,
)
from eval_harness.tasks import find_task
from eval_harness.types import RunManifest, ScorerSpec, check_expected_records_bounds


def parse_scorer(text: str) -> ScorerSpec:
    """``NAME`` or ``NAME:key=value,key=value``; ``alias=KEY`` names the scorer's key, as a task's ``alias`` does
    (two modes of one scorer side by side: ``exact_match:mode=strict`` and ``exact_match:mode=numeric,alias=num``).

    Values stay text, and the manifest records them as given; ``build_scorer`` converts each to the type of
    the factory's parameter (``use_stemmer=false`` is False, ``tolerance=0.5`` is 0.5) or refuses it. A list or
    table is given as JSON, whose commas do not separate arguments (``criteria=["faithfulness","coverage"]``).
    """
    name, _, raw_args = text.partition(":")
    args: dict[str, str] = {}
    for pair in filter(None, _top_level_parts(raw_args)):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--scorer {text!r}: arguments must look like key=value")
        if key.strip() in args:  # the last would silently win, as click's repeated options did
            raise ConfigError(f"--scorer {text!r}: {key.strip()} is given twice; give it once")
        args[key.strip()] = value.strip()
    if not name.strip():
        raise ConfigError(f"--scorer {text!r}: missing the scorer name")
    alias = args.pop("alias", None)
    if alias == "":
        raise ConfigError(f"--scorer {text!r}: alias= needs a name")
    return ScorerSpec(name=name.strip(), args=args, alias=alias)


def _top_level_parts(text: str) -> list[str]:
    """``text`` split at its commas, but inside a value written as JSON (one that opens with ``[`` or ``{``, as
    ``_coerce`` reads it): ``a=1,b=[1,2]`` is ``a=1`` and ``b=[1,2]``. A bracket in a plain value is text
    (``system_prompt=Rate [1-5,alias=j`` keeps its alias apart), and so is one that opens a bracket it never closes
    (``system_prompt=[Grader: strict,alias=j``): a parameter that takes JSON names the problem of its text."""
    parts: list[str] = []
    start = 0
    while True:
        comma = text.find(",", start)
        equals = text.find("=", start)
        end = comma
        if equals != -1 and (comma == -1 or equals < comma):  # this part's value: JSON when it opens so
            value = len(text) - len(text[equals + 1 :].lstrip())  # its first character past any blanks
            # a bracket never closed: plain text after all, split at its commas
            if text[value : value + 1] in ("[", "{") and (closed := _json_end(text, value)) is not None:
                end = text.find(",", closed)
        if end == -1:
            parts.append(text[start:])
            return parts
        parts.append(text[start:end])
        start = end + 1


def _json_end(text: str, opening: int) -> int | None:
    """The index just past the bracket that closes the one at ``opening`` (strings and escapes passed over), or
    None when it is never closed."""
    depth, quoted, escaped = 0, False, False
    for index in range(opening, len(text)):
        char = text[index]
        if quoted:
            escaped, quoted = (not escaped and char == "\\"), escaped or char != '"'
        elif char == '"':
            quoted = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if not depth:
                return index + 1
    return None


def plan_rescore(
    source_run: Path,
    *,
    task: str | None = None,
    scorers: list[str] | None = None,
    output_dir: Path | None = None,
    run_id: str | None = None,
    concurrency: int = 16,
    judge_model: str | None = None,
    judge_args: dict[str, str] | None = None,
    timeout_s: float | None = None,
) -> RunPlan:
    """Plan a run that applies ``task``'s scorers (or the named ``scorers``) to ``source_run``'s outputs.

    ``timeout_s`` bounds each sample's scoring as ``run --timeout`` does (None: the default of a run); a record
    cut short keeps the scorers that finished, inside a composite too, and their judges' spend."""
    if task is not None and scorers:
        raise ConfigError("rescore takes --task TASK or --scorer NAME, not both: the scorers come from one of them")
    if task is None and not scorers:
        raise ConfigError("rescore needs either --task TASK or one or more --scorer NAME")
    source = read_manifest(source_run)
    status = observed_status(source_run, source)
    if status == "running":  # a live process is writing it: a resume now would be refused
        raise ConfigError(f"cannot rescore {source_run}: it is still running; wait for it to end, then rescore")
    if status != "complete":
        # its missing records would become errors of the new run, each counted as wrong
        state = "it failed" if status == "failed" else f"it is {status}"
        raise ConfigError(
            f"cannot rescore {source_run}: {state}, not complete; finish it first (eval-harness resume {source_run})"
        )
    explicit = [parse_scorer(s) for s in scorers] if scorers else None
    task_ref = source.task.source if source.task.source and Path(source.task.source).is_file() else source.task.name
    try:
        config = RunConfig(
            task=task_ref,
            scorer_task=task,
            scorers=explicit,
            source_run=source_run,
            model=source.model.id,
            model_args=_recordable(source.model.args),
            dataset=Path(source.dataset.path),
            skip_invalid=source.dataset.invalid_lines > 0,  # the source ran the valid lines: so does its rescore
            output_dir=output_dir or source_run.parent,
            run_id=run_id,
            concurrency=concurrency,
            epochs=source.epochs,
            limit=source.limit,
            limit_per_axis=source.limit_per_axis,
            seed=source.seed,
            generation=source.task.generation.model_dump(exclude_none=True),
            judge_model=judge_model,
            judge_args=judge_args or {},
            **({} if timeout_s is None else {"timeout_s": timeout_s}),
        )
    except ValidationError as exc:  # named by the flag given now, else it came from the source's manifest
        given = {**_FLAGS, **({} if timeout_s is None else {"timeout_s": "--timeout"})}
        raise invalid_config(exc, given, str(RunPaths(source_run).manifest)) from None
    # the source's values are in the CLI's ranges: what they say of its records can be checked now
    check_expected_records_bounds(source, RunPaths(source_run).manifest)
    _check_records(source_run, source)
    # before the plan reads the dataset: as the task reads it now, a line may be a problem, and the plan would say
    # so with advice for a new run, not why
    change = dataset_reading_change(find_task(task_ref), source.task.dataset_reading)
    if change is not None:
        raise ResumeMismatchError(
            f"cannot rescore {source_run}: the task reads its dataset differently than in that run ({change}), so "
            "its samples would not be the ones the model answered"
        )
    plan = plan_run(config)
    # the source's generation options are passed on as if by flags; which of them were is the source's to say
    task_info = plan.manifest.task.model_copy(update={"generation_from_flags": source.task.generation_from_flags})
    # and so is the limit its answers were written under
    plan.manifest = plan.manifest.model_copy(update={"task": task_info, "max_tokens_sent": source.max_tokens_sent})
    base_url = source.model.args.get("base_url")
    if isinstance(base_url, str) and base_url != config.model_args["base_url"]:
        shown = f" ({parameter}=...)" if (parameter := credential_parameter(base_url)) else ""
        plan.notes.append(
            f"rescore: the source run's base_url carries a credential{shown}; this run records it without"
        )
    if plan.dataset_report.sha256 != source.dataset.sha256:
        raise ResumeMismatchError(
            f"cannot rescore {source_run}: its dataset {source.dataset.path} changed since that run "
            f"(sha256 {source.dataset.sha256[:12]} → {plan.dataset_report.sha256[:12]}"
            f"{files_changed(source.dataset, plan.dataset_report)})"
        )
    template = plan.template.as_recorded(source.task.template_sha256, source.task.template_includes)
    if template.sha256 != source.task.template_sha256:
        raise ResumeMismatchError(
            f"cannot rescore {source_run}: template {source.task.template} changed since that run, so the "
            "recorded prompts would not be the ones the model saw"
        )
    recorded = source.task.prompt_inputs_sha256  # None: a run recorded before it was
    if recorded is not None and plan.prompt_inputs_sha256 != recorded:
        raise ResumeMismatchError(
            f"cannot rescore {source_run}: the task's few-shot spec or examples or its template variables changed "
            "since that run, so the recorded prompts would not be the ones the model saw"
        )
    if plan.manifest.task.system_prompt != source.task.system_prompt:
        raise ResumeMismatchError(
            f"cannot rescore {source_run}: the task's system prompt changed since that run, so the recorded prompts "
            "would not be the ones the model saw"
        )
    # the same bytes: the source's limits take what they took when it ran, unless one was edited by hand (the new
    # run would then replay outputs the source never wrote, each an error counted as wrong)
    source_manifest = RunPaths(source_run).manifest
    check_expected_records_counted(source, source_manifest, plan.dataset_report, plan.excluded_ids, plan.included_ids)
    return plan


_FLAGS = {
    "scorer_task": "--task", "scorers": "--scorer", "output_dir": "--output-dir", "run_id": "--run-id",
    "concurrency": "--concurrency", "judge_model": "--judge-model", "judge_args": "--judge-arg",
}  # fmt: skip
"""The flag of ``rescore`` that sets each RunConfig field; the other fields come from the source's manifest."""


def _recordable(args: dict[str, Any]) -> dict[str, Any]:
    """The source run's model arguments as the new run records them. A run made before base URLs were checked
    for credentials may hold one in its base_url's query; a rescore calls no model, so it is left out, not
    refused."""
    base_url = args.get("base_url")
    return {**args, "base_url": without_credentials(base_url)} if isinstance(base_url, str) else dict(args)


def _check_records(source_run: Path, source: RunManifest) -> None:
    """Refuse a source whose samples.jsonl holds a record that report refuses (naming file, line and field), or
    fewer records than its manifest expects, counted as report counts them: each missing record would become an
    error of the new run, counted as wrong, under a manifest that says "complete".

    Read as report reads it, through the columns cache the source's last session left (only the lines after it
    are parsed), and the cache is not written: rescore does not hold the source's lock."""
    samples = RunPaths(source_run).samples
    columns = load_run_columns(samples, source)
    missing = max(0, source.expected_records - columns.n)
    if missing:
        raise ArtifactError(
            f"cannot rescore {source_run}: its manifest says complete, but samples.jsonl has {missing:,} of "
            f"{source.expected_records:,} records missing; resume it first (eval-harness resume {source_run})"
        )


__all__ = ["parse_scorer", "plan_rescore"]
