"""FDB-v1.0-shaped stimuli from a small YAML/JSON script, spoken by espeak-ng with exact word times.

Layouts, annotation rules and the tasks' files beside the samples are documented in docs/synth.md.
Every speech part is trimmed to its voiced extent (first word start to last word end), so requested
silences are exact and every annotation time is a true word time. Same script + same espeak-ng
version give the same bytes; the built-in demo set is cached under that key.

One module per step: `parse` (script), `render` (one sample: the lead and tail silences around the task's
recipe, `fdb.tasks.<task>.synth`), `write` (the dataset folder), `cache` (the demo set). The names below are the
package's API.
"""

from __future__ import annotations

from duplexeval.fdb.synth.cache import DEMO_SCRIPT, cache_dir, demo_key, ensure_demo
from duplexeval.fdb.synth.parse import DEFAULT_VOICE, Script, load_script, parse_script
from duplexeval.fdb.synth.render import (
    RenderedSample,
    SampleTiming,
    Timeline,
    Utterance,
    place_parts,
    render_sample,
    speak,
)
from duplexeval.fdb.synth.write import (
    DATASET_FILE,
    SYNTH_KIND,
    SYNTH_VERSION,
    TRANSCRIPTION_FILE,
    generator_info,
    result_hash,
    synthesize_dataset,
    up_to_date,
    verify,
)
from duplexeval.units import (
    SAMPLE_RATE as SR,  # the old module-level name, kept for callers
)

__all__ = [
    "DATASET_FILE",
    "DEFAULT_VOICE",
    "DEMO_SCRIPT",
    "SR",
    "SYNTH_KIND",
    "SYNTH_VERSION",
    "TRANSCRIPTION_FILE",
    "RenderedSample",
    "SampleTiming",
    "Script",
    "Timeline",
    "Utterance",
    "cache_dir",
    "demo_key",
    "ensure_demo",
    "generator_info",
    "load_script",
    "parse_script",
    "place_parts",
    "render_sample",
    "result_hash",
    "speak",
    "synthesize_dataset",
    "up_to_date",
    "verify",
]
