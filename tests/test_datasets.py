"""The dataset layer: streaming, validation problems with FILE:LINE: field, ids, hashing, sampling, splits."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
from conftest import SHARED, TaskRoot, arithmetic_records, write_jsonl

from eval_harness.datasets import (
    MAX_LINE_BYTES,
    PROBLEMS_SHOWN,
    DatasetReport,
    Problem,
    file_sha256,
    is_compressed,
    iter_positioned,
    iter_samples,
    load_samples,
    sample,
    split,
    validate_dataset,
)
from eval_harness.errors import DatasetError, DatasetUnreadableError
from eval_harness.types import DATASET_CHECKS, DatasetSpec


def problems_of(path: Path, spec: DatasetSpec | None = None) -> list[str]:
    return [str(p) for p in validate_dataset(path, spec).problems]


def test_valid_file_reports_counts_axes_and_sha256(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", arithmetic_records(6, axes=("a", "b", "c")))
    report = validate_dataset(path)
    assert report.ok
    assert (report.lines, report.valid) == (6, 6)
    assert dict(report.axis_counts) == {"a": 2, "b": 2, "c": 2}
    assert report.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_invalid_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"input": "a", "target": "b"}, '{"input": "x", "target": }'])
    assert problems_of(path) == [f"{path}:2: line: invalid JSON: Expecting value at column 26"]


def test_an_unterminated_string_is_said_once(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", ['{"input": "x', '{"input": "a\u0001"}'])
    assert problems_of(path) == [  # datasets-s30: "Unterminated string starting at at column 11"
        f"{path}:1: line: invalid JSON: Unterminated string starting at column 11",
        f"{path}:2: line: invalid JSON: Invalid control character at column 13",
    ]


def test_a_file_whose_lines_end_in_cr_alone_is_told_so(tmp_path: Path) -> None:
    # hostile-s33: one line, "invalid JSON: Extra data at column 42", and no word of why
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"id": "a", "input": "x", "target": "1"}\r{"id": "b", "input": "y", "target": "2"}\r')
    assert problems_of(path) == [
        f"{path}:1: line: invalid JSON: Extra data at column 42; its lines end with a carriage return alone (CR, old "
        "Mac line ends): convert them to LF"
    ]


@pytest.mark.parametrize(("levels", "refused"), [(199, False), (200, True), (1000, True)])
def test_a_line_nested_past_what_the_records_writer_takes_is_a_problem(
    tmp_path: Path, levels: int, refused: bool
) -> None:
    # review2-s33 B2: a few-shot example nested 1,000 deep (validate-dataset took it) was a traceback of the run,
    # where the JSON writer of its fingerprint stops at 255 levels
    # the line's object is one level more than ``levels``
    text = '{"id": "x", "input": "q", "target": "t", "metadata": ' + '{"a": ' * levels + "1" + "}" * levels + "}"
    path = tmp_path / "d.jsonl"
    path.write_text(text + "\n")
    expected = [f"{path}:1: line: arrays and objects nested more than 200 levels deep"] if refused else []
    assert problems_of(path) == expected


def test_problems_of_reports_added_together_are_alike_only_when_all_of_them_are() -> None:
    # re-read s33: validate-dataset's sum of few-shot files' reports kept "alike" from neither, so problems of two
    # kinds read as the first one "and the same on 5 more lines"
    def report_of(path: str, field: str) -> DatasetReport:
        report = DatasetReport(path=path)
        for line in (1, 2, 3):
            report.add(Problem(path, line, field, "missing"))
        return report

    joined = DatasetReport(path="2 files")
    for report in (report_of("a.jsonl", "input"), report_of("b.jsonl", "target")):
        joined.add_problems_of(report)
    assert joined.problem_count == 6
    assert joined.problem_lines() == [f"{f}:{n}: {field}: missing" for f, field in (("a.jsonl", "input"),
                                      ("b.jsonl", "target")) for n in (1, 2, 3)]  # fmt: skip
    same = DatasetReport(path="2 files")
    for path in ("a.jsonl", "b.jsonl"):
        same.add_problems_of(report_of(path, "input"))
    assert same.problem_lines() == ["a.jsonl:1: input: missing", "... and the same on 5 more lines"]


def test_line_that_is_not_an_object_is_a_problem(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", ['["input", "target"]', "42"])
    assert problems_of(path) == [
        f"{path}:1: line: expected a JSON object, got an array",
        f"{path}:2: line: expected a JSON object, got an integer",
    ]


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"target": "b"}, "input: missing (required)"),
        ({"input": "a"}, "target: missing (required)"),
        ({"input": 5, "target": "b"}, "input: expected a string or a list of messages, got an integer"),
        ({"input": "  ", "target": "b"}, "input: is empty"),
        ({"input": "a", "target": {"x": 1}}, "target: expected a string or a list of strings, got an object"),
        ({"input": "a", "target": []}, "target: is an empty list"),
        (
            {"input": "a", "target": "b", "id": 1.5},
            "id: expected a string or a whole number within 64 bits, got another number: quote it as the id",
        ),
        ({"input": "a", "target": "b", "axis": 3}, "axis: expected a string, got an integer"),
        (
            {"input": "a", "target": "b", "axis": " "},
            "axis: is empty",
        ),  # hostile-s33: "expected a non-empty string, got a string"
        ({"input": "a", "target": "b", "id": [1]}, "id: expected a string or a whole number, got an array"),
        ({"input": "a", "target": "b", "tags": "x"}, "tags: expected a list of strings, got a string"),
        ({"input": "a", "target": "b", "choices": [1, None]}, "choices: expected a list of strings"),
        ({"input": "a", "target": "b", "metadata": [1]}, "metadata: expected an object, got an array"),
        ({"input": [{"role": "robot", "content": "x"}], "target": "b"}, "input[0].role: expected one of"),
        ({"input": [{"role": "user", "content": 7}], "target": "b"}, "input[0].content: expected a string"),
    ],
)
def test_wrong_or_missing_field_is_named(tmp_path: Path, record: dict[str, object], expected: str) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [record])
    problems = problems_of(path)
    assert len(problems) == 1
    assert problems[0].startswith(f"{path}:1: {expected}")


def test_mapped_field_problem_names_the_source_field(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"question": 3, "answer": "x"}])
    spec = DatasetSpec(fields={"input": "question", "target": "answer"})
    assert problems_of(path, spec) == [f"{path}:1: question: expected a string or a list of messages, got an integer"]


@pytest.mark.parametrize(
    ("mapped", "expected"),
    [
        # adopt-s32 9: the line's own fields, and the near one, tell a misspelt mapping from a broken line
        (
            {"choices": "option"},
            "option: missing (mapped to choices; the line has question, answer, options: did you mean 'options'?)",
        ),
        ({"axis": "subject"}, "subject: missing (mapped to axis; the line has question, answer, options)"),
        ({"id": "qid"}, "qid: missing (mapped to id; the line has question, answer, options)"),
        (
            {"input": "questions"},
            "questions: missing (mapped to input; the line has question, answer, options: did you mean 'question'?)",
        ),
    ],
)
def test_a_column_the_task_maps_must_be_on_every_line(tmp_path: Path, mapped: dict[str, str], expected: str) -> None:
    """A misspelt mapping (``choices = "option"`` for OpenBookQA's ``options``) passed validation: every prompt was
    sent without its options and the run reported a normal-looking score (audit-s20 1)."""
    (column,) = mapped.values()
    second = {"question": "R?", "answer": "B", "options": ["c", "d"]}
    path = write_jsonl(tmp_path / "d.jsonl", [{**second, column: ["a", "b"] if column == "option" else "q1"}, second])
    spec = DatasetSpec(fields={"input": "question", "choices": "options", "target": "answer", **mapped})
    assert problems_of(path, spec) == [f"{path}:2: {expected}"]


def test_tags_metadata_a_mapping_to_its_own_name_and_an_axis_pattern_fallback_stay_optional(tmp_path: Path) -> None:
    """review-s20 3, 4: ``choices = "choices"`` written to be explicit, and an axis column that only backs up
    ``axis_pattern``, made every line without them a problem."""
    path = write_jsonl(
        tmp_path / "d.jsonl", [{"q": "Q?", "a": "x", "labels": ["t"], "subject": "s"}, {"q": "R?", "a": "y"}]
    )
    spec = DatasetSpec(fields={"input": "q", "target": "a", "tags": "labels", "metadata": "meta", "choices": "choices"})
    assert problems_of(path, spec) == []
    assert [s.tags for s in iter_samples(path, spec)] == [["t"], []]
    by_name = DatasetSpec(fields={"input": "q", "target": "a", "axis": "subject"}, axis_pattern=r"^(\w+)\.jsonl$")
    assert problems_of(path, by_name) == []
    assert [s.axis for s in iter_samples(path, by_name)] == ["d", "d"]


def test_a_mapped_axis_column_is_required_where_axis_pattern_misses_the_file_name(tmp_path: Path) -> None:
    """review-s21 8: the column backing a pattern that does not match this file is the only axis there is; a line
    without it took "default" silently."""
    rows = [{"q": "Q?", "a": "x", "subject": "s"}, {"q": "R?", "a": "y"}]
    path = write_jsonl(tmp_path / "d-1.jsonl", rows)
    by_name = DatasetSpec(fields={"input": "q", "target": "a", "axis": "subject"}, axis_pattern=r"^(\w+)\.jsonl$")
    assert problems_of(path, by_name) == [
        f"{path}:2: subject: missing (mapped to axis; axis_pattern '^(\\w+)\\.jsonl$' does not match the file name "
        "'d-1.jsonl')"
    ]
    csv_path = tmp_path / "d-1.csv"
    csv_path.write_text("q,a\nQ?,x\n", encoding="utf-8")
    as_csv = by_name.model_copy(update={"format": "csv"})
    assert [str(p) for p in validate_dataset(csv_path, as_csv).problems] == [
        f"{csv_path}:1: subject: no such column in the header (mapped to axis); its columns: q, a; no row can be read"
    ]
    named = tmp_path / "named.csv"
    named.write_text("q,a\nQ?,x\n", encoding="utf-8")
    csv_by_name = as_csv.model_copy(update={"axis_pattern": r"^(\w+)\.csv$"})
    assert validate_dataset(named, csv_by_name).ok and [s.axis for s in iter_samples(named, csv_by_name)] == ["named"]


def test_duplicate_ids_are_reported_with_the_first_line(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "d.jsonl",
        [
            {"id": "a", "input": "x", "target": "y"},
            {"id": "b", "input": "x", "target": "y"},
            {"id": "a", "input": "z", "target": "w"},
        ],
    )
    report = validate_dataset(path)
    assert [str(p) for p in report.problems] == [f"{path}:3: id: duplicate id 'a' (first on line 1)"]
    assert report.duplicate_ids == ["a"]


def test_empty_file_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"")
    assert problems_of(path) == [f"{path}:1: file: the file is empty"]


def test_a_byte_order_mark_makes_its_line_a_problem_line_that_skip_invalid_leaves_out(tmp_path: Path) -> None:
    """The line was parsed and counted valid, so --skip-invalid said it left line 1 out and ran it (audit-s20 7)."""
    path = tmp_path / "d.jsonl"
    lines = [json.dumps({"id": name, "input": "a", "target": "b"}).encode() for name in ("x", "y")]
    path.write_bytes(b"\xef\xbb\xbf" + b"\n".join(lines) + b"\n")
    report = validate_dataset(path)
    assert [str(p) for p in report.problems] == [
        f"{path}:1: file: starts with a UTF-8 byte-order mark; save it without BOM"
    ]
    assert (report.valid, report.problem_count) == (1, 1)
    assert [sample.id for sample in iter_samples(path)] == ["y"]


def test_invalid_utf8_is_reported_on_its_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    good = json.dumps({"input": "a", "target": "b"}).encode()
    path.write_bytes(good + b"\n" + b'{"input": "caf\xe9", "target": "b"}\n')
    assert problems_of(path) == [f"{path}:2: line: invalid UTF-8 at byte 14"]


def test_blank_lines_are_allowed_and_reported(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"input": "a", "target": "b"}, "", "   ", {"input": "c", "target": "d"}])
    report = validate_dataset(path)
    assert report.ok
    assert report.blank_lines == [2, 3]
    assert report.valid == 2


def test_line_over_10_mb_is_refused_without_parsing_it(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    with path.open("wb") as handle:
        handle.write(json.dumps({"input": "a", "target": "b"}).encode() + b"\n")
        handle.write(b'{"input": "' + b"x" * (MAX_LINE_BYTES + 10) + b'", "target": "b"}\n')
        handle.write(json.dumps({"input": "c", "target": "d"}).encode() + b"\n")
    report = validate_dataset(path)
    assert [str(p) for p in report.problems] == [f"{path}:2: line: longer than 10 MB"]
    assert report.valid == 2
    assert report.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_only_the_first_50_problems_are_kept_but_all_are_counted(tmp_path: Path) -> None:
    lines = ['{"input": "a", "target": }', '{"input": 5, "target": "b"}'] * 60  # two problems, taking turns
    path = write_jsonl(tmp_path / "d.jsonl", lines)
    report = validate_dataset(path)
    assert report.problem_count == 120
    assert len(report.problems) == PROBLEMS_SHOWN
    assert report.problem_lines()[-1] == "... and 70 more problems"


def test_problems_that_all_say_the_same_are_listed_once_with_a_count(tmp_path: Path) -> None:
    # adopt-s32 9: a misspelt mapping listed 50 copies of one line, then "... and 1,269 more problems"
    path = write_jsonl(tmp_path / "d.jsonl", [{"question": f"q{i}", "target": "b"} for i in range(120)])
    report = validate_dataset(path, DatasetSpec(fields={"input": "questoin"}))
    assert report.problem_lines() == [
        f"{path}:1: questoin: missing (mapped to input; the line has question, target: did you mean 'question'?)",
        "... and the same on 119 more lines",
    ]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "no such file"),
        (lambda p: p.mkdir(), r"the directory holds no \.jsonl or \.jsonl\.gz file"),  # a directory is read whole
        (lambda p: p.write_bytes(gzip.compress(b'{"input": "a"}\n')[:-6]), "the gzip data is corrupt or truncated"),
        # a gzip header over garbage failed at the first peek, outside the guard: "error: Unknown compression method"
        (lambda p: p.write_bytes(b"\x1f\x8bgarbage\n"), r"d\.jsonl: cannot read the dataset: the gzip data is corrupt"),
        (lambda p: p.write_bytes(gzip.compress("{}\n".encode("utf-16"))), "UTF-16"),
        (lambda p: p.write_bytes("{}\n".encode("utf-16")), "UTF-16"),
        # datasets-s30: a Parquet download was "not JSON: this looks like plain text"
        (lambda p: p.write_bytes(b"PAR1\x15\x04junk"), r"it is a Parquet file, which is not read: convert it to JSONL"),
    ],
)
def test_unreadable_file_raises_with_the_reason(tmp_path: Path, make: object, message: str) -> None:
    path = tmp_path / "d.jsonl"
    make(path)  # type: ignore[operator]
    with pytest.raises(DatasetUnreadableError, match=message):
        validate_dataset(path)


def test_a_gzip_file_reads_as_its_content(tmp_path: Path) -> None:
    # HumanEval ships as .jsonl.gz: the same samples and sha256 as the decompressed file, so either counts as
    # the same dataset for a resume
    records = [{"id": f"q{i}", "input": f"question {i}", "target": str(i)} for i in range(3)]
    plain = write_jsonl(tmp_path / "d.jsonl", records)
    packed = tmp_path / "d.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert list(iter_samples(packed)) == list(iter_samples(plain))
    assert validate_dataset(packed).sha256 == validate_dataset(plain).sha256 == file_sha256(packed)
    assert is_compressed(packed) and not is_compressed(plain)


def test_missing_id_is_derived_from_content_and_stable(tmp_path: Path) -> None:
    record = {"input": "a", "target": "b"}
    path = write_jsonl(tmp_path / "d.jsonl", [record])
    first = [s.id for s in iter_samples(path)]
    again = [
        s.id
        for s in iter_samples(write_jsonl(tmp_path / "e.jsonl", [{"id": "x", "input": "q", "target": "r"}, record]))
    ]
    assert first[0] == again[1] == hashlib.sha256(json.dumps(record).encode()).hexdigest()[:16]


def test_identical_lines_without_ids_get_distinct_derived_ids_and_a_warning(tmp_path: Path) -> None:
    record = {"input": "a", "target": "b"}
    path = write_jsonl(tmp_path / "d.jsonl", [record, record])
    report = validate_dataset(path)
    ids = [s.id for s in iter_samples(path)]
    assert report.ok and len(set(ids)) == 2
    assert ids[1] == ids[0] + "-2"
    assert [(repeat.line, repeat.sample_id) for repeat in report.repeats] == [(2, ids[1])]
    assert str(report.repeats[0]) == f"{path}:2: duplicate content; id {ids[1]} was derived"


def test_samples_are_streamed_with_defaults_and_extra_fields_kept_as_metadata(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": 7, "input": "a", "target": 42, "source": "web"}])
    (only,) = iter_samples(path)
    assert (only.id, only.target, only.axis, only.tags) == ("7", "42", "default", [])
    assert only.metadata == {"source": "web"}


def test_chat_message_input_and_several_targets(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "d.jsonl",
        [{"input": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], "target": ["x", "y"]}],
    )
    (only,) = iter_samples(path)
    assert [m.role for m in only.input] == ["system", "user"]  # type: ignore[union-attr]
    assert only.targets == ["x", "y"]


def test_a_chat_input_must_end_with_the_users_turn(tmp_path: Path) -> None:
    # before: a last assistant turn was rendered as a second user turn, silently changing its role
    ending = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "partial answer"}]
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": "m", "input": ending, "target": "t"}])
    report = validate_dataset(path)
    assert report.problem_lines() == [
        f"{path}:1: input[1].role: the last message must be the user's (the turn the model answers), got 'assistant'"
    ]


def test_field_mapping_and_target_pattern_read_gsm8k_style_answers(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"question": "2+2?", "answer": "2 plus 2\n#### 1,004"}])
    spec = DatasetSpec(fields={"input": "question", "target": "answer"}, target_pattern=r"####\s*(.+)$")
    (only,) = iter_samples(path, spec)
    assert (only.input, only.target) == ("2+2?", "1,004")
    assert only.metadata["target_raw"] == "2 plus 2\n#### 1,004"


def test_target_not_matching_the_pattern_is_a_problem(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"question": "q", "answer": "no marker"}])
    spec = DatasetSpec(fields={"input": "question", "target": "answer"}, target_pattern=r"####\s*(.+)$")
    # the pattern as the spec writes it (not repr's doubled backslashes) and what the value holds (audit-s20 9)
    assert problems_of(path, spec) == [
        f"{path}:1: answer: does not match target_pattern '####\\s*(.+)$' (the value is 'no marker')"
    ]
    answer = "Each week he pays 20 dollars, for 50 weeks.\n#### 1,000"
    long = write_jsonl(tmp_path / "long.jsonl", [{"question": "q", "answer": answer}])
    gsm8k = DatasetSpec(fields={"input": "question", "target": "answer"}, target_pattern=r"####\s*(\d+)$")
    (problem,) = problems_of(long, gsm8k)
    assert problem.endswith(
        """target_pattern '####\\s*(\\d+)$' (the value ends '…ays 20 dollars, for 50 weeks.\\n#### 1,000')"""
    )


def test_headerless_csv_with_choice_columns_and_axis_from_file_name(tmp_path: Path) -> None:
    path = tmp_path / "anatomy_test.csv"
    path.write_text('"Which, of these?",one,two,three,four,C\nSecond "q",a,b,c,d,A\n', encoding="utf-8")
    spec = DatasetSpec(
        format="csv",
        csv_columns=["question", "A", "B", "C", "D", "answer"],
        fields={"input": "question", "target": "answer", "choices": ["A", "B", "C", "D"]},
        axis_pattern=r"(.+)_test\.csv$",
    )
    report = validate_dataset(path, spec)
    samples = list(iter_samples(path, spec))
    assert report.ok and report.valid == 2
    assert report.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (samples[0].input, samples[0].choices, samples[0].target, samples[0].axis) == (
        "Which, of these?",
        ["one", "two", "three", "four"],
        "C",
        "anatomy",
    )


MMLU_ROWS = DatasetSpec(
    format="csv",
    csv_columns=["question", "A", "B", "C", "D", "answer"],
    fields={"input": "question", "target": "answer"},
)
"""MMLU's header-less CSV rows, as the built-in task reads them (without its choices)."""


def test_csv_row_with_wrong_column_count_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("q,a,b,c,d,A\nshort,row\n", encoding="utf-8")
    spec = MMLU_ROWS
    assert problems_of(path, spec) == [f"{path}:2: row: expected 6 columns, got 2"]


def test_a_quote_left_open_says_which_lines_it_took_in(tmp_path: Path) -> None:
    # datasets-s30 F5: "expected 6 columns, got 1" on line 2, and the rows after it vanished without a word
    path = tmp_path / "t.csv"
    path.write_text('q1,a,b,c,d,A\n"open quote,a,b,c,d,B\nq3,a,b,c,d,C\nq4,a,b,c,d,D\n', encoding="utf-8")
    spec = MMLU_ROWS
    assert problems_of(path, spec) == [
        f"{path}:2: row: expected 6 columns, got 1 (the row runs from line 2 to line 4: a quote opened here and "
        "not closed takes in the lines after it, which are not read as rows)"
    ]


def test_a_csv_row_of_empty_cells_is_blank_only_at_the_header_width(tmp_path: Path) -> None:
    # fuzz-s25 11: a row of 100,000 commas was counted as blank ("the file holds only blank lines")
    path = tmp_path / "t.csv"
    path.write_text("question,answer\n,\n" + "," * 100_000 + "\nwhat is 1+1,2\n", encoding="utf-8")
    report = validate_dataset(path, DatasetSpec(format="csv", fields={"input": "question", "target": "answer"}))
    assert [str(p) for p in report.problems] == [f"{path}:3: row: expected 2 columns, got 100001"]
    assert (report.blank_lines, report.valid) == ([2], 1)


def test_a_csv_row_spanning_lines_is_named_by_the_line_it_starts_on(tmp_path: Path) -> None:
    # a row was named by its last line (csv's line_num), which holds the end of a quoted field, not the row
    path = tmp_path / "t.csv"
    rows = ["question,answer\n", '"two\nlines",1\n', '"three\nmore\nlines",\n', "too,many,cells\n", "last,4\n"]
    path.write_text("".join(rows), encoding="utf-8")  # rows start on lines 2, 4, 7 and 8
    spec = DatasetSpec(format="csv", fields={"input": "question", "target": "answer"})
    assert problems_of(path, spec) == [f"{path}:4: answer: is empty", f"{path}:7: row: expected 2 columns, got 3"]
    read = [(position.line, item.input) for position, item in iter_positioned(path, spec)]
    assert read == [(2, "two\nlines"), (8, "last")]  # what a record's dataset_line says


def test_a_csv_field_as_long_as_a_jsonl_line_may_be_is_read(tmp_path: Path) -> None:
    # fuzz-s25 11: the csv module's 128 KiB field limit refused a long-context item its JSONL twin took
    path = tmp_path / "t.csv"
    long_input = "word " * 60_000  # 300 KB
    path.write_text(f'question,answer\n"{long_input}",2\n"{"x" * (MAX_LINE_BYTES + 1)}",3\n', encoding="utf-8")
    spec = DatasetSpec(format="csv", fields={"input": "question", "target": "answer"})
    report = validate_dataset(path, spec)
    assert [str(p) for p in report.problems] == [
        f"{path}:3: row: malformed CSV: a field longer than 10 MB; reading stopped"
    ]
    assert [len(sample.input) for sample in iter_samples(path, spec)][:1] == [len(long_input)]


def test_a_column_the_header_names_twice_is_a_problem_on_the_header(tmp_path: Path) -> None:
    # fuzz-s25 4: "question,answer,answer" took each row's last answer, and validate-dataset and run said nothing
    path = tmp_path / "t.csv"
    path.write_text("question,answer,answer\nwhat is 1+1,2,3\n", encoding="utf-8")
    report = validate_dataset(path, DatasetSpec(format="csv", fields={"input": "question", "target": "answer"}))
    assert [str(p) for p in report.problems] == [
        f"{path}:1: answer: the header names this column more than once (columns 2, 3); rename one; no row can be read"
    ]
    assert report.valid == 0


def test_a_column_the_header_lacks_is_one_problem_on_the_header_not_one_per_row(tmp_path: Path) -> None:
    # Before: "answr: missing (mapped to target)" on every one of the file's rows, the header never named.
    path = tmp_path / "t.csv"
    path.write_text(
        "question,answer,A,B\nwhat is 1+1,2,x,y\nwhat is 2+2,4,x,y\n\nwhat is 3+3,6,x,y\n", encoding="utf-8"
    )
    spec = DatasetSpec(format="csv", fields={"input": "question", "target": "answr", "choices": ["A", "B", "C"]})
    report = validate_dataset(path, spec)
    columns = "its columns: question, answer, A, B; no row can be read"
    assert [str(p) for p in report.problems] == [
        f"{path}:1: answr: no such column in the header (mapped to target); {columns}",
        f"{path}:1: C: no such column in the header (mapped to choices); {columns}",
    ]
    assert (report.lines, report.valid, report.blank_lines, report.problem_count) == (4, 0, [4], 2)
    assert report.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    unmapped = validate_dataset(path, DatasetSpec(format="csv", fields={"input": "question"}))
    assert [str(p) for p in unmapped.problems] == [
        f"{path}:1: target: no such column in the header (required); its columns: question, answer, A, B; no row "
        "can be read"
    ]


def test_load_samples_raises_with_every_problem_listed(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"input": "a", "target": "b"}, "nope", {"input": "a"}])
    with pytest.raises(DatasetError) as raised:
        load_samples(path)
    assert raised.value.problems == [
        f"{path}:2: line: invalid JSON: Expecting value at column 1",
        f"{path}:3: target: missing (required)",
    ]


