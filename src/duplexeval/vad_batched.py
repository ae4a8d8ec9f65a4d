"""Silero VAD segments of many files at once, bit-identical to `vad.SileroVad`, with the scorer settings (threshold
0.5, 250/100 ms, no pad): the engine under the unified scorer's interruption outputs and the backchannel rules.

Speed, without changing a single segment:

- Batching. The model is a recurrent net stepped once per 512-sample frame, and one file at a time
  spends most of its time in per-call overhead. We step up to 64 files together through the model's
  batch axis (each row keeps its own state); the probabilities are bit-identical to
  `SileroVad.probs` (tested). Batches run in threads (onnxruntime releases the GIL).
- Stopping early. A caller may need only the segments that start at or before a limit L (the interruption
  outcome: at or before R). Silero's probabilities are causal, and with no padding and no maximum speech
  length its segmentation finalises a segment when the silence after it reaches the minimum: later audio
  can only add new segments. So once the prefix scanned reaches more than the minimum speech length past L
  and no segment that starts at or before L is still open, those segments equal the whole file's (tested
  against full scans). With other settings the whole file is always scanned.
- Leading digital silence. A batch row's result depends only on its own input and state, so the first k
  frames of a file that starts with k frames of exact zeros (every sample's bits zero) have the values of
  a fresh model fed k frames of zeros. That trajectory (probabilities and states) is computed once per
  process and shared; such a file joins the batch at frame k with the shared state (tested: probabilities
  bit-identical to `SileroVad.probs`). Outputs written by systems that emit exact zeros while silent
  (cascaded pipelines, padded captures) start this way; outputs with a noise floor gain nothing.
- The sequence model. When the `silero-vad` wheel's `silero_vad_16k_sequence.onnx` is installed (checked
  by SHA-256, `vad.load_sequence_vad`), each file runs through it alone, many frames per call, in chunks that
  end where the early-stop check looks; the threads take files one at a time from a shared queue, so both
  cores stay busy to the end. Same probabilities as the per-frame model (tested), so the same segments; without
  the file, the batched per-frame path above runs.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from duplexeval.vad import SCORER_SETTINGS, load_sequence_vad, load_vad, timestamps_from_probs

Segments = list[tuple[int, int]]
Segmenter = Callable[[Sequence[Path]], list[Segments]]

BATCH_FILES = 64  # per-call overhead stops shrinking around here (measured: benchmarks/README.md)
WINDOW = 512
CONTEXT = 64
CHECK_EVERY = 16  # frames (0.5 s) between checks whether a file's needed segments are final
_SCALE = np.float32(1.0 / 32768.0)


def _frames(audios: Sequence[np.ndarray]) -> tuple[np.ndarray, list[int]]:
    """(B, F, 512) zero-padded frames (int16 when every input is int16, else float32) and each file's frame count."""
    n_frames = [-(-a.size // WINDOW) for a in audios]
    F = max(n_frames, default=0)
    pcm = all(a.dtype == np.int16 for a in audios)
    frames = np.zeros((len(audios), F * WINDOW), dtype=np.int16 if pcm else np.float32)
    for j, a in enumerate(audios):
        frames[j, : a.size] = a
    return frames.reshape(len(audios), F, WINDOW), n_frames


SKIP_LEADING_SILENCE = True  # benchmarks switch it off to measure what it saves
USE_SEQUENCE_MODEL = True  # tests and benchmarks switch it off to run the per-frame fallback
ZERO_CHECKPOINT = 16  # frames between the saved states of the sequence model's zero trajectory


def leading_silent_frames(frames_row: np.ndarray, n_frames: int) -> int:
    """How many leading 512-sample frames of one file are exact digital silence (all bits zero: -0.0 is not)."""
    flat = frames_row[:n_frames].reshape(-1)
    bits = flat.view(np.uint16 if flat.dtype == np.int16 else np.uint32)
    nz = bits != 0
    return n_frames if not nz.any() else int(np.argmax(nz)) // WINDOW


class _ZeroTrajectory:
    """The model fed only zeros from a fresh start: `probs[k]` is frame k's probability and `states[k]` the
    state before frame k. Grown on demand, shared by every file that starts with digital silence."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.vad: Any = None
        self.probs = np.zeros(0, dtype=np.float32)
        self.states = np.zeros((1, 2, 1, 128), dtype=np.float32)

    def upto(self, vad: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(probs[:k], states[:k+1]) for this model."""
        with self.lock:
            if self.vad is not vad:
                self.vad = vad
                self.probs = np.zeros(0, dtype=np.float32)
                self.states = np.zeros((1, 2, 1, 128), dtype=np.float32)
            have = self.probs.size
            if k > have:
                x = np.zeros((1, CONTEXT + WINDOW), dtype=np.float32)
                state = self.states[-1]
                probs = np.empty(k - have, dtype=np.float32)
                states = np.empty((k - have, 2, 1, 128), dtype=np.float32)
                for n in range(k - have):
                    prob, state = vad.step(x, state)
                    probs[n] = prob[0, 0]
                    states[n] = state
                self.probs = np.concatenate([self.probs, probs])
                self.states = np.concatenate([self.states, states])
            return self.probs[:k], self.states[: k + 1]


_ZEROS = _ZeroTrajectory()


class _Stepper:
    """Steps a changing set of rows of a frame batch through the model, one frame at a time.

    A file that starts with z frames of digital silence gets the shared zero trajectory for them and joins
    at frame z (`pending`); a file made only of silence never needs a step (`complete`).
    """

    def __init__(self, vad: Any, frames: np.ndarray, n_frames: Sequence[int] | None = None) -> None:
        self.vad, self.frames = vad, frames
        B, F = frames.shape[:2]
        counts = [F] * B if n_frames is None else list(n_frames)
        starts = [leading_silent_frames(frames[j], counts[j]) if SKIP_LEADING_SILENCE else 0 for j in range(B)]
        self.probs = np.zeros((B, F), dtype=np.float32)
        self.zero_states = np.zeros((1, 2, 1, 128), dtype=np.float32)
        top = max(starts, default=0)
        if top:
            zp, self.zero_states = _ZEROS.upto(vad, top)
            for j, z in enumerate(starts):
                self.probs[j, :z] = zp[:z]
        self.complete = [j for j in range(B) if starts[j] >= counts[j]]  # nothing to step (silence or empty)
        self.pending = sorted((starts[j], j) for j in range(B) if 0 < starts[j] < counts[j])
        self.rows = [j for j in range(B) if starts[j] == 0 and counts[j] > 0]
        self.x = np.zeros((len(self.rows), CONTEXT + WINDOW), dtype=np.float32)
        self.state = np.zeros((2, len(self.rows), 128), dtype=np.float32)
        self.i = 0  # frames stepped so far
        self._all = list(range(B))

    @property
    def active(self) -> bool:
        """Rows left to step now or later."""
        return bool(self.rows or self.pending)

    def _join(self) -> None:
        if not self.rows and self.pending:
            self.i = max(self.i, self.pending[0][0])  # nothing to step until the next file leaves its silence
        new = []
        while self.pending and self.pending[0][0] <= self.i:
            new.append(self.pending.pop(0))
        if not new:
            return
        self.rows += [j for _, j in new]
        self.x = np.concatenate([self.x, np.zeros((len(new), CONTEXT + WINDOW), dtype=np.float32)])
        joined = np.concatenate([self.zero_states[z] for z, _ in new], axis=1)  # (2, len(new), 128)
        self.state = np.ascontiguousarray(np.concatenate([self.state, joined], axis=1))

    def step(self) -> None:
        self._join()
        x, i = self.x, self.i
        x[:, :CONTEXT] = x[:, WINDOW:]  # previous frame's last 64 samples (zeros before the first frame)
        block = self.frames[:, i] if self.rows == self._all else self.frames[self.rows, i]
        if block.dtype == np.int16:  # x / 32768: what soundfile returns as float32 for PCM16
            np.multiply(block, _SCALE, out=x[:, CONTEXT:], casting="unsafe")
        else:
            x[:, CONTEXT:] = block
        prob, self.state = self.vad.step(x, self.state)
        self.probs[self.rows, i] = prob[:, 0]
        self.i += 1

    def drop(self, done: set[int]) -> None:
        """Stop stepping the rows in `done` (file indices)."""
        keep = [k for k, r in enumerate(self.rows) if r not in done]
        self.rows = [self.rows[k] for k in keep]
        self.x = np.ascontiguousarray(self.x[keep])
        self.state = np.ascontiguousarray(self.state[:, keep])


def batch_probs(vad: Any, audios: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per-frame speech probabilities of several 16 kHz signals, stepped together; equal to `vad.probs(a)` each."""
    frames, n_frames = _frames(audios)
    st = _Stepper(vad, frames, n_frames)
    while st.active and st.i < frames.shape[1]:
        st.step()
    return [st.probs[j, : n_frames[j]] for j in range(len(audios))]


def early_stop_ok(settings: Any) -> bool:
    """The settings under which a scan may stop early (no padding, no maximum speech length)."""
    return settings.speech_pad_ms == 0 and math.isinf(settings.max_speech_s)


def settled(probs_prefix: np.ndarray, limit: int, settings: Any) -> Segments | None:
    """The segments starting at or before `limit` if a prefix of a file's probabilities already fixes them, else None.

    They are fixed when the prefix runs more than the minimum speech length past `limit` (so any segment
    starting by then that is still open shows up, force-closed at the prefix end) and no such segment is
    open. Only valid for settings with no padding and no maximum speech length (`early_stop_ok`).
    """

    end = len(probs_prefix) * WINDOW
    if end - limit <= 16000 * settings.min_speech_ms / 1000:
        return None
    segs = timestamps_from_probs(probs_prefix, end, settings)
    if any(s <= limit and e == end for s, e in segs):
        return None
    return [(int(s), int(e)) for s, e in segs if s <= limit]


def batch_segments(vad: Any, audios: Sequence[np.ndarray], limits: Sequence[int | None],
                   settings: Any) -> list[Segments]:
    """Segments of each signal; with a limit L (a sample index), only the segments starting at or before L.

    A file with a limit stops being stepped once those segments are final (see the module docstring).
    """

    frames, n_frames = _frames(audios)
    early = early_stop_ok(settings)
    min_speech = 16000 * settings.min_speech_ms / 1000
    first_check = [
        None if (lim is None or not early) else int((lim + min_speech) // WINDOW) + 1 for lim in limits
    ]
    out: list[Segments | None] = [None] * len(audios)
    st = _Stepper(vad, frames, n_frames)
    for j in st.complete:  # empty, or digital silence to the end: the shared trajectory is the whole file
        segs = timestamps_from_probs(st.probs[j, : n_frames[j]], audios[j].size, settings)
        out[j] = [(int(s), int(e)) for s, e in segs if limits[j] is None or s <= limits[j]]  # type: ignore[operator]
    while st.active:
        st.step()
        i = st.i
        done: set[int] = set()
        for j in st.rows:
            lim, fc = limits[j], first_check[j]
            if i == n_frames[j]:  # the whole file
                segs = timestamps_from_probs(st.probs[j, :i], audios[j].size, settings)
                out[j] = [(int(s), int(e)) for s, e in segs if lim is None or s <= lim]
                done.add(j)
            elif fc is not None and i >= fc and (i - fc) % CHECK_EVERY == 0:
                fixed = settled(st.probs[j, :i], lim, settings)  # type: ignore[arg-type]
                if fixed is not None:
                    out[j] = fixed
                    done.add(j)
        if done:
            st.drop(done)
    return [o if o is not None else [] for o in out]


def _sequence_model() -> Any:
    """The sequence model when it is installed and wanted, else None (the per-frame path runs)."""
    if not USE_SEQUENCE_MODEL:
        return None

    return load_sequence_vad()


class _SequenceZeros:
    """The sequence model fed only zeros from a fresh start: `probs[k]` is frame k's probability and
    `states[m]` the state before frame m * ZERO_CHECKPOINT. Grown on demand, shared by every file."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.model: Any = None
        self.probs = np.zeros(0, dtype=np.float32)
        self.states = [np.zeros((2, 1, 128), dtype=np.float32)]

    def upto(self, model: Any, k: int) -> tuple[np.ndarray, list[np.ndarray]]:
        """(probs of at least k frames, the checkpoint states) for this model."""
        with self.lock:
            if self.model is not model:
                self.model = model
                self.probs = np.zeros(0, dtype=np.float32)
                self.states = [np.zeros((2, 1, 128), dtype=np.float32)]
            if self.probs.size < k:
                x = np.zeros((ZERO_CHECKPOINT, CONTEXT + WINDOW), dtype=np.float32)
                chunks = [self.probs]
                have = self.probs.size
                while have < k:
                    probs, state = model.run(x, self.states[-1])
                    chunks.append(probs)
                    self.states.append(state)
                    have += ZERO_CHECKPOINT
                self.probs = np.concatenate(chunks)
            return self.probs, self.states


_SEQ_ZEROS = _SequenceZeros()


def _model_rows(frames: np.ndarray, lo: int) -> np.ndarray:
    """The model inputs [F - lo, 576] for frames lo.. of one file: each frame's 512 samples after the previous
    frame's last 64 (zeros before the first frame)."""
    x = np.empty((frames.shape[0] - lo, CONTEXT + WINDOW), dtype=np.float32)
    x[:, CONTEXT:] = frames[lo:]
    x[0, :CONTEXT] = frames[lo - 1, -CONTEXT:] if lo > 0 else 0.0
    x[1:, :CONTEXT] = frames[lo:-1, -CONTEXT:]
    return x


def _sequence_start(model: Any, audio: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """(float32 frames [F, 512], probs [F] filled for the leading digital silence, first frame to run, state
    before it). A file that starts with k silent frames resumes from the zero trajectory's last checkpoint at
    or before k (the frames in between are zeros too, so they get the same values again)."""
    n = -(-audio.size // WINDOW)
    flat = np.zeros(n * WINDOW, dtype=np.int16 if audio.dtype == np.int16 else np.float32)
    flat[: audio.size] = audio
    raw = flat.reshape(n, WINDOW)
    if raw.dtype == np.int16:  # x / 32768: what soundfile returns as float32 for PCM16
        frames = np.multiply(raw, _SCALE, dtype=np.float32)
    else:
        frames = raw
    probs = np.empty(n, dtype=np.float32)
    k = leading_silent_frames(raw, n) if SKIP_LEADING_SILENCE and n else 0
    if k == 0:
        return frames, probs, 0, np.zeros((2, 1, 128), dtype=np.float32)
    zp, states = _SEQ_ZEROS.upto(model, k)
    if k >= n:
        probs[:] = zp[:n]
        return frames, probs, n, states[0]
    lo = (k // ZERO_CHECKPOINT) * ZERO_CHECKPOINT
    probs[:lo] = zp[:lo]
    return frames, probs, lo, states[k // ZERO_CHECKPOINT]


def sequence_probs(model: Any, audio: np.ndarray) -> np.ndarray:
    """Per-frame speech probabilities of one 16 kHz signal by the sequence model (equal to `SileroVad.probs`)."""
    frames, probs, lo, state = _sequence_start(model, audio)
    if lo < frames.shape[0]:
        probs[lo:] = model.run(_model_rows(frames, lo), state)[0]
    return probs


def sequence_segments(model: Any, audio: np.ndarray, limit: int | None, settings: Any) -> Segments:
    """`batch_segments` of one signal by the sequence model: with a limit, the scan stops at the same checks
    (every CHECK_EVERY frames from the first useful one) once the segments starting by then are final."""

    n = -(-audio.size // WINDOW)
    if limit is None or not early_stop_ok(settings) or n == 0:
        segs = timestamps_from_probs(sequence_probs(model, audio), audio.size, settings)
        return [(int(s), int(e)) for s, e in segs if limit is None or s <= limit]
    frames, probs, pos, state = _sequence_start(model, audio)
    first_check = int((limit + 16000 * settings.min_speech_ms / 1000) // WINDOW) + 1
    rows = _model_rows(frames, pos) if pos < n else frames[:0]
    base = pos
    while True:
        # the next check point after `pos`: first_check + m * CHECK_EVERY, or the end of the file
        m = max(0, -(-(pos + 1 - first_check) // CHECK_EVERY))
        stop = min(n, first_check + m * CHECK_EVERY)
        if stop > pos:
            probs[pos:stop], state = model.run(rows[pos - base : stop - base], state)
        pos = stop
        if pos == n:
            segs = timestamps_from_probs(probs, audio.size, settings)
            return [(int(s), int(e)) for s, e in segs if s <= limit]
        fixed = settled(probs[:pos], limit, settings)
        if fixed is not None:
            return fixed


def _threaded(fn: Callable[[Any], Any], items: Sequence[Any], jobs: int) -> list[Any]:
    """`fn` of each item in `jobs` threads that take the next item when free (onnxruntime releases the GIL)."""
    if jobs == 1 or len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(fn, items))


class AudioSource(Protocol):
    """Audio the engine reads only when a worker gets to it, and drops after (`fdb.sample.SampleAudio`: a sample's
    file, hash-checked when read)."""

    def read_16k(self) -> np.ndarray:
        """Mono 16 kHz samples as stored: int16 for PCM16, else float32 (`audio.read_audio_16k_stored`)."""
        ...


AudioIn = Path | bytes | AudioSource  # a file, a WAV file's bytes, or a source that reads itself


def _read(item: AudioIn) -> np.ndarray:
    """A 16 kHz mono input's samples through the one audio reader: PCM16 as int16 (exact, half the memory), any other
    encoding as float32."""
    from duplexeval.audio import read_audio_16k_stored  # lazy: importing the engine loads no sound-file library

    if isinstance(item, bytes):
        return read_audio_16k_stored("<memory>", item)
    if isinstance(item, (str, os.PathLike)):
        return read_audio_16k_stored(item)
    return item.read_16k()


def _segment_group(group: Sequence[tuple[AudioIn, int | None]]) -> list[Segments]:
    audios = [_read(p) for p, _ in group]
    return batch_segments(load_vad(), audios, [lim for _, lim in group], SCORER_SETTINGS)


def default_jobs() -> int:
    """Threads: DUPLEXEVAL_JOBS if set, else the CPUs this process may use."""
    env = os.environ.get("DUPLEXEVAL_JOBS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _even_groups(n_items: int, jobs: int, batch: int) -> list[range]:
    """Index ranges of at most `batch` items, a multiple of `jobs` of them, so that the threads finish together."""
    n_groups = jobs * -(-n_items // (jobs * batch)) if n_items else 0
    size = max(1, -(-n_items // n_groups)) if n_groups else 1
    return [range(i, min(n_items, i + size)) for i in range(0, n_items, size)]


def segment_audios(
    audios: Sequence[np.ndarray | Callable[[], np.ndarray]], settings: Any, jobs: int | None = None,
    batch: int = BATCH_FILES, sizes: Sequence[int] | None = None,
) -> list[Segments]:
    """Whole-file VAD segments of several signals (any settings), batched and threaded; equal to
    `SileroVad.segments(a, settings)` of each signal (the samples are taken as 16 kHz, whatever they are).

    A signal may be given as a function that reads it: it is called when a thread gets to it (a batch's signals
    together on the per-frame path) and dropped after, so that many long files are never all in memory; `sizes`
    (samples per signal) then orders the work. Signals are dealt to the batches longest first, round-robin, so the
    threads get equal work and each batch's rows finish in order. Used by official rules that segment whole files
    (30 ms padding).
    """

    jobs = default_jobs() if jobs is None else max(1, jobs)
    n = [a.size if isinstance(a, np.ndarray) else (sizes[k] if sizes is not None else 0) for k, a in enumerate(audios)]
    order = sorted(range(len(audios)), key=lambda k: (-n[k], k))

    def signal(k: int) -> np.ndarray:
        a = audios[k]
        return a if isinstance(a, np.ndarray) else a()

    model = _sequence_model()
    if model is not None:  # longest first, one file at a time per thread
        segs_in_order = _threaded(lambda k: sequence_segments(model, signal(k), None, settings), order, jobs)
        out_seq: list[Segments] = [[] for _ in audios]
        for k, sg in zip(order, segs_in_order):
            out_seq[k] = sg
        return out_seq
    n_groups = len(_even_groups(len(order), jobs, batch))
    groups = [order[g::n_groups] for g in range(n_groups)]  # dealt round-robin: every thread gets long and short ones

    def run(group: list[int]) -> list[Segments]:
        return batch_segments(load_vad(), [signal(k) for k in group], [None] * len(group), settings)

    if jobs == 1 or len(groups) <= 1:
        results = [run(g) for g in groups]
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(run, groups))
    out: list[Segments] = [[] for _ in audios]
    for group, segs in zip(groups, results):
        for k, sg in zip(group, segs):
            out[k] = sg
    return out


def probs_files(paths: Sequence[AudioIn], jobs: int | None = None, batch: int = BATCH_FILES) -> list[np.ndarray]:
    """Whole-file speech probabilities of each 16 kHz mono file (`segment_files`' inputs; batched and threaded; equal to
    `SileroVad.probs` of each file). One scan serves any number of segmentation settings."""

    jobs = default_jobs() if jobs is None else max(1, jobs)
    model = _sequence_model()
    if model is not None:
        return _threaded(lambda p: sequence_probs(model, _read(p)), list(paths), jobs)
    groups = [[paths[i] for i in r] for r in _even_groups(len(paths), jobs, batch)]

    def run(group: list[AudioIn]) -> list[np.ndarray]:
        return [p.copy() for p in batch_probs(load_vad(), [_read(p) for p in group])]

    if jobs == 1 or len(groups) <= 1:
        results = [run(g) for g in groups]
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(run, groups))
    return [p for group in results for p in group]


def segment_files(
    paths: Sequence[AudioIn],
    jobs: int | None = None,
    batch: int = BATCH_FILES,
    limits: Sequence[int | None] | None = None,
) -> list[Segments]:
    """VAD segments (16 kHz sample indices, end exclusive) of each file (a path, a WAV file's bytes or a source that
    reads itself), in order; each is read when a thread gets to it (a batch's files together on the per-frame path).

    With `limits`, file k only gets its segments that start at or before sample `limits[k]`.
    """
    jobs = default_jobs() if jobs is None else max(1, jobs)
    items = list(zip(paths, limits if limits is not None else [None] * len(paths)))
    model = _sequence_model()
    if model is not None:
        settings = SCORER_SETTINGS
        return _threaded(lambda item: sequence_segments(model, _read(item[0]), item[1], settings), items, jobs)
    groups = [[items[i] for i in r] for r in _even_groups(len(items), jobs, batch)]
    if jobs == 1 or len(groups) <= 1:
        results = [_segment_group(g) for g in groups]
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(_segment_group, groups))
    return [segs for group in results for segs in group]
