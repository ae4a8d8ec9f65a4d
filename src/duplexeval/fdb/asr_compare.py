"""`duplexeval fdb asr-compare TREE_A TREE_B`: two transcript sets of the same audio, sample by sample.

Swapping the ASR moves every latency by its timing bias and can flip the word-count rules, so this shows,
per sample, the word disagreements (a minimum word edit alignment of the normalised words: lower case,
surrounding punctuation stripped) and the first-onset difference B - A, then a summary. The trees must hold
the same audio: a common sample whose output.wav hash (or ASR cut point) differs is refused in one line.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from duplexeval import artifacts
from duplexeval.asr.numbers import normalize
from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.transcript import Word, parse_output_json
from duplexeval.fdb.tree import (
    ASR_FILE,
    MANIFEST_FILE,
    OUTPUT_JSON,
    OUTPUT_WAV,
    AsrSample,
    load_asr,
    load_manifest,
)
from duplexeval.jsonio import read_json, sha256_file
from duplexeval.jsontypes import JsonObject
from duplexeval.signature import Component, Signature
from duplexeval.stats import Quantile

KIND = "duplexeval.fdb.asr-compare"
SCHEMA_VERSION = 1
DEFINITIONS = "fdb-asr-compare-1"  # normalisation + minimum word edits + first onsets, as documented above


@dataclass(frozen=True)
class Alignment:
    """A minimum word-edit alignment of two word lists: matched index pairs and the edit counts."""

    matches: list[tuple[int, int]]  # (index in A, index in B) of equal words
    substitutions: int
    deletions: int  # words of A with no counterpart in B
    insertions: int  # words of B with no counterpart in A

    @property
    def edits(self) -> int:
        return self.substitutions + self.deletions + self.insertions


def align_words(a: Sequence[str], b: Sequence[str]) -> Alignment:
    """Levenshtein alignment on words (substitution, deletion, insertion cost 1); ties prefer a match, then a
    substitution, then a deletion, so the result is deterministic."""
    n, m = len(a), len(b)
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        d[i][0] = i
    for j in range(m + 1):
        d[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i][j] = min(d[i - 1][j - 1] + (a[i - 1] != b[j - 1]), d[i - 1][j] + 1, d[i][j - 1] + 1)
    i, j = n, m
    matches: list[tuple[int, int]] = []
    sub = dele = ins = 0
    while i > 0 or j > 0:
        if i > 0 and j > 0 and a[i - 1] == b[j - 1] and d[i][j] == d[i - 1][j - 1]:
            matches.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif i > 0 and j > 0 and d[i][j] == d[i - 1][j - 1] + 1:
            sub += 1
            i, j = i - 1, j - 1
        elif i > 0 and d[i][j] == d[i - 1][j] + 1:
            dele += 1
            i -= 1
        else:
            ins += 1
            j -= 1
    matches.reverse()
    return Alignment(matches, sub, dele, ins)


def _tokens(words: Sequence[Word]) -> tuple[list[str], list[Word]]:
    """Normalised word texts (words with nothing left after normalising are dropped) and their words."""
    keep = [(normalize(w.text), w) for w in words]
    keep = [(t, w) for t, w in keep if t]
    return [t for t, _ in keep], [w for _, w in keep]


@dataclass(frozen=True)
class SampleComparison:
    """One sample's comparison; times in seconds, differences B - A."""

    key: str
    words_a: int
    words_b: int
    alignment: Alignment
    first_a: float | None
    first_b: float | None
    matched_onset_diffs: list[float]  # B - A start of each matched word pair

    @property
    def first_onset_diff(self) -> float | None:
        return None if self.first_a is None or self.first_b is None else self.first_b - self.first_a

    def to_json(self) -> JsonObject:
        al = self.alignment
        diffs = self.matched_onset_diffs
        return {
            "sample": self.key,
            "words_a": self.words_a,
            "words_b": self.words_b,
            "word_edits": al.edits,
            "substitutions": al.substitutions,
            "deletions": al.deletions,
            "insertions": al.insertions,
            "matched_words": len(al.matches),
            "first_onset_a_s": _r(self.first_a),
            "first_onset_b_s": _r(self.first_b),
            "first_onset_diff_s": _r(self.first_onset_diff),
            "matched_onset_diff_median_s": _r(Quantile.of(diffs, 0.5).value),
        }


def _r(x: float | None) -> float | None:
    """Round to the microsecond (JSON output)."""
    return None if x is None else round(x, 6)


