"""``inspect``: the worst samples and the errors of a run, read from its artifacts only."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, TaskRoot, read_records, write_jsonl

from eval_harness.errors import ConfigError
from eval_harness.inspect import inspect_run, normalise_message, shorten
from eval_harness.scorers import build_scorer
from eval_harness.types import Sample, ScorerSpec

Cli = Callable[..., CliResult]


def make_run(cli: Cli, root: TaskRoot, *args: str) -> Path:
    out = root.root / "results"
    result = cli("run", "--task", root.root / "tasks" / "adder.toml", "--output-dir", out, "--run-id", "r", "--quiet",
                 "--model", "mock/m", *args)  # fmt: skip
    assert result.code == 0, result.err
    return out / "r"


def test_worst_samples_are_lowest_score_then_id(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "--model-arg", "skill=0.5")
    records = read_records(run)
    expected = sorted((r["score"], r["sample_id"]) for r in records if r["error"] is None)[:5]
    inspection = inspect_run(run, n=5)
    assert inspection.worst is not None
    assert [(s.score, s.sample_id) for s in inspection.worst] == expected
    first = inspection.worst[0]
    record = next(r for r in records if r["sample_id"] == first.sample_id)
    assert (first.input, first.target, first.output) == (record["input"], record["target"], record["output"])
    assert first.scores == record["scores"] and first.explanations == record["explanations"]
    assert first.latency_ms == record["latency_ms"] and first.cost_usd == record["cost_usd"]


def test_a_record_edited_to_hold_a_byte_that_is_not_utf8_is_named_so(cli: Cli, task_root: TaskRoot) -> None:
    # hostile-s33 6: "byte 0: not a sample record; the file changed", of a file that had not changed
    run = make_run(cli, task_root, "--limit", "3")
    samples = run / "samples.jsonl"
    data = samples.read_bytes()
    at = data.index(b'"input":"') + len(b'"input":"')
    samples.write_bytes(data[:at] + b"\xff" + data[at + 1 :])
    shown = cli("inspect", "--run", run)
    assert (shown.code, shown.err) == (
        2,
        f"error: {samples}: byte 0: the record there holds a byte that is not UTF-8 (0xff, byte {at} of the line): "
        "samples.jsonl was edited; no record eval-harness writes holds one\n",
    )


def test_failures_only_and_axis_filter(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "--model-arg", "skill=0.9")
    failed = sorted(r["sample_id"] for r in read_records(run) if r["axis"] == "beta" and not r["passed"])
    inspection = inspect_run(run, n=40, axis="beta", failures_only=True)
    assert inspection.worst is not None
    assert [s.sample_id for s in inspection.worst] == failed
    assert inspection.candidates == len(failed)


def test_failures_are_grouped_by_what_their_verdicts_say(cli: Cli, task_root: TaskRoot) -> None:
    # adopt-s32 16: ranked by score, 0/1 failures all at 0 came in id order, saying nothing of their kinds
    run = make_run(cli, task_root, "--model-arg", "skill=0.3", "--model-arg", "format_ok=0.5",
                   "--model-arg", "error_rate=0.1", "--max-retries", "0")  # fmt: skip
    failed = [r for r in read_records(run) if r["error"] is not None or not r["passed"]]
    expected: dict[str, list[str]] = {}
    for record in failed:  # computed here from each record's own words, as a reader would group them
        if record["error"] is not None:
            reason = f"error {record['error']['type']}: {normalise_message(record['error']['message'])}"
        else:
            reason = f"exact_match: {normalise_message(record['explanations']['exact_match'])}"
        expected.setdefault(reason, []).append(record["sample_id"])
    inspection = inspect_run(run, failures_only=True)
    assert inspection.failure_reasons is not None and inspection.failure_reasons_read == len(failed)
    got = [(g.reason, g.count, g.example_sample_id) for g in inspection.failure_reasons]
    assert sorted(got) == sorted((reason, len(ids), ids[0]) for reason, ids in expected.items())
    counts = sorted((len(ids) for ids in expected.values()), reverse=True)
    assert [g.count for g in inspection.failure_reasons] == counts
    assert len(got) >= 3  # wrong numbers, no number, errors
    text = cli("inspect", "--run", run, "--show-failures", "--n", "1").out
    most = inspection.failure_reasons[0]
    assert f"failures by what the verdicts say (the {len(failed)}, {len(got)} kinds):" in text
    assert f"{most.count:>6,} × {most.reason}  (e.g. {most.example_sample_id})" in text
    assert inspect_run(run).failure_reasons is None  # only with --show-failures


def test_errors_grouped_by_type_with_one_example(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "--model-arg", "error_rate=0.3", "--max-retries", "0")
    errored = [r for r in read_records(run) if r["error"] is not None]
    inspection = inspect_run(run, show_worst=False)
    assert inspection.worst is None and inspection.errors is not None
    (group,) = inspection.errors
    assert (group.type, group.count, group.stage) == ("ProviderError", len(errored), "generate")
    assert group.example_sample_id == errored[0]["sample_id"]
    assert "simulated provider error" in group.example_message


def test_rank_by_one_scorer(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "--model-arg", "skill=0.5")
    inspection = inspect_run(run, n=3, scorer="exact_match")
    assert inspection.ranked_by == "exact_match"
    assert inspection.worst is not None and all(s.value == s.scores["exact_match"] for s in inspection.worst)
    with pytest.raises(ConfigError, match=r"no scorer 'bleu' \(its scorers: exact_match\)"):
        inspect_run(run, scorer="bleu")
    with pytest.raises(ConfigError, match=r"no axis 'gamma' \(its axes: alpha, beta\)"):
        inspect_run(run, axis="gamma")


def test_reads_only_the_artifacts(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "--model-arg", "skill=0.5")
    (task_root.root / "data" / "adder.jsonl").unlink()
    (task_root.root / "tasks" / "adder.toml").unlink()
    inspection = inspect_run(run, n=2)
    assert inspection.worst is not None and len(inspection.worst) == 2


def test_long_texts_keep_their_head_and_tail_and_say_how_much_was_cut() -> None:
    text = "a" * 200 + "MIDDLE" + "z" * 200
    assert shorten(text, limit=100, head=40) == "a" * 40 + " … 306 characters … " + "z" * 60
    assert shorten("short") == "short"


def test_control_characters_from_the_data_are_shown_not_sent_to_the_terminal(cli: Cli, task_root: TaskRoot) -> None:
    # a dataset (or a model) is untrusted: ESC[2J would clear the screen, an OSC sequence retitle the window
    task_root.data(
        "adder.jsonl", [{"id": "evil\x1b[2J\x1b]0;pwned\x07", "input": "What is 1 + 1?\x1b[31m", "target": "2"}]
    )
    run = make_run(cli, task_root)
    shown = cli("inspect", "--run", run, "--n", "1")
    assert shown.code == 0, shown.err
    assert "\x1b" not in shown.out and "\x07" not in shown.out
    assert "evil\\x1b[2J\\x1b]0;pwned\\x07" in shown.out and "What is 1 + 1?\\x1b[31m" in shown.out


def test_control_characters_from_the_data_in_an_error_message_are_shown_not_sent(cli: Cli, task_root: TaskRoot) -> None:
    # an error lists the run's tags as the data spells them: one holding ESC[2J must not clear the screen
    task_root.data("adder.jsonl", [{"id": "q", "input": "What is 1 + 1?", "target": "2", "tags": ["x\x1b[2J"]}])
    run = make_run(cli, task_root)
    refused = cli("inspect", "--run", run, "--tag", "nope")
    assert refused.code == 2
    assert "\x1b" not in refused.err and "its tags: x\\x1b[2J" in refused.err


def rewrite(run: Path, change: Callable[[dict[str, Any]], dict[str, Any]]) -> list[dict[str, Any]]:
    """Rewrite every record of ``run`` through ``change`` (as a run whose records say so would be written)."""
    records = [change(record) for record in read_records(run)]
    write_jsonl(run / "samples.jsonl", records)
    (run / ".columns.npz").unlink(missing_ok=True)  # the cache describes the file as it was
    return records


def errored_run(cli: Cli, root: TaskRoot) -> Path:
    return make_run(cli, root, "--model-arg", "skill=0.7", "--model-arg", "error_rate=0.3", "--max-retries", "0")


def test_errors_are_limited_to_the_axis_asked_for(cli: Cli, task_root: TaskRoot) -> None:
    run = errored_run(cli, task_root)
    beta = [r for r in read_records(run) if r["error"] is not None and r["axis"] == "beta"]
    inspection = inspect_run(run, axis="beta", show_worst=False)
    assert inspection.errors is not None and 0 < len(beta) < len(
        [r for r in read_records(run) if r["error"] is not None]
    )
    assert sum(g.count for g in inspection.errors) == inspection.error_records == len(beta)
    assert {g.example_axis for g in inspection.errors} == {"beta"}


def judge_failed_after_the_number_check(record: dict[str, Any]) -> dict[str, Any]:
    """The record of a sample whose own scorer passed and whose judge then failed (audit HIGH-1)."""
    if record["error"] is None and record["score"] == 1.0 and record["sample_id"] < "q0010":
        record.update(
            score=None,
            passed=False,
            error={"type": "SpentScoringError", "stage": "score", "message": "judge: judge call failed: 500"},
        )
    return record


def test_under_a_scorer_only_the_errors_without_its_value_are_counted(cli: Cli, task_root: TaskRoot) -> None:
    run = errored_run(cli, task_root)
    records = rewrite(run, judge_failed_after_the_number_check)
    without_value = [r for r in records if r["error"] is not None and "exact_match" not in r["scores"]]
    assert len(without_value) < len([r for r in records if r["error"] is not None])
    inspection = inspect_run(run, scorer="exact_match", show_worst=False)
    assert inspection.errors is not None
    assert [g.type for g in inspection.errors] == ["ProviderError"]
    assert inspection.error_records == inspection.errors[0].count == len(without_value)


def test_under_a_scorer_a_record_with_its_value_is_ranked_even_if_another_scorer_failed(
    cli: Cli, task_root: TaskRoot
) -> None:
    run = errored_run(cli, task_root)
    records = rewrite(run, judge_failed_after_the_number_check)
    inspection = inspect_run(run, scorer="exact_match", show_errors=False)
    assert inspection.candidates == sum("exact_match" in r["scores"] for r in records)


def test_show_failures_lists_error_records_as_wrong_among_the_failures(cli: Cli, task_root: TaskRoot) -> None:
    run = errored_run(cli, task_root)
    records = read_records(run)
    expected = sorted(
        (0.0 if r["error"] is not None else r["score"], r["sample_id"], r["epoch"])
        for r in records
        if r["error"] is not None or not r["passed"]
    )
    inspection = inspect_run(run, n=100, failures_only=True)
    assert inspection.worst is not None and inspection.candidates == len(expected)
    assert [(s.value, s.sample_id, s.epoch) for s in inspection.worst] == expected
    errored = {r["sample_id"] for r in records if r["error"] is not None}
    assert {s.sample_id for s in inspection.worst if s.error is not None} == errored
    assert all(s.error.type == "ProviderError" for s in inspection.worst if s.error is not None)


def test_show_failures_marks_error_records_in_the_table(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "--model-arg", "error_rate=1", "--max-retries", "0")
    shown = cli("inspect", "--run", run, "--show-failures", "--n", "2")
    assert shown.code == 0, shown.err
    assert "worst 2 failed samples" in shown.out and "ERROR ProviderError (generate), counted as wrong" in shown.out
    assert "error:  mock/m: simulated provider error" in shown.out


def two_causes(record: dict[str, Any]) -> dict[str, Any]:
    """Judge errors of one type with two causes: an outage, and malformed verdicts at varying columns."""
    if record["error"] is not None:
        number = int(record["sample_id"][1:])
        message = (
            "judge: judge call failed: mock/judge: simulated provider error (error_rate=0.5)"
            if number % 3
            else f"judge: judge verdict malformed after one repair: not a single JSON object (column {number})"
        )
        record["error"] = {"type": "SpentScoringError", "stage": "score", "message": message}
    return record


def test_errors_of_one_type_are_split_by_their_normalised_message(cli: Cli, task_root: TaskRoot) -> None:
    run = errored_run(cli, task_root)
    records = rewrite(run, two_causes)
    errored = [r for r in records if r["error"] is not None]
    malformed = sorted((r["sample_id"], r["epoch"]) for r in errored if "malformed" in r["error"]["message"])
    outage = sorted((r["sample_id"], r["epoch"]) for r in errored if "call failed" in r["error"]["message"])
    assert malformed and outage
    inspection = inspect_run(run, show_worst=False)
    assert inspection.errors is not None
    by_message = {g.message: g for g in inspection.errors}
    assert set(by_message) == {
        "judge: judge call failed: mock/judge: simulated provider error (error_rate=N)",
        "judge: judge verdict malformed after one repair: not a single JSON object (column N)",
    }
    for group, keys in ((by_message[min(by_message)], outage), (by_message[max(by_message)], malformed)):
        assert (group.type, group.stage, group.count) == ("SpentScoringError", "score", len(keys))
        assert [(k.sample_id, k.epoch) for k in group.keys] == keys
        assert group.sample_ids == sorted({sample_id for sample_id, _ in keys})
        assert (group.example_sample_id, group.example_epoch) == keys[0]


def test_the_error_example_does_not_depend_on_the_file_order(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "--model-arg", "error_rate=0.3", "--max-retries", "0", "--epochs", "2")
    records = read_records(run)
    first = min((r["sample_id"], r["epoch"]) for r in records if r["error"] is not None)
    write_jsonl(run / "samples.jsonl", records[::-1])
    (run / ".columns.npz").unlink(missing_ok=True)
    inspection = inspect_run(run, show_worst=False)
    assert inspection.errors is not None
    assert (inspection.errors[0].example_sample_id, inspection.errors[0].example_epoch) == first


def test_error_groups_in_json_list_the_keys_to_retry(cli: Cli, task_root: TaskRoot) -> None:
    run = errored_run(cli, task_root)
    errored = sorted([r["sample_id"], r["epoch"]] for r in read_records(run) if r["error"] is not None)
    shown = cli("inspect", "--run", run, "--errors", "--format", "json")
    assert shown.code == 0, shown.err
    (group,) = json.loads(shown.out)["errors"]
    assert [[k["sample_id"], k["epoch"]] for k in group["keys"]] == errored
    assert group["example_sample_id"] == errored[0][0] and group["count"] == len(errored)


def test_normalised_messages_keep_the_http_status_and_drop_what_varies() -> None:
    assert normalise_message("HTTP 503 after 2.5s for 'q0001' (request req_8f3a9b2c4d5e6f)", "q0001") == (
        "HTTP 503 after Ns for '…' (request <id>)"
    )
    assert normalise_message("q0007 has no verdict at line 3", "q0007") == "<sample> has no verdict at line N"


async def test_characters_named_by_code_point_and_choice_letters_vary_within_one_kind_of_failure() -> None:
    # adopt-s33 6: HumanEval's curly quotes made two kinds (U+NC, U+ND), OpenBookQA's expected letters four
    assert normalise_message("exit status 1: SyntaxError: invalid character '“' (U+201C)") == normalise_message(
        "exit status 1: SyntaxError: invalid character '”' (U+201D)"
    ) == "exit status N: SyntaxError: invalid character '…' (U+…)"  # fmt: skip
    scorer = build_scorer(ScorerSpec(name="choice"))

    def item(target: str) -> Sample:
        return Sample(id="q", input="?", target=target, choices=["w", "x", "y", "z"])

    wrong = [await scorer.score("The answer is A.", item(target)) for target in "BC"]
    unread = [await scorer.score("none of them", item(target)) for target in "AD"]
    for scores in (wrong, unread):
        assert len({normalise_message(score.explanation or "") for score in scores}) == 1, scores


def test_the_provider_and_model_a_message_opens_with_are_kept_whole() -> None:
    # audit-s21-hostile 12: "openai/gpt-4o-mini" was shown as "openai/gpt-No-mini"; a wait in the message still
    # varies (review-s22 8: OpenAI's "try again in 1m26.4s" must not make a group per wait)
    assert normalise_message("openai/gpt-4o-mini: HTTP 429: try again in 1m26.4s", "q1") == (
        "openai/gpt-4o-mini: HTTP 429: try again in Ns"
    )
    assert normalise_message("anthropic/claude-opus-4-7: HTTP 500: boom after 2.5s", "q1") == (
        "anthropic/claude-opus-4-7: HTTP 500: boom after Ns"
    )


def test_a_short_sample_id_is_not_replaced_inside_the_message() -> None:
    # before: id "0" turned "error_rate=0.1" into "error_rate=<sample>.1", so one cause became several groups
    assert normalise_message("mock/m: simulated provider error (error_rate=0.1)", "0") == (
        "mock/m: simulated provider error (error_rate=N)"
    )
    assert normalise_message("item-12 failed; see item-123", "item-12") == "<sample> failed; see item-N"


def test_a_group_lists_at_most_a_thousand_keys_and_counts_them_all(cli: Cli, task_root: TaskRoot) -> None:
    # before: every key of every group (15 MB of JSON for an outage over 200,000 records)
    run = errored_run(cli, task_root)
    records = read_records(run)
    failed = next(r for r in records if r["error"] is not None)
    many = [{**failed, "sample_id": f"z{i:05d}", "epoch": 0} for i in range(1_200)]
    write_jsonl(run / "samples.jsonl", [*records, *many])
    (run / ".columns.npz").unlink(missing_ok=True)
    inspection = inspect_run(run, show_worst=False)
    assert inspection.errors is not None
    group = max(inspection.errors, key=lambda g: g.count)
    assert group.count >= 1_200 and len(group.keys) == 1_000 and len(group.sample_ids) == 1_000


def long_output(record: dict[str, Any]) -> dict[str, Any]:
    record["output"] = "START" + "x" * 5000 + "The answer is 42."
    return record


def test_long_texts_are_shortened_in_the_table_and_whole_in_json(cli: Cli, task_root: TaskRoot) -> None:
    task_root.data("adder.jsonl", [{"id": "q1", "input": "BEGIN" + "y" * 3000 + " What is 41 + 1?", "target": "42"}])
    run = make_run(cli, task_root)
    rewrite(run, long_output)
    table = cli("inspect", "--run", run, "--n", "1")
    assert table.code == 0, table.err
    assert "output: START" in table.out and "… 4,222 characters …" in table.out and "The answer is 42." in table.out
    assert "input:  BEGIN" in table.out and "… 2,221 characters …" in table.out and "x" * 1000 not in table.out
    full = cli("inspect", "--run", run, "--n", "1", "--full")
    assert "x" * 5000 in full.out and "characters …" not in full.out
    (sample,) = json.loads(cli("inspect", "--run", run, "--n", "1", "--format", "json").out)["worst"]
    assert sample["output"] == long_output({})["output"] and sample["output_chars"] == 5022
    assert sample["input_chars"] == 3021 and sample["input"].endswith(" What is 41 + 1?")


def test_a_multiple_choice_item_shows_its_options_beside_the_input(cli: Cli, task_root: TaskRoot) -> None:
    task_root.template(
        "mc.jinja2", "{{ input }}\n{% for c in choices %}{{ letters[loop.index0] }}. {{ c }}\n{% endfor %}"
    )
    task_root.data("mc.jsonl", [{"id": "m1", "input": "Which is a prime?", "choices": ["4", "6", "7"], "target": "C"}])
    task_root.task(
        "mc",
        'name = "mc"\ntemplate = "mc.jinja2"\n[dataset]\npath = "data/mc.jsonl"\n[[scorers]]\nname = "exact_match"\n',
    )
    out = task_root.root / "results"
    assert cli("run", "--task", task_root.root / "tasks" / "mc.toml", "--output-dir", out, "--run-id", "mc", "-q",
               "--model", "mock/m").code == 0  # fmt: skip
    (sample,) = inspect_run(out / "mc", n=1).worst or []
    assert sample.choices == ["A. 4", "B. 6", "C. 7"]
    shown = cli("inspect", "--run", out / "mc", "--n", "1")
    assert "input:  Which is a prime?\n        A. 4\n        B. 6\n        C. 7\ntarget: C" in shown.out


def test_a_torn_last_line_is_noted(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "--limit", "1")
    with (run / "samples.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"sample_id":"q9')
    shown = cli("inspect", "--run", run)
    assert "1 record ·" in shown.out or shown.out.splitlines()[0].endswith("1 record")
    assert "note: a torn last line (16 bytes) was ignored" in shown.out
    assert json.loads(cli("inspect", "--run", run, "--format", "json").out)["torn_bytes"] == 16


# --------------------------------------------------------------------------------------------------
# answers cut off at the length limit (audit of a llama.cpp server)
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def cut_run(cli: Cli, task_root: TaskRoot) -> Path:
    """A run of 4 samples against a local server whose answers to all but the first stopped at max_tokens 8."""
    from fake_llm_server import FakeLLMServer, RecordedRequest, Reply, answer

    def cut_but_the_first(request: RecordedRequest) -> Reply | None:
        return None if "What is 0 + 1?" in request.prompt else answer("Let me add these", finish_reason="length")

    with FakeLLMServer() as server:
        server.rule = cut_but_the_first
        result = cli("run", "--task", task_root.root / "tasks" / "adder.toml", "--model", "openai-compatible/local",
                     "--model-arg", f"base_url={server.base_url}", "--output-dir", task_root.root / "results",
                     "--run-id", "r", "--limit", "4", "--max-tokens", "8", "-q")  # fmt: skip
    assert result.code == 0, result.err
    return task_root.root / "results" / "r"


def test_a_listed_answer_cut_off_at_max_tokens_says_so(cli: Cli, cut_run: Path) -> None:
    # before: nothing told an answer cut short from a wrong one
    shown = cli("inspect", "--run", cut_run, "--show-failures", "--n", "4")
    assert shown.code == 0, shown.err
    assert shown.out.count("finish: length (cut off at max_tokens 8)") == 3
    assert shown.out.count("finish:") == 3  # the first sample's answer stopped normally: nothing to say


def test_inspect_json_carries_each_listed_answers_finish_reason(cli: Cli, cut_run: Path) -> None:
    shown = cli("inspect", "--run", cut_run, "--show-failures", "--n", "4", "--format", "json")
    assert shown.code == 0, shown.err
    listed = json.loads(shown.out)["worst"]
    assert [(s["sample_id"], s["finish_reason"], s["cut_off"]) for s in listed] == [
        ("q0000", "stop", False),
        ("q0001", "length", True),
        ("q0002", "length", True),
        ("q0003", "length", True),
    ]


def epochs_run(cli: Cli, root: TaskRoot) -> Path:
    args = ("--model-arg", "skill=0.5", "--model-arg", "error_rate=0.2", "--max-retries", "0", "--epochs", "3")
    return make_run(cli, root, *args)


def by_sample_means(records: list[dict[str, Any]]) -> dict[str, float]:
    """Each sample's mean over its epochs, an error counted 0: worked out from the records, apart from numpy."""
    values: dict[str, list[float]] = {}
    for record in records:
        values.setdefault(record["sample_id"], []).append(0.0 if record["error"] else record["score"])
    return {sample: sum(scores) / len(scores) for sample, scores in values.items()}


