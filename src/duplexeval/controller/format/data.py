"""Controller evaluation data: one clip (conversation or probe window) at 80 ms frames, and its folder format.

A clip has per-frame arrays (the controller's outputs, ground truth, validity masks, the user-mic level) and
events in seconds (turn probes, pause probes, yield / backchannel onsets, user pauses, LISTEN and floor time).

On disk a data set is a folder::

    DATA/
      dataset.json          {"kind": "duplexeval.controller.data", "schema_version": 1, "frame_s": 0.08, ...}
      clips.jsonl           one JSON object per clip: id, group, n_frames, events, times (see ClipMeta)
      frames/<id>.npz       the clip's per-frame arrays (numpy .npz, names in FRAME_ARRAYS), all length n_frames

Frame i covers audio [i*0.08, (i+1)*0.08) s and is *stamped at its end*, ``(i+1)*0.08`` s: the earliest moment
its output can exist. Every event time is compared in integer microseconds (``to_us``), so window edges are exact.
Clips are loaded lazily (``ControllerData.load_frames``), so 10,000 five-minute clips stream without holding
all arrays in memory. Every problem in a file raises a one-line ``InputError`` naming the file, clip and field.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np

from duplexeval.errors import InputError
from duplexeval.jsonio import (
    atomic_write_bytes,
    atomic_write_text,
    dumps,
    dumps_line,
    json_lines,
    make_output_dir,
    read_json,
    read_text,
)
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas import check_number, validate
from duplexeval.schemas.base import MAX_TIME_S
from duplexeval.schemas.controller import ClipLine, is_clip_id
from duplexeval.units import FRAME_S, FRAME_US, US_PER_S, to_us

KIND = "duplexeval.controller.data"
SCHEMA_VERSION = 1
STATES: tuple[str, ...] = ("LISTEN", "HOLD", "SPEAK", "BACKCHANNEL")
HEADS: tuple[str, ...] = ("endpoint", "yield", "backchannel")
TASKS: tuple[str, ...] = ("state", "endpoint", "yield", "backchannel")
NO_LABEL = -1  # truth_state value for an unlabelled frame

# name -> (dtype kind, shape suffix). Every array is optional; present arrays must have n_frames rows.
FRAME_ARRAYS: dict[str, tuple[str, tuple[int, ...]]] = {
    "state_probs": ("f", (4,)),  # controller state probabilities, columns in STATES order
    "endpoint": ("f", ()),  # endpoint score (computed with forced LISTEN)
    "yield": ("f", ()),  # yield score (teacher-forced previous state)
    "backchannel": ("f", ()),  # backchannel score (computed with forced LISTEN)
    "truth_state": ("i", ()),  # ground-truth state index into STATES, NO_LABEL (-1) = unlabelled
    "valid_state": ("b", ()),  # per-task validity masks; a missing mask means every frame is valid
    "valid_endpoint": ("b", ()),
    "valid_yield": ("b", ()),
    "valid_backchannel": ("b", ()),
    "label_endpoint": ("b", ()),  # per-head frame labels for ROC-AUC / AP
    "label_yield": ("b", ()),
    "label_backchannel": ("b", ()),
    "level_db": ("f", ()),  # user-microphone frame level in dB (RMS dBFS), for the voice-activity gate
}



def frame_end_us(i: int | np.ndarray) -> int | np.ndarray:
    """Stamp of frame i in microseconds: the end of its audio, (i+1)*80 ms."""
    return (np.asarray(i) + 1) * FRAME_US if isinstance(i, np.ndarray) else (int(i) + 1) * FRAME_US


def frame_end_s(i: int) -> float:
    """Stamp of frame i in seconds: (i+1)*0.08."""
    return (int(i) + 1) * FRAME_US / US_PER_S


def frames_in_window(start_s: float, end_s: float, n_frames: int) -> tuple[int, int]:
    """Half-open frame range [i0, i1) of frames whose audio lies inside [start_s, end_s) (clipped to the clip)."""
    a, b = to_us(start_s), to_us(end_s)
    i0 = max(0, -(-a // FRAME_US))  # ceil: first frame starting at or after start
    i1 = min(n_frames, b // FRAME_US)  # frames ending at or before end
    return i0, max(i0, i1)


@dataclass(frozen=True)
class TurnProbe:
    """A user turn end (a shift): endpoint replay runs over [window_start_s, window_end_s); None = clip bounds."""

    turn_end_s: float
    window_start_s: float = 0.0
    window_end_s: float | None = None


@dataclass(frozen=True)
class PauseProbe:
    """A pause [pause_start_s, pause_end_s) inside one speaker's turn; an endpoint in it is a false cut."""

    pause_start_s: float
    pause_end_s: float
    window_start_s: float = 0.0
    window_end_s: float | None = None


