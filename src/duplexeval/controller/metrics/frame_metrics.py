"""Frame metrics of spec 002: state macro-F1 and confusion (rows truth, columns prediction, LISTEN/HOLD/SPEAK/
BACKCHANNEL), and ROC-AUC / average precision per head over its valid mask, with positive and masked counts."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from duplexeval.controller.format.data import HEADS, NO_LABEL, STATES, ClipFrames
from duplexeval.jsontypes import JsonObject


class FrameAccumulator:
    """Collects the frames that count (valid and labelled) across clips; ``result()`` computes the metrics."""

    def __init__(self) -> None:
        self.confusion = np.zeros((len(STATES), len(STATES)), dtype=np.int64)
        self.has_states = False
        self.state_frames = 0
        self.state_masked = 0
        self.state_unlabelled = 0
        self.head_scores: dict[str, list[np.ndarray]] = {h: [] for h in HEADS}
        self.head_labels: dict[str, list[np.ndarray]] = {h: [] for h in HEADS}
        self.head_frames = {h: 0 for h in HEADS}
        self.head_masked = {h: 0 for h in HEADS}
        self.head_missing = {h: 0 for h in HEADS}  # clips with a score but no label (or the reverse)

    def add(self, fr: ClipFrames) -> list[list[int]] | None:
        """Add one clip's frames; returns its 4x4 state confusion counts (rows truth), or None without states."""
        cm_rows = None
        if fr.state_probs is not None and fr.truth_state is not None:
            valid = fr.valid("state")
            self.state_frames += fr.n_frames
            self.state_masked += int((~valid).sum())
            labelled = valid & (fr.truth_state != NO_LABEL)
            self.state_unlabelled += int((valid & (fr.truth_state == NO_LABEL)).sum())
            t = fr.truth_state[labelled].astype(np.int64)
            p = np.argmax(fr.state_probs[labelled], axis=1).astype(np.int64)
            k = len(STATES)
            cm = np.bincount(t * k + p, minlength=k * k).reshape(k, k)
            self.confusion += cm
            self.has_states = True
            cm_rows = cm.astype(int).tolist()
        for h in HEADS:
            s, lab = fr.score(h), fr.get(f"label_{h}")
            if s is None and lab is None:
                continue
            if s is None or lab is None:
                self.head_missing[h] += 1
                continue
            valid = fr.valid(h)
            self.head_frames[h] += fr.n_frames
            self.head_masked[h] += int((~valid).sum())
            # full precision, as the replay uses it: a float32 cast would turn distinct float64 scores into ties
            self.head_scores[h].append(np.asarray(s, dtype=np.float64)[valid])
            self.head_labels[h].append(np.asarray(lab, dtype=bool)[valid])
        return cm_rows

    def result(self) -> JsonObject:
        """The frame-metric report section."""
        from sklearn.metrics import average_precision_score, roc_auc_score

        out: JsonObject = {}
        if self.has_states:
            cm = self.confusion
            scored = int(cm.sum())
            tp = np.diagonal(cm).astype(float)
            den = (cm.sum(axis=1) + cm.sum(axis=0)).astype(float)
            per = np.where(den > 0, 2 * tp / np.where(den > 0, den, 1.0), 0.0)
            out["state"] = {
                "order": list(STATES),
                "frames": self.state_frames,
                "masked": self.state_masked,
                "unlabelled": self.state_unlabelled,
                "scored": scored,
                "macro_f1": float(per.mean()) if scored else None,
                "f1": {s: (float(v) if scored else None) for s, v in zip(STATES, per)},
                "support": {s: int(cm[k].sum()) for k, s in enumerate(STATES)},
                "confusion": {"rows": "truth", "columns": "prediction", "matrix": cm.astype(int).tolist()},
                "note": "F1 = 2TP / (2TP + FP + FN) per class from the summed confusion (scikit-learn's value); "
                "a class absent from both truth and prediction counts as 0",
            }
        else:
            out["state"] = None
        for h in HEADS:
            if not self.head_scores[h]:
                out[h] = None if not self.head_missing[h] else {"reason": f"{self.head_missing[h]} clip(s) have a "
                                                                          "score or a label but not both"}
                continue
            s = np.concatenate(self.head_scores[h])
            y = np.concatenate(self.head_labels[h])
            pos = int(y.sum())
            row: JsonObject = {
                "frames": self.head_frames[h],
                "masked": self.head_masked[h],
                "scored": int(y.size),
                "positives": pos,
                "negatives": int(y.size - pos),
                "roc_auc": None,
                "average_precision": None,
                "reason": None,
                "clips_missing_score_or_label": self.head_missing[h],
            }
            if y.size == 0:
                row["reason"] = "no valid frames"
            elif pos == 0 or pos == y.size:
                row["reason"] = "only one class among valid frames: ROC-AUC and AP undefined"
            else:
                row["roc_auc"] = float(roc_auc_score(y, s))
                row["average_precision"] = float(average_precision_score(y, s))
            out[h] = row
        return out


def macro_f1_from_confusion(cm: np.ndarray) -> np.ndarray:
    """Macro-F1 from (..., 4, 4) confusion counts (rows truth): mean of 2TP / (row + column), 0 where both are 0;
    NaN where the matrix is empty. Same value as scikit-learn's f1_score(average=None, zero_division=0) mean."""
    cm = np.asarray(cm, dtype=np.float64)
    tp = np.diagonal(cm, axis1=-2, axis2=-1)
    den = cm.sum(axis=-1) + cm.sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(den > 0, 2 * tp / np.where(den > 0, den, 1.0), 0.0)
    total = cm.sum(axis=(-2, -1))
    return np.where(total > 0, f1.mean(axis=-1), np.nan)


def frame_metrics(frames: Iterable[ClipFrames]) -> JsonObject:
    """Frame metrics over clips."""
    acc = FrameAccumulator()
    for fr in frames:
        acc.add(fr)
    return acc.result()