def test_sample_is_deterministic_and_independent_of_file_order(tmp_path: Path) -> None:
    records = arithmetic_records(50)
    forward = list(iter_samples(write_jsonl(tmp_path / "f.jsonl", records)))
    backward = list(iter_samples(write_jsonl(tmp_path / "b.jsonl", list(reversed(records)))))
    chosen = sample(forward, 10, seed=3)
    assert [s.id for s in chosen] == [s.id for s in sample(forward, 10, seed=3)]
    assert {s.id for s in chosen} == {s.id for s in sample(backward, 10, seed=3)}
    assert {s.id for s in chosen} != {s.id for s in sample(forward, 10, seed=4)}
    assert [s.id for s in chosen] == sorted(s.id for s in chosen)  # original order kept


def test_a_negative_sample_size_is_refused_not_an_empty_subset(tmp_path: Path) -> None:
    samples = list(iter_samples(write_jsonl(tmp_path / "d.jsonl", arithmetic_records(5))))
    with pytest.raises(ValueError, match="a sample size must be 0 or more, got -1"):
        sample(samples, -1, seed=0)
    assert sample(samples, 0, seed=0) == []


def test_split_is_stratified_by_axis_and_covers_every_sample_once(tmp_path: Path) -> None:
    samples = list(iter_samples(write_jsonl(tmp_path / "d.jsonl", arithmetic_records(30, axes=("a", "b", "c")))))
    parts = split(samples, {"train": 0.2, "test": 0.8}, seed=1)
    assert sorted(s.id for part in parts.values() for s in part) == sorted(s.id for s in samples)
    for axis in "abc":
        assert sum(1 for s in parts["train"] if s.axis == axis) == 2
    assert [s.id for s in parts["train"]] == [s.id for s in split(samples, {"train": 0.2, "test": 0.8}, 1)["train"]]


