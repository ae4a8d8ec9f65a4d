"""In-process vs Moshi and native-duplex loopback: same unified outcomes, first playout within 40 ms, replay exact.

The turn-based baseline (Silero VAD, espeak replies) is exported three ways over the same small
FDB-shaped set (2 turn-taking, 1 pause, 1 interruption with a barge-in): in-process on the virtual
clock, and through `loopback:protocol=moshi` and `loopback:protocol=native-duplex` (a real
`duplexeval serve` child process and the real client adapter, native samples all at once, moshi one at a time as its
server allows). Each tree is
transcribed and scored with the unified rules; every sample must have the same outcome, and the
first audible output sample within 40 ms. Then `fdb replay --check` must rebuild every
`output.wav` and `trace.json` of the network trees byte for byte from the wire traces.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import soundfile as sf

from duplexeval.fdb.asr_stage import asr as asr_run
from duplexeval.fdb.export_stage import export
from duplexeval.fdb.replay_stage import replay
from duplexeval.fdb.unified import score
from duplexeval.systems.net.moshi_wire import opus_round_trip
from tests.helpers.net_protocols import first_loud_s, frame_delay, timing_datasets

pytestmark = pytest.mark.slow

# The bound on the placement of the first audible sample once the measured delay of the frame
# that carries it (its receipt after its 80 ms slot: transport and server work, i.e. machine speed,
# recorded in the trace) is taken out. What remains is the resamplers (2.4 ms) and any misplacement
# by the capture. The raw differences are in docs/network.md, section 8.
FIRST_PLAYOUT_TOL_S = 0.040
MAX_DELAY_S = 0.5


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("net-e2e")
    ds, heard = timing_datasets(root)
    export("turn-based", heard, root / "in-process-opus", progress=False)
    specs = {
        "in-process": ("turn-based", 1),
        "moshi": ("loopback:protocol=moshi,serve=turn-based", 1),  # one conversation at a time
        "native-duplex": ("loopback:protocol=native-duplex,serve=turn-based", 2),
    }
    out = {"in-process-opus": root / "in-process-opus"}
    for name, (spec, concurrency) in specs.items():
        tree = root / name
        for attempt in range(1, 4):  # a sample the machine's load starved (input_pacing_late) is captured again
            export(spec, ds, tree, progress=False, concurrency=concurrency, force=attempt > 1)
            if not _starved(tree):
                break
        asr_run(tree, progress=False, jobs=1)
        score(tree)
        out[name] = tree
    return out


def _starved(tree: Path) -> bool:
    manifest = json.loads((tree / "manifest.json").read_text())
    return any("input_pacing_late" in s.get("reasons", []) for s in manifest["samples"])


def _rows(tree: Path) -> dict[tuple[str, str], dict]:
    lines = (tree / "unified-samples.jsonl").read_text().splitlines()
    return {(r["subset"], r["sample_id"]): r for r in map(json.loads, lines)}


def _decision(row: dict) -> object:
    """What the unified rules decided for a sample: the outcome, or for pause handling the intrusion."""
    return row["outcome"] if "outcome" in row else ("pause_intrusion", row["pause_intrusion"])


def _first_loud(tree: Path, key: tuple[str, str]) -> float | None:
    audio, _ = sf.read(str(tree / key[0] / key[1] / "output.wav"), dtype="int16")
    return first_loud_s(audio)


def _reference_first_loud(trees: dict[str, Path], proto: str, key: tuple[str, str]) -> float | None:
    """Native: the in-process output. Moshi: the in-process output on Opus input, itself through Opus
    (the codec softens the reply's onset: the first sample over the threshold moves 12-44 ms later)."""
    if proto == "native-duplex":
        return _first_loud(trees["in-process"], key)
    audio, _ = sf.read(str(trees["in-process-opus"] / key[0] / key[1] / "output.wav"), dtype="int16")
    return first_loud_s(opus_round_trip(audio))


@pytest.mark.parametrize("proto", ["moshi", "native-duplex"])
def test_same_outcomes_and_first_playout(trees: dict[str, Path], proto: str) -> None:
    ref, net = _rows(trees["in-process"]), _rows(trees[proto])
    assert set(ref) == set(net) and len(ref) == 4
    if _starved(trees[proto]):
        pytest.skip(f"{proto}: samples starved by the machine's load in 3 captures (input_pacing_late)")
    manifest = json.loads((trees[proto] / "manifest.json").read_text())
    assert all(s["eligible"] for s in manifest["samples"]), manifest["samples"]
    for key in ref:
        assert _decision(net[key]) == _decision(ref[key]), (key, ref[key], net[key])
        a, b = _reference_first_loud(trees, proto, key), _first_loud(trees[proto], key)
        assert (a is None) == (b is None), (key, a, b)
        if a is not None and b is not None:
            delay = frame_delay(trees[proto] / key[0] / key[1], b)
            assert 0.0 <= delay <= MAX_DELAY_S, (key, delay)  # never before its slot; bounded
            assert abs(b - delay - a) <= FIRST_PLAYOUT_TOL_S, (key, a, b, delay)


@pytest.mark.parametrize("proto", ["moshi", "native-duplex"])
def test_replay_rebuilds_the_tree_byte_for_byte(trees: dict[str, Path], proto: str) -> None:
    tree = trees[proto]
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    result = replay(tree, check=True)
    assert result.replayed == 4 and result.changed == {} and not result.manifest_changed
    replay(tree)  # and writing: nothing changes on disk
    after = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    assert after == before
    for key in _rows(tree):
        assert (tree / key[0] / key[1] / "trace.jsonl").is_file() and (tree / key[0] / key[1] / "trace.pcm").is_file()
