"""Backend `faster-whisper`: any local CTranslate2 Whisper model directory, with Whisper's own word times.

Same VAD regions and decoding options as `whisper-align`, without the aligner (`--backend faster-whisper:model=DIR`;
the bundled tiny.en when omitted). Whisper's word starts run late (see benchmarks/README.md), so
prefer `whisper-align` for latency metrics and use this for a bigger model's words.
"""

from __future__ import annotations

from duplexeval.asr.whisper_align import WhisperAlignBackend


class FasterWhisperBackend(WhisperAlignBackend):
    """Whisper words and times in VAD regions, from a local model directory."""

    name = "faster-whisper"
    align = False