def test_by_sample_ranks_samples_by_their_mean_over_epochs(cli: Cli, task_root: TaskRoot) -> None:
    run = epochs_run(cli, task_root)
    records = read_records(run)
    means = by_sample_means(records)
    assert len(set(means.values())) > 2  # the run mixes samples always wrong, sometimes right and always right
    inspection = inspect_run(run, n=6, by_sample=True)
    assert inspection.by_sample and inspection.candidates == len(means) and inspection.worst is not None
    expected = sorted((mean, sample) for sample, mean in means.items())[:6]
    assert [(s.sample_mean, s.sample_id) for s in inspection.worst] == [
        (pytest.approx(mean), sample) for mean, sample in expected
    ]
    for shown in inspection.worst:
        own = sorted((r for r in records if r["sample_id"] == shown.sample_id), key=lambda r: r["epoch"])
        assert shown.epochs is not None and [e.epoch for e in shown.epochs] == [0, 1, 2]
        assert [e.error_type for e in shown.epochs] == [r["error"]["type"] if r["error"] else None for r in own]
        assert [e.value for e in shown.epochs] == [r["score"] for r in own]
        # the record shown is the sample's lowest scored epoch, the earliest among equals (without
        # --show-failures an error record is listed under the errors, not here)
        lowest = min((r for r in own if r["score"] is not None), key=lambda r: (r["score"], r["epoch"]))
        assert (shown.epoch, shown.output) == (lowest["epoch"], lowest["output"])


