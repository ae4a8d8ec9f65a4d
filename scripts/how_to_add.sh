#!/bin/bash
# "How to add X", done for real: one kind of plugin added as a built-in to a scratch checkout of HEAD, the commands
# that show it works, then the files it touched (`git status --porcelain`). docs/architecture.md quotes the counts.
#
#   scripts/how_to_add.sh system|eot|controller|dialogue|asr|judge|task [SCRATCH_DIR]
#
# Uses this checkout's .venv with PYTHONPATH=<scratch>/src; the scratch checkout is a detached `git worktree`,
# removed at the end. The added code is the copy-paste examples (examples/, tests/helpers/fdb_plugin_task.py) or a
# few lines written here.
set -u
KIND=${1:?usage: scripts/how_to_add.sh KIND [SCRATCH_DIR]}
REPO=$(git rev-parse --show-toplevel)
PY=$REPO/.venv/bin/python
BASE=${2:-$(mktemp -d /tmp/how-to-add.XXXXXX)}
WT=$BASE/checkout
W=$BASE/work
git -C "$REPO" worktree add -q --detach "$WT" HEAD
trap 'git -C "$REPO" worktree remove --force "$WT"' EXIT
mkdir -p "$W"
cd "$WT"
export PYTHONPATH=$WT/src DUPLEXEVAL_CACHE=$BASE/cache
run() { echo "\$ duplexeval $*"; nice -n 5 "$PY" -m duplexeval "$@" 2>&1 | tail -3; echo "exit ${PIPESTATUS[0]}"; }
touched() { echo "FILES TOUCHED ($1): $(git status --porcelain | wc -l)"; git status --porcelain; }
case "$KIND" in
system)
  cp examples/in_process_system.py src/duplexeval/systems/echo.py
  python3 - <<'P'
p='src/duplexeval/systems/registry.py'; s=open(p).read()
old = '    "pipecat": "duplexeval.systems.pipecat.inprocess:PipecatInProcess",\n'
assert old in s
s = s.replace(old, old + '    "echo": "duplexeval.systems.echo:EchoAgent",\n', 1)
open(p,'w').write(s)
P
  run systems list | grep echo; run fdb export --system echo:silence_ms=600 --dataset demo --out $W/echo --quiet
  touched system;;
eot)
  cp examples/eot_detector.py src/duplexeval/eot/quiet.py
  python3 - <<'P'
p='src/duplexeval/eot/detectors.py'; s=open(p).read()
s=s.replace('    DETECTORS.register("smart-turn", SmartTurnDetector)\n','    DETECTORS.register("smart-turn", SmartTurnDetector)\n    from duplexeval.eot.quiet import QuietAndDone\n\n    DETECTORS.register("quiet", QuietAndDone)\n',1)
open(p,'w').write(s)
P
  run eot check quiet:hold=0.2
  touched eot;;
dialogue)
  cp examples/dialogue_system.py src/duplexeval/dialogue/patient.py
  python3 - <<'P'
p='src/duplexeval/dialogue/baselines.py'; s=open(p).read()
s=s.replace('    SYSTEMS.register("keyword", Keyword)\n','    SYSTEMS.register("keyword", Keyword)\n    from duplexeval.dialogue.patient import PatientListener\n\n    SYSTEMS.register("patient", PatientListener)\n',1)
open(p,'w').write(s)
P
  run dialogue synth --out $W/cases.jsonl; run dialogue run --cases $W/cases.jsonl --system patient --out $W/run; run dialogue score $W/run
  touched dialogue;;
controller)
  cat > src/duplexeval/controller/runtime/patient.py <<'P'
"""A patient endpointer: the silence baseline with a long timeout (an example of a built-in controller)."""

from __future__ import annotations

from dataclasses import dataclass

from duplexeval.controller.runtime.baselines import SilenceTimeoutController


@dataclass
class PatientController(SilenceTimeoutController):
    """Waits 1.2 s of silence before it takes the turn."""

    timeout_s: float = 1.2
    name: str = "patient"
P
  python3 - <<'P'