@dataclass(frozen=True)
class UserPause:
    """An internal user pause [start_s, end_s) after a speech run of run_s seconds (dense scan / filler proxy)."""

    start_s: float
    end_s: float
    run_s: float


@dataclass
class ClipFrames:
    """Per-frame arrays of one clip; any may be None (absent). Lengths all equal n_frames."""

    n_frames: int
    state_probs: np.ndarray | None = None
    endpoint: np.ndarray | None = None
    yield_: np.ndarray | None = None
    backchannel: np.ndarray | None = None
    truth_state: np.ndarray | None = None
    valid_state: np.ndarray | None = None
    valid_endpoint: np.ndarray | None = None
    valid_yield: np.ndarray | None = None
    valid_backchannel: np.ndarray | None = None
    label_endpoint: np.ndarray | None = None
    label_yield: np.ndarray | None = None
    label_backchannel: np.ndarray | None = None
    level_db: np.ndarray | None = None

    def get(self, name: str) -> np.ndarray | None:
        """Array by its file name (``yield`` maps to the attribute ``yield_``)."""
        value = getattr(self, "yield_" if name == "yield" else name)
        assert value is None or isinstance(value, np.ndarray), name
        return value

    def score(self, head: str) -> np.ndarray | None:
        """The score array of a head in HEADS."""
        return self.get(head)

    def valid(self, task: str) -> np.ndarray:
        """Validity mask of a task in TASKS; all True when the file has none."""
        m = self.get(f"valid_{task}")
        return np.ones(self.n_frames, dtype=bool) if m is None else m

    def to_npz_dict(self) -> dict[str, np.ndarray]:
        """The present arrays under their file names, with their canonical dtypes."""
        out: dict[str, np.ndarray] = {}
        for name, (kind, _shape) in FRAME_ARRAYS.items():
            arr = self.get(name)
            if arr is None:
                continue
            dtype = {"f": np.float32, "i": np.int8, "b": np.bool_}[kind]
            out[name] = np.asarray(arr).astype(dtype, copy=False)
        return out