def test_by_sample_with_show_failures_lists_the_samples_with_a_failed_epoch(cli: Cli, task_root: TaskRoot) -> None:
    run = epochs_run(cli, task_root)
    records = read_records(run)
    failing = {r["sample_id"] for r in records if r["error"] or not r["passed"]}
    inspection = inspect_run(run, n=1000, by_sample=True, failures_only=True)
    assert inspection.worst is not None and inspection.candidates == len(failing)
    assert {s.sample_id for s in inspection.worst} == failing
    # each is shown by an epoch that failed, although its mean counts the epochs that passed too
    assert all(s.error is not None or not s.passed for s in inspection.worst)
    means = by_sample_means(records)
    assert all(s.sample_mean == pytest.approx(means[s.sample_id]) for s in inspection.worst)


def test_by_sample_table_lists_every_epoch_under_the_sample(cli: Cli, task_root: TaskRoot) -> None:
    run = epochs_run(cli, task_root)
    result = cli("inspect", "--run", run, "--by-sample", "--n", "1", "--show-failures")
    assert result.code == 0, result.err
    assert "worst 1 sample with a failed epoch by mean score over their epochs" in result.out
    title = next(line for line in result.out.splitlines() if line.startswith("1. "))
    assert " over 3 epochs, " in title
    epochs_line = next(line for line in result.out.splitlines() if line.startswith("epochs: "))
    assert epochs_line.count(" · ") == 2 and epochs_line.startswith("epochs: 0 ")