def test_split_rejects_fractions_not_summing_to_one() -> None:
    with pytest.raises(ValueError, match="sum to 1"):
        split([], [0.5, 0.4], seed=0)


@pytest.mark.skipif(not (SHARED / "datasets").is_dir(), reason="../shared/datasets is only present in this workplace")
def test_last_line_without_newline_is_kept() -> None:
    path = SHARED / "datasets" / "openbookqa" / "test.jsonl"
    spec = DatasetSpec(fields={"input": "question", "target": "answer"})
    report = validate_dataset(path, spec)
    assert (report.valid, report.problem_count) == (500, 0)


def test_choices_given_as_one_string_are_split_by_choices_pattern(tmp_path: Path) -> None:
    record = {"question": "Q?", "options": "A. first one\nB. second\nC. third\nD. fourth", "answer": "B. second"}
    path = write_jsonl(tmp_path / "obqa.jsonl", [record])
    spec = DatasetSpec(
        fields={"input": "question", "choices": "options", "target": "answer"},
        choices_pattern=r"^[A-Z]\. (.*)$",
        target_pattern=r"^([A-D])\.",
    )
    (only,) = iter_samples(path, spec)
    assert only.choices == ["first one", "second", "third", "fourth"]
    assert only.target == "B"


OBQA_SPEC = DatasetSpec(
    fields={"input": "question", "choices": "options", "target": "answer"},
    choices_pattern=r"^[A-Z]\. (.*)$",
    target_pattern=r"^([A-D])\.",
)


