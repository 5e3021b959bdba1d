"""Compare two runs of the same items, axis by axis, with paired tests that say which differences are real.

The runs are joined on ``(sample_id, epoch)``; samples present in one run only are counted and left out
of the paired statistics, and two runs that share no sample are refused. What is left out is counted where it
changes what a figure means: per axis (``only_a``/``only_b``, and a note when an axis's column is over part of
a run's records on it), per epoch (a run whose epochs are not all paired), and an axis with no pair at all is
named in ``unpaired_axes`` rather than dropped (a regression gate fails on it: nothing there was judged).
Per axis: both means with intervals, the difference B − A with its paired interval and a paired test that
agree with each other (McNemar's exact test with Newcombe's score interval for 0/1 scores; otherwise a
Student-t interval with the paired t-test, or below 30 pairs the sign-flip test), the Holm-adjusted p-value
across axes, whether the two intervals overlap (the conservative screen), and a verdict. The per-axis
intervals are each 95%, not adjusted for the number of axes; when an interval and its verdict still disagree
(the interval excludes 0 beside "no detectable difference", or the reverse) a note says so and which one
decides.
Latency, cost and error-rate deltas sit beside the scores, so the trade-off a single headline number
hides stays visible. Errors count as wrong (score 0), as in the report's headline; a pair that is an error in
both runs is a difference of 0 whatever the models can do, and a note counts such pairs. ``differs`` lists the
settings of the evaluation that are not the same in the two manifests: what tells the runs apart when the
model is the same (temperature 0 against 0.8, another endpoint, an edited template).

The package has one module per job, all private (import from ``eval_harness.compare``):

- ``_schema``: the JSON document (``Comparison`` and its parts), ``ALPHA``, and which rows have a verdict.
- ``_settings``: what two manifests alone tell (no numpy): the refusal (``incomparable``), the settings that
  differ (``differing_settings``), and the notes on a rescore, a forced resume and the pass thresholds.
- ``_paired``: the paired statistics: the join (``join_keys``, ``_Pairs``), a row per axis and overall with its
  paired test and interval, Holm's adjustment and the verdicts (``_rows``), and the axes with no pair.
- ``_notes``: the prose notes, each a function of the pairs and the rows.
- ``_comparison``: ``compare_runs``: reads the two runs and puts the document together.

Imports flow one way, down these rows: a module imports only from rows below its own, never from its row::

    _comparison
    _notes
    _paired | _settings
    _schema
"""

# __all__ is what it was in compare.py; the names imported "as" themselves were public there too, and stay importable
# (cli/compare.py types with CompareRun, tests/test_compare.py calls join_keys).
from eval_harness.compare._comparison import compare_runs
from eval_harness.compare._paired import join_keys as join_keys
from eval_harness.compare._schema import ALPHA, CompareAxis, Comparison, SettingChange, UnpairedAxis, Verdict
from eval_harness.compare._schema import COMPARE_SCHEMA_VERSION as COMPARE_SCHEMA_VERSION
from eval_harness.compare._schema import CompareHeadline as CompareHeadline
from eval_harness.compare._schema import CompareRun as CompareRun
from eval_harness.compare._schema import judged_rows as judged_rows
from eval_harness.compare._settings import differing_settings as differing_settings
from eval_harness.compare._settings import incomparable as incomparable

__all__ = ["ALPHA", "CompareAxis", "Comparison", "SettingChange", "UnpairedAxis", "Verdict", "compare_runs"]
