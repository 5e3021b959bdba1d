"""Secrets and base URLs, end to end: keys with stray whitespace, embedding_similarity's base URL, ports,
percent-encoded keys, and the epoch bound (audit-cli S1, S2, D7, D5 and the URL-encoding suspicion)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, TaskRoot, read_records
from fake_llm_server import FakeLLMServer, bad_request
from pydantic import SecretStr

from eval_harness.config import Settings, without_credentials
from eval_harness.errors import ConfigError
from eval_harness.providers import ProviderContext, create_provider
from eval_harness.providers._http import HTTPProvider
from eval_harness.providers.embeddings import OpenAIEmbeddingsClient

Cli = Callable[..., CliResult]
CANARY = "sk-canary-0123456789abcdef"
PASSWORD = "hunter2-password-canary"


@pytest.fixture
def project(task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch) -> TaskRoot:
    """The adder task root as the working directory, with no key, base URL or cache of the machine's."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "SERVER_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EVAL_HARNESS_CACHE_DIR", str(task_root.root / "cache"))
    monkeypatch.chdir(task_root.root)
    return task_root


def run(cli: Cli, model: str, *args: str, task: str = "tasks/adder.toml", limit: int = 2) -> CliResult:
    return cli("run", "--task", task, "--model", model, "--limit", str(limit), "--max-retries", "0", "-q",
               "--output-dir", "results", "--run-id", "r1", *args)  # fmt: skip


def assert_canary_nowhere(result: CliResult, root: Path, canary: str = CANARY) -> None:
    """Not on stdout or stderr, nor in any file but the .env that holds it."""
    assert canary not in result.out and canary not in result.err, result.err
    for path in root.rglob("*"):
        if path.is_file() and path.name != ".env":
            assert canary.encode() not in path.read_bytes(), path


# S1: a key with surrounding whitespace ------------------------------------------------------------------


