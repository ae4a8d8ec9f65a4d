"""Spoken readings of written tokens ("4572", "3.5", "1st", "$10", "25%") for forced alignment.

Whisper writes numbers as digits but the aligner's dictionary only has words, so each written
token gets one or more candidate spoken forms; the aligner picks the one that fits the audio and
the transcript keeps the written form. Small and exact, so written here rather than pulled in.
"""

from __future__ import annotations

import re

__all__ = ["cardinal", "digits", "normalize", "ordinal", "readings"]

_ONES = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = [(10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (1000, "thousand")]
_ORD_IRREGULAR = {
    "one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
    "nine": "ninth", "twelve": "twelfth",
}
_SYMBOL_WORDS = {"&": ["and"], "+": ["plus"], "=": ["equals"], "@": ["at"]}
_STRIP = "\"“”‘’«»()[]{}<>,.;:!?…—–*_`~^|\\/"


def cardinal(n: int) -> list[str]:
    """English cardinal words for a non-negative integer ("one hundred twenty three")."""
    if n < 0:
        return ["minus", *cardinal(-n)]
    if n < 20:
        return [_ONES[n]]
    if n < 100:
        t, o = divmod(n, 10)
        return [_TENS[t]] + ([_ONES[o]] if o else [])
    if n < 1000:
        h, rest = divmod(n, 100)
        return [_ONES[h], "hundred"] + (cardinal(rest) if rest else [])
    for value, name in _SCALES:
        if n >= value:
            q, rest = divmod(n, value)
            return cardinal(q) + [name] + (cardinal(rest) if rest else [])
    raise AssertionError("unreachable")


def ordinal(n: int) -> list[str]:
    """Ordinal words ("twenty first")."""
    words = cardinal(n)
    last = words[-1]
    if last in _ORD_IRREGULAR:
        last = _ORD_IRREGULAR[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last = last + "th"
    return words[:-1] + [last]


def digits(s: str) -> list[str]:
    """Digit-by-digit reading ("four five seven two"), with "oh" never substituted."""
    return [_ONES[int(c)] for c in s if c.isdigit()]


def _year(n: int) -> list[str] | None:
    """Year reading of 1100-1999 and 2010-2099 ("nineteen ninety", "twenty twenty one")."""
    if not (1100 <= n <= 1999 or 2010 <= n <= 2099):
        return None
    hi, lo = divmod(n, 100)
    if lo == 0:
        return cardinal(hi) + ["hundred"]
    return cardinal(hi) + (["oh", _ONES[lo]] if lo < 10 else cardinal(lo))


def _integer_readings(s: str) -> list[list[str]]:
    """Readings of a digit string: cardinal, then year style, then digit by digit (duplicates removed)."""
    out: list[list[str]] = []
    n = int(s)
    if len(s) > 1 and s.startswith("0"):
        out.append(digits(s))
    else:
        out.append(cardinal(n))
        if len(s) == 4:
            y = _year(n)
            if y:
                out.insert(0, y)  # a four-digit number in speech is most often a year
        if len(s) in (3, 4) and n % 100 >= 10:  # "230" read as "two thirty", "1234" as "twelve thirty four"
            out.append(cardinal(n // 100) + cardinal(n % 100))
        if len(s) > 1:
            out.append(digits(s))
    uniq: list[list[str]] = []
    for r in out:
        if r not in uniq:
            uniq.append(r)
    return uniq


def normalize(token: str) -> str:
    """Lower-case a written word and strip surrounding punctuation (apostrophes inside are kept)."""
    t = token.strip().lower().replace("’", "'")
    return t.strip(_STRIP).strip("'").strip(_STRIP)


_NUM = re.compile(r"^(?P<cur>[$£€]?)(?P<int>\d[\d,]*)(?:\.(?P<frac>\d+))?(?P<suf>%|st|nd|rd|th|s|k)?$")


def readings(token: str) -> list[list[str]]:
    """Candidate spoken word sequences for one written token; [] when it has nothing to pronounce."""
    t = normalize(token)
    if not t:
        return []
    if t in _SYMBOL_WORDS:
        return [list(_SYMBOL_WORDS[t])]
    if ":" in t and re.fullmatch(r"\d{1,2}:\d{2}", t):  # clock time "2:30"
        hours, minutes = t.split(":")
        return _clock(hours, minutes)
    m = _NUM.match(t)
    if m:
        whole = m.group("int").replace(",", "")
        base = _integer_readings(whole)
        frac = m.group("frac")
        if frac:
            base = [b + ["point"] + digits(frac) for b in base[:1]]
            if len(frac) == 2 and int(frac) < 60 and int(whole) <= 23 and not m.group("cur") and not m.group("suf"):
                base += _clock(whole, frac)  # Whisper writes a spoken "seven fifteen" as "7.15" too
        suf = m.group("suf")
        if suf in ("st", "nd", "rd", "th"):
            base = [ordinal(int(whole))]
        elif suf == "s":  # "1990s" -> "nineteen nineties"
            base = [b[:-1] + [_plural(b[-1])] for b in base]
        elif suf == "k":
            base = [b + ["thousand"] for b in base[:1]]
        elif suf == "%":
            base = [b + ["percent"] for b in base]
        cur = m.group("cur")
        if cur:
            unit = {"$": "dollars", "£": "pounds", "€": "euros"}[cur]
            if frac and len(frac) == 2 and not suf:  # "$4,572.30": "... dollars and thirty cents" first
                whole_r = _integer_readings(whole)[0]
                sub = ["pence" if cur == "£" else "cents"]
                base = [whole_r + [unit, "and"] + cardinal(int(frac)) + sub,
                        whole_r + [unit] + cardinal(int(frac)) + sub] + [b + [unit] for b in base]
            else:
                base = [b + [unit] for b in base]
        return base
    # Hyphenated and slashed compounds are read part by part ("twenty-one", "and/or").
    parts = [p for p in re.split(r"[-/]", t) if p]
    if len(parts) > 1:
        seq: list[str] = []
        for p in parts:
            r = readings(p)
            if not r:
                continue
            seq.extend(r[0])
        return [seq] if seq else []
    if re.search(r"\d", t):  # mixed letters and digits ("mp3", "14b"): letters as is, digits as a number
        seq = []
        for chunk in re.findall(r"\d+|[a-z']+", t):
            seq.extend(_integer_readings(chunk)[0] if chunk[0].isdigit() else [chunk])
        return [seq]
    return [[t]]


def _clock(h: str, m: str) -> list[list[str]]:
    """Readings of a clock time h:m ("two thirty", "two o'clock", "nine oh five")."""
    mins = [] if m == "00" else (["oh", _ONES[int(m)]] if m.startswith("0") else cardinal(int(m)))
    hour = cardinal(int(h))
    return [hour + mins] if mins else [hour + ["o'clock"], hour]


def _plural(word: str) -> str:
    if word.endswith("y"):
        return word[:-1] + "ies"
    if word.endswith("x"):
        return word + "es"
    return word + "s"