p='src/duplexeval/controller/runtime/registry.py'; s=open(p).read()
s=s.replace('        CONTROLLERS.register(name, cls)\n','        CONTROLLERS.register(name, cls)\n    from duplexeval.controller.runtime.patient import PatientController\n\n    CONTROLLERS.register("patient", PatientController)\n',1)
open(p,'w').write(s)
P
  run controller bench patient
  touched controller;;
asr)
  cat > src/duplexeval/asr/nowords.py <<'P'
"""An ASR backend that hears nothing (an example of a built-in backend)."""

from __future__ import annotations

from typing import Any

import numpy as np

from duplexeval.asr.base import Word


class NoWordsBackend:
    """Every transcript empty: what the scores look like when the ASR hears nothing."""

    name = "no-words"

    def signature(self) -> dict[str, Any]:
        return {"name": self.name, "version": 1}

    def transcribe(self, audio16k: np.ndarray, offset_s: float = 0.0) -> list[Word]:
        return []
P
  python3 - <<'P'
p='src/duplexeval/asr/registry.py'; s=open(p).read()
s=s.replace('    ASR_BACKENDS.register(IMPORT, _import_is_not_a_backend)\n','    ASR_BACKENDS.register(IMPORT, _import_is_not_a_backend)\n    from duplexeval.asr.nowords import NoWordsBackend\n\n    ASR_BACKENDS.register("no-words", lambda **kw: NoWordsBackend())\n',1)
open(p,'w').write(s)
P
  run fdb export --system turn-based --dataset demo --out $W/t --quiet; run fdb asr $W/t --backend no-words -q; run fdb score $W/t -q
  touched asr;;
judge)
  python3 - <<'P'
p='src/duplexeval/dialogue/judges.py'; s=open(p).read()
s=s.replace('JUDGES = ("expected", "openai")','JUDGES = ("expected", "openai", "never")',1)
s=s.replace('''    if name == "expected":
        return ExpectedJudge()''','''    if name == "expected":
        return ExpectedJudge()
    if name == "never":
        return NeverJudge()''',1)
s=s.replace('''class ExpectedJudge:''','''class NeverJudge:
    """Every judged case wrong (an example of a built-in judge)."""

    label = "never"

    def identity(self) -> dict[str, Any]:
        return {"mode": "never"}

    def judge(self, row: dict[str, Any]) -> Verdict | None:
        if not needs_judging(row):
            return None
        return Verdict(timing=0, content=0) if row["family"] == "MiU" else Verdict(score=0)


class ExpectedJudge:''',1)
open(p,'w').write(s)
P
  run dialogue synth --out $W/cases.jsonl; run dialogue run --cases $W/cases.jsonl --system half-duplex --out $W/run; run dialogue score $W/run --judge never
  touched judge;;
task)
  mkdir -p src/duplexeval/fdb/tasks/answer_question
  cp tests/helpers/fdb_plugin_task.py src/duplexeval/fdb/tasks/answer_question/__init__.py
  python3 - <<'P'
p='src/duplexeval/fdb/tasks/__init__.py'; s=open(p).read()
s=s.replace('    "duplexeval.fdb.tasks.overlap",\n)','    "duplexeval.fdb.tasks.overlap",\n    "duplexeval.fdb.tasks.answer_question",\n)',1)
open(p,'w').write(s)
P
  cat > $W/q.yaml <<'P'
name: questions
samples:
  - {subset: toy_questions, id: 1, text: "What time does the train to the city leave tomorrow?"}
  - {subset: toy_questions, id: 2, text: "Can you tell me a short story about a lighthouse?", tail: 4.0}
P
  run fdb synth $W/q.yaml --out $W/ds -q
  for s in turn-based silent; do run fdb export --system $s --dataset $W/ds --out $W/$s --quiet; run fdb asr $W/$s -q; run fdb evaluate $W/$s -q; run fdb score $W/$s -q; done
  run fdb compare $W/turn-based $W/silent --out $W/compare.json
  run report $W/turn-based $W/silent --out $W/report.html
  grep -c "answer_question" $W/report.html
  touched task;;
*) echo "unknown kind $KIND (system|eot|controller|dialogue|asr|judge|task)"; exit 2;;
esac
