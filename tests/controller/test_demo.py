"""espeak-ng conversations: derived labels recover the script's events; the demo runs end to end, deterministically."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from duplexeval.controller.labels.conversations import make_conversation
from duplexeval.controller.labels.derive import derive
from tests.helpers.cli import run_cli


@pytest.mark.parametrize("index", [0, 1, 2, 4])
def test_labels_recover_the_script(index):
    c = make_conversation(index, seed=0, exchanges=4)
    user, agent = c.activities()
    lab = derive(user, agent, c.duration_s)

    def first_word(who, start):  # the scripted utterance's first spoken word
        words = c.user_words if who == "user" else c.agent_words
        return min(w[1] for w in words if w[1] >= start - 1e-6)

    barge = [first_word("user", s.start_s) for s in c.script if s.kind == "barge_in"]
    agent_bc = [first_word("agent", s.start_s) for s in c.script if s.kind == "backchannel" and s.who == "agent"]
    user_bc = [first_word("user", s.start_s) for s in c.script if s.kind == "backchannel" and s.who == "user"]
    assert lab.yield_onsets == pytest.approx(barge)
    assert lab.backchannel_onsets == pytest.approx(agent_bc)
    assert ([v.start_s for v in lab.vocalizations if v.speaker == "user" and v.kind == "backchannel"]
            == pytest.approx(user_bc))
    # every agent reply follows a user turn end: one turn probe each
    assert len(lab.turn_probes) == sum(1 for s in c.script if s.kind == "agent_turn")
    assert len(lab.pause_probes) >= sum(1 for s in c.script if s.kind == "user_turn") - len(lab.turn_probes)
    assert 25.0 < c.duration_s < 60.0


def test_conversations_vary_voice_and_rate():
    cs = [make_conversation(i, seed=0) for i in range(4)]
    voices = {(s.voice, s.rate) for c in cs for s in c.script}
    assert len({v for v, _ in voices}) >= 3 and len({r for _, r in voices}) >= 4
    again = make_conversation(1, seed=0)
    assert (again.user_audio == cs[1].user_audio).all() and again.script == cs[1].script


def test_demo_end_to_end_deterministic(tmp_path):
    from duplexeval.cli import main

    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        with pytest.raises(SystemExit) as ex:
            main(["controller", "demo", "--out", str(out), "--conversations", "2", "--exchanges", "2"])
        assert ex.value.code == 0
    for name in ("report-silence.json", "report-silero.json", "compare.json", "data-silero/clips.jsonl"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    rep = json.loads((outs[0] / "report-silero.json").read_text())
    assert rep["data"]["clips"] == 2 and rep["evaluation_policy"]["endpoint_threshold"] == 0.91
    ep = rep["event_metrics"]["endpoint"]["fallback_on"]
    assert ep["turn_probes"] >= 3 and ep["latency"]["n"] + ep["no_endpoint"]["count"] == ep["turn_probes"]
    cmp = json.loads((outs[0] / "compare.json").read_text())
    # the header, as `compare --json`
    assert cmp["kind"] == "duplexeval.controller.compare" and cmp["schema_version"] == 2
    assert (cmp["event_metrics"]["groups"] == 2 and cmp["a"]["path"] == "data-silence"
            and cmp["b"]["path"] == "data-silero")
    with pytest.raises(SystemExit) as ex:  # refuses to overwrite
        main(["controller", "demo", "--out", str(outs[0]), "--conversations", "1"])
    assert ex.value.code == 2


def test_controller_demo_out_option_and_deprecated_positional(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--conversations", "1", "--exchanges", "1"]
    rc, out, err = run_cli(["controller", "demo", "--out", str(tmp_path / "a"), *args], capsys)
    assert rc == 0, err
    assert (tmp_path / "a" / "compare.json").is_file() and "deprecated" not in err
    assert "* = the primary endpoint mode" in out and "B - A" in out
    rc, out, err = run_cli(["controller", "demo", str(tmp_path / "b"), *args], capsys)
    assert rc == 0 and "a positional OUT is deprecated; use --out DIR" in err
    assert json.loads((tmp_path / "b" / "compare.json").read_text()) == json.loads(
        (tmp_path / "a" / "compare.json").read_text())
    rc, _out, err = run_cli(["controller", "demo", str(tmp_path / "c"), "--out", str(tmp_path / "d"), *args], capsys)
    assert rc == 2 and "unexpected extra argument" in err

def test_controller_demo_out_keeps_the_output_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "a-file"
    f.write_text("x")
    for argv in (["--out", str(f)], [str(f)]):
        rc, _out, err = run_cli(["controller", "demo", *argv, "--conversations", "1"], capsys)
        lines = [line for line in err.splitlines() if "is deprecated" not in line]  # the positional's note
        assert rc == 2 and len(lines) == 1 and "a-file" in err, (argv, err)
