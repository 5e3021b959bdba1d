"""The real `eval-harness` command end to end with the mock provider."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, CliResult, TaskRoot, arithmetic_records, read_records, run_subprocess, write_jsonl
from fake_llm_server import FakeLLMServer, RecordedRequest, Reply, answer, bad_request

Cli = Callable[..., CliResult]


def adder(task_root: TaskRoot) -> Path:
    return task_root.root / "tasks" / "adder.toml"


def test_run_prints_the_capability_profile_and_writes_the_run(cli: Cli, task_root: TaskRoot) -> None:
    out_dir = task_root.root / "results"
    result = cli(
        "run",
        "--task",
        adder(task_root),
        "--model",
        "mock/m",
        "--model-arg",
        "skill=0.7",
        "--output-dir",
        out_dir,
        "--run-id",
        "r1",
    )
    assert result.code == 0, result.err
    assert "alpha" in result.out and "beta" in result.out and "overall" in result.out
    assert "macro mean (over 2 axes)" in result.out and "micro mean (over 40 samples)" in result.out
    assert "run r1: complete, 40 new records" in result.out
    assert {p.name for p in (out_dir / "r1").iterdir()} >= {"manifest.json", "samples.jsonl", "summary.json"}


def test_the_bundled_capability_profile_holds_60_distinct_items_per_axis() -> None:
    """An item drawn twice counts twice in its axis's n and narrows its interval: string_ops held 43 distinct
    items of 60, and a hold-out could show one copy's answer to the other."""
    rows = [json.loads(line) for line in (REPO / "data" / "capability_profile.jsonl").read_text().splitlines()]
    items: dict[str, set[tuple[str, str]]] = {}
    for row in rows:
        items.setdefault(row["axis"], set()).add((row["input"], row["target"]))
    assert {axis: len(distinct) for axis, distinct in items.items()} == dict.fromkeys(
        ("arithmetic", "string_ops", "long_context", "multi_step"), 60
    )
    assert len(rows) == 240


def test_builtin_capability_profile_runs_with_the_bundled_data(cli: Cli, tmp_path: Path) -> None:
    result = cli(
        "run",
        "--task",
        "capability_profile",
        "--model",
        "mock/m",
        "--output-dir",
        tmp_path,
        "--run-id",
        "cp",
        "--quiet",
    )
    assert result.code == 0, result.err
    summary = json.loads((tmp_path / "cp" / "summary.json").read_text())
    assert [a["axis"] for a in summary["axes"]] == ["arithmetic", "long_context", "multi_step", "string_ops"]
    assert [a["n"] for a in summary["axes"]] == [60, 60, 60, 60]


def test_math_cot_extracts_final_numbers_from_chatter(cli: Cli, tmp_path: Path) -> None:
    result = cli(
        "run",
        "--task",
        "math_cot",
        "--model",
        "mock/m",
        "--model-arg",
        "skill=1",
        "--model-arg",
        "format_ok=0",
        "--output-dir",
        tmp_path,
        "--run-id",
        "m",
        "--quiet",
    )
    assert result.code == 0, result.err
    records = read_records(tmp_path / "m")
    assert len(records) >= 30
    assert all(r["score"] == 1.0 and r["output"] != r["target"] for r in records)
    assert "The answer is 26." in records[0]["prompt"][-1]["content"]  # few-shot examples rendered


def test_an_option_of_one_value_given_twice_is_refused_before_anything_runs(cli: Cli, task_root: TaskRoot) -> None:
    # click keeps the last value: two MMLU subjects given this way ran only the second, with exit 0
    other = task_root.data("other.jsonl", arithmetic_records(3))
    result = cli("run", "--task", "adder", "--dataset", task_root.root / "data" / "adder.jsonl",
                 f"--dataset={other}", "--output-dir", task_root.root / "results")  # fmt: skip
    assert (result.code, result.err) == (2, "error: --dataset given 2 times; it takes one value (give it once)\n")
    assert not (task_root.root / "results").exists()


def test_both_sides_of_an_on_off_option_are_refused(cli: Cli, task_root: TaskRoot) -> None:
    # audit-s21-input 14: "--cache --no-cache" ran with the last one, silently
    result = cli("run", "--task", "adder", "--cache", "--no-cache", "--output-dir", task_root.root / "results")
    assert (result.code, result.err) == (
        2,
        "error: --cache/--no-cache given 2 times; it is one on/off setting (give one of them once)\n",
    )
    assert not (task_root.root / "results").exists()
    quiet_twice = cli(
        "run", "--task", adder(task_root), "-q", "-q", "--limit", "1", "--output-dir", task_root.root / "r"
    )
    assert quiet_twice.code == 0, quiet_twice.err  # a flag alone given twice says nothing else


def test_repeatable_options_are_not_taken_for_repeats(cli: Cli, task_root: TaskRoot) -> None:
    run_dir = task_root.root / "results" / "r1"
    result = cli("run", "--task", task_root.root / "tasks" / "adder.toml", "--model-arg", "skill=0.5",
                 "--model-arg", "format_ok=0.25", "--fail-below-axis", "alpha=0.1", "--fail-below-axis", "beta=0.2",
                 "--limit", "2", "--output-dir", run_dir.parent, "--run-id", "r1", "-q")  # fmt: skip
    assert result.code == 0, result.err
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert (manifest["model"]["args"]["skill"], manifest["model"]["args"]["format_ok"]) == (0.5, 0.25)  # not defaults
    assert manifest["gates"]["fail_below_axis"] == [["alpha", 0.1], ["beta", 0.2]]


def test_two_key_values_after_one_model_arg_are_refused_with_the_spelling_that_works(
    cli: Cli, task_root: TaskRoot
) -> None:
    result = cli("run", "--task", task_root.root / "tasks" / "adder.toml", "--model-arg", "skill=1", "format_ok=1",
                 "--dry-run")  # fmt: skip
    assert (result.code, result.err) == (
        2,
        "error: format_ok=1: each KEY=VALUE needs its own --model-arg: --model-arg skill=1 --model-arg format_ok=1\n",
    )


def test_an_option_given_under_both_its_spellings_names_both(cli: Cli, task_root: TaskRoot) -> None:
    result = cli("run", "-t", "adder", "--task", "adder", "--dry-run")
    assert (result.code, result.err) == (2, "error: -t/--task given 2 times; it takes one value (give it once)\n")


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        (["run", "--task", "adder", "--limit-per-axis"], "eval-harness run [OPTIONS]"),
        (["cache", "clear", "--cache-dir"], "eval-harness cache clear [OPTIONS]"),
    ],
)
def test_an_option_given_last_without_its_value_prints_the_usage_lines_as_every_other_mistake(
    cli: Cli, args: list[str], usage: str
) -> None:
    # readme-walk3 13: click's parser raised it without a context, so only "Error: ..." was printed
    result = cli(*args)
    command = usage.removesuffix(" [OPTIONS]")
    assert (result.code, result.err) == (
        2,
        f"Usage: {usage}\nTry '{command} --help' for help.\n\nError: Option '{args[-1]}' requires an argument.\n",
    )


def test_an_option_of_a_subcommand_given_twice_is_refused(cli: Cli, tmp_path: Path) -> None:
    result = cli("cache", "clear", "--cache-dir", tmp_path / "a", "--cache-dir", tmp_path / "b")
    assert (result.code, result.err) == (2, "error: --cache-dir given 2 times; it takes one value (give it once)\n")


def test_a_template_that_renders_an_empty_prompt_is_refused_before_the_run_exists(
    cli: Cli, task_root: TaskRoot
) -> None:
    task_root.template("plain.jinja2", "{% if false %}{{ input }}{% endif %}\n")
    result = cli("run", "--task", task_root.root / "tasks" / "adder.toml", "--output-dir", task_root.root / "results")
    template = task_root.root / "templates" / "plain.jinja2"
    assert (result.code, result.err) == (2, f"error: {template}: renders an empty prompt for sample 'q0000'\n")
    assert not (task_root.root / "results").exists()


def test_a_template_naming_a_variable_no_sample_has_is_refused_before_the_run_exists(
    cli: Cli, task_root: TaskRoot
) -> None:
    task_root.template("plain.jinja2", "{{ input }} {{ question }}\n")
    result = cli("run", "--task", task_root.root / "tasks" / "adder.toml", "--output-dir", task_root.root / "results")
    assert result.code == 2 and "plain.jinja2:1: UndefinedError: 'question' is undefined" in result.err
    assert not (task_root.root / "results").exists()


def test_a_hold_out_that_leaves_nothing_to_evaluate_is_refused(cli: Cli, task_root: TaskRoot) -> None:
    spec = task_root.root / "tasks" / "adder.toml"
    spec.write_text(spec.read_text().replace("[dataset]", "[few_shot]\nk = 1\nholdout_fraction = 0.999\n[dataset]"))
    result = cli("run", "--task", spec, "--output-dir", task_root.root / "results")
    assert result.code == 2 and "holdout_fraction leaves no sample to evaluate (it holds out 40 of the 40" in result.err
    assert not (task_root.root / "results").exists()


def test_skip_invalid_with_no_valid_line_does_not_advise_skip_invalid(cli: Cli, task_root: TaskRoot) -> None:
    task_root.data("adder.jsonl", ["{oops", "{also broken"])
    result = cli("run", "--task", task_root.root / "tasks" / "adder.toml", "--skip-invalid")
    assert result.code == 2 and "no valid line is left to run; fix them" in result.err
    assert "pass --skip-invalid" not in result.err
    # datasets-s30: without the flag it was advised, though it would leave nothing to run either
    without = cli("run", "--task", task_root.root / "tasks" / "adder.toml")
    assert without.code == 2 and "no valid line is left to run; fix them" in without.err
    assert "--skip-invalid" not in without.err


def test_dry_run_prints_three_prompts_and_the_count_and_writes_nothing(cli: Cli, task_root: TaskRoot) -> None:
    result = cli("run", "--task", adder(task_root), "--dry-run", "--output-dir", task_root.root / "results")
    assert result.code == 0
    assert [f"prompt {i}" in result.out for i in (1, 2, 3, 4)] == [True, True, True, False]
    assert "What is 2 + 1?" in result.out and "What is 3 + 1?" not in result.out
    assert "40 prompts rendered; nothing was called or written" in result.out
    assert not (task_root.root / "results").exists()
    one = cli("run", "--task", adder(task_root), "--dry-run", "--limit", "1")
    assert "1 prompt rendered; nothing was called or written" in one.out


def test_a_run_paced_by_tpm_over_a_minute_or_more_says_how_long_before_it_starts(cli: Cli, task_root: TaskRoot) -> None:
    # resil-s31 7: --rpm said so, --tpm (83 s of pacing) said nothing
    paced = cli("run", "--task", adder(task_root), "--dry-run", "--tpm", "100", "--epochs", "2")
    assert paced.code == 0, paced.err
    found = re.search(r"Estimated prompt tokens ([\d,]+), ", paced.out)
    assert found is not None, paced.out
    estimated = int(found.group(1).replace(",", ""))
    assert estimated < 80 * 100  # no prompt is over the minute's budget
    minutes = round((estimated - 100) / 100)  # the bucket starts full: one minute's 100 tokens go at once
    assert paced.err.splitlines() == [
        f"note: --tpm 100 paces the run's ~{estimated:,} prompt tokens (estimated) over at least {minutes} minutes, "
        "its answers' tokens aside"
    ]
    assert cli("run", "--task", adder(task_root), "--dry-run", "--tpm", "1000000").err == ""  # within a minute
    # hostile-s33: a prompt over a minute's budget is booked as one minute's: 3 prompts at --tpm 0.5 take 2 minutes
    # after the first (the bucket starts full), where tokens / tpm said hours (806 days at 0.0001)
    over = cli("run", "--task", adder(task_root), "--dry-run", "--tpm", "0.5", "--limit", "3")
    assert over.err.endswith("over at least 2 minutes, its answers' tokens aside\n"), over.err


def test_a_run_paced_by_rpm_over_a_minute_or_more_says_how_long_before_it_starts(cli: Cli, task_root: TaskRoot) -> None:
    # before: a low --rpm started without a word and looked like a hang
    paced = cli("run", "--task", adder(task_root), "--dry-run", "--rpm", "6", "--epochs", "2")
    assert paced.code == 0, paced.err
    assert paced.err.splitlines() == ["note: --rpm 6 paces the run's 80 requests over at least 13 minutes"]
    once = cli("run", "--task", adder(task_root), "--dry-run", "--rpm", "0.5", "--limit", "2", "--epochs", "1")
    assert once.err.splitlines() == ["note: --rpm 0.5 paces the run's 2 requests over at least 2 minutes"]
    assert cli("run", "--task", adder(task_root), "--dry-run", "--rpm", "40").err == ""  # done within a minute
    assert cli("run", "--task", adder(task_root), "--dry-run", "--rpm", "1.5", "--limit", "2").err == ""  # 40 s
    cached = cli("run", "--task", adder(task_root), "--dry-run", "--rpm", "0.00001", "--limit", "2", "--cache")
    assert cached.err.splitlines() == [
        "note: --rpm 0.00001 paces the run's 2 requests over at least 69 days (answers found in --cache are not paced)"
    ]
    out_dir = task_root.root / "results"
    made = cli("run", "--task", adder(task_root), "--rpm", "6000", "--output-dir", out_dir, "--run-id", "p", "-q")
    assert made.code == 0, made.err
    resumed = cli("resume", cut_back(out_dir / "p", 38), "--rpm", "30", "-q")  # a new run of 40 would be told
    assert resumed.code == 0 and "paces" not in resumed.err, resumed.err  # a resume's share of the run is not known


