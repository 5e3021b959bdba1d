"""Read a run's samples.jsonl into numpy columns and aggregate them (summary.json, reports, comparisons).

Reading is the expensive part of every report: a million records are about 900 MB of JSON, and parsing
each line with ``orjson`` takes 7-15 s on a small machine; this reader takes 4-7 s (``bench/report.py``).
:func:`load_columns` reads the file in 16 MB chunks and finds the few fields it needs with numpy: the
newline and comma positions of the chunk are located once, and every field is then reached from a comma
whose bytes are checked against the field's key (its first and last eight bytes, the whole key for
most). This works because records are written by pydantic in a fixed field order with no spaces, and
because the two bytes ``,"`` never occur inside a JSON string (a quote there is escaped), so a comma
followed by ``"key":`` is always a key. Any line that does not have exactly the expected shape (an error
whose scorer failed half-way, retries, escaped characters in the id, a record written by another tool)
is parsed with ``orjson`` instead, so the fast path decides only how fast a line is read, never what is
read from it, nor whether the line is refused. So the values it reads are held to what the orjson path
accepts: JSON's own number grammar (no ``.5``, ``1.``, ``+1`` or ``01``, nothing beyond float64) and the
record's types (``"epoch":0.0`` and ``"prompt_tokens":3.0`` are floats, which the orjson path refuses as
``record_problem`` does) and ranges (a score in [0, 1], no negative epoch, count, time or cost); a value it
cannot tell, or out of range, is left to orjson, which refuses it naming file, line and field, and so is the axis
``overall``, which no session writes. The fast path checks the structure around the fields it reads, not the
validity of the whole line: a line damaged in the middle of its output text is not noticed. What only the manifest
tells (an epoch at or past its ``epochs``) is checked on the columns once read (``check_run_values``).

A record's tags, a list of any length, are read into compressed sparse rows (``RunColumns.tag_offsets`` and
``tag_ids``, codes into ``tag_names``), not a Python list per row: a million untagged records cost one array of
offsets. Its finish reason, like its axis and error type, is a code into a table of names.

Records of the same ``(sample_id, epoch)`` may repeat after ``--retry-errors``; the last one wins.
Identities are 128-bit hashes of the UTF-8 sample id (and epoch), computed with numpy, so that a million
keys take milliseconds to deduplicate and join instead of a million Python strings.

Errors are counted as wrong (score 0) in ``mean``; ``mean_excluding_errors`` is the other policy.

The package has one module per job, all private (import from ``eval_harness.aggregate``):

- ``_arrays``: the numpy array types the others annotate with.
- ``_hashing``: 128-bit hashes of byte spans (identities of sample ids, keys and names), 8-byte word views.
- ``_columns``: the per-row columns and their ranges, the rows' tag lists; ``RunColumns``, and a chunk being read
  (``_Chunk``); the values no session of the run writes (``check_run_values``).
- ``_buffer``: a block of complete lines (``_Buffer``): its commas and keys, and the numbers, literals and
  names in its byte spans.
- ``_fast``: the fast path, the fields of a line of the runner's exact shape (``_fast_rows``).
- ``_slow``: the slow path, a line parsed with orjson (``_slow_row``), which decides what is refused.
- ``_load``: samples.jsonl in blocks (``_Blocks``), in worker processes for a large file, into ``RunColumns``
  (``load_columns``); whole records read back by byte offset (``read_records_at``).
- ``_cache``: the columns cache, .columns.npz, so that a session reads only the records appended since the last.
- ``_summary``: aggregation, the statistics of an axis and the run's summary (``summarize``); the rows of each
  axis and of each tag, and the answers cut at the output-token limit.
- ``_epochs``: pass@k and agreement across epochs; the distributions of scorers' values.

Imports flow one way, down these rows: a module imports only from rows below its own, never from its row::

    _summary
    _cache
    _load
    _fast | _slow | _epochs
    _buffer | _columns
    _hashing
    _arrays
"""

from eval_harness.aggregate._cache import (
    COLUMNS_CACHE,
    load_columns_cached,
    load_run_columns,
    refresh_run_columns,
    save_columns_cache,
)

# _ROW_COLUMNS and _Rows are private, re-exported (explicitly: "as" the same name) only for tests/test_aggregate.py,
# which pins that the row columns' table and the dataclass's fields agree; nothing else should import them.
from eval_harness.aggregate._columns import _ROW_COLUMNS as _ROW_COLUMNS
from eval_harness.aggregate._columns import RunColumns, check_run_values
from eval_harness.aggregate._columns import _Rows as _Rows
from eval_harness.aggregate._epochs import (
    EpochStats,
    ScorerDistribution,
    epoch_stats,
    scorer_distribution,
    scorer_distributions,
)
from eval_harness.aggregate._load import (
    SMALL_BLOCK_BYTES,
    default_workers,
    iter_records_at,
    load_columns,
    read_records_at,
    scorer_keys,
)
from eval_harness.aggregate._summary import (
    BY_SAMPLE,
    axis_stats,
    errors_by_type,
    finish_reasons,
    group_means,
    judge_cost,
    length_stopped,
    per_axis,
    per_sample_means,
    per_tag,
    sample_index,
    stopped_short_rows,
    summarize,
    summarize_columns,
    summarize_tally,
    units_without_errors,
    untagged,
)

__all__ = [
    "BY_SAMPLE",
    "COLUMNS_CACHE",
    "SMALL_BLOCK_BYTES",
    "EpochStats",
    "RunColumns",
    "ScorerDistribution",
    "axis_stats",
    "check_run_values",
    "default_workers",
    "epoch_stats",
    "errors_by_type",
    "finish_reasons",
    "group_means",
    "iter_records_at",
    "judge_cost",
    "length_stopped",
    "load_columns",
    "load_columns_cached",
    "load_run_columns",
    "per_axis",
    "per_sample_means",
    "per_tag",
    "read_records_at",
    "refresh_run_columns",
    "sample_index",
    "save_columns_cache",
    "scorer_distribution",
    "scorer_distributions",
    "scorer_keys",
    "stopped_short_rows",
    "summarize",
    "summarize_columns",
    "summarize_tally",
    "units_without_errors",
    "untagged",
]