def compare_words(key: str, a: Sequence[Word], b: Sequence[Word]) -> SampleComparison:
    """Pure: the comparison of two transcripts of one sample (the official word lists of output.json)."""
    ta, wa = _tokens(a)
    tb, wb = _tokens(b)
    al = align_words(ta, tb)
    first_a = min((w.start for w in a), default=None)
    first_b = min((w.start for w in b), default=None)
    diffs = [wb[j].start - wa[i].start for i, j in al.matches]
    return SampleComparison(key, len(a), len(b), al, first_a, first_b, diffs)


def _summary(rows: Sequence[SampleComparison]) -> JsonObject:
    """The comparison's `summary` block, as written."""
    first = [r.first_onset_diff for r in rows if r.first_onset_diff is not None]
    absf = [abs(x) for x in first]
    matched = [x for r in rows for x in r.matched_onset_diffs]
    words_a = sum(r.words_a for r in rows)
    edits = sum(r.alignment.edits for r in rows)
    return {
        "samples": len(rows),
        "samples_with_word_disagreement": sum(1 for r in rows if r.alignment.edits),
        "word_edits": edits,
        "words_a": words_a,
        "words_b": sum(r.words_b for r in rows),
        "word_edits_per_word_a": edits / words_a if words_a else None,
        "words_only_in_a_samples": sum(1 for r in rows if r.words_a and not r.words_b),
        "words_only_in_b_samples": sum(1 for r in rows if r.words_b and not r.words_a),
        "first_onset_diff_s": {
            "n": len(first),
            "signed_median": _r(Quantile.of(first, 0.5).value),
            "mean": _r(sum(first) / len(first)) if first else None,
            "abs_median": _r(Quantile.of(absf, 0.5).value),
            "abs_p90": _r(Quantile.of(absf, 0.9).value),
            "abs_max": _r(max(absf)) if absf else None,
        },
        "matched_word_onset_diff_s": {"n": len(matched), "signed_median": _r(Quantile.of(matched, 0.5).value)},
        "rule": "differences are B - A; quantiles by the ceil(qN)-th smallest rule",
    }


def _words(tree: Path, key: str) -> list[Word]:
    path = tree / key / OUTPUT_JSON
    try:
        return parse_output_json(read_json(path), path)
    except FileNotFoundError:
        raise InputError(f"{path}: sample {key}: asr.json says ok but output.json is missing") from None


def asr_component(backend: JsonObject, label: str) -> Component:
    """The signature component of one transcript set: backend name and its model hash (when recorded)."""
    model = backend.get("model")
    sha = model.get("sha256") if isinstance(model, dict) and isinstance(model.get("sha256"), str) else None
    name = str(backend.get("name", "?"))
    return Component(label, name + (":imported" if backend.get("declared_by") else ""), sha)


def _ok_samples(tree: Path) -> tuple[dict[str, AsrSample], dict[str, str], str, JsonObject]:
    """(asr records of ok samples, output.wav sha256 per sample key from the manifest, backend name, backend)."""
    manifest, _ = load_manifest(tree)
    asr, _ = load_asr(tree)
    wav = {e.key: e.files.get(OUTPUT_WAV, "") for e in manifest.samples}
    ok = {k: r for k, r in asr.samples.items() if r.status == "ok"}
    name = str(asr.backend.get("name", "?"))
    return ok, wav, f"{name} (imported)" if asr.backend.get("declared_by") else name, asr.backend


@dataclass
class Comparison:
    """The comparison of two trees: per-sample rows, the summary and what was left out."""

    tree_a: Path
    tree_b: Path
    backend_a: str
    backend_b: str
    rows: list[SampleComparison]
    only_a: list[str]
    only_b: list[str]
    components: tuple[Component, Component]

    def signature(self) -> Signature:
        """What made the numbers: both transcript sets and the input hashes."""
        inputs = {
            "a/asr.json": sha256_file(self.tree_a / ASR_FILE),
            "b/asr.json": sha256_file(self.tree_b / ASR_FILE),
            "a/manifest.json": sha256_file(self.tree_a / MANIFEST_FILE),
            "b/manifest.json": sha256_file(self.tree_b / MANIFEST_FILE),
        }
        return Signature(DEFINITIONS, self.components, inputs)

    def to_json(self) -> JsonObject:
        sig = self.signature()
        return {
            **artifacts.header(KIND, SCHEMA_VERSION, signature=sig, inputs=sig.inputs),
            "backend_a": self.backend_a,
            "backend_b": self.backend_b,
            "summary": _summary(self.rows),
            "not_compared": {"only_ok_in_a": self.only_a, "only_ok_in_b": self.only_b},
            "samples": [r.to_json() for r in self.rows],
        }