def test_an_epoch_run_listing_says_it_ranks_records_and_points_to_by_sample(cli: Cli, task_root: TaskRoot) -> None:
    run = epochs_run(cli, task_root)
    result = cli("inspect", "--run", run, "--n", "2")
    assert result.code == 0, result.err
    assert "worst 2 records by score (of " in result.out
    assert "--by-sample ranks samples over their epochs" in result.out
    out = task_root.root / "results"
    assert cli("run", "--task", task_root.root / "tasks" / "adder.toml", "--output-dir", out, "--run-id", "one",
               "-q").code == 0  # fmt: skip
    assert "worst 2 samples by score" in cli("inspect", "--run", out / "one", "--n", "2").out  # one epoch each


def test_a_record_zeroed_by_a_failed_gate_names_the_gate(cli: Cli, task_root: TaskRoot) -> None:
    # the answers are right (exact_match 1) but never lower-case letters, so the lowercase gate fails
    task_root.task(
        "gated",
        'name = "gated"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
        '[[scorers]]\nname = "exact_match"\nargs = { mode = "numeric" }\n'
        '[[scorers]]\nname = "instructions"\nalias = "style"\ngate = true\n'
        'args = { checks = [{ type = "lowercase" }] }\n',
    )
    out = task_root.root / "results"
    assert cli("run", "--task", task_root.root / "tasks" / "gated.toml", "--model", "mock/m", "--model-arg",
               "skill=1", "--output-dir", out, "--run-id", "g", "-q", "--limit", "3").code == 0  # fmt: skip
    inspection = inspect_run(out / "g", n=1)
    assert inspection.worst is not None
    (shown,) = inspection.worst
    assert shown.score == 0.0 and (shown.scores["exact_match"], shown.scores["style"]) == (1.0, 0.0)
    assert shown.failed_gates == ["style"]
    table = cli("inspect", "--run", out / "g", "--n", "1").out
    assert "gate:   style 0.000 < 1, so the final score is 0" in table


