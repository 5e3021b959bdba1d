"""``compare_runs``: the comparison of two run directories, put together. It reads both manifests and refuses
(or, forced, lists) what makes the runs incomparable, reads both runs' columns, joins them, and assembles the
document from the rows, the notes, the headline and the settings that differ."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eval_harness.aggregate import default_workers, load_run_columns
from eval_harness.artifacts import RunPaths, observed_status, read_manifest, read_summary
from eval_harness.compare._notes import (
    _both_error_notes,
    _coverage_notes,
    _epoch_notes,
    _error_notes,
    _error_share_notes,
    _interval_notes,
    _left_out_notes,
    _moved_notes,
    _overlap_notes,
    _unattainable_notes,
    _unit_notes,
)
from eval_harness.compare._paired import _delta, _Pairs, _Rows, _rows, _Run, join_keys
from eval_harness.compare._schema import CompareAxis, CompareHeadline, CompareRun, Comparison, judged_rows
from eval_harness.compare._settings import (
    _forced_notes,
    _rescore_of,
    _threshold_notes,
    differing_settings,
    incomparable,
)
from eval_harness.errors import ArtifactError, ConfigError
from eval_harness.types import RunManifest, check_expected_records_bounds


def compare_runs(
    run_a: Path | str, run_b: Path | str, *, force: bool = False, parallel: bool | None = None
) -> Comparison:
    """Compare the runs in ``run_a`` and ``run_b``.

    Refuses with a ``ConfigError`` saying what differs when the runs used different datasets or scorers,
    unless ``force`` (then ``forced`` lists what differed). ``parallel`` reads the two samples files in
    two processes (default: when the files are large; it forks, so call from a single-threaded process).
    """
    run_a, run_b = Path(run_a), Path(run_b)
    manifest_a, manifest_b = read_manifest(run_a), read_manifest(run_b)
    for run, manifest in ((run_a, manifest_a), (run_b, manifest_b)):
        check_expected_records_bounds(manifest, RunPaths(run).manifest)
    problems = incomparable(manifest_a, manifest_b)
    rescore = _rescore_of(manifest_a, manifest_b, run_a, run_b)
    if rescore is not None:
        # the same outputs under other scorers: what changed is the point of comparing them
        problems = [p for p in problems if not p.startswith("different scorers")]
    if problems and not force:
        raise ConfigError(f"cannot compare {run_a} and {run_b}: {'; '.join(problems)}; pass --force to compare anyway")
    path_a, path_b = RunPaths(run_a).samples, RunPaths(run_b).samples
    if parallel is None:
        parallel = default_workers(path_a) > 1 or default_workers(path_b) > 1
    loaded_a, loaded_b = _load_both(path_a, manifest_a, path_b, manifest_b, parallel)
    comparison = _compare(loaded_a, loaded_b, manifest_a, manifest_b, run_a=run_a, run_b=run_b, forced=problems)
    if rescore is not None:
        comparison.notes.insert(0, rescore)
    comparison.notes += _cache_notes(run_a, run_b)
    return comparison


def _compare(
    columns_a: _Run,
    columns_b: _Run,
    manifest_a: RunManifest,
    manifest_b: RunManifest,
    *,
    run_a: Path,
    run_b: Path,
    forced: Sequence[str],
) -> Comparison:
    """The comparison of two runs' columns, read: ``forced`` lists what would have refused it."""
    pairs = _join(columns_a, columns_b, max(manifest_a.epochs, manifest_b.epochs), run_a=run_a, run_b=run_b)
    rows = _rows(pairs, manifest_a.seed)
    return Comparison(
        run_a=_run_info(run_a, manifest_a, columns_a.n),
        run_b=_run_info(run_b, manifest_b, columns_b.n),
        headline=_headline(rows.axes, rows.overall),
        axes=rows.axes,
        overall=rows.overall,
        paired=pairs.n,
        only_a=pairs.only_a,
        only_b=pairs.only_b,
        forced=list(forced),
        notes=_notes(pairs, rows, manifest_a, manifest_b),
        differs=differing_settings(manifest_a, manifest_b),
        unpaired_axes=rows.unpaired,
    )


def _join(columns_a: _Run, columns_b: _Run, epochs: int, *, run_a: Path, run_b: Path) -> _Pairs:
    """The records of both runs, paired on ``(sample_id, epoch)``; refused when there is none."""
    ia, ib = join_keys(columns_a.key_hash, columns_b.key_hash)
    if ia.size == 0:
        raise ConfigError(
            f"the runs share no sample; nothing to compare ({run_a}: {columns_a.n:,} records, {run_b}: "
            f"{columns_b.n:,} records, no (sample_id, epoch) in both)"
        )
    return _Pairs.of(columns_a, columns_b, ia, ib, epochs)


