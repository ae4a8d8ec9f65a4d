"""The v1.5 stages on one tree: two sessions per sample, four transcripts, official and unified results, refusals."""

from __future__ import annotations

import json
import sys

import pytest

from duplexeval.errors import RefusalError
from duplexeval.fdb.tasks.overlap import pipeline, synth
from duplexeval.fdb.tasks.overlap.scenarios import USER_BACKCHANNEL, USER_INTERRUPTION

# An energy "ASR" (a user's own backend by module:Class): one word per loud stretch, so the stages run fast.
PLUGIN = '''
import numpy as np
from duplexeval.asr.base import Word

class Loud:
    name = "loud"

    def signature(self):
        return {"name": self.name, "options": {"threshold": 0.05}}

    def transcribe(self, audio16k, offset_s=0.0):
        frames = np.abs(np.asarray(audio16k)[: len(audio16k) // 1600 * 1600]).reshape(-1, 1600).max(axis=1) > 0.05
        words, start = [], None
        for i, on in enumerate([*frames, False]):
            if on and start is None:
                start = i
            if not on and start is not None:
                words.append(Word("word", offset_s + start / 10, offset_s + i / 10))
                start = None
        return words
'''


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    d = tmp_path_factory.mktemp("v15")
    (d / "v15_loud_asr.py").write_text(PLUGIN)
    sys.path.insert(0, str(d))
    data = synth.write_set(d / "data", synth.small(1, (USER_INTERRUPTION, USER_BACKCHANNEL)))
    tree = d / "tree"
    pipeline.export(data, "turn-based", tree)
    pipeline.asr(tree, backend="v15_loud_asr:Loud")
    yield tree
    sys.path.remove(str(d))


def test_export_plays_both_inputs_and_records_every_file(tree):
    man = json.loads((tree / "manifest.json").read_text())
    assert man["kind"] == pipeline.TREE_KIND and len(man["samples"]) == 2
    e = man["samples"][0]
    assert set(e["files"]) == {"input.wav", "clean_input.wav", "output.wav", "clean_output.wav", "metadata.json"}
    assert e["eligible"] and e["T"] > 5
    d = tree / e["subset"] / e["id"]
    assert (d / "output.wav").read_bytes() != (d / "clean_output.wav").read_bytes()  # two sessions, two outputs


def test_asr_writes_four_transcripts_none_overwriting_another(tree):
    rec = json.loads((tree / "asr.json").read_text())
    d = tree / "user_interruption" / "0"
    files = rec["samples"][0]["files"]
    assert set(files) == {"input.json", "clean_input.json", "output.json", "clean_output.json"}
    texts = {n: (d / n).read_bytes() for n in files}
    assert len(set(texts.values())) == 4  # the overlap is in input.wav only; the outputs differ too
    assert rec["signature"]["compact"].startswith("fdb-v1.5-asr|asr:")


def test_evaluate_and_score_then_refuse_a_changed_file(tree):
    summary = pipeline.evaluate(tree)
    sub = summary["subsets"][USER_INTERRUPTION]
    assert sub["judge"] == "not judged" and sub["counts"] == {"selected": 1, "ineligible": 0, "not_transcribed": 0}
    assert set(sub["samples"]["0"]["general_split"]) >= {"pre", "post", "clean", "split_t"}
    assert json.loads((tree / USER_INTERRUPTION / "0" / "latency_intervals.json").read_text()) == sub["samples"]["0"]["latency_intervals"]
    assert "silero:v5@2623a295" in summary["signature"]["compact"] and "praat:" in summary["signature"]["compact"]
    unified = pipeline.score(tree)
    row = unified["subsets"][USER_INTERRUPTION]["rows"][0]
    assert row["speaking_at_onset"] and row["stop_reached"] and row["behaviour"] != "continued"  # barge-in: it stops
    assert unified["inputs"]["summary.json"]
    (tree / USER_BACKCHANNEL / "0" / "clean_output.json").write_text('{"text": "", "chunks": []}')
    with pytest.raises(RefusalError, match="user_backchannel/0: differs from what asr recorded; rerun asr"):
        pipeline.score(tree)
    with pytest.raises(RefusalError, match="not empty"):
        pipeline.export(tree.parent / "data", "silent", tree)


def test_demo_part_runs_every_stage_reuses_and_prints_one_table(tree, tmp_path):
    import io

    from rich.console import Console

    from duplexeval.fdb.tasks.overlap import demo

    lines: list[str] = []
    res = demo.run(tmp_path, ["silent", "turn-based"], say=lines.append, asr_backend="v15_loud_asr:Loud")
    assert [r.stages for r in res.runs] == [{"export": "done", "asr": "done", "evaluate": "done", "score": "done"}] * 2
    again = demo.run(tmp_path, ["silent"], say=lines.append, asr_backend="v15_loud_asr:Loud")
    assert again.runs[0].stages == {"all": "reused"}
    buf = io.StringIO()
    demo.print_report(res, Console(file=buf, width=200))
    text = buf.getvalue()
    assert "user interruption (respond)" in text and "signature v1.5 unified (turn-based): fdb-v1.5-unified|" in text
