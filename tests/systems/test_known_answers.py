"""Known answers with real espeak audio, real streaming Silero VAD, real ASR and the unified scorer.

One small dataset (1 pause, 2 turn-taking, 2 interruption samples) is exported with the silent,
turn-based and talk-over baselines, transcribed by the default ASR backend and scored. Tolerances
come from measurements (docs/systems.md, "Known answers"): the system's own lag comes from the
VAD (the decision lands on the first 32 ms frame whose probability fell, 0-90 ms after the last
word), and the ASR's word start for the reply is 30-155 ms early.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from duplexeval.fdb.asr_stage import asr as asr_run
from duplexeval.fdb.export_stage import export
from duplexeval.fdb.sample_trace import TRACE_FILE
from duplexeval.fdb.unified import score
from duplexeval.systems.baselines import DEFAULT_REPLY
from duplexeval.tts import synthesize
from tests.helpers.systems import Dataset, interruption, pause, turn_taking

SILENCE_MS, THINK_MS, BARGE_IN_MS = 500, 200, 150
TURN_BASED = f"turn-based:silence_ms={SILENCE_MS},think_ms={THINK_MS},barge_in_ms={BARGE_IN_MS}"
LATENCY_TOL_S = 0.20  # measured: latency - (silence + think) in [-0.12, +0.07] (VAD lag + ASR error)
STOP_MARGIN_S = 0.35  # measured: stop_s - barge_in in [0.23, 0.30] (VAD onset incl. 160 ms min speech, scorer VAD tail)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    ds = Dataset("known-answers", tmp_path_factory.mktemp("ka-ds"))
    pause(ds, "1", "So for the trip next month, we were thinking about", "maybe renting a cabin.", gap_s=1.5)
    turn_taking(ds, "1", "Anyway, that was my weekend, and it was fun. How was yours?", tail_s=5.0)
    turn_taking(ds, "2", "Well, I think, honestly, we should cook pasta tonight. What do you say?", voice="en-gb",
                tail_s=5.0)
    interruption(ds, "1", "Can you tell me a long story about a dragon who lives in a castle?",
                 "Actually, wait, make it a story about a friendly cat instead.")
    interruption(ds, "2", "Please explain how a rainbow forms after the rain.",
                 "Sorry, could you explain that more simply for a child?", voice="en-gb")
    return ds


SPECS = {"silent": "silent", "turn-based": TURN_BASED, "talk-over": "talk-over"}


class Trees:
    """Export + ASR + unified score per system, on first use (a failure in one system's chain stays there)."""

    def __init__(self, ds: Dataset, root: Path) -> None:
        self.ds, self.root, self.done = ds, root, {}

    def __getitem__(self, name: str) -> Path:
        if name not in self.done:
            tree = self.root / name
            export(SPECS[name], self.ds, tree, progress=False)
            asr_run(tree, progress=False, jobs=1)
            score(tree)
            self.done[name] = tree
        return self.done[name]


@pytest.fixture(scope="module")
def trees(dataset: Dataset, tmp_path_factory: pytest.TempPathFactory) -> Trees:
    return Trees(dataset, tmp_path_factory.mktemp("ka"))


def rows(tree: Path) -> dict[tuple[str, str], dict]:
    return (
        {(r["subset"], r["sample_id"]): r for r in map(
            json.loads, (tree / "unified-samples.jsonl").read_text().splitlines())})


def metrics(tree: Path, subset: str) -> dict:
    return json.loads((tree / "unified.json").read_text())["subsets"][subset]["metrics"]


def test_silent(trees: Trees) -> None:
    t = trees["silent"]
    assert metrics(t, "synthetic_pause_handling")["pause_intrusion_rate"]["value"] == 0.0
    assert metrics(t, "candor_turn_taking")["no_response_rate"]["value"] == 1.0
    inter = [r for k, r in rows(t).items() if k[0] == "synthetic_user_interruption"]
    assert [r["outcome"] for r in inter] == ["not_exercised", "not_exercised"]
    assert metrics(t, "synthetic_user_interruption")["exercised_rate"]["value"] == 0.0


def _first_play(tree: Path, key: tuple[str, str], after: float) -> float:
    trace = json.loads((tree / key[0] / key[1] / TRACE_FILE).read_text())
    return min(i["play_start_s"] for i in trace["items"] if i["kind"] == "audio" and i["play_start_s"] >= after)


def test_turn_based_latency_is_silence_plus_think(trees: Trees) -> None:
    t = trees["turn-based"]
    target = (SILENCE_MS + THINK_MS) / 1000
    lead = synthesize(DEFAULT_REPLY, rate=170).words[0].start_s  # where the reply's first word starts in its audio
    for key, r in rows(t).items():
        if key[0] == "candor_turn_taking":
            ref = r["E"]
        elif key[0] == "synthetic_user_interruption":
            assert r["outcome"] == "response", r
            ref = r["R"]
        else:
            continue
        if key[0] == "candor_turn_taking":
            assert r["outcome"] == "response", r
        assert abs(r["latency_s"] - target) <= LATENCY_TOL_S, (key, r["latency_s"])
        play = _first_play(t, key, ref)
        vad_lag = play - ref - target  # what the system did: VAD end-of-speech lag
        asr_err = r["first_word_s"] - (play + lead)  # what the ASR reported vs the true word start
        assert -0.01 <= vad_lag <= 0.12, (key, vad_lag)
        assert abs(asr_err) <= 0.2, (key, asr_err)


def test_turn_based_stops_within_barge_in_after_the_user_cuts_in(trees: Trees) -> None:
    t = trees["turn-based"]
    inter = [r for k, r in rows(t).items() if k[0] == "synthetic_user_interruption"]
    assert all(r["speech_at_onset"] and not r["speech_at_end"] for r in inter)
    for r in inter:
        assert BARGE_IN_MS / 1000 <= r["stop_s"] <= BARGE_IN_MS / 1000 + STOP_MARGIN_S, r["stop_s"]


def test_talk_over_starts_early_and_speaks_through_interruptions(trees: Trees) -> None:
    t = trees["talk-over"]
    got = rows(t)
    assert [got[("candor_turn_taking", i)]["outcome"] for i in ("1", "2")] == ["early_start", "early_start"]
    assert [got[("synthetic_user_interruption", i)]["outcome"] for i in ("1", "2")] == ["speaking_at_end"] * 2
    assert metrics(t, "synthetic_pause_handling")["pause_intrusion_rate"]["value"] == 1.0


def test_export_with_real_vad_twice_gives_the_same_bytes(dataset: Dataset, trees: Trees, tmp_path: Path) -> None:
    src = trees["turn-based"]
    again = Dataset(dataset.name, dataset.root, [s for s in dataset.rows if s.subset == "synthetic_user_interruption"])
    export(TURN_BASED, again, tmp_path / "again", progress=False)
    for s in again.rows:
        for name in ("output.wav", TRACE_FILE):
            a = (src / s.subset / s.id / name).read_bytes()
            b = (tmp_path / "again" / s.subset / s.id / name).read_bytes()
            assert hashlib.sha256(a).digest() == hashlib.sha256(b).digest(), (s.id, name)