@dataclass
class ClipMeta:
    """One clips.jsonl line: identity, grouping for the bootstrap, events and reference times.

    - ``group``: conversation id; the paired bootstrap resamples whole groups (both channel assignments of a
      conversation share one group).
    - ``listen_s``: LISTEN time of the clip (acknowledgment rate denominator).
    - ``floor_s``: user-floor / reference time (pause false endpoints and dense rates per hour). Clips that share
      a ``source`` share one reference time, counted once (FDB: unique source-clip time).
    - ``events_start_s`` / ``events_end_s``: the region where yield/backchannel onsets were labelled and
      firings are counted (None = whole clip), e.g. the first 240 s of a conversation.
    """

    id: str
    n_frames: int
    group: str = ""
    source: str | None = None
    turn_probes: list[TurnProbe] = field(default_factory=list)
    pause_probes: list[PauseProbe] = field(default_factory=list)
    yield_onsets: list[float] = field(default_factory=list)
    backchannel_onsets: list[float] = field(default_factory=list)
    user_pauses: list[UserPause] = field(default_factory=list)
    listen_s: float = 0.0
    floor_s: float = 0.0
    events_start_s: float = 0.0
    events_end_s: float | None = None
    extra: JsonObject = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        """Clip length n_frames * 0.08 s."""
        return self.n_frames * FRAME_US / US_PER_S

    @property
    def group_id(self) -> str:
        """Bootstrap group: ``group`` or, when empty, the clip id."""
        return self.group or self.id

    @property
    def source_id(self) -> str:
        """Reference-time identity: ``source`` or, when absent, the clip id."""
        return self.source if self.source is not None else self.id

    def to_json(self) -> JsonObject:
        """The clips.jsonl object (stable key order)."""
        return {
            "id": self.id,
            "group": self.group,
            "source": self.source,
            "n_frames": self.n_frames,
            "listen_s": self.listen_s,
            "floor_s": self.floor_s,
            "events_start_s": self.events_start_s,
            "events_end_s": self.events_end_s,
            "turn_probes": [[p.turn_end_s, p.window_start_s, p.window_end_s] for p in self.turn_probes],
            "pause_probes": [
                [p.pause_start_s, p.pause_end_s, p.window_start_s, p.window_end_s] for p in self.pause_probes
            ],
            "yield_onsets": list(self.yield_onsets),
            "backchannel_onsets": list(self.backchannel_onsets),
            "user_pauses": [[u.start_s, u.end_s, u.run_s] for u in self.user_pauses],
            "extra": self.extra,
        }


@dataclass
class Clip:
    """A clip with its arrays loaded."""

    meta: ClipMeta
    frames: ClipFrames

    @property
    def id(self) -> str:
        """Clip id."""
        return self.meta.id


@dataclass
class ControllerData:
    """A loaded data folder: clip metadata in file order; frames loaded on demand."""

    root: Path
    clips: list[ClipMeta]
    info: JsonObject

    def load_frames(self, meta: ClipMeta) -> ClipFrames:
        """Read and validate frames/<id>.npz for one clip."""
        return read_frames(self.root / "frames" / f"{meta.id}.npz", meta.n_frames, meta.id)

    def iter_clips(self) -> Iterator[Clip]:
        """Clips with frames, one at a time (bounded memory)."""
        for meta in self.clips:
            yield Clip(meta, self.load_frames(meta))

    def reference_s(self) -> float:
        """Total reference time: floor_s summed once per unique source."""
        seen: dict[str, float] = {}
        for c in self.clips:
            seen.setdefault(c.source_id, c.floor_s)
        return float(sum(seen.values()))


# ---------------------------------------------------------------- validation helpers


def _err(where: str, msg: str) -> InputError:
    return InputError(f"{where}: {msg}")


@overload
def _num(v: Any, where: str, name: str, *, allow_none: Literal[False] = False, nonneg: bool = True) -> float: ...
@overload
def _num(v: Any, where: str, name: str, *, allow_none: bool, nonneg: bool = True) -> float | None: ...
def _num(v: Any, where: str, name: str, *, allow_none: bool = False, nonneg: bool = True) -> float | None:
    """A finite time in [-MAX_TIME_S, MAX_TIME_S] (>= 0 unless `nonneg` is off) as a float; None only if allowed."""
    if v is None and allow_none:
        return None
    check_number(v, where, name, -MAX_TIME_S, MAX_TIME_S)
    if nonneg and float(v) < 0:
        raise _err(where, f"{name} must be >= 0, got {v!r}")
    return float(v)


def _list(v: Any, where: str, name: str) -> list[Any]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise _err(where, f"{name} must be a list, got {type(v).__name__}")
    return v


def validate_clip_id(clip_id: Any, where: str) -> str:
    """A clip id is used as a file name: letters, digits, '.', '_', '-' only (the whole string), no '..'."""
    if not is_clip_id(clip_id):
        raise _err(where, f"clip id {clip_id!r} is not allowed (letters, digits, '.', '_', '-'; no '..')")
    return clip_id