def test_a_gate_recorded_as_null_is_no_failed_gate_and_shows_a_dash(cli: Cli, task_root: TaskRoot) -> None:
    # readers accept null in scores: inspect must not stop on one
    task_root.task(
        "gated",
        'name = "gated"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
        '[[scorers]]\nname = "exact_match"\nargs = { mode = "numeric" }\n'
        '[[scorers]]\nname = "exact_match"\nalias = "strict"\ngate = true\n',
    )
    out = task_root.root / "results"
    assert cli("run", "--task", task_root.root / "tasks" / "gated.toml", "--model", "mock/m", "--output-dir", out,
               "--run-id", "g", "-q", "--limit", "2").code == 0  # fmt: skip
    rewrite(out / "g", lambda r: {**r, "scores": {**r["scores"], "strict": None}})
    inspection = inspect_run(out / "g", n=2)
    assert inspection.worst is not None and all(s.failed_gates == [] for s in inspection.worst)
    table = cli("inspect", "--run", out / "g", "--n", "1")
    assert table.code == 0 and "  strict –" in table.out


@pytest.mark.parametrize("view", [[], ["--errors"], ["--show-failures"], ["--by-sample"]])
def test_a_run_without_samples_jsonl_is_inspected_as_empty(cli: Cli, task_root: TaskRoot, view: list[str]) -> None:
    """A run killed before its first record has no samples.jsonl: report shows it as incomplete, inspect gave
    the OS's 'No such file or directory' and exit 2."""
    run = make_run(cli, task_root, "--limit", "3")
    (run / "samples.jsonl").unlink()
    result = cli("inspect", "--run", run, *view)
    assert result.code == 0, result.err
    assert "0 records · INCOMPLETE: 3 of 3 records missing" in result.out


