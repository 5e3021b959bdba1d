"""The scorer and plugin contract, end to end through the CLI (audit-ext F1, F5, F6).

A scorer's verdict that a reader would refuse (a value outside [0, 1] however the ``Score`` was made, a breakdown
part out of range, a negative cost, not a ``Score`` at all) is that sample's scoring error naming the scorer and
what it returned, and ``report`` reads the run; a factory or a ``score`` that cannot work is refused when the
scorer is built, naming the spec's place; a plugin that fails to import, or takes a name already registered, is
one line naming its entry point, whichever name the run looks up. The scorers are registered here as a plugin
registers them; the plugins are real installed distributions (a ``.dist-info`` on ``PYTHONPATH``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, TaskRoot, read_records, run_subprocess

from eval_harness.errors import ConfigError
from eval_harness.scorers.base import FunctionScorer, Scorer, register_scorer
from eval_harness.types import Completion, Sample, Score

Cli = Callable[..., CliResult]


class Returns(Scorer):
    """Returns whatever ``make`` builds, for every sample."""

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        return self.make()  # type: ignore[return-value]  # the wrong types are the point


def changed_after_built(value: float) -> Score:
    """A valid Score whose value is set afterwards (Score does not validate assignment)."""
    score = Score(value=0.5)
    score.value = value
    return score


VERDICTS: dict[str, Callable[[], object]] = {
    "sc_changed_high": lambda: changed_after_built(1.5),
    "sc_changed_nan": lambda: changed_after_built(float("nan")),
    "sc_changed_negative": lambda: changed_after_built(-0.25),
    "sc_constructed": lambda: Score.model_construct(value=2.0, explanation="no validation", metadata={}),
    "sc_breakdown_count": lambda: Score(value=1.0, metadata={"breakdown": {"words": 11}}),
    "sc_negative_cost": lambda: Score(value=1.0, cost_usd=-0.5),
    "sc_returns_none": lambda: None,
    "sc_builds_high": lambda: Score(value=1.5),
    "sc_builds_nan": lambda: Score(value=float("nan")),
}
for _name, _make in VERDICTS.items():
    register_scorer(_name)(lambda make=_make: Returns(make))


@register_scorer("sc_function_float")
def function_float() -> Scorer:
    """A FunctionScorer whose function returns a bare float, as a first-week author writes it."""
    return FunctionScorer(lambda output, sample: 1.0)  # type: ignore[arg-type, return-value]


@register_scorer("sc_not_a_scorer")
def not_a_scorer() -> Scorer:
    def score(output: str, sample: Sample) -> float:
        return 1.0

    return score  # type: ignore[return-value]  # a plain function, not a Scorer


class SyncScore(Scorer):
    def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:  # type: ignore[override]
        return Score(value=1.0)


@register_scorer("sc_sync")
def sync_score() -> Scorer:
    return SyncScore()


@register_scorer("sc_needs_file")
def needs_file(path: str = "sc-lexicon-that-does-not-exist.txt") -> Scorer:
    words = Path(path).read_text().split()  # FileNotFoundError
    return Returns(lambda: Score(value=float(len(words) > 0)))


SCORER_LINE = 8
"""The line of the second ``[[scorers]]`` table in ``task_with``'s spec."""


def task_with(root: TaskRoot, scorer: str, weight: float = 1.0) -> Path:
    """The adder task scored by numeric exact match and ``scorer`` (its table at line ``SCORER_LINE``)."""
    return root.task(
        "contract",
        'name = "contract"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
        '[[scorers]]\nname = "exact_match"\nargs = { mode = "numeric" }\n'
        f'[[scorers]]\nname = "{scorer}"\nweight = {weight}\n',
    )


def run(cli: Cli, root: TaskRoot, scorer: str, weight: float = 1.0) -> tuple[CliResult, Path]:
    """Run the contract task with a mock model that answers every sample right, over 4 samples."""
    task = task_with(root, scorer, weight)
    result = cli("run", "--task", task, "--model", "mock/m", "--model-arg", "skill=1", "--limit", "4",
                 "--output-dir", root.root / "results", "--run-id", "r", "-q")  # fmt: skip
    return result, root.root / "results" / "r"


