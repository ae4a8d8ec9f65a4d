"""espeak-ng speech with exact word times: shape, the word-time rule, determinism, thread safety."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest

from duplexeval.errors import InputError
from duplexeval.tts import SpokenWord, espeak_version, synthesize, word_times

TEXT = "Hello there, how are you doing today? It costs 25 dollars."


def test_version_is_recorded():
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?.*", espeak_version())


def test_shape_and_words():
    sp = synthesize(TEXT)
    assert sp.sample_rate == 16000
    assert sp.audio.dtype == np.float32 and sp.audio.ndim == 1
    assert 2.0 < sp.duration_s < 8.0
    assert [w.text for w in sp.words] == ["Hello", "there", "how", "are", "you", "doing", "today", "It", "costs", "25",
                                          "dollars"]
    prev_end = 0.0
    for w in sp.words:
        assert w.exact
        assert prev_end <= w.start_s < w.end_s <= sp.duration_s + 1e-6
        prev_end = w.end_s


def test_word_times_bound_the_voiced_audio():
    """Between words that espeak separates by a pause the 16 kHz audio is (near) silent; inside words it is not."""
    sp = synthesize(TEXT)
    a = np.abs(sp.audio)
    sr = sp.sample_rate
    # The sentence gap between "today" and "It" (and the clause gap after "there").
    for left, right in ((sp.words[6], sp.words[7]), (sp.words[1], sp.words[2])):
        gap = a[int((left.end_s + 0.003) * sr) : int((right.start_s - 0.003) * sr)]
        assert right.start_s - left.end_s > 0.05
        assert gap.size > 0 and gap.max() < 2e-3
    for w in sp.words:
        seg = a[int(w.start_s * sr) : int(w.end_s * sr)]
        assert seg.max() > 0.02, w
    # Nothing audible after the last word, nothing before the first.
    assert a[int((sp.words[-1].end_s + 0.003) * sr) :].max(initial=0.0) < 2e-3
    assert a[: max(int((sp.words[0].start_s - 0.003) * sr), 0)].max(initial=0.0) < 2e-3


def test_deterministic_across_calls_and_voices():
    a = synthesize(TEXT, voice="en-us", rate=170)
    synthesize("Something else in between.", voice="en-gb", rate=140, pitch=30)
    b = synthesize(TEXT, voice="en-us", rate=170)
    assert a.audio.tobytes() == b.audio.tobytes()
    assert a.words == b.words


def test_voice_rate_and_pitch_matter():
    base = synthesize(TEXT)
    fast = synthesize(TEXT, rate=230)
    other = synthesize(TEXT, voice="en-us+f3")
    gb = synthesize(TEXT, voice="en-gb")
    assert fast.duration_s < 0.85 * base.duration_s
    assert other.audio.tobytes() != base.audio.tobytes()
    assert gb.audio.tobytes() != base.audio.tobytes()
    assert [w.text for w in gb.words] == [w.text for w in base.words]


def test_merged_words_are_marked_inexact():
    """espeak speaks "I am" with a single WORD event; both words share its span, split by characters."""
    sp = synthesize("Yes I am here.")
    words = {w.text: w for w in sp.words}
    assert [w.text for w in sp.words] == ["Yes", "I", "am", "here"]
    assert not words["I"].exact and not words["am"].exact
    assert words["I"].end_s == words["am"].start_s
    assert words["Yes"].exact and words["here"].exact


def test_bad_input():
    with pytest.raises(InputError, match="no voice"):
        synthesize("hello", voice="xx-nonexistent")
    with pytest.raises(InputError, match="empty"):
        synthesize("   ")
    with pytest.raises(InputError, match="rate"):
        synthesize("hello", rate=10)


def test_thread_safe():
    texts = ["One two three.", "Four five six seven.", "Eight nine.", "Ten eleven twelve."]
    serial = [synthesize(t).audio.tobytes() for t in texts]
    out: dict[int, bytes] = {}

    def work(i: int) -> None:
        out[i] = synthesize(texts[i]).audio.tobytes()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [out[i] for i in range(len(texts))] == serial


def test_word_times_rule_known_answer():
    """Pure rule on hand-made audio: spans run to the next event; times are the first/last non-zero sample."""
    sr = 1000
    pcm = np.zeros(1000, dtype=np.int16)
    pcm[110:300] = 5  # word 1 voiced 110..299 (span 100..500, silence after)
    pcm[500:520] = 3  # word 2 "25" voiced in two events' spans
    pcm[700:790] = 4
    pcm[900:950] = 7  # word 3 voiced late inside its span 800..1000
    text = "Hi, 25 go!"
    events = [(1, 1, 100), (5, 3, 500), (1, 5, 500), (1, 6, 700), (1, 9, 800), (5, 11, 1000)]
    got = word_times(text, pcm, events, sr=sr)
    assert got == [
        SpokenWord("Hi", 0.11, 0.3, True),
        SpokenWord("25", 0.5, 0.79, True),
        SpokenWord("go", 0.9, 0.95, True),
    ]


def test_deterministic_across_processes_and_time():
    """espeak-ng seeds its noise from the clock; a variant voice must still give the same bytes later, elsewhere."""
    import hashlib
    import subprocess
    import sys
    import time

    code = (
        "import hashlib; from duplexeval.tts import synthesize; "
        "print(hashlib.sha256(synthesize('Hello there, how are you?', voice='en-us+f3').audio.tobytes()).hexdigest())"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    time.sleep(1.05)
    here = hashlib.sha256(synthesize("Hello there, how are you?", voice="en-us+f3").audio.tobytes()).hexdigest()
    assert here == other


def test_leading_token_without_event_joins_the_next():
    pcm = np.zeros(100, dtype=np.int16)
    pcm[10:40] = 1
    pcm[60:90] = 1
    # "ab cd": only "cd" (position 4) has an event at sample 10; "ef" at 60.
    got = word_times("ab cd ef", pcm, [(1, 4, 10), (1, 7, 60)], sr=100)
    assert [(w.text, w.exact) for w in got] == [("ab", False), ("cd", False), ("ef", True)]
    assert (got[0].start_s, got[1].end_s, got[2].start_s, got[2].end_s) == (0.1, 0.4, 0.6, 0.9)