def test_an_options_line_the_pattern_does_not_match_is_a_problem_not_an_option_left_out(tmp_path: Path) -> None:
    # datasets-s30 F3: "A) a marsh" was left out, "B. a tundra" became option A, and the gold letter A then
    # named the tundra: a wrong answer scored right, and validate-dataset said 0 problems
    good = {"question": "Q?", "options": "A. a marsh\nB. a tundra\nC. a desert", "answer": "A. a marsh"}
    shifted = {**good, "options": "A) a marsh\nB. a tundra\nC. a desert"}
    report = validate_dataset(write_jsonl(tmp_path / "o.jsonl", [good, shifted]), OBQA_SPEC)
    assert (report.valid, report.problem_count) == (1, 1)
    assert str(report.problems[0]).endswith(
        ":2: options: line 1 of the options, 'A) a marsh', reads as an option but does not match choices_pattern "
        "'^[A-Z]\\. (.*)$' (left out, the options after it would take other letters)"
    )


@pytest.mark.parametrize("line", ["B - y", "**B.** y", "- B. y", "Option B: y", "B． y", "B、y", "(b) y"])
def test_a_line_labelled_another_way_among_the_options_is_a_problem(tmp_path: Path, line: str) -> None:
    # review2-s30 2: these were left out without a word, the letters after them shifted
    record = {"question": "Q?", "options": f"A. x\n{line}\nC. z", "answer": "B. y"}
    report = validate_dataset(write_jsonl(tmp_path / "o.jsonl", [record]), OBQA_SPEC)
    assert report.problem_count == 1 and "reads as an option but does not match" in str(report.problems[0])