def _notes(pairs: _Pairs, rows: _Rows, manifest_a: RunManifest, manifest_b: RunManifest) -> list[str]:
    """Every note, in the order they are printed: how the records were paired, what was left out, what the
    settings make of the scores, what the statistics can and cannot say, and what the runs' errors and forced
    resumes mean for the verdicts."""
    axes, overall = rows.axes, rows.overall
    notes = [
        f"{name}: a torn last line ({run.torn_bytes:,} bytes) of its samples.jsonl was ignored"
        for name, run in (("A", pairs.run_a), ("B", pairs.run_b))
        if run.torn_bytes
    ]
    notes += _moved_notes(pairs) + _unit_notes(pairs.sample) + _left_out_notes(pairs, rows.unpaired, rows.moved_b)
    epoch_notes, by_epoch = _epoch_notes(pairs.run_a, pairs.run_b, pairs.ia, pairs.ib)
    notes += _coverage_notes(axes, skip=by_epoch) + epoch_notes
    notes += _threshold_notes(manifest_a, manifest_b)
    notes += _unattainable_notes(axes, overall)
    notes += _overlap_notes(axes, overall)
    notes += _interval_notes(axes, overall)
    judged = list(zip(judged_rows(axes, overall), judged_rows(rows.pairs_of, np.arange(pairs.n)), strict=True))
    notes += _error_notes(judged, pairs.a, pairs.b)
    notes += _error_share_notes(judged_rows(axes, overall))
    notes += _both_error_notes(judged, pairs.a, pairs.b, pairs.sample)
    notes += _forced_notes(manifest_a, manifest_b)
    return notes


def _cache_notes(run_a: Path, run_b: Path) -> list[str]:
    """A run whose answers came from the response cache: its cost is 0 and its latency replayed there, which a
    comparison of cost and latency would read as the model's. From each run's summary (the comparison's light
    read of the records leaves the flag out); a run without one says nothing."""
    notes = []
    for name, run in (("A", run_a), ("B", run_b)):
        try:
            summary = read_summary(run)
        except (ArtifactError, OSError):
            continue
        if summary.cached_records:
            were = "was" if summary.cached_records == 1 else "were"
            notes.append(
                f"{name}: {summary.cached_records:,} of its {summary.records:,} records {were} served from the "
                "response cache: they cost $0 and keep the latency of the call that produced them, so "
                f"{name}'s cost and latency there are not the model's own"
            )
    return notes


def _headline(axes: Sequence[CompareAxis], overall: CompareAxis) -> CompareHeadline:
    """The one-number gap, both ways (the mean of the axes' means, and over all pairs), and the axes it hides."""
    macro_a = _mean_of([axis.mean_a for axis in axes])
    macro_b = _mean_of([axis.mean_b for axis in axes])
    return CompareHeadline(
        macro_a=macro_a,
        macro_b=macro_b,
        macro_diff=_delta(macro_a, macro_b),
        micro_a=overall.mean_a,
        micro_b=overall.mean_b,
        micro_diff=overall.diff,
        diff_ci=overall.diff_ci,
        diff_ci_method=overall.diff_ci_method,
        test=overall.test,
        p_value=overall.p_value,
        verdict=overall.verdict,
        axes_a_better=[axis.axis for axis in axes if axis.verdict == "a_better"],
        axes_b_better=[axis.axis for axis in axes if axis.verdict == "b_better"],
    )


def _mean_of(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _run_info(run_dir: Path, manifest: RunManifest, records: int) -> CompareRun:
    missing = max(0, manifest.expected_records - records)
    return CompareRun(
        run_id=manifest.run_id,
        run_dir=str(run_dir),
        model=manifest.model.id,
        task=manifest.task.name,
        status=observed_status(run_dir, manifest),
        dataset=manifest.dataset.path,
        dataset_sha256=manifest.dataset.sha256,
        records=records,
        missing=missing,
        complete=missing == 0,
    )


def _load_both(
    path_a: Path, manifest_a: RunManifest, path_b: Path, manifest_b: RunManifest, parallel: bool
) -> tuple[_Run, _Run]:
    if not parallel:
        return _load_run(path_a, manifest_a), _load_run(path_b, manifest_b)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # A is read in a forked process while this one reads B: two files, two cores. Only the compact _Run
    # crosses the pipe.
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        future = pool.submit(_load_run, path_a, manifest_a)
        run_b = _load_run(path_b, manifest_b)
        return future.result(), run_b


def _load_run(path: Path, manifest: RunManifest) -> _Run:
    # light: a comparison needs identity, axis, score, error, latency and cost only.
    return _Run.of(load_run_columns(path, manifest, light=True))


__all__ = ["compare_runs"]