def clip_meta_from_json(obj: Any, where: str) -> ClipMeta:
    """Parse and validate one clips.jsonl object; events must lie inside the clip."""
    validate(obj, ClipLine, where)  # shape: known keys, types, finite in-range numbers, a safe id
    cid = validate_clip_id(obj.get("id"), where)
    where = f"{where}: clip {cid}"
    n = obj.get("n_frames")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise _err(where, f"n_frames must be a non-negative integer, got {n!r}")
    dur = n * FRAME_S
    dur_us = n * FRAME_US

    def t_opt(v: Any, name: str) -> float | None:
        x = _num(v, where, name, allow_none=True)
        if x is not None and to_us(x) > dur_us:
            raise _err(where, f"{name} {x} is after the clip end {dur:.2f} s")
        return x

    def t(v: Any, name: str) -> float:
        x = _num(v, where, name)
        if to_us(x) > dur_us:
            raise _err(where, f"{name} {x} is after the clip end {dur:.2f} s")
        return x

    turn_probes = []
    for k, p in enumerate(_list(obj.get("turn_probes"), where, "turn_probes")):
        name = f"turn_probes[{k}]"
        if isinstance(p, (int, float)) and not isinstance(p, bool):
            p = [p]
        if not isinstance(p, list) or not 1 <= len(p) <= 3:
            raise _err(where, f"{name} must be [turn_end_s, window_start_s?, window_end_s?]")
        te = t(p[0], name)
        ws = t(p[1], name) if len(p) > 1 and p[1] is not None else 0.0
        we = t_opt(p[2], name) if len(p) > 2 else None
        if not to_us(ws) <= to_us(te) <= (to_us(we) if we is not None else dur_us):
            raise _err(where, f"{name}: need window_start <= turn_end <= window_end")
        turn_probes.append(TurnProbe(te, ws, we))
    pause_probes = []
    for k, p in enumerate(_list(obj.get("pause_probes"), where, "pause_probes")):
        name = f"pause_probes[{k}]"
        if not isinstance(p, list) or not 2 <= len(p) <= 4:
            raise _err(where, f"{name} must be [pause_start_s, pause_end_s, window_start_s?, window_end_s?]")
        a, b = t(p[0], name), t(p[1], name)
        ws = t(p[2], name) if len(p) > 2 and p[2] is not None else 0.0
        we = t_opt(p[3], name) if len(p) > 3 else None
        if not to_us(a) < to_us(b):
            raise _err(where, f"{name}: pause_start must be < pause_end")
        if not to_us(ws) <= to_us(a) or (we is not None and to_us(we) < to_us(b)):
            raise _err(where, f"{name}: the pause must lie inside its window")
        pause_probes.append(PauseProbe(a, b, ws, we))
    onsets: dict[str, list[float]] = {}
    for key in ("yield_onsets", "backchannel_onsets"):
        onsets[key] = [t(v, f"{key}[{k}]") for k, v in enumerate(_list(obj.get(key), where, key))]
    user_pauses = []
    for k, p in enumerate(_list(obj.get("user_pauses"), where, "user_pauses")):
        name = f"user_pauses[{k}]"
        if not isinstance(p, list) or len(p) != 3:
            raise _err(where, f"{name} must be [start_s, end_s, run_s]")
        a, b = t(p[0], name), t(p[1], name)
        r = _num(p[2], where, name)
        if not to_us(a) < to_us(b):
            raise _err(where, f"{name}: start must be < end")
        user_pauses.append(UserPause(a, b, r))
    es = t(obj.get("events_start_s", 0.0), "events_start_s")
    ee = t_opt(obj.get("events_end_s"), "events_end_s")
    if ee is not None and to_us(ee) < to_us(es):
        raise _err(where, "events_end_s must be >= events_start_s")
    group = obj.get("group", "")
    if group is None:
        group = ""
    if not isinstance(group, str):
        raise _err(where, f"group must be a string, got {group!r}")
    source = obj.get("source")
    if source is not None and not isinstance(source, str):
        raise _err(where, f"source must be a string or null, got {source!r}")
    extra = obj.get("extra", {})
    if not isinstance(extra, dict):
        raise _err(where, "extra must be an object")
    known = {
        "id", "group", "source", "n_frames", "listen_s", "floor_s", "events_start_s", "events_end_s",
        "turn_probes", "pause_probes", "yield_onsets", "backchannel_onsets", "user_pauses", "extra",
    }  # fmt: skip
    unknown = sorted(set(obj) - known)
    if unknown:
        raise _err(where, f"unknown field(s) {', '.join(unknown)} (put free-form data under 'extra')")
    return ClipMeta(
        id=cid,
        n_frames=n,
        group=group,
        source=source,
        turn_probes=turn_probes,
        pause_probes=pause_probes,
        yield_onsets=onsets["yield_onsets"],
        backchannel_onsets=onsets["backchannel_onsets"],
        user_pauses=user_pauses,
        listen_s=_num(obj.get("listen_s", 0.0), where, "listen_s"),
        floor_s=_num(obj.get("floor_s", 0.0), where, "floor_s"),
        events_start_s=es,
        events_end_s=ee,
        extra=extra,
    )