@pytest.mark.parametrize("source", ["dotenv", "environment"])
def test_a_key_with_a_trailing_space_is_not_echoed_by_a_401(
    cli: Cli, project: TaskRoot, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    server.api_key = "sk-the-right-key-000000"  # answers 401 quoting the key it was sent
    if source == "dotenv":
        (project.root / ".env").write_text(f'OPENAI_API_KEY="{CANARY} "\n')
    else:
        monkeypatch.setenv("OPENAI_API_KEY", f"{CANARY} ")
    result = run(cli, "openai/gpt-4o-mini", "--model-arg", f"base_url={server.base_url}")
    assert result.code == 2 and "authentication failed" in result.err, result.err
    assert server.generation_requests()[0].headers["authorization"] == f"Bearer {CANARY}"
    assert_canary_nowhere(result, project.root)


def test_an_anthropic_key_with_a_trailing_space_is_not_echoed_by_a_400(
    cli: Cli, project: TaskRoot, server: FakeLLMServer
) -> None:
    server.script(*[bad_request("bad request for key {key}")] * 2)
    (project.root / ".env").write_text(f"ANTHROPIC_API_KEY='{CANARY} '\n")
    result = run(cli, "anthropic/claude-3-5-haiku-latest", "--model-arg", f"base_url={server.url}")
    assert result.code == 0, result.err
    records = (project.root / "results" / "r1" / "samples.jsonl").read_text()
    assert records.count("bad request for key [REDACTED]") == 2
    assert_canary_nowhere(result, project.root)


def test_an_openai_key_with_a_trailing_space_is_not_echoed_by_a_400(
    cli: Cli, project: TaskRoot, server: FakeLLMServer
) -> None:
    server.script(*[bad_request("bad request for key {key}")] * 2)
    (project.root / ".env").write_text(f'OPENAI_API_KEY="{CANARY} "\n')
    result = run(cli, "openai/gpt-4o-mini", "--model-arg", f"base_url={server.base_url}")
    assert result.code == 0, result.err
    records = (project.root / "results" / "r1" / "samples.jsonl").read_text()
    assert records.count("bad request for key [REDACTED]") == 2
    assert_canary_nowhere(result, project.root)


def test_a_key_variable_named_by_api_key_env_with_a_trailing_space_is_not_echoed_by_a_400(
    cli: Cli, project: TaskRoot, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script(*[bad_request("bad request for key {key}")] * 2)
    monkeypatch.setenv("SERVER_KEY", f"{CANARY} ")
    result = run(cli, "openai-compatible/m", "--model-arg", f"base_url={server.base_url}",
                 "--model-arg", "api_key_env=SERVER_KEY")  # fmt: skip
    assert result.code == 0, result.err
    assert_canary_nowhere(result, project.root)


def test_a_key_that_is_only_whitespace_counts_as_unset(cli: Cli, project: TaskRoot) -> None:
    # CI templates export empty keys: a mock run must not fail on them, an openai run says the key is missing
    (project.root / ".env").write_text('OPENAI_API_KEY="   "\n')
    assert run(cli, "mock/m").code == 0
    result = run(cli, "openai/gpt-4o-mini", "--model-arg", "base_url=http://127.0.0.1:9/v1")
    assert result.code == 2 and "OPENAI_API_KEY" in result.err, result.err


def test_an_api_key_model_arg_that_is_only_whitespace_is_refused() -> None:
    options = {"base_url": "http://127.0.0.1:9/v1", "api_key": " \t "}
    with pytest.raises(ConfigError, match="api_key"):
        create_provider("openai-compatible/m", options, ProviderContext(settings=Settings()))


def test_a_base_url_holding_the_stripped_form_of_a_padded_key_is_refused(
    cli: Cli, project: TaskRoot, server: FakeLLMServer
) -> None:
    (project.root / ".env").write_text(f'OPENAI_API_KEY="{CANARY} "\n')
    result = run(cli, "openai/gpt-4o-mini", "--model-arg", f"base_url={server.base_url}?key={CANARY}")
    assert result.code == 2 and "base_url holds an API key" in result.err, result.err
    assert server.requests == [] and not (project.root / "results").exists()
    assert_canary_nowhere(result, project.root)


# S2: embedding_similarity's base URL --------------------------------------------------------------------


def embedding_task(project: TaskRoot, base_url: str | None) -> str:
    args = f'base_url = "{base_url}", cache = false' if base_url else "cache = false"
    project.task(
        "emb",
        'template = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
        f'[[scorers]]\nname = "embedding_similarity"\nargs = {{ {args} }}\n',
    )
    return "tasks/emb.toml"


def test_embedding_similarity_with_the_key_in_its_base_url_is_refused_before_the_run(
    cli: Cli, project: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    task = embedding_task(project, f"http://127.0.0.1:9/v1?api-key={CANARY}")
    result = run(cli, "mock/m", task=task)
    assert result.code == 2 and "base_url holds an API key" in result.err, result.err
    assert "tasks/emb.toml" in result.err and "embedding_similarity" in result.err
    assert not (project.root / "results").exists()  # so no manifest records the scorer's arguments
    assert CANARY not in result.out + result.err


@pytest.mark.parametrize("where", ["task", "OPENAI_BASE_URL"])
def test_embedding_similarity_with_a_password_in_its_base_url_is_refused_before_the_run(
    cli: Cli, project: TaskRoot, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    url = f"http://bob:{PASSWORD}@127.0.0.1:9/v1"
    if where == "OPENAI_BASE_URL":
        monkeypatch.setenv("OPENAI_BASE_URL", url)
    result = run(cli, "mock/m", task=embedding_task(project, url if where == "task" else None))
    named = "base_url" if where == "task" else "OPENAI_BASE_URL"
    assert result.code == 2 and f"{named} must not carry user:password@" in result.err, result.err
    assert not (project.root / "results").exists()
    assert PASSWORD not in result.out + result.err


async def test_the_embeddings_endpoint_keeps_the_base_url_query() -> None:
    import httpx

    sent: list[httpx.URL] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.url)
        return httpx.Response(200, json={"data": [{"index": 0, "embedding": [1.0, 0.0]}]})

    base_url = "http://embed.test/openai/v1/?api-version=2024-10-21"  # Azure's form
    client = OpenAIEmbeddingsClient("emb", base_url, SecretStr("sk-x"), transport=httpx.MockTransport(handler))
    assert await client.embed(["one"]) == [[1.0, 0.0]]
    assert str(sent[0]) == "http://embed.test/openai/v1/embeddings?api-version=2024-10-21"


# D7: ports ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("port", ["99999", "0", "http"])
def test_a_base_url_with_an_impossible_port_is_refused_when_the_provider_is_built(port: str) -> None:
    options = {"base_url": f"http://127.0.0.1:{port}/v1"}
    with pytest.raises(ConfigError, match=r"openai-compatible/m: base_url is not a valid URL"):
        create_provider("openai-compatible/m", options, ProviderContext(settings=Settings()))


@pytest.mark.parametrize("port", ["99999", "0"])
def test_an_embeddings_base_url_with_an_impossible_port_is_refused_when_the_client_is_built(port: str) -> None:
    with pytest.raises(ConfigError, match="base_url is not a valid URL"):
        OpenAIEmbeddingsClient("emb", f"http://127.0.0.1:{port}/v1")


# the suspicion: a percent-encoded key -------------------------------------------------------------------


def test_a_percent_encoded_key_in_the_base_url_is_refused() -> None:
    encoded = CANARY.replace("-", "%2D")
    settings = Settings(openai_api_key=SecretStr(CANARY))
    with pytest.raises(ConfigError, match="base_url holds an API key") as caught:
        create_provider("openai/gpt-4o-mini", {"base_url": f"http://127.0.0.1:9/v1?key={encoded}"},
                        ProviderContext(settings=settings))  # fmt: skip
    assert encoded not in str(caught.value) and CANARY not in str(caught.value)


def test_a_percent_encoded_key_in_the_embeddings_base_url_is_refused() -> None:
    encoded = CANARY.replace("-", "%2d")
    with pytest.raises(ConfigError, match="base_url holds an API key"):
        OpenAIEmbeddingsClient("emb", f"http://127.0.0.1:9/v1?key={encoded}", SecretStr(CANARY))


# D5: the epoch bound ------------------------------------------------------------------------------------


def test_epochs_above_the_bound_are_refused_before_the_run(cli: Cli, project: TaskRoot) -> None:
    result = run(cli, "mock/m", "--epochs", "1001")
    assert result.code == 2 and "--epochs" in result.err, result.err
    assert not (project.root / "results").exists()


def test_epochs_at_the_bound_are_accepted(cli: Cli, project: TaskRoot) -> None:
    result = run(cli, "mock/m", "--epochs", "1000", limit=1)
    assert result.code == 0, result.err
    run_dir = project.root / "results" / "r1"
    assert json.loads((run_dir / "manifest.json").read_text())["epochs"] == 1000
    assert sorted(r["epoch"] for r in read_records(run_dir)) == list(range(1000))


# a credential in the base_url's query that no configured key matches -------------------------------------


@pytest.mark.parametrize(
    "parameter",
    ["key", "api-key", "API_KEY", "access_token", "code", "sig", "X-Api-Key", "subscription-key", "X-Amz-Signature",
     "hf_token", "client_secret"],
)  # fmt: skip
def test_a_base_url_query_parameter_that_carries_a_credential_is_refused_without_its_value(parameter: str) -> None:
    # before: recorded in the manifest as given, since only the configured keys were looked for
    url = f"http://127.0.0.1:9/v1?api-version=2024-10-21&{parameter}=gw-7f3a9c2e5d1b"
    with pytest.raises(
        ConfigError, match=rf"base_url carries a credential in its query \({parameter}=\.\.\.\)"
    ) as caught:
        create_provider("openai-compatible/m", {"base_url": url}, ProviderContext(settings=Settings()))
    assert "gw-7f3a9c2e5d1b" not in str(caught.value)
    with pytest.raises(ConfigError, match="carries a credential"):
        OpenAIEmbeddingsClient("emb", url)


def test_the_refusal_names_the_flag_the_judge_was_given_through() -> None:
    url = "http://127.0.0.1:9/v1?key=gw-7f3a9c2e5d1b"
    with pytest.raises(ConfigError) as caught:
        create_provider(
            "openai-compatible/j", {"base_url": url}, ProviderContext(settings=Settings()), flag="--judge-arg"
        )
    assert str(caught.value).endswith(
        "give the key through --judge-arg api_key_env=NAME (or api_key=...), with --judge-arg api_key_query=key for "
        "a server that reads it from the query"
    )


@pytest.mark.parametrize(
    ("provider", "variable"), [("openai/gpt-4o-mini", "OPENAI_BASE_URL"), ("anthropic/claude-x", "ANTHROPIC_BASE_URL")]
)
def test_a_base_url_from_the_environment_is_named_by_its_variable(provider: str, variable: str) -> None:
    # before: "base_url carries a credential", though the user gave no base_url
    url = "http://127.0.0.1:9/v1?api-key=gw-7f3a9c2e5d1b"
    keys = {"openai_api_key": SecretStr("sk-x"), "anthropic_api_key": SecretStr("sk-y")}
    settings = Settings(**keys, openai_base_url=url, anthropic_base_url=url)
    with pytest.raises(
        ConfigError, match=rf"{provider}: {variable} carries a credential in its query \(api-key="
    ) as caught:
        create_provider(provider, {}, ProviderContext(settings=settings))
    assert "gw-7f3a9c2e5d1b" not in str(caught.value)
    with pytest.raises(ConfigError, match=rf"{provider}: base_url carries a credential"):  # given as the option
        create_provider(provider, {"base_url": url}, ProviderContext(settings=settings))


def test_a_base_url_query_of_other_parameters_is_kept_and_sent() -> None:
    url = "http://127.0.0.1:9/v1?api-version=2024-10-21&keyword=x&tokenizer=y"
    provider = create_provider("openai-compatible/m", {"base_url": url}, ProviderContext(settings=Settings()))
    assert isinstance(provider, HTTPProvider) and provider.base_url == url


@pytest.mark.parametrize(
    ("url", "part"),
    [
        ("http://127.0.0.1:9/v1?api-version=1;token=gw-7f3a9c2e5d1b", "query"),
        ("http://127.0.0.1:9/v1#access_token=gw-7f3a9c2e5d1b", "fragment"),  # walk2-s27: it said "query"
    ],
    ids=["semicolon-separated", "in-the-fragment"],
)
def test_a_credential_parameter_after_a_semicolon_or_in_the_fragment_is_refused_too(url: str, part: str) -> None:
    with pytest.raises(ConfigError, match=f"carries a credential in its {part} ") as caught:
        create_provider("openai-compatible/m", {"base_url": url}, ProviderContext(settings=Settings()))
    assert "gw-7f3a9c2e5d1b" not in str(caught.value)


# A server that takes its key elsewhere than Authorization: Bearer ------------------------------------------


@pytest.mark.parametrize(
    ("option", "key_from"),
    [("api_key_query=code", "query:code"), ("api_key_header=x-functions-key", "header:x-functions-key")],
)
def test_a_key_sent_in_the_query_or_a_header_of_its_own_is_used_and_never_recorded(
    cli: Cli, project: TaskRoot, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, option: str, key_from: str
) -> None:
    # before: ?code=KEY in base_url was refused (it would be recorded) and no other way reached such a server
    server.api_key, server.key_from = CANARY, key_from
    monkeypatch.setenv("SERVER_KEY", CANARY)
    server.script(bad_request("invalid request for {key}"))  # a server that echoes the key it was sent
    base_url = f"{server.base_url}?api-version=1"
    result = run(cli, "openai-compatible/m", "--model-arg", f"base_url={base_url}", "--model-arg",
                 "api_key_env=SERVER_KEY", "--model-arg", option, "--concurrency", "1", limit=3)  # fmt: skip
    assert result.code == 0, result.err
    sent = server.generation_requests()
    assert len(sent) == 3 and all("authorization" not in r.headers for r in sent)
    assert all(r.query == {"api-version": "1", **({"code": CANARY} if "query" in key_from else {})} for r in sent)
    records = read_records(project.root / "results" / "r1")
    assert records[0]["error"] is not None and "invalid request for [REDACTED]" in records[0]["error"]["message"]
    assert [r["error"] for r in records[1:]] == [None, None]
    manifest = json.loads((project.root / "results" / "r1" / "manifest.json").read_text())
    assert manifest["model"]["args"]["base_url"] == base_url
    assert_canary_nowhere(result, project.root)


@pytest.mark.parametrize(
    "encoded_as",
    [
        "{key}",
        "{query}",
        "code=Ab/cD%2BeF/gH%2BiJ/kL%2Bcanary%2BmN/oP%2BqR/sT%3D%3D",
        "code=Ab%2FcD%2BeF%2FgH%2BiJ%2FkL%2Bcanary%2BmN%2FoP%2BqR%2FsT%3D%3D",
        # review-s25 4: encoded once more by a server logging the query it received, and JSON escaping "/"
        "code=Ab%252FcD%252BeF%252FgH%252BiJ%252FkL%252Bcanary%252BmN%252FoP%252BqR%252FsT%253D%253D",
        '{{"code": "Ab\\/cD+eF\\/gH+iJ\\/kL+canary+mN\\/oP+qR\\/sT=="}}',
    ],
    ids=["decoded", "as-sent", "slash-kept", "all-quoted", "quoted-twice", "json-escaped-slash"],
)
def test_a_query_key_that_needs_encoding_is_redacted_however_the_server_echoes_it(
    cli: Cli, project: TaskRoot, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, encoded_as: str
) -> None:
    # an Azure Functions key is base64: / + = are percent-encoded in the query, where a redaction of the key as
    # written would not find it
    key = "Ab/cD+eF/gH+iJ/kL+canary+mN/oP+qR/sT=="
    server.api_key, server.key_from = key, "query:code"
    monkeypatch.setenv("SERVER_KEY", key)
    server.script(bad_request(f"invalid request: {encoded_as}"))
    result = run(cli, "openai-compatible/m", "--model-arg", f"base_url={server.base_url}", "--model-arg",
                 "api_key_env=SERVER_KEY", "--model-arg", "api_key_query=code", "--concurrency", "1",
                 limit=2)  # fmt: skip
    assert result.code == 0, result.err
    assert server.generation_requests()[0].query == {"code": key}
    message = read_records(project.root / "results" / "r1")[0]["error"]["message"]
    assert "invalid request: " in message and "canary" not in message, message
    for path in project.root.rglob("*"):
        if path.is_file() and path.name != ".env":
            assert b"canary" not in path.read_bytes(), path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"base_url": "http://127.0.0.1:9/v1?code=x", "api_key_query": "code"}, "carries a credential"),
        ({"base_url": "http://127.0.0.1:9/v1?region=eu", "api_key_query": "region"}, "would send twice"),
        ({"base_url": "http://127.0.0.1:9/v1", "api_key_header": "User-Agent"}, "a header eval-harness sets itself"),
    ],
)
def test_a_key_place_that_would_clash_with_the_request_is_refused(args: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        create_provider("openai-compatible/m", {"api_key": "k", **args}, ProviderContext())


@pytest.mark.parametrize(
    ("url", "hint"),
    [
        ("http://h:9/v1?code=x", ", with --model-arg api_key_query=code for a server that reads it from the query"),
        (
            "http://h:9/v1?api-key=x",
            ", with --model-arg api_key_header=api-key for a server that reads it from a header (Azure's)",
        ),
        ("http://h:9/v1#code=x", ""),  # a fragment is never sent: nothing to move
        ("http://h:9/v1?sv=1&sig=x", ""),  # a signed URL's signature is no key to send each time
    ],
)
def test_the_refusal_says_where_such_a_key_goes_only_where_it_fits(url: str, hint: str) -> None:
    with pytest.raises(ConfigError) as caught:
        create_provider("openai-compatible/m", {"base_url": url}, ProviderContext())
    assert str(caught.value).endswith("give the key through --model-arg api_key_env=NAME (or api_key=...)" + hint)


def test_a_credential_in_an_environment_base_url_is_refused_without_saying_it_is_recorded() -> None:
    # before: "... and the OPENAI_BASE_URL is recorded in the manifest": a URL from the environment is not
    settings = Settings(openai_api_key=SecretStr("sk-x"), openai_base_url="http://h:9/v1?token=x")
    with pytest.raises(ConfigError) as caught:
        create_provider("openai/gpt-4o", {}, ProviderContext(settings=settings))
    assert str(caught.value) == (
        "openai/gpt-4o: OPENAI_BASE_URL carries a credential in its query (token=...); give the key through "
        "OPENAI_API_KEY"
    )


def test_a_judges_missing_base_url_names_the_judges_flag() -> None:
    with pytest.raises(ConfigError, match=r"openai-compatible/j: set --judge-arg base_url=http://HOST:PORT/v1"):
        create_provider("openai-compatible/j", {}, ProviderContext(), flag="--judge-arg")


def test_without_its_own_place_the_key_is_refused_by_such_a_server(
    cli: Cli, project: TaskRoot, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.api_key, server.key_from = CANARY, "query:code"
    monkeypatch.setenv("SERVER_KEY", CANARY)
    result = run(cli, "openai-compatible/m", "--model-arg", f"base_url={server.base_url}", "--model-arg",
                 "api_key_env=SERVER_KEY")  # fmt: skip
    assert result.code == 2 and "authentication failed: HTTP 401" in result.err, result.err
    assert CANARY not in result.err


@pytest.mark.parametrize(
    ("placed", "elsewhere"),
    [
        ((), "elsewhere"),
        (("--model-arg", "api_key_query=key"), "elsewhere than the query parameter key"),
        (("--model-arg", "api_key_header=api-key"), "elsewhere than the header api-key"),
    ],
    ids=["bearer", "query", "header"],
)
def test_a_refused_key_says_the_server_may_read_it_elsewhere(
    cli: Cli,
    project: TaskRoot,
    server: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    placed: tuple[str, ...],
    elsewhere: str,
) -> None:
    # before: only "check --model-arg api_key_env=NAME (or api_key=...)", when the key was right and its place wrong
    server.api_key, server.key_from = CANARY, "header:x-functions-key"
    monkeypatch.setenv("SERVER_KEY", CANARY)
    result = run(cli, "openai-compatible/m", "--model-arg", f"base_url={server.base_url}", "--model-arg",
                 "api_key_env=SERVER_KEY", *placed)  # fmt: skip
    assert result.code == 2, result.err
    assert (
        "authentication failed: HTTP 401 (check --model-arg api_key_env=NAME (or api_key=...); or the server reads "
        f"its key {elsewhere}: --model-arg api_key_header=NAME or --model-arg api_key_query=NAME)"
    ) in result.err


def test_a_refused_request_without_a_key_says_only_to_give_one(
    cli: Cli, project: TaskRoot, server: FakeLLMServer
) -> None:
    server.api_key = CANARY
    result = run(cli, "openai-compatible/m", "--model-arg", f"base_url={server.base_url}")
    assert result.code == 2, result.err
    assert "authentication failed: HTTP 401 (check --model-arg api_key_env=NAME (or api_key=...)):" in result.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"api_key_query": "code"}, "api_key_query=code but no key is given: give it through --model-arg api_key_env"),
        ({"api_key_header": "x-functions-key"}, "api_key_header=x-functions-key but no key is given"),
        ({"api_key": "k", "api_key_header": "a", "api_key_query": "b"}, "not both: the key is sent in one place"),
        ({"api_key": "k", "api_key_header": "api key: x"}, "--model-arg api_key_header: must be an HTTP header name"),
        ({"api_key": "k", "api_key_query": "co&de"}, "--model-arg api_key_query: must be a query parameter name"),
    ],
)
def test_the_keys_place_is_checked_before_the_run(args: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        create_provider("openai-compatible/m", {"base_url": "http://127.0.0.1:9/v1", **args}, ProviderContext())


@pytest.mark.parametrize("flag", ["--model-arg", "--judge-arg"])
@pytest.mark.parametrize(
    ("model", "args", "message"),
    [
        (
            "openai-compatible/m",
            {"base_url": "http://127.0.0.1:9/v1", "api_key": "k", "api_key_header": "a", "api_key_query": "b"},
            "give api_key_header or api_key_query, not both: the key is sent in one place",
        ),
        ("openai/gpt-4o", {"price_in": "1"}, "give both price_in and price_out (USD per million tokens)"),
        ("mock/m", {"skill.a": "2"}, "skill.a must be between 0 and 1, got 2.0"),
    ],
)
def test_an_error_of_the_options_together_names_the_flag_alone_without_pydantics_prefix(
    flag: str, model: str, args: dict[str, str], message: str
) -> None:
    # before: "--model-arg model-arg: Value error, give api_key_header or api_key_query, not both ..."
    with pytest.raises(ConfigError) as caught:
        create_provider(model, args, ProviderContext(), flag=flag)
    assert str(caught.value).startswith(f"{flag}: {message} (provider {model.partition('/')[0]}; options: ")


def test_an_options_own_error_is_named_by_flag_and_option_without_pydantics_prefix() -> None:
    with pytest.raises(ConfigError) as caught:
        create_provider("openai-compatible/j", {"base_url": "http://127.0.0.1:9/v1", "api_key_query": "co&de"},
                        ProviderContext(), flag="--judge-arg")  # fmt: skip
    assert str(caught.value).startswith(
        "--judge-arg api_key_query: must be a query parameter name (letters, digits and - _ .) (provider "
    )


def test_without_credentials_keeps_the_rest_of_the_url_and_joins_what_is_kept_with_ampersands() -> None:
    url = "http://bob:pw@127.0.0.1:9/v1?api-version=1;key=x;b=2#sig=y&c=3"
    assert without_credentials(url) == "http://127.0.0.1:9/v1?api-version=1&b=2#c=3"
    assert without_credentials("http://127.0.0.1:9/v1?api-version=1") == "http://127.0.0.1:9/v1?api-version=1"


def test_a_key_variable_holding_only_blanks_is_named_as_blank(monkeypatch: pytest.MonkeyPatch) -> None:
    # walk2-s27: "that variable is not set" of a variable that is set, to blanks
    monkeypatch.setenv("BLANK_KEY", "   ")
    options = {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "BLANK_KEY"}
    with pytest.raises(ConfigError) as caught:
        create_provider("openai-compatible/m", options, ProviderContext(settings=Settings()))
    assert (
        str(caught.value) == "openai-compatible/m: api_key_env=BLANK_KEY but that variable holds no key (it is blank)"
    )
