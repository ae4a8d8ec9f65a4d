"""Per-case evidence rows (``cases.jsonl``) and decision-log lines (``decisions.jsonl``) from a replay.

Rows are the primary artifact: each holds the case's outcome, the times it came from, the reply the
judge reads, the transcript and the case's expected labels, so scoring needs nothing else.
"""

from __future__ import annotations

from json.encoder import encode_basestring
from typing import Any

from duplexeval.dialogue.cases import MiUCase, UiMCase
from duplexeval.dialogue.metrics import CONTINUED, ERROR, YIELDED, classify_miu
from duplexeval.dialogue.protocol import S_SPEAK, USER_CHUNK
from duplexeval.dialogue.simulator import Clock, Replay
from duplexeval.units import to_s


def _s(us: int | None) -> float | None:
    return None if us is None else to_s(us)


def _context(case: MiUCase | UiMCase) -> list[list[str]]:
    return [[t.role, t.text] for t in case.context]


def miu_row(case: MiUCase, rep: Replay) -> dict[str, Any]:
    """Outcome (mid > end > miss), take time, chunks heard, FTED and the reply after the take."""
    outcome = classify_miu(rep.takes, rep.speech_end_us)
    take = min(rep.takes) if rep.takes else None
    heard = 0
    for t, what, text, _idx in rep.steps:
        if what == USER_CHUNK:
            heard += 1
        elif what == "action" and text == S_SPEAK and t == take:
            break
    if take is None:
        heard = len(case.chunks)
    first = next((t for t, _ in rep.said if take is not None and t >= take), None)
    # the reply is what the first take said: its tokens up to its yield (a yield at the take's own instant ends it
    # with nothing said; a later take's words are not this cut-in's reply)
    stop = next((y for y in rep.yields if take is not None and y >= take), None)
    reply = [tok for t, tok in rep.said if take is not None and t >= take and (stop is None or t < stop)]
    user_heard = " ".join(c.text for c in case.chunks[:heard])
    fted = None if first is None or outcome == "mid" else first - rep.speech_end_us
    exp = case.expected
    return {
        "id": case.id,
        "family": "MiU",
        "kind": exp.kind if exp is not None else "",
        "outcome": outcome,
        "speech_end_s": _s(rep.speech_end_us),
        "take_s": _s(take),
        "heard_chunks": heard,
        "n_chunks": len(case.chunks),
        "cut_in_chunk": case.boundaries[exp.cut_in_from] if exp is not None and exp.cut_in_from is not None else None,
        "first_token_s": _s(first),
        "fted_s": _s(fted),
        "reply": " ".join(reply),
        "transcript": [*_context(case), ["user", user_heard], ["assistant", " ".join(reply)]],
        "expected": exp.model_dump(mode="json") if exp is not None else None,
        "system_errors": 0,
        "error": None,
    }


def uim_row(case: UiMCase, rep: Replay, clock: Clock) -> dict[str, Any]:
    """Yield during the interruption or not, when the machine stopped, and the reply after it began."""
    eos = rep.speech_end_us + clock.endpoint_ms * 1000
    y = next((t for t in rep.yields if rep.interruption_us <= t <= eos), None)
    reply = [tok for t, tok in rep.said if t >= rep.interruption_us]
    first = next((t for t, _ in rep.said if t >= rep.interruption_us), None)
    machine_heard = " ".join(text for _, what, text, _ in rep.steps if what == "machine")
    exp = case.expected
    return {
        "id": case.id,
        "family": "UiM",
        "reason": case.interruption.reason,
        "outcome": YIELDED if y is not None else CONTINUED,
        "interruption_s": _s(rep.interruption_us),
        "speech_end_s": _s(rep.speech_end_us),
        "yield_s": _s(y),
        "machine_stop_s": _s(rep.machine_stop_us),
        "first_reply_s": _s(first),
        "reply": " ".join(reply),
        "transcript": [*_context(case), ["assistant", machine_heard], ["user", case.interruption.text],
                       ["assistant", " ".join(reply)]],
        "expected": exp.model_dump(mode="json") if exp is not None else None,
        "system_errors": 0,
        "error": None,
    }


def error_row(case: MiUCase | UiMCase, reason: str) -> dict[str, Any]:
    """A case whose system failed: kept, counted, with the reason."""
    row: dict[str, Any] = {"id": case.id, "family": case.family, "outcome": ERROR, "error": reason}
    if isinstance(case, UiMCase):
        row["reason"] = case.interruption.reason
    else:
        row["kind"] = case.expected.kind if case.expected is not None else ""  # counted under its kind's errors
    row["expected"] = case.expected.model_dump(mode="json") if case.expected is not None else None
    return row


def decision_lines(rep: Replay) -> list[dict[str, Any]]:
    """Every event and action with its time; `say` is a token at the time it starts being heard."""
    out = []
    for t, what, text, idx in rep.steps:
        line: dict[str, Any] = {"case": rep.case_id, "t_s": to_s(t), "what": what}
        if text:
            line["text"] = text
        if what in (USER_CHUNK, "machine"):
            line["chunk"] = idx
        elif what == "action" and idx == 1:
            line["implicit"] = True  # a text token while listening took the turn
        out.append(line)
    return out


def decision_text(rep: Replay) -> str:
    """``decision_lines`` as JSONL text, formatted directly (the same bytes as ``jsonio.dumps_line`` on
    each line, about four times faster; a test holds the two equal)."""
    cid = encode_basestring(rep.case_id)
    out = []
    for t, what, text, idx in rep.steps:
        line = f'{{"case":{cid},"t_s":{to_s(t)!r},"what":"{what}"'
        if text:
            line += ',"text":' + encode_basestring(text)
        if what in (USER_CHUNK, "machine"):
            line += f',"chunk":{idx}'
        elif what == "action" and idx == 1:
            line += ',"implicit":true'
        out.append(line + "}\n")
    return "".join(out)