def test_the_rendered_prompt_and_a_scorers_stderr_are_shown_for_digging_into_a_failure(
    cli: Cli, task_root: TaskRoot
) -> None:
    """A prompt sent without its options (a misspelt mapping) was invisible in inspect, and code_execution's
    traceback, stored in the record, was shown by its last line only (audit-s20 4)."""
    task_root.data("adder.jsonl", [{"id": "q1", "input": "What is 41 + 1?", "target": "42"}])
    run = make_run(cli, task_root, "--model-arg", "skill=0")
    traceback = 'Traceback (most recent call last):\n  File "program.py", line 20\n    assert f(2) == 5\nAssertionError'

    def with_stderr(record: dict[str, Any]) -> dict[str, Any]:
        record["score_metadata"] = {"exact_match": {"stderr": traceback, "exit_status": 1}}
        return record

    (record,) = rewrite(run, with_stderr)
    table = cli("inspect", "--run", run, "--n", "1")
    assert table.code == 0, table.err
    assert 'File "program.py", line 20' in table.out and "assert f(2) == 5" in table.out
    assert "prompt: [" not in table.out
    shown = cli("inspect", "--run", run, "--n", "1", "--prompt")
    prompt_lines = [line for line in shown.out.splitlines() if line.startswith("prompt: [")]
    assert prompt_lines and prompt_lines[-1].startswith("prompt: [user] ") and "What is 41 + 1?" in prompt_lines[-1]
    assert len(prompt_lines) == len(record["prompt"])
    # the template's second line ("Answer only.") stays under the prompt, not at the listing's left edge
    assert "\n        Answer only." in shown.out and "\nAnswer only." not in shown.out
    (sample,) = json.loads(cli("inspect", "--run", run, "--n", "1", "--format", "json").out)["worst"]
    assert sample["prompt"] == record["prompt"]
    assert sample["score_metadata"] == {"exact_match": {"stderr": traceback, "exit_status": 1}}


def staged_judge_run(cli: Cli, root: TaskRoot) -> Path:
    """Three epochs of the adder; a staged 'judge' scored only the records that passed (skipped on the others)."""
    run = make_run(cli, root, "--epochs", "3", "--model-arg", "skill=0.5")
    records = read_records(run)
    for r in records:
        if r["passed"]:
            r["scores"]["judge"] = 0.5
    write_jsonl(run / "samples.jsonl", records)
    (run / ".columns.npz").unlink(missing_ok=True)
    return run


