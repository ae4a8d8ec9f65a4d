"""Conversation manifests (two-channel recordings with word times or VAD) to controller clips, with or without a
controller's scores. The manifest format is in docs/controller-labels.md ("Conversation manifest")."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.audio import read_audio_16k, read_audio_channels, resample
from duplexeval.controller.format.data import Clip, validate_clip_id
from duplexeval.controller.labels.derive import Activity, LabelRules, derive, to_clip
from duplexeval.controller.runtime.runner import frame_level_db, run
from duplexeval.errors import InputError
from duplexeval.fdb.transcript import parse_output_json
from duplexeval.jsonio import json_lines, read_json, read_text
from duplexeval.schemas import MAX_TIME_S, check_number
from duplexeval.vad import OFFICIAL_SETTINGS, load_vad

CHANNELS = ("user", "agent")


@dataclass
class Conversation:
    """One two-channel conversation: 16 kHz audio per channel (or None) and each channel's speech."""

    id: str
    group: str
    duration_s: float
    user: Activity
    agent: Activity
    user_audio: np.ndarray | None = None
    agent_audio: np.ndarray | None = None
    both_assignments: bool = False
    events_end_s: float | None = None
    label_source: str = "words"
    where: str = ""  # the manifest file and line, for messages

    def swapped(self) -> Conversation:
        """The other channel assignment (the agent's channel as the user)."""
        return Conversation(self.id, self.group, self.duration_s, self.agent, self.user, self.agent_audio,
                            self.user_audio, False, self.events_end_s, self.label_source, self.where)  # fmt: skip


def _read_channels(path: Path, where: str) -> tuple[np.ndarray, np.ndarray]:
    """A stereo file's two channels at 16 kHz (channel 0 user, channel 1 agent)."""
    data, sr = read_audio_channels(path, where=f"{where}: {path}")
    if data.shape[1] != 2:
        raise InputError(f"{where}: {path} has {data.shape[1]} channel(s); 'audio' must be stereo (user, agent)")
    return resample(data[:, 0].copy(), sr), resample(data[:, 1].copy(), sr)


def _activity(spec: Any, audio: np.ndarray | None, where: str, base: Path) -> tuple[Activity, str]:
    if isinstance(spec, dict) and "transcript" in spec:  # an official-shape output.json (FDB / `fdb asr`)
        path = base / str(spec["transcript"])
        words = [(w.text.strip(), w.start, w.start if w.end is None else w.end)
                 for w in parse_output_json(read_json(path), path)]
        return Activity.from_words(words, f"{where}.transcript"), "transcript"
    if spec is None:
        if audio is None:
            raise InputError(f"{where}: needs 'words' or 'segments', or audio to run Silero VAD on")

        return Activity.from_segments(load_vad().segments_s(audio, OFFICIAL_SETTINGS), where), "silero-vad"
    if not isinstance(spec, dict) or not ({"words", "segments"} & set(spec)):
        raise InputError(f"{where}: must be an object with 'words', 'segments' or 'transcript'")
    if "words" in spec:
        words = spec["words"]
        if not isinstance(words, list) or not all(isinstance(w, list) and len(w) == 3 for w in words):
            raise InputError(f"{where}: words must be a list of [text, start_s, end_s]")
        return Activity.from_words(words, f"{where}.words"), "words"
    segs = spec["segments"]
    if not isinstance(segs, list):
        raise InputError(f"{where}: segments must be a list of [start_s, end_s]")
    return Activity.from_segments(segs, f"{where}.segments"), "segments"


