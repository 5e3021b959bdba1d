"""A TLS handshake that no retry can mend stops the run at once, saying why, on every wire.

The server is the fake LLM server behind a certificate made here by the openssl command; the client trusts
certifi's bundle, or only the file ``SSL_CERT_FILE`` names.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_llm_server import FakeLLMServer

from eval_harness.config import Settings
from eval_harness.errors import ServerUntrustedError
from eval_harness.providers.base import ProviderContext, create_provider
from eval_harness.providers.gateway import Gateway, RetryPolicy
from eval_harness.types import ChatMessage, GenerateConfig, GenerateRequest, Sample

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command for a certificate")

REPO = Path(__file__).resolve().parent.parent
WIRES = ["pooled", "httpx", "httpx-pooled"]


def certificate(directory: Path, name: str = "127.0.0.1", alt: str = "IP:127.0.0.1") -> Path:
    """A self-signed certificate for ``name`` and its key, in one PEM file."""
    pem = directory / f"{name}.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={name}",
         "-addext", f"subjectAltName={alt}", "-keyout", str(pem), "-out", str(pem)],
        check=True, capture_output=True,
    )  # fmt: skip
    return pem


def serving(pem: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pem)
    return context


@pytest.fixture(scope="module")
def own_certificate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def https_server(own_certificate: Path) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(ssl_context=serving(own_certificate)) as server:
        yield server


def request() -> GenerateRequest:
    sample = Sample(id="s", input="What is 2 + 2?", target="4")
    messages = [ChatMessage(role="user", content="What is 2 + 2?")]
    return GenerateRequest(messages=messages, config=GenerateConfig(), sample=sample, epoch=0, seed=0)


def generate(base_url: str, wire: str) -> str:
    """One generation through the gateway (5 retries allowed); the completion's text."""

    async def once() -> str:
        context = ProviderContext(settings=Settings(), concurrency=1)
        provider = create_provider("openai-compatible/local", {"base_url": base_url, "http_transport": wire}, context)
        gateway = Gateway(provider, RetryPolicy(max_retries=5, initial_wait_s=1.0))
        try:
            outcome = await gateway.generate(request())
        finally:
            await gateway.aclose()
        assert outcome.completion is not None, outcome.error
        return outcome.completion.text

    return asyncio.run(once())


@pytest.mark.parametrize("wire", WIRES)
def test_an_untrusted_certificate_stops_at_once_naming_ssl_cert_file(
    https_server: FakeLLMServer, wire: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with pytest.raises(ServerUntrustedError) as refused:
        generate(https_server.base_url, wire)
    assert str(refused.value) == (
        f"openai-compatible/local: TLS: the certificate of 127.0.0.1:{https_server.port} is not trusted "
        "(self-signed certificate); if the server is yours, name the CA bundle that signed it in SSL_CERT_FILE"
    )
    assert https_server.requests == []  # and not retried: 5 retries would have waited 30 s and more


@pytest.mark.parametrize("wire", WIRES)
def test_the_certificate_ssl_cert_file_names_is_trusted(
    https_server: FakeLLMServer, own_certificate: Path, wire: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(own_certificate))
    assert generate(https_server.base_url, wire) == "ok"  # the fake server's answer to a prompt it has none for


@pytest.mark.parametrize("wire", WIRES)
def test_a_certificate_for_another_host_is_refused_without_the_ca_hint(
    tmp_path: Path, wire: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = certificate(tmp_path, "example.test", "DNS:example.test")
    monkeypatch.setenv("SSL_CERT_FILE", str(other))  # trusted, but not for 127.0.0.1
    with FakeLLMServer(ssl_context=serving(other)) as server, pytest.raises(ServerUntrustedError) as refused:
        generate(server.base_url, wire)
    message = str(refused.value)
    assert f"TLS: the certificate of 127.0.0.1:{server.port} is not trusted (" in message
    assert "127.0.0.1" in message.split("(", 1)[1] and "SSL_CERT_FILE" not in message  # a name problem, not a CA's


@pytest.mark.parametrize("wire", WIRES)
def test_https_to_a_plain_http_server_asks_whether_the_base_url_is_http(wire: str) -> None:
    with FakeLLMServer() as server, pytest.raises(ServerUntrustedError) as refused:
        generate(server.base_url.replace("http://", "https://"), wire)
    assert str(refused.value).endswith(
        f"TLS: 127.0.0.1:{server.port} does not answer in TLS (WRONG_VERSION_NUMBER): is the base URL http://, "
        "not https://?"
    )


def test_a_run_against_an_untrusted_server_stops_with_one_line_and_records_nothing(
    https_server: FakeLLMServer, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
    args = ["run", "--task", "capability_profile", "--model", "openai-compatible/local", "--model-arg",
            f"base_url={https_server.base_url}", "--output-dir", str(tmp_path), "--run-id", "r", "-q"]  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "eval_harness", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "is not trusted (self-signed certificate)" in lines[0], lines
    assert (tmp_path / "r" / "samples.jsonl").read_text() == ""
    assert json.loads((tmp_path / "r" / "manifest.json").read_text())["status"] == "failed"
    assert https_server.requests == []