@pytest.mark.parametrize(
    ("options", "pattern", "read"),
    [
        # review-s30 5: lines a match covers, or that read as no option, were refused
        ("Options:\nA. x\nB. y", r"^[A-Z]\. (.*)$", ["x", "y"]),  # a header
        ("A. a long option\n   that wraps\nB. y", r"^[A-Z]\. (.*)$", ["a long option", "y"]),  # a wrapped option
        ("A) x\nB) y\nC) z", r"(?:\A|\n)[A-Z]\) ([^\n]*)", ["x", "y", "z"]),  # a match that opens at the newline
        ("A. first\nline two\nB. y", r"^[A-Z]\. ((?:.|\n(?![A-Z]\. ))*)", ["first\nline two", "y"]),  # over lines
        ("A.\nParis\nB.\nLondon", r"[A-Z]\.\n(.*)", ["Paris", "London"]),  # review2-s30: a label on its own line
        ("A. at 9\na.m. sharp\nB. y", r"^[A-Z]\. (.*)$", ["at 9", "y"]),  # "a.m." opens no option
    ],
)
def test_options_the_pattern_covers_or_lines_that_are_no_option_are_read(
    tmp_path: Path, options: str, pattern: str, read: list[str]
) -> None:
    spec = OBQA_SPEC.model_copy(update={"choices_pattern": pattern})
    record = {"question": "Q?", "options": options, "answer": "A. x"}
    (only,) = iter_samples(write_jsonl(tmp_path / "o.jsonl", [record]), spec)
    assert only.choices == read