def test_run_refuses_a_broken_dataset_with_exit_2_and_no_run_directory(cli: Cli, task_root: TaskRoot) -> None:
    data = task_root.data("adder.jsonl", [{"input": "a", "target": "b"}, {"input": "a"}, "[1]"])
    result = cli("run", "--task", adder(task_root), "--output-dir", task_root.root / "results")
    assert result.code == 2
    assert f"{data}:2: target: missing (required)" in result.err
    assert f"{data}:3: line: expected a JSON object, got an array" in result.err
    assert "Traceback" not in result.err
    assert not (task_root.root / "results").exists()


def test_validate_dataset_exit_codes(cli: Cli, tmp_path: Path) -> None:
    good = write_jsonl(tmp_path / "good.jsonl", [{"input": "a", "target": "b", "axis": "x"}, ""])
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"input": "a", "target": "b"}, "nope"])
    ok = cli("validate-dataset", "--path", good)
    assert ok.code == 0
    assert "2 lines, 1 valid, 1 blank, 0 duplicate ids, 0 problems" in ok.out and "axes: x 1" in ok.out
    problems = cli("validate-dataset", "--path", bad)
    assert problems.code == 1
    assert f"{bad}:2: line: invalid JSON: Expecting value at column 1" in problems.out
    missing = cli("validate-dataset", "--path", tmp_path / "missing.jsonl")
    assert missing.code == 2 and "cannot read the dataset: no such file" in missing.err
    assert "Traceback" not in missing.err + problems.err


def test_validate_dataset_uses_the_task_field_mapping(cli: Cli, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "gsm.jsonl", [{"question": "1+1?", "answer": "two\n#### 2"}])
    assert cli("validate-dataset", "--path", path).code == 1  # no mapping: input and target missing
    root = TaskRoot(tmp_path / "root")
    root.template("t.jinja2", "{{ input }}")
    spec = root.task(
        "gsm",
        'name = "gsm"\ntemplate = "t.jinja2"\n[dataset]\nfields = { input = "question", target = "answer" }\n'
        'target_pattern = "####\\\\s*(.+)$"\n[[scorers]]\nname = "exact_match"\n',
    )
    assert cli("validate-dataset", "--path", path, "--task", spec).code == 0


def test_tasks_lists_the_builtin_tasks(cli: Cli) -> None:
    result = cli("tasks")
    assert result.code == 0
    assert "capability_profile" in result.out and "math_cot" in result.out and "exact_match" in result.out


def test_fail_below_gate_exits_1(cli: Cli, task_root: TaskRoot) -> None:
    result = cli(
        "run",
        "--task",
        adder(task_root),
        "--model-arg",
        "skill=0.5",
        "--output-dir",
        task_root.root / "results",
        "--fail-below",
        "0.9",
        "--quiet",
    )
    assert result.code == 1 and "gate failed: overall mean" in result.err


def test_max_error_rate_gate_exits_1(cli: Cli, task_root: TaskRoot) -> None:
    result = cli(
        "run",
        "--task",
        adder(task_root),
        "--model-arg",
        "error_rate=0.5",
        "--output-dir",
        task_root.root / "results",
        "--max-error-rate",
        "0.1",
        "--quiet",
    )
    assert result.code == 1 and "gate failed: error rate" in result.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--task", "capability_profil"], "unknown task 'capability_profil'; did you mean 'capability_profile'"),
        (["run", "--task", "capability_profile", "--model-arg", "skill"], "--model-arg expects KEY=VALUE"),
        (
            ["run", "--task", "capability_profile", "--model-arg", "a=1", "--model-arg", "Bearer sk-CANARY-123456"],
            "the 2nd --model-arg has no '=' (not shown: it may hold a key)",
        ),
        (["run", "--task", "capability_profile", "--model-arg", "skil=1"], "--model-arg skil: unknown option"),
        (["run", "--task", "capability_profile", "--model", "nosuch/x"], "unknown provider 'nosuch'"),
        (
            ["run", "--task", "capability_profile", "--model-arg", "skill.arithmetc=0.2"],
            "--model-arg skill.arithmetc: the dataset has no axis 'arithmetc' (its axes: arithmetic, long_context,",
        ),
        (
            ["run", "--task", "capability_profile", "--judge-model", "mock/j", "--judge-arg", "skil=1"],
            "--judge-arg skil: unknown option (provider mock;",
        ),
        (["run"], "--task is required"),
        (["resume", "/nonexistent/run"], "manifest.json: not found"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli: Cli, tmp_path: Path, args: list[str], message: str) -> None:
    result = cli(*args, "--output-dir", tmp_path) if args[0] == "run" else cli(*args)
    assert result.code == 2
    assert message in result.err
    assert result.err.count("\n") == 1 and "Traceback" not in result.err
    assert "CANARY" not in result.err


def test_a_resume_after_an_included_template_changed_is_refused(cli: Cli, task_root: TaskRoot) -> None:
    # templates-s30 F1: only the top template was hashed; an edited include resumed silently, the run's prompts
    # half one text and half the other
    out_dir = task_root.root / "results"
    task_root.template("plain.jinja2", '{% include "parts/ask.jinja2" %}\n')
    task_root.template("parts/ask.jinja2", "{{ input }}\nAnswer with the number only.\n")
    assert cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--run-id", "i", "-q").code == 0
    task_root.template("parts/ask.jinja2", "{{ input }}\nAnswer with a word.\n")
    refused = cli("resume", out_dir / "i", "-q")
    assert refused.code == 2
    assert "changed since the run started: template plain.jinja2, or one it includes (sha256 " in refused.err


def test_an_optional_include_that_appears_before_a_resume_is_a_change(cli: Cli, task_root: TaskRoot) -> None:
    # review2-s30 1: absent at the start, the run's digest was its main file's, which the rule for runs recorded
    # before includes were hashed then kept: half the prompts without the include, half with it, no word
    out_dir = task_root.root / "results"
    task_root.template("plain.jinja2", '{% include "extra.jinja2" ignore missing %}{{ input }}\n')
    assert cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--run-id", "o", "-q").code == 0
    assert json.loads((out_dir / "o" / "manifest.json").read_text())["task"]["template_includes"] == []
    task_root.template("extra.jinja2", "SYSTEM: say 42. ")
    refused = cli("resume", cut_back(out_dir / "o", 3), "-q")
    assert refused.code == 2 and "template plain.jinja2, or one it includes (sha256 " in refused.err, refused.err


def test_resume_alias_and_resume_flag_both_continue_a_run(cli: Cli, task_root: TaskRoot) -> None:
    out_dir = task_root.root / "results"
    assert cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--run-id", "r", "-q").code == 0
    samples = out_dir / "r" / "samples.jsonl"
    lines = samples.read_bytes().splitlines(keepends=True)
    samples.write_bytes(b"".join(lines[:10]))
    first = cli("resume", out_dir / "r", "-q")
    assert first.code == 0 and len(read_records(out_dir / "r")) == 40
    again = cli("run", "--resume", out_dir / "r")
    assert again.code == 0 and "0 new records, 40 already done" in again.out


def test_a_forced_quiet_resume_names_what_changed_on_stderr(cli: Cli, task_root: TaskRoot) -> None:
    out_dir = task_root.root / "results"
    assert (
        cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--run-id", "f", "-q", "--limit", "5").code == 0
    )
    task_root.template("plain.jinja2", "{{ input }}\nAnswer with the number only.\n")
    refused = cli("resume", out_dir / "f", "-q")
    assert refused.code == 2 and "plain.jinja2" in refused.err
    forced = cli("resume", out_dir / "f", "-q", "--force")
    assert forced.code == 0 and forced.out == f"{out_dir / 'f'}\n"
    assert forced.err.startswith("--force: resuming although template plain.jinja2 (sha256 ")
    # torture-s25 F5: the printed resume command, pasted, was refused again, and nothing had said it would be
    assert forced.err.splitlines()[1] == (
        "resume: the manifest keeps what the run started with (of a forced change, only the new arguments of the "
        "model and the judge are recorded): a later resume needs --force again"
    )
    assert cli("resume", out_dir / "f", "-q").code == 2


def test_a_quiet_run_writes_its_directory_and_nothing_else_to_stdout(cli: Cli, task_root: TaskRoot) -> None:
    out_dir = task_root.root / "results"
    done = cli("run", "--task", adder(task_root), "--output-dir", out_dir, "-q", "--limit", "3")
    run_dirs = list(out_dir.iterdir())
    # the default run id is a time and a random suffix: stdout is the only way a script learns it
    assert done.code == 0 and len(run_dirs) == 1
    assert done.out == f"{run_dirs[0]}\n"
    failing = ("--model", "mock/m", "--model-arg", "skill=0", "--fail-below", "0.5")
    gated = cli("run", "--task", adder(task_root), "--output-dir", out_dir, "-q", "--limit", "3", *failing)
    assert gated.code == 1 and gated.out.count("\n") == 1
    assert Path(gated.out.strip()).parent == out_dir and Path(gated.out.strip()) != run_dirs[0]


def test_python_dash_m_runs_the_cli() -> None:
    result = run_subprocess("--help")
    assert result.code == 0
    for command in ("run", "resume", "validate-dataset", "tasks", "report"):
        assert command in result.out