def validate_frames(arrays: Mapping[str, np.ndarray | None], n_frames: int, where: str) -> ClipFrames:
    """Check names, shapes, dtypes and values of a clip's arrays; return ClipFrames."""
    unknown = sorted(set(arrays) - set(FRAME_ARRAYS))
    if unknown:
        raise _err(where, f"unknown array(s) {', '.join(unknown)} (known: {', '.join(FRAME_ARRAYS)})")
    out = ClipFrames(n_frames=n_frames)
    for name, (kind, suffix) in FRAME_ARRAYS.items():
        if name not in arrays or arrays[name] is None:
            continue
        arr = np.asarray(arrays[name])
        if arr.shape != (n_frames, *suffix):
            raise _err(where, f"array {name} has shape {arr.shape}, expected {(n_frames, *suffix)}")
        if kind == "f":
            if arr.dtype.kind not in "fiu":
                raise _err(where, f"array {name} must be numeric, got {arr.dtype}")
            arr = arr.astype(np.float64)
            if not np.isfinite(arr).all() and name != "level_db":
                raise _err(where, f"array {name} has NaN or infinite values")
            if name == "level_db" and np.isnan(arr).any():
                raise _err(where, "array level_db has NaN values (digital silence may be -inf)")
        elif kind == "i":
            if arr.dtype.kind not in "iu":
                raise _err(where, f"array {name} must be integer, got {arr.dtype}")
            wide = arr.astype(np.int64)
            bad = (wide < NO_LABEL) | (wide >= len(STATES))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise _err(where, f"array {name} frame {i}: value {int(wide[i])} is not -1 or 0..3")
            arr = wide.astype(np.int8)
        else:
            if arr.dtype.kind == "b":
                pass
            elif arr.dtype.kind in "iuf" and np.isin(arr, (0, 1)).all():
                arr = arr.astype(bool)
            else:
                raise _err(where, f"array {name} must be boolean (0/1)")
        setattr(out, "yield_" if name == "yield" else name, arr)
    return out


def read_frames(path: Path, n_frames: int, clip_id: str) -> ClipFrames:
    """Load one frames/<id>.npz and validate it against n_frames."""
    where = f"{path}: clip {clip_id}"
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
    except FileNotFoundError:
        raise _err(str(path), f"clip {clip_id}: frames file not found") from None
    except OSError as exc:
        raise _err(where, f"cannot read: {exc.strerror or exc}") from None
    if not magic.startswith(b"PK"):
        what = "a .npy array" if magic == b"\x93NUMPY" else "empty" if not magic else "not a zip archive"
        raise _err(where, f"not an .npz archive ({what}); write frames with numpy.savez")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise _err(where, f"cannot read npz (truncated or damaged?): {' '.join(str(exc).split())}") from None
    return validate_frames(arrays, n_frames, where)


