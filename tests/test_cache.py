"""The on-disk response cache: round trip, keys, torn entries, crash safety, clearing."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from conftest import CliResult

from eval_harness.cache import CACHE_SCHEMA_VERSION, Origin, ResponseCache, cache_key
from eval_harness.errors import ConfigError
from eval_harness.types import Completion, Usage

Cli = Callable[..., CliResult]

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def completion(text: str = "hello") -> Completion:
    return Completion(text=text, finish_reason="stop", usage=Usage(prompt_tokens=3, completion_tokens=1), cost_usd=0.5)


def test_a_stored_completion_comes_back_equal(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = cache_key("openai@x", "m", BODY)
    cache.put(key, completion())
    assert cache.get(key) == completion()


def test_a_missing_key_is_a_miss(tmp_path: Path) -> None:
    assert ResponseCache(tmp_path).get(cache_key("openai@x", "m", BODY)) is None


def test_the_key_covers_scope_model_body_and_epoch() -> None:
    base = cache_key("openai@x", "m", BODY, 0)
    assert base == cache_key("openai@x", "m", dict(reversed(list(BODY.items()))), 0)  # key order does not matter
    assert base != cache_key("openai@y", "m", BODY, 0)
    assert base != cache_key("openai@x", "n", BODY, 0)
    assert base != cache_key("openai@x", "m", {**BODY, "temperature": 0}, 0)
    assert base != cache_key("openai@x", "m", BODY, 1)


def test_a_torn_entry_is_a_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = cache_key("s", "m", BODY)
    cache.put(key, completion())
    path = next(tmp_path.rglob(f"{key}.json"))
    path.write_bytes(path.read_bytes()[:20])
    assert cache.get(key) is None


def test_an_entry_of_another_schema_version_is_a_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = cache_key("s", "m", BODY)
    cache.put(key, completion())
    path = next(tmp_path.rglob(f"{key}.json"))
    raw = orjson.loads(path.read_bytes())
    path.write_bytes(orjson.dumps({**raw, "schema_version": CACHE_SCHEMA_VERSION + 1}))
    assert cache.get(key) is None


def test_an_entry_keeps_the_run_session_and_record_that_paid_for_it(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = cache_key("s", "m", BODY)
    paid = Origin("/r/r1", 1, "2026-12-02T03:00:00Z", "q1#0")
    cache.put(key, completion(), paid)
    stored = cache.entry(key)
    assert stored is not None and stored[1] == paid
    assert paid.earlier_session_of(paid._replace(session=2))  # a kill between paying and recording
    assert not paid.earlier_session_of(paid._replace(session=2, record="q2#0"))  # another sample of that prompt
    assert not paid.earlier_session_of(paid._replace(session=2, created_at="2026-12-02T04:00:00Z"))  # a new run
    assert not paid.earlier_session_of(paid)  # the same session: a hit of its own answer is free


def test_every_record_that_paid_for_one_request_finds_its_payment_after_a_kill(tmp_path: Path) -> None:
    # crash-s32 3: two samples of one prompt in flight together each paid; the entry kept the last payer alone, so
    # after a kill before the other's record was written, its resume recorded the answer as a free hit
    cache = ResponseCache(tmp_path)
    key = cache_key("s", "m", BODY)
    first, second = (Origin("/r/r1", 1, "2026-12-02T03:00:00Z", f"{sample}#0") for sample in ("q1", "q2"))
    cache.put(key, completion(), first)
    cache.put(key, completion(), second)
    cache.put(key, completion(), second)  # the same payer again: remembered once
    stored = cache.entry(key)
    assert stored is not None and (stored.origin, stored.also_paid) == (second, (first,))
    for paid in (first, second):  # each record's resume finds its own payment
        assert stored.paid_by(paid._replace(session=2))
    assert not stored.paid_by(first._replace(session=2, record="q3#0"))  # a third sample's hit stays free


def test_an_entry_whose_origin_lacks_the_run_start_or_the_record_is_still_read(tmp_path: Path) -> None:
    # review-s31 F7: [run, session, null, null] was written, and refused by the entry's own type: a permanent miss
    cache = ResponseCache(tmp_path)
    key = cache_key("s", "m", BODY)
    cache.put(key, completion(), Origin("/r/r1", 1))
    assert cache.get(key) == completion()


def test_an_entry_of_an_earlier_build_names_the_run_and_session_alone(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = cache_key("s", "m", BODY)
    cache.put(key, completion())
    path = next(tmp_path.rglob(f"{key}.json"))
    path.write_bytes(orjson.dumps({**orjson.loads(path.read_bytes()), "origin": ["/r/r1", 1]}))
    stored = cache.entry(key)
    assert stored is not None and stored[1] == Origin("/r/r1", 1)
    # judged as it was then: by the directory and the session
    assert stored[1].earlier_session_of(Origin("/r/r1", 2, "2026-12-02T03:00:00Z", "q1#0"))


def test_the_cached_flag_is_not_stored(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = cache_key("s", "m", BODY)
    cache.put(key, completion().model_copy(update={"cached": True}))
    stored = cache.get(key)
    assert stored is not None and stored.cached is False


def _write_forever(directory: str) -> None:
    cache = ResponseCache(Path(directory))
    text = "x" * 20_000  # large enough that a write is not one page
    number = 0
    while True:
        cache.put(cache_key("s", "m", {"n": number}), completion(f"{number}:{text}"))
        number += 1


def test_a_writer_killed_mid_write_leaves_only_whole_entries(tmp_path: Path) -> None:
    writer = multiprocessing.get_context("spawn").Process(target=_write_forever, args=(str(tmp_path),))
    writer.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(list(tmp_path.rglob("*.json"))) < 30:
        time.sleep(0.01)
    assert writer.pid is not None
    os.kill(writer.pid, signal.SIGKILL)
    writer.join()
    cache = ResponseCache(tmp_path)
    entries = list(tmp_path.rglob("*.json"))
    assert len(entries) >= 30
    for path in entries:
        stored = cache.get(path.stem)
        assert stored is not None and stored.text.endswith("x" * 100), path


def test_info_counts_entries_and_leftover_temp_files(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    for number in range(3):
        cache.put(cache_key("s", "m", {"n": number}), completion())
    key = cache_key("s", "m", {"n": 0})
    (tmp_path / key[:2] / f".{key}.123.abcd.tmp").write_bytes(b"{")  # as earlier builds named them
    (tmp_path / key[:2] / f".{key}.json.123.abcd.tmp").write_bytes(b"{")  # as durable.atomic_file names them
    (tmp_path / key[:2] / "user-file.json").write_bytes(b"{}")
    info = cache.info()
    assert (info.entries, info.temp_files) == (3, 2)
    assert info.bytes > 0


def test_clear_deletes_entries_and_temp_files_but_nothing_else(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    for number in range(3):
        cache.put(cache_key("s", "m", {"n": number}), completion())
    key = cache_key("s", "m", {"n": 0})
    (tmp_path / key[:2] / f".{key}.1.ab.tmp").write_bytes(b"{")
    (tmp_path / key[:2] / f".{key}.json.1.ab.tmp").write_bytes(b"{")
    keep = tmp_path / "notes.txt"
    keep.write_text("mine")
    assert cache.clear() == (3, [])
    assert cache.info().entries == 0
    assert keep.read_text() == "mine"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_clear_leaves_folders_it_could_not_have_written(tmp_path: Path) -> None:
    # entries go into shards named by two hex digits; "go" is someone else's
    (tmp_path / "go").mkdir()
    cache = ResponseCache(tmp_path)
    cache.put(cache_key("s", "m", {"n": 1}), completion())
    assert cache.clear() == (1, [])
    assert [p.name for p in tmp_path.iterdir()] == ["go"]


def test_clear_of_a_missing_directory_deletes_nothing(tmp_path: Path) -> None:
    assert ResponseCache(tmp_path / "absent").clear() == (0, [])


def test_cache_with_the_mock_makes_no_cache_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the mock is deterministic and free, so --cache leaves it alone; it still made (and, on a read-only HOME,
    # required) the cache directory, refusing the run
    from conftest import adder_task_root, run_subprocess

    root = adder_task_root(tmp_path / "project")
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("EVAL_HARNESS_CACHE_DIR", str(cache_dir))
    task = root.root / "tasks" / "adder.toml"
    result = run_subprocess(
        "run", "--task", task, "--model", "mock/m", "--cache", "-q", "--output-dir", root.root / "r"
    )
    assert result.code == 0, result.err
    assert not cache_dir.exists()


def test_a_cache_dir_from_an_env_file_expands_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a .env line is not expanded by a shell: "~/x" made a directory named "~" in the working directory
    from eval_harness.config import Settings

    monkeypatch.delenv("EVAL_HARNESS_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    env = tmp_path / ".env"
    env.write_text("EVAL_HARNESS_CACHE_DIR=~/eval-cache\n")
    assert Settings.load(env).cache_dir == tmp_path / "home" / "eval-cache"


def test_a_cache_dir_of_an_unknown_users_home_stays_as_written_as_a_shell_leaves_it(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # hostile-s33 3: "~nosuchuser/x" in the environment or .env was a traceback of run, rescore and cache info/clear
    monkeypatch.setenv("EVAL_HARNESS_CACHE_DIR", "~nosuchuser-s33/x")
    monkeypatch.chdir(tmp_path)
    result = cli("cache", "info")
    assert (result.code, result.out) == (0, "~nosuchuser-s33/x: no cache yet (the directory does not exist)\n")


def test_no_home_directory_asks_for_a_cache_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    # review2-s33 B3: no HOME and a user id without a passwd entry (a container's): Path.home()'s traceback
    import pwd

    from eval_harness.cache import default_cache_dir

    def unknown(uid: int) -> pwd.struct_passwd:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    for name in ("HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", unknown)
    with pytest.raises(ConfigError, match=r"no home directory is set \(HOME\) or known for this user; set EVAL_"):
        default_cache_dir()


def test_cache_info_counts_in_binary_units_and_says_one_unfinished_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: "3.0 KB" for 3,081 bytes counted in 1024s, and "1 unfinished writes"
    from eval_harness.cache import CacheInfo
    from eval_harness.cli.render.cache import print_cache_info

    print_cache_info(CacheInfo(directory=tmp_path, entries=1, bytes=3_081, temp_files=1))
    assert capsys.readouterr().out.strip() == f"{tmp_path}: 1 cached answer, 3.0 KiB, 1 unfinished write"


def test_clear_removes_every_entry_it_can_and_names_what_it_could_not(tmp_path: Path) -> None:
    # cache-s31 F4: a directory under an entry's name stopped `cache clear` half-way ("Is a directory", exit 2)
    cache = ResponseCache(tmp_path)
    keys = [cache_key("s", "m", {**BODY, "n": n}) for n in range(4)]
    for key in keys:
        cache.put(key, completion())
    blocker = tmp_path / keys[0][:2] / f"{'0' * 64}.json"
    blocker.mkdir()
    removed, left = cache.clear()
    assert removed == 4 and left == [blocker]
    assert all(cache.get(key) is None for key in keys)


def test_info_counts_regular_files_alone(tmp_path: Path) -> None:
    # cache-s31 F6: a link under an entry's name counted as an answer, with its target's size
    cache = ResponseCache(tmp_path)
    key = cache_key("s", "m", BODY)
    cache.put(key, completion())
    entry = next(tmp_path.rglob(f"{key}.json"))
    (entry.parent / f"{'a' * 64}.json").symlink_to("/etc/hostname")
    (entry.parent / f"{'b' * 64}.json").mkdir()
    info = cache.info()
    assert (info.entries, info.bytes) == (1, entry.stat().st_size)
    assert cache.clear()[0] == 1  # probe-s31: "removed 2" of the same, the link counted as an answer


def test_a_cache_directory_that_is_a_file_is_refused_saying_so(tmp_path: Path) -> None:
    (tmp_path / "cache").write_text("x")
    with pytest.raises(ConfigError) as refused:
        ResponseCache(tmp_path / "cache").check_writable()
    assert f"cannot write the cache directory {tmp_path / 'cache'}: it is not a directory" in str(refused.value)