def start_slow_run(tmp_path: Path, run_id: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "eval_harness",
            "run",
            "--task",
            "capability_profile",
            "--model",
            "mock/slow",
            "--model-arg",
            "latency_ms=50",
            "--concurrency",
            "4",
            "--output-dir",
            str(tmp_path),
            "--run-id",
            run_id,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


def wait_for_records(path: Path, count: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never reached {count} records")


def test_ctrl_c_stops_a_run_whose_samples_never_wait_at_its_next_sample(tmp_path: Path) -> None:
    # epochs-s31 F2, probe-s31 3: with the mock at latency 0 the loop got no turn to run the stop, so the session
    # wrote on (all 6,595 records; then ~500 more, 16 workers x 32 records, once workers yielded every 32)
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_harness", "run", "--task", "capability_profile", "--model", "mock/fast",
         "--epochs", "100", "--output-dir", str(tmp_path), "--run-id", "fast", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
    )  # fmt: skip
    samples = tmp_path / "fast" / "samples.jsonl"
    wait_for_records(samples, 200)
    process.send_signal(signal.SIGINT)
    at_signal = samples.read_bytes().count(b"\n")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    written = samples.read_bytes().count(b"\n")
    assert written - at_signal <= 40 and written < 24_000, (at_signal, written)  # 240 samples x 100 epochs


def test_ctrl_c_stops_cleanly_prints_the_resume_command_and_exits_130(tmp_path: Path) -> None:
    process = start_slow_run(tmp_path, "sig")
    wait_for_records(tmp_path / "sig" / "samples.jsonl", 8)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert "(Ctrl-C again to quit at once; what is written stays valid)" in err
    assert f"resume with: eval-harness resume {tmp_path / 'sig'}" in err
    manifest = json.loads((tmp_path / "sig" / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    records = read_records(tmp_path / "sig")
    assert len(records) == len({(r["sample_id"], r["epoch"]) for r in records}) < 240
    finished = run_subprocess("resume", tmp_path / "sig", "-q", cwd=REPO)
    assert finished.code == 0
    assert len(read_records(tmp_path / "sig")) == 240


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_quiet_run_quit_by_a_second_signal_still_writes_its_directory_to_stdout(
    tmp_path: Path, signum: signal.Signals
) -> None:
    # adopt-s33 1: after two SIGTERMs stdout was empty, so RUN=$(eval-harness run ... -q) lost the run it most needed
    out_dir, stderr = tmp_path / "out", tmp_path / "stderr"
    with stderr.open("w") as err_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "eval_harness", "run", "--task", "capability_profile", "--model", "mock/slow",
             "--model-arg", "latency_ms=4000", "--concurrency", "4", "--output-dir", str(out_dir), "-q"],
            stdout=subprocess.PIPE, stderr=err_file, text=True, cwd=REPO,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not list(out_dir.glob("*/samples.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        process.send_signal(signum)  # the samples in flight have seconds to go: the run is stopping
        while "stopping:" not in stderr.read_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signum)
        out, _ = process.communicate(timeout=30)
    err = stderr.read_text()
    assert process.returncode == 130, err
    (run_dir,) = [path.parent for path in out_dir.glob("*/manifest.json")]
    assert out == f"{run_dir}\n"
    assert f"interrupted; resume with: eval-harness resume {run_dir}" in err


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--task", "capability_profile", "--model", "mock/m", "--output-dir", ""],
        ["run", "--task", "capability_profile", "--model", "mock/m", "--dataset="],
        ["report", "--run", "results/x", "-o", ""],
        ["cache", "info", "--cache-dir", ""],
    ],
)
def test_an_option_given_an_empty_value_is_refused_not_read_as_the_working_directory(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    # hostile-s33: "--output-dir ''" (an unset shell variable) made a run directory in the working directory
    monkeypatch.chdir(tmp_path)
    result = cli(*args)
    name = next(
        a.removesuffix("=") for a in args if a.startswith("-") and (a.endswith("=") or args[args.index(a) + 1] == "")
    )
    assert (result.code, result.err) == (
        2, f"error: {name} is given an empty path; give one ('.' for the working directory)\n"
    )  # fmt: skip
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["run", "resume", "rescore"])
@pytest.mark.parametrize("value", ["nan", "inf", "0"])
def test_a_timeout_that_is_no_number_of_seconds_is_refused_saying_what_it_takes(
    cli: Cli, command: str, value: str
) -> None:
    # hostile-s33: --timeout nan said "Input should be greater than or equal to 0.001", inf "a finite number"
    args = {"run": ["run", "--task", "capability_profile"], "resume": ["resume", "results/x"],
            "rescore": ["rescore", "--run", "results/x", "--scorer", "exact_match"]}[command]  # fmt: skip
    result = cli(*args, "--timeout", value)
    assert result.code == 2
    assert f"Invalid value for '--timeout': must be a number of seconds of at least 0.001, got {value}" in result.err


def test_resume_of_an_empty_run_directory_path_is_refused_not_read_as_the_working_directory(
    cli: Cli, task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    # review2-s33: resume "$RUN" with RUN unset, in a run's directory, resumed that run unasked
    out_dir = task_root.root / "results"
    made = cli("run", "--task", adder(task_root), "--limit", "2", "--output-dir", out_dir, "--run-id", "r", "-q")
    assert made.code == 0, made.err
    monkeypatch.chdir(out_dir / "r")
    before = (out_dir / "r" / "manifest.json").read_bytes()
    result = cli("resume", "", "-q")
    assert (result.code, result.err) == (
        2, "error: RUN_DIR is given an empty path; give one ('.' for the working directory)\n"
    )  # fmt: skip
    assert (out_dir / "r" / "manifest.json").read_bytes() == before


def test_second_process_on_the_same_run_is_refused(tmp_path: Path) -> None:
    process = start_slow_run(tmp_path, "busy")
    try:
        wait_for_records(tmp_path / "busy" / "samples.jsonl", 2)
        second = run_subprocess("resume", tmp_path / "busy", cwd=REPO)
        assert second.code == 2
        assert "is being written by another process (pid" in second.err
    finally:
        process.kill()
        process.communicate()


def test_dry_run_needs_no_api_key_and_prices_the_prompts(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)  # no .env here
    result = cli("run", "--task", "capability_profile", "--model", "openai/gpt-4o-mini", "--dry-run")
    assert result.code == 0, result.err
    assert "240 prompts rendered; nothing was called or written" in result.out
    assert "cost ≤ $" in result.out and "unknown" not in result.out
    without = cli("run", "--task", "capability_profile", "--model", "openai/gpt-4o-mini", "--output-dir", tmp_path)
    assert without.code == 2 and "no API key; set OPENAI_API_KEY" in without.err


def test_a_dry_run_without_max_tokens_gives_the_prompts_cost_as_a_floor_not_a_bound(
    cli: Cli, task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(task_root.root)
    result = cli("run", "--task", adder(task_root), "--model", "openai/gpt-4o-mini", "--dry-run")
    assert result.code == 0, result.err
    assert "output tokens unbounded (no max_tokens), cost ≥ $" in result.out
    assert "(the prompts; set max_tokens for an upper bound)" in result.out and "≤ $" not in result.out


def test_the_process_entry_point_keeps_exit_codes_and_every_line_of_output(tmp_path: Path) -> None:
    # run_process ends with os._exit (no interpreter teardown): nothing printed may be lost, no code changed.
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(f'{{"id": "{"xy"[i % 2]}", "input": "q{i}", "target": "t"}}\n' for i in range(80)))
    result = run_subprocess("validate-dataset", "--path", bad)
    assert result.code == 1
    assert result.out.count("duplicate id '") == 50 and result.out.endswith("... and 28 more problems\n")
    assert run_subprocess("validate-dataset", "--path", tmp_path / "missing.jsonl").code == 2
    assert run_subprocess("no-such-command").code == 2
    done = run_subprocess("tasks")
    assert done.code == 0 and "capability_profile" in done.out and done.out.endswith("\n")


GC_WATCH = """
import gc, sys
from eval_harness.cli import launch

log = sys.argv[1]

def watch(phase, info):
    if phase == "start":
        with open(log, "a") as out:
            out.write(f"{gc.get_freeze_count()}\\n")

gc.callbacks.append(watch)
sys.argv = ["eval-harness", *sys.argv[2:]]
launch.run()
"""


def test_start_up_runs_without_the_garbage_collector_and_the_command_with_it(tmp_path: Path) -> None:
    """The collector is paused from the first import to the command's start, then resumed with start-up's
    objects frozen: every collection of the process happens in the command and skips those objects."""
    log = tmp_path / "collections.txt"
    completed = subprocess.run(
        [sys.executable, "-c", GC_WATCH, str(log), "run", "--task", "capability_profile", "--model", "mock/m",
         "--output-dir", str(tmp_path), "--run-id", "gc", "-q"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    frozen = [int(line) for line in log.read_text().split()]
    assert frozen, "the run made no collection: the collector was never resumed"
    assert min(frozen) > 10_000  # none before the freeze (start-up alone used to make ~90)
    assert len(read_records(tmp_path / "gc")) > 0


def whole_app(args: list[str], capsys: pytest.CaptureFixture[str]) -> CliResult:
    """``args`` parsed by the app with every command registered (as typer would without the shortcut)."""
    from eval_harness.cli.app import app

    capsys.readouterr()
    try:
        app(args=args, prog_name="eval-harness")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return CliResult(code, captured.out, captured.err)


def test_a_command_parsed_alone_says_exactly_what_the_whole_app_says(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    """``main`` hands a named command to an app holding only that command (typer builds every registered
    command before parsing); its help, usage errors and exit codes are the whole app's."""
    from eval_harness.cli.app import _app_for, app

    named = [c.name for c in app.registered_commands] + [g.name for g in app.registered_groups]
    names = [name for name in named if name is not None]
    assert names == named and len(names) >= 10 and "run" in names and "cache" in names
    cases = [[name, "--help"] for name in names] + [
        ["run", "--no-such-option"], ["run", "--concurrency", "zero"], ["cache", "no-such"], ["cache", "--help"],
    ]  # fmt: skip
    for args in cases:
        assert args[0] in names and _app_for(args) is not app
        assert cli(*args) == whole_app(args, capsys), args
    for args in (["--help"], ["rn"], []):  # the app's own help, a misspelt command, nothing: the whole app
        assert _app_for(args) is app
    assert "Did you mean 'run'?" in cli("rn").err


def test_the_cli_called_in_process_leaves_the_hosts_collector_as_it_was(cli: Cli) -> None:
    import gc

    frozen = gc.get_freeze_count()
    gc.disable()
    try:
        assert cli("tasks").code == 0
        assert not gc.isenabled() and gc.get_freeze_count() == frozen  # only launch.run's own pause is ended
    finally:
        gc.enable()


def _hinted_task(task_root: TaskRoot) -> Path:
    """A task whose template reads ``metadata.hint``, which sample q0020 (line 21 of its data) lacks."""
    records = arithmetic_records(40)
    for record in records:
        if record["id"] != "q0020":
            record["metadata"] = {"hint": "add"}
    task_root.data("hinted.jsonl", records)
    task_root.template("hinted.jinja2", "{{ input }} ({{ metadata.hint }})\n")
    return task_root.task(
        "hinted",
        'name = "hinted"\ntemplate = "hinted.jinja2"\n[dataset]\npath = "data/hinted.jsonl"\n'
        '[[scorers]]\nname = "exact_match"\nargs = { mode = "numeric" }\n',
    )


SAMPLE_METADATA_EMPTY = " (if that is metadata: the sample's metadata is empty)"
"""What the template error adds for a key the sample's metadata lacks (hinted.jsonl's q0020 has none)."""


def test_a_dry_run_names_the_sample_that_breaks_the_template(cli: Cli, task_root: TaskRoot) -> None:
    # walk1-s27: it named the template's line alone, not which of 40 samples lacks the field
    task = _hinted_task(task_root)
    result = cli("run", "--task", task, "--model", "mock/m", "--dry-run")
    assert result.code == 2
    assert result.err.strip() == (
        f"error: {task_root.root / 'data' / 'hinted.jsonl'}:21: sample 'q0020': "
        f"{task_root.root / 'templates' / 'hinted.jinja2'}:1: UndefinedError: 'dict object' has no attribute 'hint'"
        f"{SAMPLE_METADATA_EMPTY}"
    )


def test_a_first_sample_that_breaks_the_template_is_named_before_the_run(cli: Cli, task_root: TaskRoot) -> None:
    # templates-s30 F5: the first prompt is rendered before the run; its error named the template's line alone,
    # which read as "no sample has this field" when 39 of 40 had it
    task = _hinted_task(task_root)
    dataset = task_root.root / "data" / "hinted.jsonl"
    records = [json.loads(line) for line in dataset.read_text().splitlines()]
    records.insert(0, records.pop(20))  # q0020, the one without metadata.hint, first
    dataset.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = cli("run", "--task", task, "--model", "mock/m", "--output-dir", task_root.root / "results", "-q")
    assert result.code == 2 and not (task_root.root / "results").exists()
    assert result.err.strip() == (
        f"error: {dataset}:1: sample 'q0020': {task_root.root / 'templates' / 'hinted.jinja2'}:1: UndefinedError: "
        f"'dict object' has no attribute 'hint'{SAMPLE_METADATA_EMPTY}"
    )


def test_a_sample_that_breaks_the_template_fails_the_run_by_name_after_recording_the_answers_in_flight(
    cli: Cli, task_root: TaskRoot
) -> None:
    task = _hinted_task(task_root)
    out_dir = task_root.root / "results"
    result = cli(
        "run", "--task", task, "--model", "mock/m", "--model-arg", "latency_ms=100", "--concurrency", "8",
        "--output-dir", out_dir, "--run-id", "h", "-q",
    )  # fmt: skip
    assert result.code == 2
    (line,) = result.err.strip().splitlines()
    dataset = task_root.root / "data" / "hinted.jsonl"  # templates-s30 F5: "that sample's line" said no line
    assert line.startswith(f"error: run failed: sample 'q0020' (epoch 0, {dataset}:21): "), line
    assert "hinted.jinja2" in line
    # a resume would stop at the same sample: the way on changes the template or the data, so needs --force
    assert line.endswith(
        "; the records written are kept: fix the template or that sample's line, then: "
        f"eval-harness resume {out_dir / 'h'} --force"
    ), line
    # the seven samples in flight beside it were answered, so they are recorded; nothing after it was started
    assert sorted(r["sample_id"] for r in read_records(out_dir / "h")) == [f"q{i:04d}" for i in range(20)]
    assert json.loads((out_dir / "h" / "manifest.json").read_text())["status"] == "failed"


def test_a_pipe_as_dataset_is_refused_before_anything_is_written(cli: Cli, tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs named pipes (POSIX)")
    pipe = tmp_path / "items.jsonl"
    os.mkfifo(pipe)  # nobody writes to it: reading it would block forever
    expected = (
        f"error: {pipe}: cannot read the dataset: it is not a regular file (a pipe or a device); the dataset is "
        "read more than once: save it to a file first"
    )
    checked = cli("validate-dataset", "--path", pipe)
    assert (checked.code, checked.err.strip()) == (2, expected)
    run = cli("run", "--task", "capability_profile", "--dataset", pipe, "--model", "mock/m", "--output-dir",
              tmp_path / "out", "-q")  # fmt: skip
    assert (run.code, run.err.strip()) == (2, expected)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--rpm", "nan", "must be 0 (no limit) or a positive number, got nan"),
        ("--tpm", "-1", "must be 0 (no limit) or a positive number, got -1"),
        ("--seed", str(2**80), "less than or equal to 9223372036854775807"),  # no 64-bit integer holds it
        ("--concurrency", str(10**20), "less than or equal to 100000"),
        ("--temperature", "nan", "must be between 0 and 2, got nan"),
        ("--temperature", "-5", "must be between 0 and 2, got -5"),
        # audit-s21-input 1: --timeout inf wrote "timeout_s": null, which no later command could read
        ("--timeout", "inf", "must be a number of seconds of at least 0.001, got inf"),
    ],
)
def test_out_of_range_numbers_are_refused_by_flag_before_anything_is_written(
    cli: Cli, tmp_path: Path, flag: str, value: str, message: str
) -> None:
    result = cli("run", "--task", "capability_profile", "--output-dir", tmp_path / "out", flag, value, "-q")
    assert result.code == 2 and f"Invalid value for '{flag}'" in result.err and message in result.err, result.err
    assert "Traceback" not in result.err and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--limit", str(10**23), "error: --limit: Input should be less than or equal to 9223372036854775807"),
        ("--max-retries", str(10**20), "error: --max-retries: Input should be less than or equal to 1000"),
        ("--max-tokens", str(10**20), "error: --max-tokens: Input should be less than or equal to 9223372036854775807"),
    ],
)
def test_numbers_no_manifest_could_record_are_refused_before_the_run_exists(
    cli: Cli, tmp_path: Path, flag: str, value: str, message: str
) -> None:
    # audit-s21-input 1, 4: --timeout inf wrote "timeout_s": null, which no later command could read; integers
    # of 2^64 and more crashed the manifest's writer, leaving a directory holding only .lock
    result = cli("run", "--task", "capability_profile", "--output-dir", tmp_path / "out", flag, value, "-q")
    assert (result.code, result.err.strip()) == (2, message)
    assert not (tmp_path / "out").exists()


def test_a_run_recorded_with_a_max_tokens_past_32_bits_stays_readable(cli: Cli, task_root: TaskRoot) -> None:
    # review-s22 4: the bound that keeps a manifest writable was tighter than what older builds recorded
    out_dir = task_root.root / "results"
    run = ["run", "--task", adder(task_root), "--output-dir", out_dir, "--run-id", "r", "-q"]
    assert cli(*run, "--max-tokens", str(10**10), "--limit", str(10**17)).code == 0
    assert cli("report", "--run", out_dir / "r").code == 0


def test_a_resume_with_an_infinite_timeout_is_refused_and_the_run_stays_readable(cli: Cli, task_root: TaskRoot) -> None:
    out_dir = task_root.root / "results"
    assert cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--run-id", "r", "-q").code == 0
    before = (out_dir / "r" / "manifest.json").read_bytes()
    result = cli("resume", out_dir / "r", "--timeout", "inf", "-q")
    assert result.code == 2
    assert "Invalid value for '--timeout': must be a number of seconds of at least 0.001, got inf" in result.err
    assert (out_dir / "r" / "manifest.json").read_bytes() == before
    assert cli("report", "--run", out_dir / "r").code == 0


def test_a_resume_names_a_manifest_value_it_cannot_use_and_changes_nothing(cli: Cli, task_root: TaskRoot) -> None:
    out_dir = task_root.root / "results"
    assert cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--run-id", "r", "-q").code == 0
    manifest = out_dir / "r" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"epochs": 1', '"epochs": -1'))
    before = {p.name: p.read_bytes() for p in (out_dir / "r").iterdir()}
    result = cli("resume", out_dir / "r", "-q")
    assert (result.code, result.err.strip()) == (
        2,
        f"error: {manifest}: epochs: Input should be greater than or equal to 1",
    )
    assert {p.name: p.read_bytes() for p in (out_dir / "r").iterdir()} == before


def test_run_resume_refuses_options_that_would_change_the_run(cli: Cli, task_root: TaskRoot) -> None:
    out_dir = task_root.root / "results"
    assert cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--run-id", "r", "-q").code == 0
    result = cli("run", "--resume", out_dir / "r", "--task", "multiple_choice", "--epochs", "3", "-q")
    assert (result.code, result.err.strip()) == (
        2,
        f"error: --resume continues {out_dir / 'r'} as it started, so --task, --epochs cannot change it; drop them, "
        "or start a new run",
    )


def test_run_resume_refuses_a_run_option_given_even_at_its_default(cli: Cli, task_root: TaskRoot) -> None:
    out_dir = task_root.root / "results"
    assert (
        cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--run-id", "r", "--epochs", "2", "-q").code
        == 0
    )
    result = cli("run", "--resume", out_dir / "r", "--epochs", "1", "--seed", "0", "-q")
    assert result.code == 2 and "so --epochs, --seed cannot change it; drop them" in result.err
    assert cli("run", "--resume", out_dir / "r", "--concurrency", "3", "-q").code == 0  # a session option


def test_resume_names_an_option_the_run_fixed_instead_of_no_such_option(cli: Cli, task_root: TaskRoot) -> None:
    # click said "No such option: --limit" (run --resume named it as fixed by the run)
    out_dir = task_root.root / "results"
    assert cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--run-id", "r", "-q").code == 0
    for given in (["--limit", "5"], ["--epochs=3"], ["-m", "mock/strong"], ["--dry-run"]):
        result = cli("resume", out_dir / "r", *given, "-q")
        flag = given[0].partition("=")[0]
        assert (result.code, result.err.strip()) == (
            2,
            f"error: resume continues the run as it started, so {flag} cannot change it; drop it, or start a new run",
        )
    assert "No such option: --bogus" in cli("resume", out_dir / "r", "--bogus").err  # others as click says
    # review-s32 11, 12: every such flag is named, and a short one with its value attached
    result = cli("resume", out_dir / "r", "--limit", "5", "-mmock/y", "--epochs", "2")
    assert result.err.strip() == (
        "error: resume continues the run as it started, so --limit, -m, --epochs cannot change it; drop them, or "
        "start a new run"
    )


def test_an_env_line_dotenv_cannot_parse_is_named_by_file_and_line(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # python-dotenv logged "could not parse statement starting at line 2" unnamed, even with -q, and dropped it
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text('A=b\nOPENAI_API_KEY="sk-unterminated\nC=d\n')
    result = cli("run", "--task", "capability_profile", "--limit", "2", "-q")
    assert (result.code, result.err.strip()) == (
        2,
        "error: .env:2: python-dotenv cannot parse this line; fix or remove it",
    )
    assert "sk-unterminated" not in result.err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("where", ["dataset", "model", "model_arg"])
def test_text_that_is_not_utf8_is_refused_before_the_run_exists(cli: Cli, tmp_path: Path, where: str) -> None:
    # audit-s21-input 3: a Latin-1 file name crashed the manifest's writer (a traceback, a .lock-only directory)
    latin = os.fsdecode(b"caf\xe9.jsonl")  # how Python hands over the bytes of a non-UTF-8 name
    (tmp_path / latin).write_text('{"input": "1 + 1", "target": "2"}\n')
    args = {
        "dataset": ["--dataset", tmp_path / latin, "--model", "mock/m"],
        "model": ["--model", "mock/" + latin],
        "model_arg": ["--model", "openai-compatible/x", "--model-arg", "base_url=http://127.0.0.1:9/" + latin],
    }[where]
    result = cli("run", "--task", "capability_profile", "--output-dir", tmp_path / "out", *args, "-q")
    expected = {
        "dataset": f"error: the dataset {tmp_path}/caf\\xe9.jsonl is not valid UTF-8",
        "model": "error: --model mock/caf\\xe9.jsonl is not valid UTF-8",
        "model_arg": "error: --model-arg base_url: its value is not valid UTF-8",  # a value may be a key: not shown
    }[where]
    assert result.code == 2 and result.err.startswith(expected), result.err
    assert "Traceback" not in result.err and not (tmp_path / "out").exists()


def test_an_unreadable_env_file_is_one_line_not_a_double_traceback(tmp_path: Path) -> None:
    # audit-s21-input 8: the error handler read .env again to redact the message, and failed again
    (tmp_path / ".env").write_text("A=b\n")
    (tmp_path / ".env").chmod(0)
    # root reads any file: drop the capabilities that let it (util-linux's setpriv), as a user would run
    prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    result = subprocess.run(
        [*prefix, sys.executable, "-m", "eval_harness", "run", "--task", "capability_profile", "--limit", "2", "-q"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (result.returncode, result.stderr.strip()) == (
        2,
        "error: .env: cannot read it: Permission denied; fix or remove the file",
    )
    assert not (tmp_path / "results").exists()


def test_an_env_file_that_is_not_utf8_is_named(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_bytes(b"A=b\n\xff\n")
    result = cli("run", "--task", "capability_profile", "--limit", "2", "-q")
    assert (result.code, result.err.strip()) == (2, "error: .env: not UTF-8 text (byte 4); fix or remove the file")
    assert not (tmp_path / "results").exists()


def test_ctrl_c_while_starting_exits_130_without_a_traceback(tmp_path: Path) -> None:
    if not Path("/proc/self/maps").exists():
        pytest.skip("watches /proc/PID/maps (Linux) to interrupt the process while it imports")
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_harness", "run", "--task", "capability_profile", "--output-dir", str(tmp_path)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # SIGINT as a terminal's foreground job has it: a test run as a background job (`make test &` from a
        # script) passes its children SIGINT ignored, which eval-harness then keeps ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    # Once the first extension module is mapped, Python's own SIGINT handler is in place and the imports run:
    # the signal lands in start-up (or, on a fast machine, in the command), never before Python can handle it.
    maps = Path(f"/proc/{process.pid}/maps")
    deadline = time.monotonic() + 30
    while process.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if "lib-dynload" in maps.read_text():
                break
        time.sleep(0.002)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, (process.returncode, err)
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "interrupted", err


def test_a_sigint_ignored_when_the_process_started_stays_ignored(tmp_path: Path) -> None:
    # crash-s32: a background job of a script (SIGINT ignored) ignored Ctrl-C while starting, then stopped on one
    # once its run began
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_harness", "run", "--task", "capability_profile", "--model", "mock/m",
         "--model-arg", "latency_ms=20", "--concurrency", "4", "--limit", "40", "--output-dir", str(tmp_path),
         "--run-id", "bg", "-q"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip
    samples = tmp_path / "bg" / "samples.jsonl"
    deadline = time.monotonic() + 30
    while process.poll() is None and not (samples.exists() and samples.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)  # while the run runs
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert json.loads((tmp_path / "bg" / "manifest.json").read_text())["status"] == "complete"


def _interrupt_wrapped_by_set_name() -> None:
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as interrupt:
        raise RuntimeError("Error calling __set_name__ on 'Field' instance 'examples' in 'FewShot'") from interrupt


@pytest.mark.parametrize("raised", ["interrupt", "wrapped"])
def test_ctrl_c_while_a_command_plans_says_interrupted_and_exits_130(
    cli: Cli, task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch, raised: str
) -> None:
    # torture-s25 F2, F3: typer turned it into a silent exit 130; Python 3.11 wraps one that lands while a class is
    # built in a RuntimeError, which ended in a traceback and exit 1
    import eval_harness.planning

    def interrupted(*args: object, **kwargs: object) -> None:
        if raised == "interrupt":
            raise KeyboardInterrupt
        _interrupt_wrapped_by_set_name()

    monkeypatch.setattr(eval_harness.planning, "plan_run", interrupted)
    result = cli("run", "--task", adder(task_root), "--output-dir", task_root.root / "results", "-q")
    assert (result.code, result.out, result.err) == (130, "", "interrupted\n")


def test_ctrl_c_while_a_complete_run_is_shown_says_the_run_is_complete(
    cli: Cli, task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    # torture-s25: a Ctrl-C after the last record said "interrupted" alone, which reads as a run to resume
    from eval_harness.cli.render import run as run_views

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(run_views, "print_result", interrupted)
    out = task_root.root / "results"
    result = cli("run", "--task", adder(task_root), "--output-dir", out, "--run-id", "r", "--limit", "4")
    assert (result.code, result.err.splitlines()[-1]) == (
        130,
        f"interrupted while the result was shown; the run is complete: eval-harness report --run {out / 'r'}",
    )
    assert "\ninterrupted\n" not in result.err
    assert json.loads((out / "r" / "manifest.json").read_text())["status"] == "complete"


def test_a_runtime_error_not_caused_by_an_interrupt_is_not_taken_for_one(
    cli: Cli, task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    import eval_harness.planning

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(eval_harness.planning, "plan_run", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        cli("run", "--task", adder(task_root), "--output-dir", task_root.root / "results", "-q")


def test_a_gate_on_an_axis_the_dataset_lacks_is_refused_before_the_run(cli: Cli, task_root: TaskRoot) -> None:
    out_dir = task_root.root / "results"
    result = cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--fail-below-axis", "gamma=0.5", "-q")
    assert (result.code, result.err.strip()) == (
        2,
        "error: --fail-below-axis gamma: the dataset has no such axis (its axes: alpha, beta)",
    )
    assert not out_dir.exists()


def test_tasks_names_a_task_file_it_cannot_load_instead_of_hiding_it(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the working directory's tasks/ is on the search path
    broken = tmp_path / "tasks" / "broken.toml"
    broken.parent.mkdir()
    broken.write_text('name = "broken"\ntemplate = \n')
    result = cli("tasks")
    assert result.code == 0 and "capability_profile" in result.out
    (line,) = result.err.strip().splitlines()
    assert line.startswith(f"left out: {broken}") and "line 2" in line, line
    # hostile-s33: an escape sequence in a file's name reached the terminal raw (run -t shows it escaped)
    broken.rename(broken.with_name("evil\x1b[31m.toml"))
    (line,) = cli("tasks").err.strip().splitlines()
    assert line.startswith(f"left out: {broken.parent}/evil\\x1b[31m.toml: invalid TOML"), line


def test_tasks_lists_each_task_by_the_name_run_takes(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # before: tasks listed a spec's `name` ("other_name"), which `run --task` could not find (it looks up the
    # file name), and a local spec named like a built-in shadowed it in the list but not in the run
    monkeypatch.chdir(tmp_path)
    builtin = (REPO / "tasks" / "capability_profile.toml").read_text()
    shutil.copytree(REPO / "templates", tmp_path / "templates")
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "file_a.toml").write_text(builtin.replace('name = "capability_profile"', 'name = "other"'))
    (tmp_path / "tasks" / "zz.toml").write_text(
        builtin.replace('name = "capability_profile"', 'name = "math_cot"').replace("Four capability", "SHADOW")
    )
    shown = cli("tasks").out
    assert "file_a" in shown and "other " not in shown and "zz" in shown
    math_cot_row = next(line for line in shown.splitlines() if line.startswith("│ math_cot "))
    assert "SHADOW" not in math_cot_row  # the built-in math_cot is what --task math_cot runs
    dataset = REPO / "data" / "capability_profile.jsonl"
    planned = cli("run", "--task", "file_a", "--dataset", dataset, "--dry-run", "--limit", "1")
    assert planned.code == 0, planned.err


def test_tasks_at_80_columns_keeps_every_name_whole_and_says_what_it_left_out(tmp_path: Path) -> None:
    # before: 'capability_prof…' (a name --task could not take) and empty columns nothing named
    shown = run_subprocess("tasks", cwd=tmp_path, columns=80).out
    assert "instruction_following " in shown and "capability_profile " in shown and "…" not in shown
    assert "left out to fit 80 columns: template, description" in shown


@pytest.mark.parametrize("run_id", ["...", ".hidden", "a/b", "x" * 129, ""])  # "" ran under a default id
def test_a_run_id_that_is_not_a_plain_directory_name_is_refused_with_the_rule(
    cli: Cli, tmp_path: Path, run_id: str
) -> None:
    result = cli("run", "--task", "capability_profile", "--output-dir", tmp_path / "out", "--run-id", run_id, "-q")
    assert (result.code, result.err.strip()) == (
        2,
        f"error: --run-id {run_id!r}: use letters, digits, '.', '_' and '-', starting with a letter or a digit "
        "(at most 128 characters)",
    )
    assert not (tmp_path / "out").exists()


def test_the_progress_bar_keeps_the_count_and_time_left_on_an_80_column_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    from rich.console import Console

    from eval_harness.cli.render.run import ProgressDisplay
    from eval_harness.runner import Progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    display = ProgressDisplay(2_000, "openai-compatible/a-long-model-name · capability_profile")
    display.update(
        Progress(done=1_000, total=2_000, session_done=1_000, errors=3, score_sum=900.0, scored=1_000,
                 cost_usd=0.0123, cost_known=True, elapsed_s=10.0)
    )  # fmt: skip
    assert display._progress is not None
    screen = Console(file=io.StringIO(), width=80, color_system=None)
    screen.print(display._progress.get_renderable())
    line = screen.file.getvalue().rstrip("\n")  # type: ignore[attr-defined]
    assert "1000/2000" in line and "100/s" in line and "-:--:--" in line and "━" in line, line
    assert line.count("\n") == 0 and len(line) <= 80


def test_brackets_in_data_are_printed_as_text_not_read_as_markup(cli: Cli, tmp_path: Path) -> None:
    dataset = write_jsonl(
        tmp_path / "brackets.jsonl",
        [{"input": "1+1", "target": "2", "axis": "[/a]"}, {"input": "2+2", "target": "4", "axis": "b [extra]"}],
    )
    checked = cli("validate-dataset", "--path", dataset)
    assert checked.code == 0 and "axes: [/a] 1, b [extra] 1" in checked.out, checked.err
    run = cli("run", "--task", "capability_profile", "--dataset", dataset, "--output-dir", tmp_path, "--run-id", "r")
    assert run.code == 0 and "│ [/a] " in run.out and "│ b [extra] " in run.out, run.err
    report = cli("report", "--run", tmp_path / "r")
    assert report.code == 0 and "│ [/a] " in report.out and "│ b [extra] " in report.out, report.err


@pytest.mark.parametrize("args", [["validate-dataset", "--path", "data/capability_profile.jsonl"], ["tasks"]])
def test_a_reader_that_goes_away_gets_the_shells_broken_pipe_code_not_a_gates(args: list[str]) -> None:
    # 1 means a failed gate or a dataset with problems; `| head` must not look like either
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_harness", *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    err = process.stderr.read()
    process.stderr.close()
    assert (process.wait(timeout=60), err) == (141, b"")


def test_a_reader_of_stdout_that_goes_away_leaves_a_failed_commands_own_code(tmp_path: Path) -> None:
    """walk1-s27: `report --fail-below 0.99 | head -1`, `validate-dataset` of a broken file `| head -1` and a quiet
    run's failed gate `| head -0` ended 141 (the table, the problems, the run's directory met the closed pipe
    before the gate was judged): 141 is for a command that otherwise succeeded; these end 1."""
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x", "input": "", "target": "y"}\n' * 300)  # more problem lines than a pipe holds
    ran = run_subprocess("run", "--task", "capability_profile", "--output-dir", tmp_path, "--run-id", "r", "-q")
    assert ran.code == 0, ran.err
    worse = run_subprocess("run", "--task", "capability_profile", "--model-arg", "skill=0.2", "--output-dir", tmp_path,
                           "--run-id", "w", "-q")  # fmt: skip
    assert worse.code == 0, worse.err
    commands = {
        "report": ["report", "--run", str(tmp_path / "r"), "--fail-below", "0.99"],
        "compare": ["compare", "--run-a", str(tmp_path / "r"), "--run-b", str(tmp_path / "w"), "--fail-on-regression"],
        "validate-dataset": ["validate-dataset", "--path", str(broken)],
        "quiet run": ["run", "--task", "capability_profile", "--output-dir", str(tmp_path), "--run-id", "g", "-q",
                      "--fail-below", "0.99"],
    }  # fmt: skip
    codes = {}
    for name, args in commands.items():
        process = subprocess.Popen(
            [sys.executable, "-m", "eval_harness", *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert process.stdout is not None
        process.stdout.close()
        codes[name] = process.wait(timeout=60)
    assert codes == {"report": 1, "compare": 1, "validate-dataset": 1, "quiet run": 1}


def test_a_command_started_without_stdout_or_stderr_keeps_its_own_code(tmp_path: Path) -> None:
    """review-s28: `eval-harness tasks >&-` ended in a traceback and exit 120 (Python makes a closed stream None)."""
    ran = run_subprocess("run", "--task", "capability_profile", "--output-dir", tmp_path, "--run-id", "r", "-q")
    assert ran.code == 0, ran.err
    command = [sys.executable, "-m", "eval_harness"]
    closed = {
        "tasks >&-": ([*command, "tasks"], {1}),
        "gated report >&-": ([*command, "report", "--run", str(tmp_path / "r"), "--fail-below", "0.99"], {1}),
        "tasks 2>&-": ([*command, "tasks"], {2}),
    }
    codes = {}
    for name, (args, descriptors) in closed.items():
        process = subprocess.run(
            ["sh", "-c", '"$@"' + "".join(f" {d}>&-" for d in descriptors), "sh", *args],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert b"Traceback" not in process.stderr, (name, process.stderr)
        codes[name] = process.returncode
    assert codes == {"tasks >&-": 0, "gated report >&-": 1, "tasks 2>&-": 0}


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_full_stdout_is_named_and_a_full_stderr_leaves_the_commands_own_code(tmp_path: Path) -> None:
    """review-s28: `report > /dev/full` said "error: [Errno 28] No space left on device", naming no stream."""
    full = Path("/dev/full")
    with full.open("wb") as sink:
        report = subprocess.run(
            [sys.executable, "-m", "eval_harness", "tasks"], cwd=REPO, stdout=sink, stderr=subprocess.PIPE
        )
    assert (report.returncode, report.stderr) == (2, b"error: standard output: No space left on device\n")
    with full.open("wb") as sink:
        run = subprocess.run(
            [sys.executable, "-m", "eval_harness", "run", "--task", "short_answer_qa", "--model", "mock/m", "--limit",
             "5", "--output-dir", str(tmp_path), "--run-id", "r"],  # not quiet: it says how the run ended on stderr
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=sink,
        )  # fmt: skip
    assert run.returncode == 0
    assert len(read_records(tmp_path / "r")) == 5


@pytest.mark.parametrize("problems", [3, 200])
def test_a_reader_of_stderr_that_goes_away_leaves_the_commands_own_code(tmp_path: Path, problems: int) -> None:
    """`run ... 2>&1 >/dev/null | head -1` on a broken dataset: the problem lines met a closed stderr and the process
    ended 1 (a failed gate's code) or 2, by chance (audit-s20 8). It ends 2, bad input, whatever the reader does
    (141 is for a command that otherwise succeeded)."""
    dataset = tmp_path / "broken.jsonl"
    dataset.write_text("".join(f'{{"id": "x{i}", "input": "", "target": "y"}}\n' for i in range(problems)))
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_harness", "run", "--task", "capability_profile", "--dataset", str(dataset),
         "--output-dir", str(tmp_path / "out")],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    process.stderr.close()
    assert process.wait(timeout=60) == 2


def test_a_reader_of_stderr_that_goes_away_mid_run_leaves_the_run_complete(tmp_path: Path) -> None:
    """`run ... 2>&1 | head -1`: the progress line met the closed pipe mid-run and the run ended "failed" with
    every record written, so rescore refused it (review-s20 6). The run goes on quietly; the process still ends
    with the shell's code for a reader gone."""
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_harness", "run", "--task", "short_answer_qa", "--model", "mock/m",
         "--model-arg", "latency_ms=150", "--concurrency", "4", "--output-dir", str(tmp_path), "--run-id", "r"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    process.stderr.close()
    assert process.wait(timeout=60) == 141
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and len(read_records(tmp_path / "r")) == 24


def test_a_quiet_run_with_stderr_gone_still_stops_on_ctrl_c_and_a_gate_keeps_its_code(tmp_path: Path) -> None:
    """review-s21 3: under -q the note of a Ctrl-C met the closed stderr before the stop was asked for, so the
    run went on to the end and exited 0; a failed gate or an interrupted run ended 141, not 1 or 130."""

    def started(run_id: str, *more: str) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [sys.executable, "-m", "eval_harness", "run", "--task", "short_answer_qa", "--model", "mock/m",
             "--model-arg", "latency_ms=200", "--concurrency", "1", "--output-dir", str(tmp_path), "--run-id",
             run_id, "-q", *more],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert process.stderr is not None
        process.stderr.close()
        return process

    stopped = started("stopped")
    while not (tmp_path / "stopped" / "samples.jsonl").exists() or not read_records(tmp_path / "stopped"):
        time.sleep(0.05)
    stopped.send_signal(signal.SIGINT)
    assert stopped.wait(timeout=60) == 130
    manifest = json.loads((tmp_path / "stopped" / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and len(read_records(tmp_path / "stopped")) < 24
    gated = started("gated", "--model-arg", "latency_ms=0", "--fail-below", "0.99")
    assert gated.wait(timeout=60) == 1


@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_a_reader_that_goes_away_from_a_long_document_gets_the_broken_pipe_code(
    tmp_path: Path, unbuffered: str
) -> None:
    """A JSON document (Markdown goes the same way) longer than a pipe holds, its reader gone after the first
    bytes: exit 141, not 0 with the rest dropped (under PYTHONUNBUFFERED=1 the text stream dropped it
    silently)."""
    run = run_subprocess("run", "--task", "capability_profile", "--output-dir", tmp_path, "--run-id", "r", "-q")
    assert run.code == 0, run.err
    args = ["inspect", "--run", str(tmp_path / "r"), "--n", "240", "--format", "json"]
    full = run_subprocess(*args)
    assert full.code == 0 and len(full.out.encode()) > 2 * 65536, len(full.out)  # more than a pipe holds
    env = {**os.environ, "PYTHONUNBUFFERED": unbuffered}
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_harness", *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert process.stdout is not None and process.stderr is not None
    assert len(process.stdout.read(100)) == 100
    process.stdout.close()
    err = process.stderr.read()
    process.stderr.close()
    assert (process.wait(timeout=60), err) == (141, b"")


def test_a_long_document_reaches_a_non_blocking_pipe_whole(tmp_path: Path) -> None:
    """A parent that shares a non-blocking pipe (node, some CI runners): the write that finds it full waits for
    room instead of failing with a traceback after 64 KiB."""
    script = (
        "import os; os.set_blocking(1, False)\n"
        "from eval_harness.cli.render import emit_text\n"
        "emit_text('x' * 1_000_000 + '\\n', None)\n"
    )
    reader = "import sys, time; time.sleep(0.5); print(len(sys.stdin.buffer.read()))"
    writer = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    counted = subprocess.run(
        [sys.executable, "-c", reader], stdin=writer.stdout, capture_output=True, text=True, timeout=60
    )
    assert writer.stdout is not None and writer.stderr is not None
    writer.stdout.close()
    err = writer.stderr.read()
    writer.stderr.close()
    assert (writer.wait(timeout=60), err, counted.stdout.strip()) == (0, b"", "1000001")


def test_a_session_whose_every_sample_failed_says_so_with_the_first_error(cli: Cli, task_root: TaskRoot) -> None:
    out_dir = task_root.root / "results"
    args = ("run", "--task", adder(task_root), "--output-dir", out_dir, "--limit", "4", "-q")
    failed = cli(*args, "--model-arg", "error_rate=1", "--run-id", "f")
    assert failed.code == 0  # the records hold the errors; --max-error-rate makes it a failure
    assert failed.err.startswith("warning: every sample of this session failed (4); the first: q000")
    assert "ProviderError: mock/default: simulated provider error (error_rate=1.0)" in failed.err
    assert f"see eval-harness inspect --run {out_dir / 'f'} --errors" in failed.err
    some = cli(*args, "--model-arg", "error_rate=0.5", "--run-id", "h")
    # llama-s30 4: a complete run with error records gave no word of how to retry them
    assert some.code == 0 and some.err == (
        "note: 3 records are errors, which count as wrong (the first: q0000: ProviderError: "
        "mock/default: simulated provider error (error_rate=0.5)); eval-harness resume "
        f"{out_dir / 'h'} --retry-errors runs them again\n"
    )
    one = cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--limit", "2", "-q",
              "--model-arg", "error_rate=0.5", "--run-id", "one")  # fmt: skip
    assert one.err.startswith("note: 1 record is an error, which counts as wrong (the first: "), one.err


def test_a_session_whose_errors_are_all_scoring_errors_points_at_them_rather_than_a_retry(
    cli: Cli, task_root: TaskRoot
) -> None:
    # review-s30: "--retry-errors runs them again" of scoring errors, which a retry rescores alike
    task_root.data("lettered.jsonl", [
        {"id": "a", "input": "Pick A", "target": "A"},
        {"id": "n", "input": "Pick 12", "target": "12"},  # no letter: its score fails
        {"id": "m", "input": "Pick 13", "target": "13"},
    ])  # fmt: skip
    spec = task_root.task(
        "lettered",
        'name = "lettered"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/lettered.jsonl"\n'
        '[[scorers]]\nname = "choice"\n',
    )
    out_dir = task_root.root / "results"
    result = cli("run", "--task", spec, "--output-dir", out_dir, "--run-id", "s", "-q")
    assert result.code == 0, result.err
    note = " ".join(result.err.split())
    assert note.startswith("note: 2 records are errors, which count as wrong (the first: "), note
    assert note.endswith(
        f"see them with eval-harness inspect --run {out_dir / 's'} --errors (eval-harness resume {out_dir / 's'} "
        "--retry-errors scores them again, which helps only where the failure passes, a judge's call)"
    ), note


def test_cache_that_cannot_store_anything_is_refused_before_the_run(
    cli: Cli, task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_folder = task_root.root / "cache-file"
    not_a_folder.write_text("")
    monkeypatch.setenv("EVAL_HARNESS_CACHE_DIR", str(not_a_folder))
    with FakeLLMServer() as server:  # the mock is never cached, so it needs no cache directory
        result = served_run(cli, task_root, server, "c", "--cache")
        assert server.generation_requests() == []
    assert result.code == 2 and f"--cache: cannot write the cache directory {not_a_folder}" in result.err
    assert not (task_root.root / "results").exists()


def test_the_cli_bounds_written_out_equal_the_configs() -> None:
    # cli/run.py writes them out so that parsing the command line imports no pydantic
    from eval_harness import config
    from eval_harness.cli import run as run_command

    assert (run_command.MAX_CONCURRENCY, run_command.MAX_EPOCHS) == (config.MAX_CONCURRENCY, config.MAX_EPOCHS)


# --------------------------------------------------------------------------------------------------
# a local server's answers: cut at the length limit, unpriced, slow (audit of a llama.cpp server)
# --------------------------------------------------------------------------------------------------


def served_run(cli: Cli, task_root: TaskRoot, server: FakeLLMServer, run_id: str, *args: str) -> CliResult:
    """``run`` of the adder task's first 4 samples against ``server`` as an unpriced local model."""
    return cli(
        "run", "--task", adder(task_root), "--model", "openai-compatible/local", "--model-arg",
        f"base_url={server.base_url}", "--output-dir", task_root.root / "results", "--run-id", run_id,
        "--limit", "4", *args,
    )  # fmt: skip


def cut_but_the_first(request: RecordedRequest) -> Reply | None:
    """Every answer but the first sample's stops at the length limit, as a too-small max_tokens does."""
    return None if "What is 0 + 1?" in request.prompt else answer("Let me add these", finish_reason="length")


def test_a_session_whose_answers_stopped_at_the_length_limit_says_how_many(cli: Cli, task_root: TaskRoot) -> None:
    # before: nothing said so, and a 0% score looked like a wrong model
    with FakeLLMServer() as server:
        server.rule = cut_but_the_first
        result = served_run(cli, task_root, server, "r", "--max-tokens", "8", "-q")
    assert result.code == 0, result.err
    assert result.err == (
        "warning: 3 of 4 answers stopped at the length limit (finish_reason length, max_tokens 8); raise "
        "--max-tokens if they were cut short\n"
    )


def test_the_length_warning_of_a_run_without_max_tokens_names_the_servers_limit(cli: Cli, task_root: TaskRoot) -> None:
    with FakeLLMServer() as server:
        server.rule = cut_but_the_first
        result = served_run(cli, task_root, server, "r", "-q")
    assert result.code == 0, result.err
    assert result.err == (
        "warning: 3 of 4 answers stopped at the length limit (finish_reason length; the task sets no max_tokens: "
        "the provider's default, e.g. Anthropic's 1,024, or the server's own limit); they may be cut short\n"
    )


def test_the_length_warning_of_a_reasoning_model_names_the_limit_it_was_sent(
    cli: Cli, task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: "max_tokens 8" where 25,008 was sent, the answer's 8 and the room to reason
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-length")
    with FakeLLMServer() as server:
        server.rule = cut_but_the_first
        result = cli("run", "--task", adder(task_root), "--model", "openai/o3", "--model-arg",
                     f"base_url={server.base_url}", "--output-dir", task_root.root / "results", "--run-id", "o3",
                     "--limit", "4", "--max-tokens", "8", "-q")  # fmt: skip
    assert result.code == 0, result.err
    assert result.err.splitlines()[-1] == (
        "warning: 3 of 4 answers stopped at the length limit (finish_reason length, max_tokens 8, sent as 25,008 "
        "with room to think or reason); raise --max-tokens if they were cut short"
    )
    # the report named max_tokens 8 alone: the manifest records the limit sent
    run = task_root.root / "results" / "o3"
    assert json.loads((run / "manifest.json").read_text())["max_tokens_sent"] == 25_008
    notes = json.loads(cli("report", "--run", run, "--format", "json").out)["notes"]
    assert any(
        note.startswith("3 of 4 answers stopped at max_tokens 8 (finish_reason length) (sent as 25,008 with room to "
                        "think or reason): raise --max-tokens")
        for note in notes
    ), notes  # fmt: skip


def test_an_axis_of_errors_only_shows_no_cost_beside_the_unknown_ones(cli: Cli, task_root: TaskRoot) -> None:
    # before: "$0" for beta (its calls failed, billing nothing) next to "unknown" for alpha: it read as a price
    def refuse_beta(request: RecordedRequest) -> Reply | None:  # the odd numbers are the beta axis
        return (
            bad_request("exceed_context_size_error")
            if any(f"What is {i} +" in request.prompt for i in (1, 3))
            else None
        )

    with FakeLLMServer() as server:
        server.rule = refuse_beta
        result = served_run(cli, task_root, server, "r", "--max-retries", "0")
    assert result.code == 0, result.err
    rows = {line.split("│")[1].strip(): line for line in result.out.splitlines() if line.startswith("│")}
    assert "│     unknown │" in rows["alpha"] and "│     unknown │" in rows["overall"]
    assert "│           – │" in rows["beta"] and "$0" not in result.out


def test_a_session_of_errors_only_shows_that_nothing_was_billed_not_zero_dollars(cli: Cli, task_root: TaskRoot) -> None:
    out_dir = task_root.root / "results"
    result = cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--limit", "4", "--model-arg",
                 "error_rate=1", "--run-id", "f")  # fmt: skip
    assert result.code == 0, result.err
    assert "cost – (nothing billed: every record is an error or a cache hit)" in result.out
    assert "$0" not in result.out


def test_dry_run_prints_the_longest_prompts_estimated_tokens_and_how_they_are_estimated(
    cli: Cli, task_root: TaskRoot
) -> None:
    # the rendered prompt is "x" * 400 + "\nAnswer only.": 413 characters, ceil(413 / 4) + 4 per message = 108
    task_root.data("adder.jsonl", [{"id": "short", "input": "1 + 1", "target": "2"},
                                   {"id": "long", "input": "x" * 400, "target": "y"}])  # fmt: skip
    result = cli("run", "--task", adder(task_root), "--dry-run", "--max-tokens", "20")
    assert result.code == 0, result.err
    assert (
        "Longest prompt ≈ 108 tokens (sample long), ≈ 128 with max_tokens 20: the model's context must hold it. "
        "Estimated at about 4 characters a token; a server's tokenizer may differ"
    ) in result.out


def plain_progress_line(capsys: pytest.CaptureFixture[str], done: int, total: int, elapsed_s: float) -> str:
    """The line a run whose output is not a terminal prints after ``done`` of ``total`` in ``elapsed_s``."""
    from eval_harness.cli.render.run import ProgressDisplay
    from eval_harness.runner import Progress

    display = ProgressDisplay(total=total, label="m · t", plain_interval_s=0.0)
    capsys.readouterr()
    display.update(Progress(done=done, total=total, errors=0, score_sum=0.0, scored=done, cost_usd=0.0,
                            cost_known=True, elapsed_s=elapsed_s, session_done=done))  # fmt: skip
    return capsys.readouterr().err


def test_the_plain_progress_line_gives_a_slow_rate_two_significant_digits(capsys: pytest.CaptureFixture[str]) -> None:
    # before: "0/s" for a local model doing 37 samples in 78.7 s (0.470 a second)
    assert "37/40 done · 0.47/s ·" in plain_progress_line(capsys, 37, 40, 78.7)


def test_the_plain_progress_line_gives_the_time_left(capsys: pytest.CaptureFixture[str]) -> None:
    # 100 done in 100 s: 9,900 left at 1 a second is 2 h 45 min
    assert "100/10,000 done · 1.0/s · eta 2:45:00 ·" in plain_progress_line(capsys, 100, 10_000, 100.0)


@pytest.mark.parametrize(("term", "live"), [("xterm-256color", True), ("dumb", False), ("unknown", False)])
def test_a_terminal_that_cannot_move_its_cursor_gets_the_plain_progress_lines(
    monkeypatch: pytest.MonkeyPatch, term: str, live: bool
) -> None:
    # terminal-s30 5: with TERM=dumb rich draws no live bar, and the plain lines were for pipes only: no progress
    from eval_harness.cli.render.run import ProgressDisplay

    monkeypatch.setenv("TERM", term)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert ProgressDisplay(total=2, label="m · t")._interactive is live


# --------------------------------------------------------------------------------------------------
# gates across a resume (audit of eval-harness as a CI release gate)
# --------------------------------------------------------------------------------------------------


def cut_back(run_dir: Path, kept: int) -> Path:
    """A run cut back to its first ``kept`` records, as an interruption leaves it."""
    lines = (run_dir / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (run_dir / "samples.jsonl").write_bytes(b"".join(lines[:kept]))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    (run_dir / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    return run_dir


def gated_run(cli: Cli, task_root: TaskRoot, *gates: str) -> Path:
    """The adder task's first 10 samples (mock skill 0.5) run with ``gates``, then cut back to 3 records."""
    out_dir = task_root.root / "results"
    cli("run", "--task", adder(task_root), "--model-arg", "skill=0.5", "--output-dir", out_dir, "--run-id", "g",
        "--limit", "10", "-q", *gates)  # fmt: skip
    return cut_back(out_dir / "g", 3)


def test_a_gated_run_stopped_by_sigterm_and_resumed_with_the_printed_command_still_fails_its_gate(
    cli: Cli, tmp_path: Path
) -> None:
    # before: the gates were not recorded, and the printed `eval-harness resume RUN_DIR` exited 0 at any score
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_harness", "run", "--task", "capability_profile", "--model", "mock/slow",
         "--model-arg", "latency_ms=50", "--concurrency", "4", "--output-dir", str(tmp_path), "--run-id", "ci",
         "--fail-below", "0.95", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
    )  # fmt: skip
    wait_for_records(tmp_path / "ci" / "samples.jsonl", 8)
    process.send_signal(signal.SIGTERM)  # what a CI job's timeout sends
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert "(SIGTERM again to quit at once; what is written stays valid)" in err  # not "Ctrl-C": no key was pressed
    printed = err.strip().splitlines()[-1].removeprefix("interrupted; resume with: eval-harness ")
    resumed = cli(*printed.split(), "-q")
    assert resumed.code == 1, resumed.err
    assert resumed.err.splitlines()[0] == "resume: the run's recorded gates apply: --fail-below 0.95"
    assert resumed.err.splitlines()[-1].startswith("error: gate failed: overall mean ")
    assert len(read_records(tmp_path / "ci")) == 240


def test_a_gate_given_to_resume_replaces_the_recorded_one_for_later_resumes_too(cli: Cli, task_root: TaskRoot) -> None:
    run_dir = gated_run(cli, task_root, "--fail-below", "0.95", "--max-error-rate", "0.1")
    resumed = cli("resume", run_dir, "--fail-below", "0.1", "-q")
    assert resumed.code == 0, resumed.err
    assert resumed.err.splitlines() == [
        "resume: --fail-below 0.1 replaces the run's recorded 0.95 for this and later resumes",
        "resume: the run's recorded gates apply: --max-error-rate 0.1",
    ]
    recorded = json.loads((run_dir / "manifest.json").read_text())["gates"]
    assert (recorded["fail_below"], recorded["max_error_rate"]) == (0.1, 0.1)


def test_no_gates_drops_the_recorded_gates_for_later_resumes(cli: Cli, task_root: TaskRoot) -> None:
    run_dir = gated_run(cli, task_root, "--fail-below", "0.95")
    dropped = cli("run", "--resume", run_dir, "--no-gates", "-q")
    assert dropped.code == 0, dropped.err
    assert dropped.err == (
        "resume: --no-gates drops the run's recorded gates (--fail-below 0.95) for this session and later resumes\n"
    )
    assert json.loads((run_dir / "manifest.json").read_text())["gates"] is None
    assert cli("resume", run_dir, "-q").code == 0  # complete: the gate is gone


def test_no_gates_with_new_gates_replaces_the_recorded_ones_as_a_whole(cli: Cli, task_root: TaskRoot) -> None:
    run_dir = gated_run(cli, task_root, "--fail-below", "0.95", "--fail-below-axis", "alpha=0.9")
    resumed = cli("resume", run_dir, "--no-gates", "--max-error-rate", "0.5", "-q")
    assert resumed.code == 0, resumed.err
    assert resumed.err.splitlines()[1:] == ["resume: --max-error-rate 0.5 is added to the run's gates (kept for "
                                            "later resumes)"]  # fmt: skip
    assert json.loads((run_dir / "manifest.json").read_text())["gates"] == {
        "fail_below": None, "fail_below_axis": [], "gate_on": "mean", "max_error_rate": 0.5,
    }  # fmt: skip


def test_gate_on_given_to_resume_applies_to_the_recorded_gates(cli: Cli, task_root: TaskRoot) -> None:
    # 10 samples at skill 0.5: 5 right, a mean of 50%, Wilson's interval 23.7%-76.3%
    run_dir = gated_run(cli, task_root, "--fail-below", "0.3")
    resumed = cli("resume", run_dir, "--gate-on", "ci-low", "-q")
    assert resumed.code == 1 and "error: gate failed: overall ci-low " in resumed.err
    assert "resume: --gate-on ci-low replaces the run's recorded mean for this and later resumes" in resumed.err


def test_no_gates_on_a_new_run_is_refused(cli: Cli, task_root: TaskRoot) -> None:
    result = cli("run", "--task", adder(task_root), "--output-dir", task_root.root / "results", "--no-gates", "-q")
    assert (result.code, result.err.strip()) == (
        2,
        "error: --no-gates drops the gates a run recorded, for --resume; a new run has none to drop",
    )


@pytest.mark.parametrize(
    ("flag", "refusal"),
    [
        ("--retry-errors", "--retry-errors runs a run's error records again, for --resume; a new run has none"),
        ("--force", "--force resumes a run whose inputs changed, for --resume; a new run has nothing to force"),
    ],
)
def test_a_resume_only_flag_on_a_new_run_is_refused_not_ignored(
    cli: Cli, task_root: TaskRoot, flag: str, refusal: str
) -> None:
    out_dir = task_root.root / "results"
    result = cli("run", "--task", adder(task_root), "--output-dir", out_dir, flag, "-q")
    assert (result.code, result.err.strip()) == (2, f"error: {refusal}")
    assert not out_dir.exists()  # it used to run a new run, as if the flag had done something


@pytest.mark.parametrize(
    ("limits", "named"),
    [
        (["--limit", "1"], "--limit 1"),
        # the per-axis share is taken first, so --limit is what leaves beta out; both are named, as both chose
        (["--limit-per-axis", "1", "--limit", "1"], "--limit-per-axis 1 and --limit 1"),
    ],
)
def test_a_gate_on_an_axis_that_limit_leaves_out_is_refused_before_the_run(
    cli: Cli, task_root: TaskRoot, limits: list[str], named: str
) -> None:
    # before: refused only after the whole run, which left a run directory that blocked the rerun
    out_dir = task_root.root / "results"
    result = cli("run", "--task", adder(task_root), "--output-dir", out_dir, *limits,
                 "--fail-below-axis", "beta=0.5", "-q")  # fmt: skip
    assert (result.code, result.err.strip()) == (
        2,
        f"error: --fail-below-axis beta: the run takes 1 sample ({named}), none of that axis (their axes: alpha)",
    )
    assert not out_dir.exists()


# --------------------------------------------------------------------------------------------------
# model arguments given to a resume (audit of a llama.cpp server: restarted on another port)
# --------------------------------------------------------------------------------------------------


def test_resume_refuses_a_changed_model_arg_naming_its_old_and_new_value(cli: Cli, task_root: TaskRoot) -> None:
    with FakeLLMServer() as first, FakeLLMServer() as second:
        assert served_run(cli, task_root, first, "moved", "-q").code == 0
        run_dir = cut_back(task_root.root / "results" / "moved", 1)
        refused = cli("resume", run_dir, "--model-arg", f"base_url={second.base_url}", "-q")
        assert second.generation_requests() == []
    assert (refused.code, refused.err.strip()) == (
        2,
        f"error: cannot resume {run_dir}: changed since the run started: model args of openai-compatible/local: "
        f"base_url {first.base_url} → {second.base_url}. Use --force to resume anyway (the mix is recorded in the "
        "manifest), or start a new run",
    )


def test_a_forced_change_of_a_model_arg_is_recorded_so_a_later_resume_calls_the_new_server(
    cli: Cli, task_root: TaskRoot
) -> None:
    with FakeLLMServer() as first, FakeLLMServer() as second:
        assert served_run(cli, task_root, first, "moved", "-q").code == 0
        run_dir = cut_back(task_root.root / "results" / "moved", 1)
        forced = cli("run", "--resume", run_dir, "--model-arg", f"base_url={second.base_url}", "--force", "-q")
        assert forced.code == 0, forced.err
        assert len(second.generation_requests()) == 3
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["model"]["args"]["base_url"] == second.base_url
        assert manifest["forced_changes"] == [
            f"session 2: model args of openai-compatible/local: base_url {first.base_url} → {second.base_url}"
        ]
        later = cli("resume", cut_back(run_dir, 2), "-q")  # the printed command: no argument, no --force
        assert later.code == 0, later.err
        assert (len(first.generation_requests()), len(second.generation_requests())) == (4, 5)


def test_a_resume_may_change_how_answers_travel_without_force_for_its_own_session(
    cli: Cli, task_root: TaskRoot
) -> None:
    # before: "model args of openai-compatible/local: stream unset → true. Use --force": the case streaming exists
    # for (a run whose long unstreamed requests were dropped) needed --force, and recorded the run as a mix
    with FakeLLMServer() as server:
        assert served_run(cli, task_root, server, "travel", "-q").code == 0
        run_dir = cut_back(task_root.root / "results" / "travel", 2)
        transport = ["stream=true", "read_timeout_s=600", "connect_timeout_s=5", "max_response_bytes=1000000",
                     "http_transport=httpx-pooled"]  # fmt: skip
        resumed = cli("resume", run_dir, *(a for arg in transport for a in ("--model-arg", arg)), "-q")
        assert resumed.code == 0, resumed.err
        assert (
            "resume: --model-arg stream=true holds for this session only (the run records false): give it again to "
            "a later resume"
        ) in resumed.err
        assert "--model-arg read_timeout_s=600.0 holds for this session only (the run records unset)" in resumed.err
        assert [r.body.get("stream") for r in server.generation_requests()[-2:]] == [True, True]
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["model"]["args"]["stream"] is False and not manifest.get("forced_changes")
        later = cli("resume", cut_back(run_dir, 1), "-q")  # the recorded arguments again: unstreamed
        assert later.code == 0, later.err
        assert "stream" not in server.generation_requests()[-1].body
    assert len(read_records(run_dir)) == 4


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"])
def test_a_hosted_providers_run_resumes_streamed_without_force(
    cli: Cli, task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    # only openai-compatible's stream was tested: removing it from these providers' transport options passed
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000")
    with FakeLLMServer() as server:
        made = cli("run", "--task", adder(task_root), "--model", model, "--model-arg", f"base_url={server.base_url}",
                   "--output-dir", task_root.root / "results", "--run-id", "hosted", "--limit", "4", "-q")  # fmt: skip
        assert made.code == 0, made.err
        run_dir = cut_back(task_root.root / "results" / "hosted", 2)
        resumed = cli("resume", run_dir, "--model-arg", "stream=true", "-q")
        assert resumed.code == 0, resumed.err
        assert "--model-arg stream=true holds for this session only (the run records false)" in resumed.err
        assert [r.body.get("stream") for r in server.generation_requests()] == [None] * 4 + [True] * 2
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["model"]["args"]["stream"] is False and not manifest.get("forced_changes")
    assert len(read_records(run_dir)) == 4


def test_an_interrupted_resume_prints_a_command_that_gives_its_session_options_again(
    cli: Cli, task_root: TaskRoot
) -> None:
    # before: "resume with: eval-harness resume DIR": pasted, it went back to the unstreamed requests that failed
    with FakeLLMServer() as server:
        assert served_run(cli, task_root, server, "again", "-q").code == 0
        run_dir = cut_back(task_root.root / "results" / "again", 1)
        server.latency_s = 2.0
        process = subprocess.Popen(
            [sys.executable, "-m", "eval_harness", "resume", str(run_dir), "--model-arg", "stream=true",
             "--model-arg", "read_timeout_s=600", "--concurrency", "1", "--retry-errors", "-q"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while len(server.generation_requests()) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 130, err
        printed = err.strip().splitlines()[-1].removeprefix("interrupted; resume with: ")
        assert printed == (
            f"eval-harness resume {run_dir} --model-arg read_timeout_s=600.0 --model-arg stream=true --retry-errors"
        )
        server.latency_s = 0.0
        resumed = cli(*shlex.split(printed)[1:], "-q")
        assert resumed.code == 0, resumed.err
        assert all(r.body.get("stream") is True for r in server.generation_requests()[4:])
    assert len(read_records(run_dir)) == 4


def test_a_forced_resume_records_its_real_change_but_not_its_transport_options(cli: Cli, task_root: TaskRoot) -> None:
    # before: with --force, stream=true given beside a moved server was written into the manifest for good
    with FakeLLMServer() as first, FakeLLMServer() as second:
        assert served_run(cli, task_root, first, "both", "-q").code == 0
        run_dir = cut_back(task_root.root / "results" / "both", 1)
        forced = cli("resume", run_dir, "--model-arg", f"base_url={second.base_url}", "--model-arg", "stream=true",
                     "--force", "-q")  # fmt: skip
        assert forced.code == 0, forced.err
        assert second.generation_requests()[-1].body["stream"] is True
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert (manifest["model"]["args"]["base_url"], manifest["model"]["args"]["stream"]) == (second.base_url, False)
        later = cli("resume", cut_back(run_dir, 1), "-q")
        assert later.code == 0, later.err
        assert "stream" not in second.generation_requests()[-1].body


@pytest.mark.parametrize("model", ["openai/gpt-4o", "anthropic/claude-sonnet-4-5", "openai-compatible/m"])
def test_every_http_provider_counts_streaming_and_its_timeouts_as_transport_only(model: str) -> None:
    from eval_harness.providers.base import PROVIDERS

    options = PROVIDERS.get(model.partition("/")[0]).Options
    assert options.transport_only >= {"stream", "read_timeout_s", "connect_timeout_s", "max_response_bytes",
                                      "http_transport"}  # fmt: skip
    assert options.transport_only <= set(options.model_fields)


def test_moving_a_run_off_a_base_url_with_a_credential_never_shows_the_credential(
    cli: Cli, task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a run started before such base URLs were refused records one; its forced change named it on stderr and in
    # the manifest's forced_changes
    import eval_harness.providers._http as http_module

    with FakeLLMServer() as server:
        with monkeypatch.context() as before_the_rule:
            before_the_rule.setattr(http_module, "credential_parameter", lambda url: None)
            old_url = f"base_url={server.base_url}?token=gw-secret-7f3a9c"
            assert served_run(cli, task_root, server, "old", "--model-arg", old_url, "-q").code == 0
        run_dir = cut_back(task_root.root / "results" / "old", 1)
        assert "gw-secret-7f3a9c" in (run_dir / "manifest.json").read_text()
        forced = cli("resume", run_dir, "--model-arg", f"base_url={server.base_url}", "--force", "-q")
        assert forced.code == 0, forced.err
    assert "gw-secret-7f3a9c" not in forced.err and "(its query left out)" in forced.err
    assert "gw-secret-7f3a9c" not in (run_dir / "manifest.json").read_text()


def test_a_key_given_to_resume_as_a_model_arg_is_used_and_never_recorded(cli: Cli, task_root: TaskRoot) -> None:
    key = "sk-CANARY-resume-7f3a"
    with FakeLLMServer(api_key=key) as server:
        assert served_run(cli, task_root, server, "keyed", "--model-arg", f"api_key={key}", "-q").code == 0
        run_dir = cut_back(task_root.root / "results" / "keyed", 1)
        resumed = cli("resume", run_dir, "--model-arg", f"api_key={key}", "-q")
    assert resumed.code == 0, resumed.err  # not a change: the key is not part of the recorded arguments
    assert len(read_records(run_dir)) == 4 and resumed.err == ""
    assert all(
        "CANARY" not in path.read_text() for path in run_dir.iterdir() if path.is_file() and path.suffix != ".npz"
    )


def test_a_run_directory_that_looks_like_key_value_still_resumes(
    cli: Cli, task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    # resume takes a positional RUN_DIR, which may follow a repeatable KEY=VALUE option and contain "="
    monkeypatch.chdir(task_root.root)
    made = cli("run", "--task", "tasks/adder.toml", "--output-dir", "temp=0.7", "--run-id", "r1", "-q")
    assert made.code == 0, made.err
    result = cli("resume", "--fail-below-axis", "alpha=0.0", "temp=0.7/r1", "-q")
    assert result.code == 0, result.err


def test_a_gate_on_an_unknown_axis_given_to_resume_is_refused_before_the_session_and_not_recorded(
    cli: Cli, task_root: TaskRoot
) -> None:
    run_dir = gated_run(cli, task_root, "--fail-below", "0.0")
    before = (run_dir / "samples.jsonl").read_bytes()
    refused = cli("resume", run_dir, "--retry-errors", "--fail-below-axis", "nonexistent=0.5", "-q")
    assert refused.code == 2
    assert "--fail-below-axis nonexistent: the run has no sample of that axis (its axes: alpha, beta)" in refused.err
    assert (run_dir / "samples.jsonl").read_bytes() == before  # nothing ran
    assert json.loads((run_dir / "manifest.json").read_text())["gates"]["fail_below_axis"] == []
    assert cli("resume", run_dir, "-q").code == 0  # the printed command still works


def test_an_output_dir_that_cannot_hold_a_run_directory_is_said_without_errno(cli: Cli, task_root: TaskRoot) -> None:
    in_the_way = task_root.root / "afile"
    in_the_way.write_text("")
    result = cli("run", "--task", adder(task_root), "--output-dir", in_the_way, "--run-id", "r", "-q")
    assert (result.code, result.err.strip()) == (
        2,
        f"error: cannot create the run directory {in_the_way / 'r'}: Not a directory",  # was "[Errno 20] Not a ..."
    )


def test_an_os_error_reaching_the_cli_names_the_file_and_the_os_words_without_errno() -> None:
    from eval_harness.cli.app import _os_error_text

    assert _os_error_text(OSError(28, "No space left on device", "r1/summary.json")) == (
        "r1/summary.json: No space left on device"
    )
    moved = OSError(18, "Invalid cross-device link", "a", None, "b")
    assert _os_error_text(moved) == "a → b: Invalid cross-device link"
    assert _os_error_text(OSError("no number")) == "no number"


def test_a_directory_of_the_users_files_is_not_taken_for_a_new_run(cli: Cli, task_root: TaskRoot) -> None:
    # audit-s21-input 11: a run was written beside the user's files, overwriting their summary.json
    run_dir = task_root.root / "results" / "mine"
    run_dir.mkdir(parents=True)
    (run_dir / "summary.json").write_text('{"precious": true}')
    result = cli("run", "--task", adder(task_root), "--output-dir", run_dir.parent, "--run-id", "mine", "-q")
    assert (result.code, result.err.strip()) == (
        2,
        f"error: {run_dir} already exists and holds files that are not a run's (summary.json); pick another --run-id",
    )
    assert [p.name for p in run_dir.iterdir()] == ["summary.json"]
    assert (run_dir / "summary.json").read_text() == '{"precious": true}'


def test_a_directory_left_by_a_run_killed_before_its_manifest_is_taken(cli: Cli, task_root: TaskRoot) -> None:
    run_dir = task_root.root / "results" / "r"
    run_dir.mkdir(parents=True)
    (run_dir / ".lock").write_text("12345\n")  # what a kill before the manifest leaves
    result = cli("run", "--task", adder(task_root), "--output-dir", run_dir.parent, "--run-id", "r", "-q")
    assert result.code == 0, result.err
    assert (run_dir / "manifest.json").is_file()


def test_a_run_inside_another_runs_directory_is_refused(cli: Cli, task_root: TaskRoot) -> None:
    out_dir = task_root.root / "results"
    assert cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--run-id", "base", "-q").code == 0
    result = cli("run", "--task", adder(task_root), "--output-dir", out_dir / "base", "--run-id", "r", "-q")
    assert (result.code, result.err.strip()) == (
        2,
        f"error: --output-dir {out_dir / 'base'} is the run directory; pick another",
    )
    assert not (out_dir / "base" / "r").exists()


def test_a_file_where_the_run_directory_should_go_is_said_to_be_in_the_way(cli: Cli, task_root: TaskRoot) -> None:
    out_dir = task_root.root / "results"
    out_dir.mkdir()
    (out_dir / "r").write_text("")
    result = cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--run-id", "r", "-q")
    assert (result.code, result.err.strip()) == (
        2,
        f"error: cannot create the run directory {out_dir / 'r'}: a file is in the way",  # was "File exists"
    )


def test_a_resume_says_it_keeps_the_runs_generation_options_when_the_task_now_says_otherwise(
    cli: Cli, task_root: TaskRoot
) -> None:
    """fuzz-s20 4: an edit of the task's max_tokens between sessions was ignored without a word, where every other
    change of the task is refused by name."""
    spec = task_root.root / "tasks" / "adder.toml"
    spec.write_text(spec.read_text() + "[generation]\nmax_tokens = 512\n")
    run = cli(
        "run", "--task", spec, "--model", "mock/m", "--output-dir", task_root.root / "results", "--run-id", "g", "-q"
    )
    assert run.code == 0, run.err
    run_dir = cut_back(task_root.root / "results" / "g", 3)
    spec.write_text(spec.read_text().replace("max_tokens = 512", "max_tokens = 256"))
    resumed = cli("resume", run_dir, "-q")
    assert resumed.code == 0, resumed.err
    assert "[generation] now says max_tokens 256 (the run has 512); a resume keeps the run's own" in resumed.err
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["task"]["generation"]["max_tokens"] == 512
    spec.write_text(spec.read_text().replace("max_tokens = 256", "max_tokens = 512"))
    again = cli("resume", run_dir, "-q")  # the task as the run started: no note
    assert again.code == 0 and "[generation]" not in again.err
    spec.write_text(spec.read_text() + "temperature = 0.5\n")  # templates-s30 8: "(the run has None)"
    unset = cli("resume", cut_back(run_dir, 3), "-q")
    assert "[generation] now says temperature 0.5 (the run has unset);" in unset.err, unset.err
    spec.write_text(spec.read_text().replace("temperature = 0.5\n", ""))
    # review-s21 5: a run started with --max-tokens over the task's value is not told the task "now says" it
    flagged = cli("run", "--task", spec, "--model", "mock/m", "--output-dir", task_root.root / "results",
                  "--run-id", "f", "-q", "--max-tokens", "64")  # fmt: skip
    assert flagged.code == 0, flagged.err
    resumed_flagged = cli("resume", cut_back(task_root.root / "results" / "f", 3), "-q")
    assert resumed_flagged.code == 0 and "[generation]" not in resumed_flagged.err


def test_a_run_says_when_lines_without_an_id_repeat_an_earlier_lines_content(cli: Cli, tmp_path: Path) -> None:
    # readme-walk3 10: validate-dataset warned of it, run said nothing, and the item counted twice in the profile
    dataset = tmp_path / "noid.jsonl"
    same, other = '{"input": "What is 1 + 1?", "target": "2"}\n', '{"input": "What is 2 + 1?", "target": "3"}\n'
    dataset.write_text(same + same + other + other + same)
    result = cli("run", "--task", "capability_profile", "--dataset", dataset, "--output-dir", tmp_path / "out", "-q")
    assert result.code == 0, result.err
    derived = hashlib.sha256(same.rstrip("\n").encode()).hexdigest()[:16]
    assert result.err.splitlines() == [
        f"note: 3 lines repeat an earlier line's content and run again; the first: {dataset}:2: id {derived}-2 was "
        "derived (validate-dataset lists them)"
    ]
    # review-s25 8: of the lines the run takes: --limit 3 runs lines 1-3, and of the three repeats only line 2
    limited = cli("run", "--task", "capability_profile", "--dataset", dataset, "--limit", "3", "--output-dir",
                  tmp_path / "out", "-q")  # fmt: skip
    assert limited.code == 0, limited.err
    assert limited.err.splitlines() == [
        f"note: 1 line repeats an earlier line's content and runs again: {dataset}:2: id {derived}-2 was derived"
    ]


def test_sigterm_while_a_command_plans_is_an_interrupt_not_a_silent_kill(tmp_path: Path) -> None:
    # a CI job's timeout: before, outside a run's own handlers the process died by SIGTERM (143), without a word
    big = tmp_path / "big.jsonl"
    big.write_text("".join(f'{{"id": "s{i}", "input": "q{i}", "target": "t"}}\n' for i in range(400_000)))
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_harness", "run", "--task", "capability_profile", "--dataset", str(big),
         "--model", "mock/m", "--dry-run"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )  # fmt: skip
    time.sleep(1.0)  # past start-up, inside the validation of 400,000 lines
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert (process.returncode, err.strip().splitlines()[-1]) == (130, "interrupted"), err


def test_an_interrupt_as_a_complete_run_ends_says_the_run_is_complete(
    task_root: TaskRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    # an interrupt while asyncio.run tore its loop down was raised inside that teardown: a traceback, exit 1;
    # now it is counted, and said where the result is shown
    import typer

    from eval_harness.cli.run import finish_run, start_run
    from eval_harness.config import RunConfig
    from eval_harness.planning import plan_run
    from eval_harness.types import GateSettings

    config = RunConfig(task=str(adder(task_root)), model="mock/m", output_dir=task_root.root / "results", run_id="e")
    host = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    result, interrupts = start_run(plan_run(config), quiet=True)
    assert result.status == "complete"
    os.kill(os.getpid(), signal.SIGINT)  # as the run ends: counted, not raised here
    assert interrupts.count == 1
    with pytest.raises(typer.Exit) as stopped:
        finish_run((result, interrupts), GateSettings(), quiet=True)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == host  # in-process: the host's back
    assert stopped.value.exit_code == 130
    said = f"interrupted as the run ended; the run is complete: eval-harness report --run {result.run_dir}"
    assert capsys.readouterr().err.strip() == said


def test_a_run_gives_the_hosts_signal_handlers_back(task_root: TaskRoot) -> None:
    from eval_harness.cli.run import finish_run, start_run
    from eval_harness.config import RunConfig
    from eval_harness.planning import plan_run
    from eval_harness.types import GateSettings

    config = RunConfig(task=str(adder(task_root)), model="mock/m", output_dir=task_root.root / "results", run_id="h")
    host = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    finish_run(start_run(plan_run(config), quiet=True), GateSettings(), quiet=True)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == host


def test_the_progress_line_of_cache_hits_shows_no_price(capsys: pytest.CaptureFixture[str]) -> None:
    # before: "cost $0" while every record was a cache hit (the summary at the end said "–", nothing billed)
    from eval_harness.cli.render.run import ProgressDisplay
    from eval_harness.runner import Progress

    display = ProgressDisplay(total=4, label="m · t", plain_interval_s=0.0)
    capsys.readouterr()
    display.update(Progress(done=4, total=4, errors=0, score_sum=4.0, scored=4, cost_usd=0.0, cost_known=True,
                            elapsed_s=1.0, session_done=4, session_cached=4))  # fmt: skip
    line = capsys.readouterr().err
    assert "cost –" in line and "$0" not in line


def test_a_rescore_of_answers_cut_at_the_limit_does_not_advise_a_flag_it_lacks(cli: Cli, task_root: TaskRoot) -> None:
    # before: "raise --max-tokens if they were cut short", which rescore does not take
    with FakeLLMServer() as server:
        server.rule = cut_but_the_first
        assert served_run(cli, task_root, server, "cut", "--max-tokens", "8", "-q").code == 0
    source = task_root.root / "results" / "cut"
    result = cli("rescore", "--run", source, "--scorer", "token_f1", "--run-id", "cut-f1", "-q")
    assert result.code == 0, result.err
    assert result.err.strip().splitlines()[-1] == (
        "warning: 3 of 4 answers stopped at the length limit (finish_reason length, max_tokens 8); the answers of "
        f"{source.resolve()}; a new run with a larger --max-tokens answers anew"
    )


def test_an_interrupt_that_came_while_the_run_was_set_up_stops_it_at_once(task_root: TaskRoot) -> None:
    # review3 s29: between taking the signals and the runner's start, it was only counted: the run went to its
    # end, then said "interrupted as the run ended"
    import asyncio

    from eval_harness.cli.run import _execute, _Interrupts, _QuietDisplay
    from eval_harness.config import RunConfig
    from eval_harness.planning import plan_run

    config = RunConfig(task=str(adder(task_root)), model="mock/m", output_dir=task_root.root / "results", run_id="s")
    interrupts = _Interrupts()
    interrupts.count = 1  # as _arrived counts one before the runner can be asked to stop
    result = asyncio.run(_execute(plan_run(config), _QuietDisplay(), interrupts))
    assert (result.status, result.new_records) == ("interrupted", 0)
    assert interrupts.stop is None  # the loop is gone: nothing is sent to it any more


def test_the_error_note_counts_the_runs_error_records_after_resumes(cli: Cli, task_root: TaskRoot) -> None:
    # epochs-s31 F4: it counted the last session's alone, said "samples" of records, and a last session without
    # errors said nothing of the run's
    out_dir = task_root.root / "results"
    args = ("run", "--task", adder(task_root), "--output-dir", out_dir, "--limit", "8", "--concurrency", "1", "-q",
            "--model-arg", "error_rate=0.5", "--run-id", "e")  # fmt: skip
    assert cli(*args).code == 0
    samples = out_dir / "e" / "samples.jsonl"
    lines = samples.read_text().splitlines(keepends=True)
    errors = sum(1 for line in lines if json.loads(line)["error"] is not None)
    assert 0 < errors < len(lines)
    samples.write_text("".join(line for line in lines if json.loads(line)["error"] is not None))  # answers lost
    resumed = cli("resume", out_dir / "e", "-q")
    assert resumed.code == 0
    assert resumed.err == (
        f"note: {errors} records are errors, which count as wrong, all written by earlier sessions; eval-harness "
        f"resume {out_dir / 'e'} --retry-errors runs them again\n"
    )


def test_a_rescores_generation_errors_point_at_a_retry_of_its_source(cli: Cli, task_root: TaskRoot) -> None:
    # epochs-s31 F3: "eval-harness resume RESCORE --retry-errors runs them again", which appends the same errors
    out_dir = task_root.root / "results"
    assert cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--limit", "8", "-q",
               "--model-arg", "error_rate=0.5", "--run-id", "src").code == 0  # fmt: skip
    rescored = cli("rescore", "--run", out_dir / "src", "--scorer", "exact_match", "--run-id", "re", "-q")
    assert rescored.code == 0, rescored.err
    assert rescored.err.startswith("note: ") and rescored.err.endswith(
        "those without an answer are its source's generation errors, which a rescore cannot run again: eval-harness "
        f"resume {out_dir / 'src'} --retry-errors, then rescore it anew\n"
    ), rescored.err
    # review-s31 F1: a session that wrote none of them cannot tell which they are: both ways are said
    again = cli("resume", out_dir / "re", "-q")
    assert again.code == 0 and again.err.endswith(
        f"all written by earlier sessions; eval-harness resume {out_dir / 're'} --retry-errors scores a scoring error "
        "again; those without an answer are its source's generation errors, which a rescore cannot run again: "
        f"eval-harness resume {out_dir / 'src'} --retry-errors, then rescore it anew\n"
    ), again.err


def test_the_end_notes_show_an_escape_sequence_of_a_sample_id_not_send_it(cli: Cli, task_root: TaskRoot) -> None:
    # inspect-s31 F6: "the first: e-\x1b[2Jid: ProviderError ..." reached the terminal raw (inspect escaped it)
    task_root.data("adder.jsonl", [{"id": "e\x1b[2Jid", "input": "What is 1 + 1?", "target": "2"}])
    out_dir = task_root.root / "results"
    ran = cli("run", "--task", adder(task_root), "--output-dir", out_dir, "--run-id", "esc", "-q", "--model-arg",
              "error_rate=1")  # fmt: skip
    assert ran.code == 0 and "\x1b" not in ran.err and "the first: e\\x1b[2Jid: ProviderError" in ran.err, ran.err