def load_data(path: str | Path) -> ControllerData:
    """Read DATA/dataset.json and DATA/clips.jsonl (validating every line); frames stay on disk until needed."""
    root = Path(path)
    if not root.is_dir():
        raise InputError(f"{root}: not a controller data folder (expected dataset.json, clips.jsonl, frames/)")
    info = read_json(root / "dataset.json")
    if not isinstance(info, dict) or info.get("kind") != KIND:
        raise InputError(f"{root / 'dataset.json'}: kind must be {KIND!r}")
    if info.get("schema_version") != SCHEMA_VERSION:
        raise InputError(f"{root / 'dataset.json'}: schema_version {info.get('schema_version')!r} is not supported "
                         f"(expected {SCHEMA_VERSION})")
    if info.get("frame_s") != FRAME_S:
        raise InputError(f"{root / 'dataset.json'}: frame_s must be {FRAME_S}, got {info.get('frame_s')!r}")
    clips_path = root / "clips.jsonl"
    clips: list[ClipMeta] = []
    ids: set[str] = set()
    lines = json_lines(read_text(clips_path), clips_path)
    if not lines:
        raise InputError(f"{clips_path}: no clips; nothing to evaluate")
    for lineno, obj in lines:
        where = f"{clips_path}: line {lineno}"
        meta = clip_meta_from_json(obj, where)
        if meta.id in ids:
            raise InputError(f"{where}: duplicate clip id {meta.id!r}")
        ids.add(meta.id)
        clips.append(meta)
    floors: dict[str, float] = {}
    for c in clips:
        f0 = floors.setdefault(c.source_id, c.floor_s)
        if to_us(f0) != to_us(c.floor_s):
            raise InputError(f"{clips_path}: clip {c.id}: floor_s {c.floor_s} differs from {f0} of other clips of "
                             f"source {c.source_id!r}")
    return ControllerData(root=root, clips=clips, info=info)


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An uncompressed .npz with fixed zip timestamps: the same arrays give the same bytes (np.savez stamps now)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(info, "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def write_data(path: str | Path, clips: Sequence[Clip] | Iterator[Clip], info: JsonObject | None = None) -> Path:
    """Write a data folder (dataset.json, clips.jsonl, frames/*.npz), validating each clip; returns the folder."""
    root = Path(path)
    make_output_dir(root / "frames", "output folder")
    lines: list[str] = []
    ids: set[str] = set()
    for clip in clips:
        meta = clip_meta_from_json(json.loads(json.dumps(clip.meta.to_json())), f"{root}: clip")
        if meta.id in ids:
            raise InputError(f"{root}: duplicate clip id {meta.id!r}")
        ids.add(meta.id)
        if clip.frames.n_frames != meta.n_frames:
            raise InputError(f"{root}: clip {meta.id}: frames have {clip.frames.n_frames} rows, meta says "
                             f"{meta.n_frames}")
        arrays = clip.frames.to_npz_dict()
        validate_frames(arrays, meta.n_frames, f"{root}: clip {meta.id}")
        atomic_write_bytes(root / "frames" / f"{meta.id}.npz", npz_bytes(arrays))
        lines.append(dumps_line(clip.meta.to_json()))
    head = {"kind": KIND, "schema_version": SCHEMA_VERSION, "frame_s": FRAME_S}
    head.update({k: v for k, v in (info or {}).items() if k not in head})
    atomic_write_text(root / "clips.jsonl", "".join(lines))
    atomic_write_text(root / "dataset.json", dumps(head))
    return root