def compare_trees(tree_a: str | Path, tree_b: str | Path) -> Comparison:
    """Compare the transcripts of the samples both trees transcribed; refuse if their audio differs."""
    ta, tb = Path(tree_a), Path(tree_b)
    ok_a, wav_a, name_a, be_a = _ok_samples(ta)
    ok_b, wav_b, name_b, be_b = _ok_samples(tb)
    common = [k for k in ok_a if k in ok_b]
    for k in common:
        ha, hb = wav_a.get(k), wav_b.get(k)
        if not ha or not hb or ha != hb:
            raise RefusalError(
                f"{tb / MANIFEST_FILE}: sample {k}: output.wav (sha256 {str(hb)[:12]}...) differs from "
                f"{ta / MANIFEST_FILE} (sha256 {str(ha)[:12]}...); asr-compare needs transcripts of the same audio"
            )
        ca, cb = ok_a[k].extra.get("cut_s"), ok_b[k].extra.get("cut_s")
        if ca is not None and cb is not None and not math.isclose(float(ca), float(cb), rel_tol=0, abs_tol=1e-9):
            raise RefusalError(
                f"{tb / ASR_FILE}: sample {k}: transcribed from {cb} s on, {ta / ASR_FILE} from {ca} s on; "
                "asr-compare needs transcripts of the same audio"
            )
    if not common:
        raise RefusalError(f"{ta} and {tb}: no sample was transcribed (status ok) in both trees; nothing to compare")
    rows = [compare_words(k, _words(ta, k), _words(tb, k)) for k in common]
    only_a = [k for k in ok_a if k not in ok_b]
    only_b = [k for k in ok_b if k not in ok_a]
    return Comparison(ta, tb, name_a, name_b, rows, only_a, only_b,
                      (asr_component(be_a, "a"), asr_component(be_b, "b")))


def _ms(x: float | None, signed: bool = True) -> str:
    return "—" if x is None else (f"{x * 1000:+.1f}" if signed else f"{x * 1000:.1f}")


def render(cmp: Comparison, console: Console | None = None, max_rows: int | None = None) -> None:
    """Summary then one row per sample (word edits and first-onset difference B - A in ms)."""
    console = console or Console(width=None if sys.stdout.isatty() else 160)  # piped: wide, not wrapped
    s = cmp.to_json()["summary"]
    f = s["first_onset_diff_s"]
    console.print(
        f"[bold]ASR comparison[/bold]: A = {cmp.backend_a} ({cmp.tree_a}), B = {cmp.backend_b} ({cmp.tree_b})")
    rate = s["word_edits_per_word_a"]
    console.print(
        f"{s['samples']} sample(s) compared; word disagreements in {s['samples_with_word_disagreement']}: "
        f"{s['word_edits']} edits over {s['words_a']} words of A"
        + ("" if rate is None else f" ({rate:.1%})")
        + f"; words in only one of them: {s['words_only_in_a_samples']} (A) / {s['words_only_in_b_samples']} "
          "(B) sample(s)"
    )
    console.print(
        f"first-word onset B - A over {f['n']} sample(s): signed median {_ms(f['signed_median'])} ms, mean "
        f"{_ms(f['mean'])} ms, |diff| median {_ms(f['abs_median'], False)} / p90 {_ms(f['abs_p90'], False)} / max "
        f"{_ms(f['abs_max'], False)} ms; "
        f"matched words: signed median {_ms(s['matched_word_onset_diff_s']['signed_median'])} ms"
    )
    if cmp.only_a or cmp.only_b:
        console.print(f"not compared (transcribed in one tree only): {len(cmp.only_a)} in A, {len(cmp.only_b)} in B")
    t = Table(show_edge=False, pad_edge=False)
    for col in ("sample", "words A", "words B", "edits (S/D/I)", "first onset A s", "first onset B s", "B - A ms"):
        t.add_column(col, no_wrap=True, justify="left" if col == "sample" else "right")
    rows = cmp.rows if max_rows is None else cmp.rows[:max_rows]
    for r in rows:
        al = r.alignment
        t.add_row(
            r.key, str(r.words_a), str(r.words_b), f"{al.edits} ({al.substitutions}/{al.deletions}/{al.insertions})",
            "—" if r.first_a is None else f"{r.first_a:.3f}", "—" if r.first_b is None else f"{r.first_b:.3f}",
            _ms(r.first_onset_diff),
        )
    console.print(t)
    if max_rows is not None and len(cmp.rows) > max_rows:
        console.print(f"... {len(cmp.rows) - max_rows} more sample(s) (--all or --json for every row)")
    console.print(cmp.signature().compact(), markup=False, highlight=False)
