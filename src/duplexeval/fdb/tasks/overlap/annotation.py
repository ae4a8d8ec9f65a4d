"""metadata.json: the typed annotation of a v1.5 sample (the overlap window), its dataset checks and the sample's
files (two inputs played in two sessions, four transcripts, the official rules' per-sample evidence)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from duplexeval.errors import InputError
from duplexeval.fdb.dataset import TIME_TOLERANCE_S  # the overlap's end may overshoot T by this much, as in v1.0
from duplexeval.fdb.tasks.base import ASR, DATASET, EVALUATE, EXPORT, DatasetRules, SampleFile, SampleLayout
from duplexeval.schemas.base import OpenRecord, Time
from duplexeval.schemas.fdb_names import INPUT_WAV, OUTPUT_JSON, OUTPUT_WAV

NAME = "overlap"
RELEASE = "fdb-v1.5"
V15_DIR = "v1_5"  # the published archive's top folder
METADATA_FILE = "metadata.json"
INPUT_FILE = INPUT_WAV
CLEAN_INPUT_FILE = "clean_input.wav"
CLEAN_OUTPUT_WAV = "clean_output.wav"
CLEAN_OUTPUT_JSON = "clean_output.json"
INPUT_JSON = "input.json"
CLEAN_INPUT_JSON = "clean_input.json"
TAG_FILE = "content_tag.json"
SPLIT_FILE = "general_split.json"
INTERVALS_FILE = "latency_intervals.json"


class Metadata(OpenRecord):
    """metadata.json: the conversation's earlier text, the focal turn's text and the overlap [start, end] in s."""

    context_text: str
    current_turn_text: str
    timestamps: Annotated[list[Time], Field(min_length=2, max_length=2)]
    file: ClassVar[str] = METADATA_FILE

    @property
    def start(self) -> float:
        return float(self.timestamps[0])

    @property
    def end(self) -> float:
        return float(self.timestamps[1])


def check_window(md: Metadata, T: float, where: str) -> Metadata:
    """The overlap window inside input.wav (length T s, with the published files' tolerance); InputError naming
    `where`."""
    a, b = md.start, md.end
    if a < 0:
        raise InputError(f"{where}: overlap starts before 0 (timestamps {md.timestamps!r})")
    if a > b:
        raise InputError(f"{where}: overlap start {a} is after its end {b}")
    if b > T + TIME_TOLERANCE_S:
        raise InputError(f"{where}: overlap ends at {b} s, after the end of input.wav (T = {T:.6f} s)")
    return md


class OverlapChecks(DatasetRules):
    """The overlap window against input.wav; subsets under the dataset root or its `v1_5/` folder."""

    release = RELEASE
    folders = (V15_DIR,)

    def check_annotation(self, record: Any, T: float, where: str) -> None:
        check_window(record, T, where)


# What one sample holds, and which stage makes each file (the official per-sample layout plus our records).
LAYOUT = SampleLayout((
    SampleFile(METADATA_FILE, DATASET),
    SampleFile(INPUT_FILE, DATASET),  # the two inputs, byte for byte: the ASR stage and get_timing.py read them
    SampleFile(CLEAN_INPUT_FILE, DATASET),
    SampleFile(OUTPUT_WAV, EXPORT, INPUT_FILE),
    SampleFile(CLEAN_OUTPUT_WAV, EXPORT, CLEAN_INPUT_FILE),
    SampleFile(INPUT_JSON, ASR, INPUT_FILE),
    SampleFile(CLEAN_INPUT_JSON, ASR, CLEAN_INPUT_FILE),
    SampleFile(OUTPUT_JSON, ASR, OUTPUT_WAV),
    SampleFile(CLEAN_OUTPUT_JSON, ASR, CLEAN_OUTPUT_WAV),
    SampleFile(TAG_FILE, EVALUATE),
    SampleFile(SPLIT_FILE, EVALUATE),
    SampleFile(INTERVALS_FILE, EVALUATE),
))