def assert_each_record_is_the_scoring_error(cli: Cli, root: TaskRoot, scorer: str, message: str) -> None:
    """A run with ``scorer`` completes; every record keeps its output and has ``message`` as its scoring error,
    and report reads the run."""
    result, run_dir = run(cli, root, scorer)
    assert result.code == 0, result.err
    records = read_records(run_dir)
    assert len(records) == 4
    for record in records:
        assert record["error"] == {"type": "ScoringError", "message": message, "stage": "score"}
        assert record["score"] is None and record["output"] is not None
        assert scorer not in record["scores"] and not any(key.startswith(f"{scorer}.") for key in record["scores"])
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"
    report = cli("report", "--run", run_dir)
    assert report.code == 0, report.err


@pytest.mark.parametrize(
    ("scorer", "problem"),
    [
        ("sc_changed_high", "returned 1.5; a score must be in [0, 1]"),
        ("sc_changed_nan", "returned nan; a score must be in [0, 1]"),
        ("sc_changed_negative", "returned -0.25; a score must be in [0, 1]"),
        ("sc_constructed", "returned 2.0; a score must be in [0, 1]"),
        ("sc_breakdown_count", "returned 11 for breakdown part 'words'; a score must be in [0, 1]"),
        ("sc_negative_cost", "returned cost_usd -0.5; a cost must be a non-negative number or None"),
    ],
)
def test_a_verdict_out_of_range_is_the_records_scoring_error_and_the_run_stays_readable(
    cli: Cli, task_root: TaskRoot, scorer: str, problem: str
) -> None:
    assert_each_record_is_the_scoring_error(cli, task_root, scorer, f"scorer {scorer} {problem}")


@pytest.mark.parametrize(("scorer", "returned"), [("sc_function_float", "float"), ("sc_returns_none", "None")])
def test_a_scorer_returning_something_else_than_a_score_fails_each_sample_not_the_run(
    cli: Cli, task_root: TaskRoot, scorer: str, returned: str
) -> None:
    assert_each_record_is_the_scoring_error(
        cli, task_root, scorer, f"scorer {scorer} returned {returned}, expected Score"
    )


@pytest.mark.parametrize(("scorer", "shown"), [("sc_builds_high", "1.5"), ("sc_builds_nan", "nan")])
def test_a_score_refused_by_pydantic_inside_a_scorer_is_one_line_naming_the_scorer(
    cli: Cli, task_root: TaskRoot, scorer: str, shown: str
) -> None:
    # was "<key>: 1 validation error for Score\nvalue\n  Input should be ... For further information visit https://..."
    message = f"scorer {scorer} returned {shown}; a score must be in [0, 1]"
    assert_each_record_is_the_scoring_error(cli, task_root, scorer, message)


def test_a_weight_zero_scorer_out_of_range_is_left_out_and_the_answer_keeps_its_score(
    cli: Cli, task_root: TaskRoot
) -> None:
    result, run_dir = run(cli, task_root, "sc_changed_high", weight=0)
    assert result.code == 0, result.err
    for record in read_records(run_dir):
        assert record["error"] is None and record["score"] == 1.0
        assert record["scores"] == {"exact_match": 1.0}
        assert record["explanations"]["sc_changed_high"] == (
            "failed, not counted (weight 0): ScoringError: scorer sc_changed_high returned 1.5; "
            "a score must be in [0, 1]"
        )
    assert cli("report", "--run", run_dir).code == 0


@pytest.mark.parametrize(
    ("scorer", "problem"),
    [
        (
            "sc_not_a_scorer",
            "its factory returned function, expected a Scorer (a subclass of eval_harness.scorers.Scorer, or "
            "FunctionScorer(function))",
        ),
        (
            "sc_needs_file",
            "FileNotFoundError: [Errno 2] No such file or directory: 'sc-lexicon-that-does-not-exist.txt'",
        ),
    ],
)
def test_a_scorer_that_cannot_work_is_refused_when_built_naming_the_spec_line_and_the_scorer(
    cli: Cli, task_root: TaskRoot, scorer: str, problem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(task_root.root)  # where sc_needs_file looks for its (missing) file
    result, run_dir = run(cli, task_root, scorer)
    task = task_root.root / "tasks" / "contract.toml"
    assert (result.code, result.err) == (2, f"error: {task}:{SCORER_LINE}: scorer {scorer!r}: {problem}\n")
    assert not run_dir.exists()


def test_registering_a_taken_name_is_a_config_error_naming_both_registrants() -> None:
    def my_token_f1() -> Scorer:
        return Returns(lambda: Score(value=0.0))

    with pytest.raises(ConfigError) as refused:
        register_scorer("token_f1")(my_token_f1)
    assert str(refused.value) == (
        "scorer 'token_f1' is already registered by eval_harness.scorers.squad; "
        f"{__name__}.test_registering_a_taken_name_is_a_config_error_naming_both_registrants.<locals>.my_token_f1 "
        "needs another name"
    )


def install_plugin(site: Path, package: str, source: str) -> None:
    """Install the distribution ``package`` into ``site`` as pip would: its module, and a .dist-info declaring
    one entry point ``sc_<package>`` in the scorers group."""
    module = package.replace("-", "_")
    site.mkdir(exist_ok=True)
    (site / f"{module}.py").write_text(source, encoding="utf-8")
    info = site / f"{module}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[eval_harness.scorers]\nsc_{module} = {module}\n", encoding="utf-8")