def test_options_on_one_line_and_blank_lines_between_them_are_read(tmp_path: Path) -> None:
    spec = OBQA_SPEC.model_copy(update={"choices_pattern": r"\(([^()]*)\)"})
    record = {"question": "Q?", "options": "(red) (green)\n\n(blue)", "answer": "C. blue"}
    (only,) = iter_samples(write_jsonl(tmp_path / "o.jsonl", [record]), spec)
    assert only.choices == ["red", "green", "blue"]


def test_a_target_letter_past_the_options_is_a_problem(tmp_path: Path) -> None:
    # datasets-s30 F3: a line of 3 options with answer "D. ..." passed, and each answer to it was a scoring error
    record = {"question": "Q?", "options": "A. one\nB. two\nC. three", "answer": "D. four"}
    report = validate_dataset(write_jsonl(tmp_path / "o.jsonl", [record]), OBQA_SPEC)
    assert [str(p).split(":", 2)[2] for p in report.problems] == [
        " answer: 'D' names no option: the line has 3 (A, B, C)"
    ]
    listed = {"input": "Q?", "choices": ["x", "y"], "target": "C"}
    assert validate_dataset(write_jsonl(tmp_path / "l.jsonl", [listed]), DatasetSpec()).problem_count == 1
    as_text = {"input": "Q?", "choices": ["A", "Z"], "target": "Z"}  # the option's own text, not a letter
    assert validate_dataset(write_jsonl(tmp_path / "t.jsonl", [as_text]), DatasetSpec()).ok
    for target in ("d", "(D)", "D:", '"D"', "**D**", "D,"):  # review-s30 6: the choice scorer reads them as D
        decorated = {"input": "Q?", "choices": ["x", "y", "z"], "target": target}
        report = validate_dataset(write_jsonl(tmp_path / "d.jsonl", [decorated]), DatasetSpec())
        assert [str(p).split(":", 2)[2] for p in report.problems] == [
            f" target: {target!r} names no option: the line has 3 (A, B, C)"
        ]