def test_a_by_sample_mean_over_fewer_epochs_than_the_sample_has_says_so(cli: Cli, task_root: TaskRoot) -> None:
    # before: "mean judge 0.500 over 3 epochs" for a mean over the two epochs the judge scored
    run = staged_judge_run(cli, task_root)
    shown = cli("inspect", "--run", run, "--scorer", "judge", "--by-sample", "--n", "40")
    mixed = {r["sample_id"] for r in read_records(run) if not r["passed"]} & {
        r["sample_id"] for r in read_records(run) if r["passed"]
    }
    assert mixed and shown.code == 0, shown.err
    titles = [line for line in shown.out.splitlines() if " · mean judge " in line]
    assert titles and all(" over 3 epochs" not in t for t in titles if t.split(" · ")[0].split(". ")[1] in mixed)
    assert any(" of 3 epochs, " in t for t in titles)


def test_failed_records_without_the_scorers_value_are_counted_not_hidden(cli: Cli, task_root: TaskRoot) -> None:
    # before: "none" under "worst 0 failed records by judge", as if nothing had failed
    run = staged_judge_run(cli, task_root)
    failed = sum(1 for r in read_records(run) if r["error"] is None and not r["passed"])
    shown = cli("inspect", "--run", run, "--scorer", "judge", "--show-failures")
    assert shown.code == 0, shown.err
    assert f"{failed} failed records without a judge value (skipped there): not ranked" in shown.out
    assert inspect_run(run, scorer="judge", failures_only=True).without_value == failed


def test_a_scorers_explanation_quoting_a_long_output_is_shortened_as_the_output_is(
    cli: Cli, task_root: TaskRoot
) -> None:
    # before: the explanation printed all 5,022 characters again under the shortened output
    run = make_run(cli, task_root)

    def explained(record: dict[str, Any]) -> dict[str, Any]:
        record = long_output(record)
        record["explanations"] = {name: f"read from {record['output']}" for name in record["scores"]}
        return record

    rewrite(run, explained)
    table = cli("inspect", "--run", run, "--n", "1")
    assert table.code == 0, table.err
    assert "x" * 1000 not in table.out and table.out.count("characters …") >= 2
    assert "x" * 5000 in cli("inspect", "--run", run, "--n", "1", "--full").out


def test_a_multi_line_output_is_indented_under_its_label(cli: Cli, task_root: TaskRoot) -> None:
    # before: an answer's later lines started at the margin, where "target: 5" read as the listing's own label
    run = make_run(cli, task_root)

    def two_lines(record: dict[str, Any]) -> dict[str, Any]:
        record["output"] = "Let me think.\ntarget: 5\nAnswer: 4"
        return record

    rewrite(run, two_lines)
    table = cli("inspect", "--run", run, "--n", "1").out
    assert "output: Let me think.\n        target: 5\n        Answer: 4\n" in table


def test_a_failed_call_shows_it_was_not_billed_not_an_unknown_price(cli: Cli, task_root: TaskRoot) -> None:
    # before: "unknown" beside a failed call of the free mock, which the report counts as billing nothing
    run = make_run(cli, task_root, "--model-arg", "error_rate=0.5")
    shown = cli("inspect", "--run", run, "--n", "40", "--show-failures").out
    failed = [line for line in shown.splitlines() if "· ERROR " in line]
    assert failed and all("not billed" in line and "unknown" not in line for line in failed)


# inspect-s31 -------------------------------------------------------------------------------------------------------
def test_shortening_never_lengthens_and_counts_one_character_as_one() -> None:
    assert shorten("x" * 801, limit=800) == "x" * 801  # " … 1 characters … " was longer than the 1 it replaced
    cut = shorten("a" * 200 + "b" * 650, limit=800, head=200)
    assert cut == "a" * 200 + " … 50 characters … " + "b" * 600


def test_a_weight_0_scorers_failures_are_told_from_its_skips(cli: Cli, task_root: TaskRoot) -> None:
    # F1: `--scorer J`, where the report sends the user to see why a judge has no value, said "skipped there" of
    # records whose judge failed (weight 0, so no error record), and showed nothing of the failures
    out = task_root.root / "results"
    ran = cli("run", "--task", "math_cot", "--model", "mock/tutor", "--model-arg", "skill=0.6", "--model-arg",
              "format_ok=0.5", "--limit", "12", "--judge-model", "mock/j", "--output-dir", out, "--run-id", "j",
              "-q")  # fmt: skip
    assert ran.code == 0, ran.err
    records = read_records(out / "j")
    explanations = [r["explanations"].get("reasoning_judge", "") for r in records]
    failed = [e for e in explanations if e.startswith("failed, not counted (weight 0): ")]
    assert 0 < len(failed) < len(records)
    shown = cli("inspect", "--run", out / "j", "--scorer", "reasoning_judge")
    assert (
        f"{len(records)} scored records without a reasoning_judge value, not ranked: it failed on {len(failed)} "
        f"(weight 0, not counted) and was skipped on {len(records) - len(failed)}"
    ) in shown.out
    first = next(r for r in records if r["explanations"].get("reasoning_judge", "").startswith("failed"))
    assert f"  the first it failed on: {first['sample_id']} (epoch 0): failed, not counted (weight 0): " in shown.out
    document = json.loads(cli("inspect", "--run", out / "j", "--scorer", "reasoning_judge", "--format", "json").out)
    assert (document["schema_version"], document["failed_without_value"]) == (1, len(failed))


