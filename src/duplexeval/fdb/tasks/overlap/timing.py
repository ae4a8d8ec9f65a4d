"""The official v1.5 timing intervals (`get_timing.py`), exactly: stop and response intervals per sample.

Silero runs at its `get_speech_timestamps` defaults on `input.wav` (the user track, overlap included) and on
`output.wav`; segments closer than 0.6 s (user) or 0.5 s (model) are merged (the script's comments say 300 and
50 ms; its constants are what it does). `latency_stop_list` holds every user-model intersection, one per end time
in ms (the shortest kept), sorted by end, rounded to 3 places. `latency_resp_list` holds, per user segment,
[user end, first model start strictly after it], one per model start (the latest user end kept). Both dedupes
lose intervals (a known bug), reproduced here; the unified rules tie timing to the overlap window instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from duplexeval.units import SAMPLE_RATE  # the script's SR (16 kHz)

USER_MERGE_GAP_S = 0.6
MODEL_MERGE_GAP_S = 0.5
INTERVALS_FILE = "latency_intervals.json"

Interval = tuple[float, float]


def merge(segments: Sequence[Interval], gap_s: float) -> list[Interval]:
    """Sort, then merge a segment into the previous one when the gap between them is at most `gap_s`."""
    if not segments:
        return []
    seg = sorted(segments)
    merged = [seg[0]]
    for s, e in seg[1:]:
        ps, pe = merged[-1]
        if s - pe <= gap_s:
            merged[-1] = (ps, max(pe, e))
        else:
            merged.append((s, e))
    return merged


def seconds(segments_samples: Sequence[tuple[int, int]], gap_s: float) -> list[Interval]:
    """Sample segments to seconds (sample / 16000), merged across gaps up to `gap_s`."""
    return merge([(s / SAMPLE_RATE, e / SAMPLE_RATE) for s, e in segments_samples], gap_s)


def stop_intervals(user: Sequence[Interval], model: Sequence[Interval]) -> list[list[float]]:
    """Intersections of user and model segments (two-pointer sweep), deduped by end in ms keeping the shortest."""
    raw: list[Interval] = []
    i = j = 0
    while i < len(user) and j < len(model):
        u_s, u_e = user[i]
        m_s, m_e = model[j]
        s, e = max(u_s, m_s), min(u_e, m_e)
        if e > s:
            raw.append((s, e))
        if u_e < m_e:
            i += 1
        else:
            j += 1
    best: dict[int, Interval] = {}
    for s, e in raw:
        key = int(round(e * 1000))
        if key not in best or (e - s) < (best[key][1] - best[key][0]):
            best[key] = (s, e)
    return [[round(s, 3), round(e, 3)] for s, e in sorted(best.values(), key=lambda x: x[1])]


def response_intervals(user: Sequence[Interval], model: Sequence[Interval]) -> list[list[float]]:
    """[user end, first model start after it] per user segment, deduped by model start keeping the latest user end."""
    starts = [s for s, _ in model]
    tmp: dict[int, list[float]] = {}
    for _u_s, u_e in user:
        nxt = next((s for s in starts if s > u_e), None)
        if nxt is None:
            continue
        key = int(round(nxt * 1000))
        cand = [round(u_e, 3), round(nxt, 3)]
        if key not in tmp or cand[0] > tmp[key][0]:
            tmp[key] = cand
    return [iv for _, iv in sorted(tmp.items(), key=lambda kv: kv[1][1])]


def intervals(user_segments: Sequence[tuple[int, int]],
              model_segments: Sequence[tuple[int, int]]) -> dict[str, list[list[float]]]:
    """The official `latency_intervals.json` object from the two tracks' Silero segments (in samples)."""
    user = seconds(user_segments, USER_MERGE_GAP_S)
    model = seconds(model_segments, MODEL_MERGE_GAP_S)
    return {"latency_stop_list": stop_intervals(user, model), "latency_resp_list": response_intervals(user, model)}