@pytest.mark.skipif(not (SHARED / "datasets").is_dir(), reason="../shared/datasets is only present in this workplace")
def test_openbookqa_maps_choices_and_letters_from_the_original_file() -> None:
    spec = DatasetSpec(
        fields={"input": "question", "choices": "options", "target": "answer"},
        choices_pattern=r"^[A-Z]\. (.*)$",
        target_pattern=r"^([A-D])\.",
    )
    path = SHARED / "datasets" / "openbookqa" / "test.jsonl"
    samples = list(iter_samples(path, spec))
    assert validate_dataset(path, spec).ok and len(samples) == 500
    assert all(len(s.choices or []) == 4 and s.target in "ABCD" for s in samples)


@pytest.mark.parametrize(
    "line",
    [
        {"id": "a", "input": "q", "target": "t", "axis": "x"},
        {"id": "b", "input": "q", "target": ""},
        {"input": "q", "target": "t"},
        {"id": "c", "input": "  ", "target": "t"},
        {"id": "d", "input": "q", "target": "t", "axis": " "},
        {"id": "e", "input": "q", "target": "t", "axis": None},
        {"id": "f", "input": "q", "target": "t", "tags": ["k"], "extra": 1},
        {"id": "g", "input": "q", "target": 7},
    ],
)
def test_the_plain_line_shortcut_reads_exactly_what_the_general_path_reads(tmp_path: Path, line: dict) -> None:
    # A mapping of each field onto itself forces the general path; the results must not differ.
    path = tmp_path / "d.jsonl"
    write_jsonl(path, [line])
    identity = DatasetSpec(fields={"input": "input"})
    plain, general = validate_dataset(path), validate_dataset(path, identity)
    assert plain.problem_lines() == general.problem_lines()
    assert list(iter_samples(path)) == list(iter_samples(path, identity))


