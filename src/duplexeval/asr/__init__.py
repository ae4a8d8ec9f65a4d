"""asr package."""