def test_the_footer_counts_the_error_records_among_those_listed(cli: Cli, task_root: TaskRoot) -> None:
    # F2: under --scorer X --show-failures, error records with X's value (a judge's failure beside rougeL's) are
    # listed (ERROR) but the footer counted only those without it ("3 error records among the 20")
    out = task_root.root / "results"
    ran = cli("run", "--task", "summarization", "--model", "mock/sum", "--judge-model", "mock/j", "--judge-arg",
              "error_rate=0.5", "--output-dir", out, "--run-id", "s", "-q")  # fmt: skip
    assert ran.code == 0, ran.err
    listed = cli("inspect", "--run", out / "s", "--scorer", "rougeL", "--show-failures", "--n", "100")
    marked = listed.out.count(" · ERROR ")
    assert marked > 0 and f"{marked} error records among the " in listed.out, listed.out[-300:]


def test_a_long_or_multi_line_target_is_indented_and_shortened_as_an_output_is(cli: Cli, task_root: TaskRoot) -> None:
    # F3: a reference solution's later lines sat at column 0 (a line "2. fake (epoch 0)" read as the next entry),
    # and a 5,000-character target printed whole
    task_root.data("adder.jsonl", [
        {"id": "ml", "input": "What is 1 + 1?", "target": "2\n2. fake-id (epoch 0)"},
        {"id": "long", "input": "What is 2 + 2?", "target": "4" * 5000},
    ])  # fmt: skip
    run = make_run(cli, task_root, "--model-arg", "skill=0")
    shown = cli("inspect", "--run", run, "--n", "2")
    assert "\n2. fake-id" not in shown.out and "\n        2. fake-id (epoch 0)" in shown.out
    long_line = next(line for line in shown.out.splitlines() if line.startswith("target: 4"))
    assert len(long_line) < 1000 and " characters … " in long_line


def test_bidirectional_overrides_are_shown_escaped_in_tables_and_json(cli: Cli, task_root: TaskRoot) -> None:
    # F4, F5: U+202E reversed how the rest of the line read; JSON carried U+009B (a control sequence's start) raw
    task_root.data("adder.jsonl", [{"id": "q", "input": "What is 1 + 1?\u202e esrever\u009b2J\x7f", "target": "2"}])
    run = make_run(cli, task_root)
    shown = cli("inspect", "--run", run, "--n", "1")
    assert "\u202e" not in shown.out and "\\u202e esrever\\x9b2J\\x7f" in shown.out
    as_json = cli("inspect", "--run", run, "--n", "1", "--format", "json")
    assert not any(ch in as_json.out for ch in "\u202e\u009b\x7f")
    assert json.loads(as_json.out)["worst"][0]["input"] == "What is 1 + 1?\u202e esrever\u009b2J\x7f"


def test_a_run_whose_samples_file_is_gone_says_so(cli: Cli, task_root: TaskRoot) -> None:
    # F9: "INCOMPLETE: 40 of 40 records missing", exit 0, read as a run that never started
    run = make_run(cli, task_root)
    (run / "samples.jsonl").unlink()
    shown = cli("inspect", "--run", run)
    assert shown.code == 0
    assert shown.out.splitlines()[1] == "note: its samples.jsonl does not exist, though the manifest says complete"
    assert json.loads(cli("inspect", "--run", run, "--format", "json").out)["samples_missing"] is True


def test_ranked_by_one_scorer_the_verdict_says_it_is_the_final_scores(cli: Cli, task_root: TaskRoot) -> None:
    # F11: "num 1.000 · failed" under --scorer num --show-failures read as failed by num
    run = make_run(cli, task_root, "--model-arg", "skill=0.5")
    shown = cli("inspect", "--run", run, "--scorer", "exact_match", "--n", "3")
    assert " · failed (final score) · " in shown.out or " · passed (final score) · " in shown.out
    assert " · failed · " not in shown.out and " · passed · " not in shown.out


def test_a_composite_part_without_a_value_anywhere_is_inspected_not_refused(cli: Cli, task_root: TaskRoot) -> None:
    # inspect-s31 F10: "the run has no scorer 'quality.rj'" of a part the task declares, whose judge failed on every
    # record, where a top-level scorer without a value anywhere is inspected
    task_root.template("rubric.jinja2", "Grade: {{ output }}\n")
    spec = task_root.task(
        "comp",
        'name = "comp"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
        '[[scorers]]\nname = "composite"\nalias = "quality"\nargs = { scorers = [{ name = "exact_match", alias = '
        '"em" }, { name = "rubric_judge", alias = "rj", weight = 0, args = { rubric = "rubric.jinja2", criteria = '
        '["right"] } }] }\n',
    )
    out = task_root.root / "results"
    ran = cli("run", "--task", spec, "--model", "mock/m", "--limit", "3", "--judge-model", "mock/j", "--judge-arg",
              "error_rate=1", "--output-dir", out, "--run-id", "c", "-q")  # fmt: skip
    assert ran.code == 0, ran.err
    shown = cli("inspect", "--run", out / "c", "--scorer", "quality.rj")
    assert shown.code == 0 and "3 scored records without a quality.rj value" in shown.out, shown.err
    refused = cli("inspect", "--run", out / "c", "--scorer", "quality.nope")
    assert refused.code == 2 and "the run has no scorer 'quality.nope'" in refused.err