def test_a_run_validated_by_older_checks_whose_lines_a_new_check_refuses_is_refused_on_resume_with_why(
    task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same bytes read by a version with a check added since: a line the run counted yields no sample, so every
    resume ended 'interrupted, 0 new records; resume with ...' forever (review-s20 2)."""
    from eval_harness.cli.app import main
    from eval_harness.datasets import _fields

    records = [{"q": f"What is {i} + 1?", "a": str(i + 1), **({"subject": "s"} if i % 3 else {})} for i in range(9)]
    task_root.data("mapped.jsonl", records)
    task_root.task(
        "mapped",
        'name = "mapped"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/mapped.jsonl"\n'
        'fields = { input = "q", target = "a", axis = "subject" }\n[[scorers]]\nname = "exact_match"\n',
    )
    monkeypatch.chdir(task_root.root)
    args = ["run", "--task", "mapped", "--model", "mock/m", "--run-id", "r", "--output-dir", "results", "-q"]
    with monkeypatch.context() as before:  # the version that started the run had no such check
        before.setattr(_fields, "_REQUIRED_WHEN_MAPPED", frozenset())
        with pytest.raises(SystemExit) as started:
            main(args)
    assert started.value.code in (0, None)
    run = task_root.root / "results" / "r"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["dataset"]["sample_count"] == 9
    assert manifest["dataset"]["checks"] == DATASET_CHECKS
    del manifest["dataset"]["checks"]  # as a run started before the checks were versioned records it
    (run / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted", "harness_version": "0.0.9"}))
    (run / "samples.jsonl").write_text("".join((run / "samples.jsonl").read_text().splitlines(keepends=True)[:4]))
    capsys.readouterr()
    with pytest.raises(SystemExit) as resumed:
        main(["resume", str(run), "-q"])
    err = capsys.readouterr().err
    assert resumed.value.code == 2
    assert "find 6 valid samples in it where the run, started by an earlier version (0.0.9), counted 9" in err
    assert "data/mapped.jsonl:1: subject: missing (mapped to axis; the line has q, a)" in err
    assert len((run / "samples.jsonl").read_text().splitlines()) == 4


def test_a_run_whose_older_checks_pass_again_records_this_builds_checks_once(
    task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review-s22 6: nothing recorded that the bytes passed, so every later resume validated the whole file again
    (and dataset.axes stayed unknown)."""
    from eval_harness import planning
    from eval_harness.cli.app import main

    monkeypatch.chdir(task_root.root)
    args = ["run", "--task", "adder", "--model", "mock/m", "--run-id", "r", "--output-dir", "results", "-q"]
    with pytest.raises(SystemExit):
        main(args)
    run = task_root.root / "results" / "r"
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["dataset"].update(checks=2, axes=None)  # as a build before DATASET_CHECKS 3 recorded it
    (run / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    (run / "samples.jsonl").write_text("".join((run / "samples.jsonl").read_text().splitlines(keepends=True)[:4]))
    passes: list[Path] = []
    counted = planning._dataset_pass
    monkeypatch.setattr(
        planning, "_dataset_pass", lambda task, path, pool: passes.append(path) or counted(task, path, pool)
    )
    with pytest.raises(SystemExit):
        main(["resume", str(run), "-q"])
    dataset = json.loads((run / "manifest.json").read_text())["dataset"]
    assert (dataset["checks"], dataset["axes"], len(passes)) == (DATASET_CHECKS, ["alpha", "beta"], 1)
    (run / "manifest.json").write_text((run / "manifest.json").read_text().replace('"complete"', '"interrupted"'))
    with pytest.raises(SystemExit):
        main(["resume", str(run), "-q"])
    assert len(passes) == 1  # the hash alone, this time


def test_a_pattern_is_quoted_as_written_whatever_quotes_and_control_characters_it_holds() -> None:
    """review-s20 7: a pattern holding ' or a newline fell back to repr's doubled backslashes."""
    from eval_harness.errors import as_written

    assert as_written(r"^(\w+)\.csv$") == r"'^(\w+)\.csv$'"
    assert as_written(r"it's (\d+)") == r'''"it's (\d+)"'''
    assert as_written("a\nb(\\d)") == r"'a\nb(\d)'"
    assert as_written("""both ' and " (\\d)""") == r"""'both \' and " (\d)'"""