PLUGINS = {
    "sc-broken": (
        "import sc_definitely_not_installed_pkg\n",
        "plugin entry point sc_sc_broken = sc_broken (group eval_harness.scorers, package sc-broken): failed to "
        "import: ModuleNotFoundError: No module named 'sc_definitely_not_installed_pkg'; fix or uninstall the "
        "package sc-broken",
    ),
    "sc-clash": (
        "from eval_harness.scorers import FunctionScorer, register_scorer\n"
        "from eval_harness.types import Score\n\n\n"
        "@register_scorer('token_f1')\n"
        "def team_f1():\n"
        "    return FunctionScorer(lambda output, sample: Score(value=0.0))\n",
        "plugin entry point sc_sc_clash = sc_clash (group eval_harness.scorers, package sc-clash): scorer "
        "'token_f1' is already registered by eval_harness.scorers.squad; sc_clash.team_f1 needs another name",
    ),
}


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
@pytest.mark.parametrize("scorer", ["token_f1", "token_f2"])  # a name the run uses, and a misspelt one
def test_a_broken_or_clashing_plugin_is_one_line_naming_its_entry_point_whichever_name_is_looked_up(
    task_root: TaskRoot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plugin: str, scorer: str
) -> None:
    # before: a traceback (exit 1) when a misspelt name made every plugin load, and silence (exit 0, the
    # built-in token_f1 used, the plugin's override ignored) when the name was found first
    source, message = PLUGINS[plugin]
    install_plugin(tmp_path / "site", plugin, source)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    task = task_root.task(
        "plugged",
        'name = "plugged"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
        f'[[scorers]]\nname = "{scorer}"\n',
    )
    result = run_subprocess("run", "--task", task, "--model", "mock/m", "--limit", "2",
                            "--output-dir", task_root.root / "results", "-q", cwd=task_root.root)  # fmt: skip
    assert (result.code, result.err) == (2, f"error: {message}\n")


def test_a_scorer_whose_score_is_a_plain_method_works(cli: Cli, task_root: TaskRoot) -> None:
    # SyncScore.score returns a Score without async; a delegating method returning a coroutine works alike
    result, run_dir = run(cli, task_root, "sc_sync")
    assert result.code == 0, result.err
    assert all(r["error"] is None and r["scores"]["sc_sync"] == 1.0 for r in read_records(run_dir))


CANARY = "sk-CANARY-scorer-0123456789"


class LeaksTheKey(Scorer):
    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        raise RuntimeError(f"grader said 401 for key {CANARY}")


@register_scorer("sc_leaks_key")
def leaks_key() -> Scorer:
    return LeaksTheKey()


@register_scorer("sc_factory_leaks_key")
def factory_leaks_key() -> Scorer:
    raise RuntimeError(f"cannot authenticate with {CANARY}")


def test_a_failing_weight_0_scorer_keeps_its_message_without_the_key(
    cli: Cli, task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    result, run_dir = run(cli, task_root, "sc_leaks_key", 0.0)
    assert result.code == 0, result.err
    records = read_records(run_dir)
    assert records[0]["explanations"]["sc_leaks_key"] == (
        "failed, not counted (weight 0): RuntimeError: grader said 401 for key [REDACTED]"
    )
    assert not [p for p in run_dir.iterdir() if p.is_file() and CANARY in p.read_text(errors="replace")]


def test_an_error_quoting_a_key_is_printed_without_it(
    cli: Cli, task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    result, _ = run(cli, task_root, "sc_factory_leaks_key")
    assert result.code == 2 and CANARY not in result.err
    assert "RuntimeError: cannot authenticate with [REDACTED]" in result.err