def parse_entry(obj: Any, base: Path, where: str) -> Conversation:
    """One manifest entry; audio paths are relative to the manifest's folder."""
    if not isinstance(obj, dict):
        raise InputError(f"{where}: each entry must be an object")
    cid = validate_clip_id(obj.get("id"), where)
    where = f"{where}: conversation {cid}"
    ua = aa = None
    for key in ("audio", "user_audio", "agent_audio"):
        if key in obj and not isinstance(obj[key], str):
            raise InputError(
                f"{where}: {key} must be a path to an audio file (a string), got {type(obj[key]).__name__}")
    if "audio" in obj:
        ua, aa = _read_channels(base / obj["audio"], where)
    else:
        try:
            if "user_audio" in obj:
                ua = read_audio_16k(base / obj["user_audio"])
            if "agent_audio" in obj:
                aa = read_audio_16k(base / obj["agent_audio"])
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
    dur = obj.get("duration_s")
    if dur is None:
        lengths = [a.size for a in (ua, aa) if a is not None]
        if not lengths:
            raise InputError(f"{where}: needs duration_s when there is no audio")
        dur = max(lengths) / 16000
    check_number(dur, where, "duration_s", 0.0, MAX_TIME_S, lo_open=True)
    user, src_u = _activity(obj.get("user"), ua, f"{where}: user", base)
    agent, src_a = _activity(obj.get("agent"), aa, f"{where}: agent", base)
    ee = obj.get("events_end_s")
    if ee is not None:
        check_number(ee, where, "events_end_s", 0.0, MAX_TIME_S)
    both = obj.get("assignments", "user")
    if both not in ("user", "both"):
        raise InputError(f"{where}: assignments must be 'user' or 'both', got {both!r}")
    group = obj.get("group") or cid
    if not isinstance(group, str):
        raise InputError(f"{where}: group must be a string")
    return Conversation(cid, group, float(dur), user, agent, ua, aa, both == "both",
                        None if ee is None else min(float(ee), float(dur)), f"user:{src_u},agent:{src_a}",
                        where.rsplit(": conversation ", 1)[0])  # fmt: skip


def read_manifest(path: str | Path) -> Iterator[Conversation]:
    """Conversations from a JSONL file (one object per line) or a JSON list."""
    p = Path(path)
    text = read_text(p)
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            entries = list(enumerate(json.loads(text), 1))
        except json.JSONDecodeError as exc:
            raise InputError(f"{p}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
        label = "entry"
    else:
        entries = json_lines(text, p)
        label = "line"
    if not entries:
        raise InputError(f"{p}: no conversations")
    seen: dict[str, int] = {}
    for k, obj in entries:
        cid = obj.get("id") if isinstance(obj, dict) else None
        if isinstance(cid, str) and cid in seen:
            raise InputError(f"{p}: {label} {k}: duplicate conversation id {cid!r} (first at {label} {seen[cid]})")
        if isinstance(cid, str):
            seen[cid] = k
        yield parse_entry(obj, p.parent, f"{p}: {label} {k}")


def assignments(conv: Conversation) -> list[tuple[str, Conversation]]:
    """(clip id, conversation) per channel assignment: '<id>' or '<id>.a' / '<id>.b' for both."""
    if not conv.both_assignments:
        return [(conv.id, conv)]
    return [(f"{conv.id}.a", conv), (f"{conv.id}.b", conv.swapped())]


def _at(c: Conversation) -> str:
    return f"{c.where}: " if c.where else ""


def labelled_clips(
    convs: Sequence[Conversation] | Iterator[Conversation],
    rules: LabelRules | None = None,
) -> Iterator[tuple[Clip, Conversation, Any]]:
    """(clip with labels and level_db, the conversation as assigned, its derived labels) per channel assignment."""
    for conv in convs:
        for clip_id, c in assignments(conv):
            try:
                lab = derive(c.user, c.agent, c.duration_s, rules)
            except InputError as exc:
                raise InputError(f"{_at(c)}conversation {clip_id}: {exc}") from None
            level = frame_level_db(c.user_audio, lab.n_frames) if c.user_audio is not None else None
            clip = to_clip(lab, clip_id, group=c.group, level_db=level, events_end_s=c.events_end_s,
                           extra={"label_source": c.label_source})  # fmt: skip
            yield clip, c, lab


def needs_user_audio(c: Conversation) -> np.ndarray:
    """The user channel a controller run needs (InputError naming the conversation when there is none)."""
    if c.user_audio is None:
        raise InputError(f"{_at(c)}conversation {c.id}: running a controller needs the user audio")
    return c.user_audio


def conversation_clips(
    convs: Sequence[Conversation] | Iterator[Conversation],
    controller: Any = None,
    rules: LabelRules | None = None,
) -> Iterator[Clip]:
    """Derive labels (and level_db when audio exists) per assignment; with a controller, add its scores."""
    for clip, c, lab in labelled_clips(convs, rules):
        if controller is not None:
            res = run(controller, needs_user_audio(c), c.agent_audio, lab.n_frames, lab.truth_state,
                      name=getattr(controller, "name", "controller"))  # fmt: skip
            res.apply(clip.frames)
        yield clip
