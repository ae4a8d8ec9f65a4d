"""The built-in case set: a deterministic generator from templates (ours, not the paper's
duplex-dialogue-3k, which is not public).

MiU cases are of three kinds: ``error`` (a clause states an obvious factual error: cutting in from
that clause on is appropriate, a good reply names the right fact), ``informative`` (the request is
complete early and the rest is filler: cutting in after the request is appropriate) and
``complete`` (the point comes at the end: a mid-utterance cut-in is never appropriate). UiM cases
give the four interruption reasons with several phrasings each. Speech is laid on the clock at two
words per 640 ms ASR chunk, so chunk ends fall on the ASR ticks.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from duplexeval.artifacts import header
from duplexeval.dialogue.cases import (
    REASONS,
    Chunk,
    Interruption,
    MiUCase,
    MiUExpected,
    Turn,
    UiMCase,
    UiMExpected,
)
from duplexeval.dialogue.load import CASESET_KIND, CASESET_SCHEMA, case_to_json
from duplexeval.errors import InputError
from duplexeval.jsonio import dumps_line
from duplexeval.jsontypes import JsonObject
from duplexeval.progress import progress_bar
from duplexeval.reruns import check_replace, read_header

GENERATOR = "duplexeval-synth-1"
CHUNK_S = 0.64
WORDS_PER_CHUNK = 2
DEFAULT_MIU = 400
DEFAULT_UIM_PER_REASON = 100
MAX_CASES = 100_000  # in one set: ~100 MB and ~2.5 min to make (the paper's set has 3,000)

# (wrong clause, words a correct reply names)
ERRORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("since the sun always rises in the west", ("east",)),
    ("because water boils at fifty degrees at sea level", ("hundred", "100")),
    ("since Paris is the capital of Germany", ("France", "Berlin")),
    ("because a week has ten days", ("seven",)),
    ("since spiders have six legs", ("eight",)),
    ("because the moon is bigger than the earth", ("smaller",)),
    ("since penguins all live at the north pole", ("south", "Antarctica")),
    ("because Christmas is always in July", ("December",)),
    ("since a triangle has four sides", ("three",)),
    ("because people have three lungs", ("two",)),
    ("since the Pacific is the smallest ocean", ("largest", "biggest")),
    ("because ice is heavier than water", ("lighter", "floats")),
    ("since there are thirty hours in a day", ("twenty-four", "24")),
    ("because everyone knows fish breathe air with lungs", ("gills",)),
    ("since a year has nine months", ("twelve", "12")),
    ("because Mount Everest is in Brazil", ("Nepal", "Himalaya", "Himalayas")),
    ("since bananas grow underground like potatoes", ("trees", "plants")),
    ("because sound travels faster than light", ("slower",)),
    ("since the heart is in your foot", ("chest",)),
    ("because cats are definitely a kind of bird", ("mammal", "mammals")),
    ("since the Nile is in Australia", ("Africa", "Egypt")),
    ("because an octopus has two arms", ("eight",)),
    ("since January comes right after March", ("December", "February")),
    ("because metal never conducts electricity", ("conducts", "does")),
)
LEADS: tuple[tuple[str, ...], ...] = (
    ("I want to plan a trip to the beach",),
    ("so I was telling my kids this morning",),
    ("okay quick question for you",),
    ("I am writing a short quiz for school",),
    ("my friend and I were arguing earlier",),
    ("I am making notes for a science class", "and I wrote down"),
    ("let me think about this for a second",),
)
TAILS: tuple[tuple[str, ...], ...] = (
    ("so can you help me explain that", "in simple words"),
    ("and I want to use it in my talk tomorrow",),
    ("so what should I tell them",),
    ("can you give me a fun fact about it",),
    ("and I need a short summary", "for the first slide"),
)
# (request clause, reply cues, filler clauses)
INFORMATIVE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("can you set a timer for ten minutes", ("timer", "ten")),
    ("please call my sister Anna", ("Anna",)),
    ("what is the weather in Denver today", ("Denver", "weather")),
    ("play some jazz music in the kitchen", ("jazz",)),
    ("book a table for four at seven", ("table", "four", "seven")),
    ("remind me to buy milk tonight", ("milk",)),
    ("how do I say thank you in Spanish", ("gracias", "Spanish")),
    ("turn off the lights in the bedroom", ("lights",)),
    ("what time does the pharmacy close", ("pharmacy",)),
    ("add eggs to my shopping list", ("eggs",)),
)
FILLERS: tuple[tuple[str, ...], ...] = (
    ("so that I um don't forget", "because I always forget things like that"),
    ("if that is okay with you", "I mean whenever you get a chance"),
    ("you know like we did last week", "it was really helpful"),
    ("thanks a lot", "I really appreciate it"),
    ("because last time I totally missed it", "and that was not great"),
)
# (clauses, reply cues): the point comes only in the last clause
COMPLETE: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("before I book anything", "I need to know", "what the weather will be like in Lisbon"), ("Lisbon",)),
    (("I have eggs and flour", "and some butter", "what dessert can I make with that"),
     ("cake", "cookies", "pancakes")),
    (("my train leaves at noon", "and the trip takes two hours", "so when do I arrive"), ("two", "2")),
    (("I never know this one", "but if I have three apples and eat one", "how many are left"), ("two", "2")),
    (("we are six people", "and each pizza feeds two of us", "how many pizzas should I order"), ("three", "3")),
    (("I run every morning", "and I want to start a new plan", "should I run longer or faster"), ("longer", "faster")),
    (("the meeting is on Friday", "but my boss asked me to move it", "what day would you suggest instead"),
     ("Monday", "Thursday", "day")),
    (("I have a cold", "and I cannot sleep at all", "what can I drink before bed"), ("tea", "water")),
)
CONTEXTS: tuple[tuple[str, str], ...] = (
    ("Hi there", "Hello! How can I help you today?"),
    ("Can you help me with something", "Of course. What do you need?"),
    ("Good morning", "Good morning! What can I do for you?"),
    ("Are you there", "Yes, I'm listening."),
)

# UiM: machine utterances with an entity the user may deny, (clauses, entity, alternatives)
MACHINE: tuple[tuple[tuple[str, ...], str, tuple[str, ...]], ...] = (
    (("Your flight to Boston leaves at nine in the morning", "and you should be at the airport two hours early",
      "so plan to leave home around six"), "Boston", ("Austin", "Houston")),
    (("I booked a table for four people at eight tonight", "at the Italian place on Main Street",
      "and they asked you to arrive on time"), "four", ("two", "six")),
    (("To make the soup you first chop two onions", "then fry them in butter for five minutes",
      "and after that you add the stock"), "onions", ("carrots", "leeks")),
    (("Tomorrow in Chicago it will be sunny and warm", "with a high of about twenty five degrees",
      "and a light wind in the afternoon"), "Chicago", ("Detroit", "Denver")),
    (("Your meeting with Sarah is set for Tuesday", "in the small room on the third floor",
      "and it should take about an hour"), "Tuesday", ("Thursday", "Wednesday")),
    (("The train to Paris departs from platform six", "and the journey takes a little over two hours",
      "so you will arrive just after lunch"), "Paris", ("Brussels", "London")),
    (("I have set your alarm for seven tomorrow", "and the coffee machine will start at a quarter past",
      "so everything is ready when you get up"), "seven", ("six", "eight")),
    (("The nearest pharmacy is on Oak Street", "about ten minutes away on foot",
      "and it stays open until nine tonight"), "Oak", ("Elm", "Pine")),
)
NOISE: tuple[str, ...] = (
    "honey dinner is ready in five minutes",
    "did you see the game last night",
    "no way that was a goal",
    "the bus is late again today",
    "can somebody let the dog out",
    "what time does the shop open",
    "hmm where did I put my keys",
    "turn that music down a bit please",
)
DENIAL: tuple[str, ...] = (
    "no no I said {alt} not {ent}",
    "wait that is wrong it is {alt}",
    "not {ent} I meant {alt}",
    "no it should be {alt}",
)
AFFIRMATION: tuple[str, ...] = (
    "yes exactly",
    "right that sounds perfect",
    "yeah great that works for me",
    "mm hmm yes that is right",
)
ACK_CUES = ("great", "glad", "good", "sure", "okay", "ok", "perfect", "thanks", "wonderful")
SHIFT: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("hold on what is the weather like in {city} tomorrow", ("{city}", "weather")),
    ("actually can you tell me how to get to the {place}", ("{place}",)),
    ("sorry different question how tall is the {landmark}", ("{landmark}", "tall")),
    ("wait before that can you remind me to call {person}", ("{person}",)),
)
CITIES = ("Madrid", "Oslo", "Seattle", "Dublin", "Toronto", "Nairobi")
PLACES = ("museum", "stadium", "library", "harbour", "zoo")
LANDMARKS = ("Eiffel Tower", "Big Ben", "Space Needle", "Leaning Tower")
PEOPLE = ("Maria", "David", "Grandma", "Tom", "Priya")


def _chunks(clauses: tuple[str, ...] | list[str], start_s: float = 0.0) -> tuple[list[Chunk], list[int]]:
    """Lay clauses on the clock, two words per 640 ms chunk; returns chunks and clause-end indices."""
    chunks: list[Chunk] = []
    boundaries: list[int] = []
    k = 0
    for clause in clauses:
        words = clause.split()
        for i in range(0, len(words), WORDS_PER_CHUNK):
            s = round(start_s + k * CHUNK_S, 6)
            chunks.append(Chunk(text=" ".join(words[i : i + WORDS_PER_CHUNK]), start_s=s, end_s=round(s + CHUNK_S, 6)))
            k += 1
        boundaries.append(len(chunks) - 1)
    return chunks, boundaries


def _context(rng: random.Random) -> list[Turn]:
    u, a = rng.choice(CONTEXTS)
    return [Turn(role="user", text=u), Turn(role="assistant", text=a)]


def make_miu(rng: random.Random, i: int) -> MiUCase:
    """One MiU case: 60% error, 25% informative, 15% complete."""
    r = rng.random()
    if r < 0.60:
        wrong, cues = rng.choice(ERRORS)
        lead, tail = rng.choice(LEADS), rng.choice(TAILS)
        clauses = (*lead, wrong, *tail)
        cut, kind = len(lead), "error"
    elif r < 0.85:
        req, cues = rng.choice(INFORMATIVE)
        filler = rng.choice(FILLERS)
        clauses = (req, *filler)
        cut, kind = 0, "informative"
    else:
        tup, cues = rng.choice(COMPLETE)
        clauses, cut, kind = tup, None, "complete"
    chunks, boundaries = _chunks(clauses)
    return MiUCase(
        family="MiU", id=f"miu-{i:04d}", context=_context(rng), chunks=chunks, boundaries=boundaries,
        expected=MiUExpected(cut_in_from=cut, reply_cues=list(cues), kind=kind), source=GENERATOR,
    )


def make_uim(rng: random.Random, reason: str, i: int) -> UiMCase:
    """One UiM case of `reason`: the user cuts in part-way through the machine's utterance."""
    clauses, ent, alts = rng.choice(MACHINE)
    machine, _ = _chunks(clauses)
    # cut in at a chunk start in the middle 60% of the utterance
    lo, hi = max(1, len(machine) // 5), max(1, (len(machine) * 4) // 5)
    at = machine[rng.randrange(lo, hi)].start_s
    cues: tuple[str, ...]
    if reason == "noise":
        text, behaviour, cues = rng.choice(NOISE), "continue", ()
    elif reason == "denial":
        alt = rng.choice(alts)
        text, behaviour, cues = rng.choice(DENIAL).format(alt=alt, ent=ent), "yield", (alt,)
    elif reason == "affirmation":
        text, behaviour, cues = rng.choice(AFFIRMATION), "acknowledge", ACK_CUES
    else:
        tmpl, tcues = rng.choice(SHIFT)
        fill = {"city": rng.choice(CITIES), "place": rng.choice(PLACES), "landmark": rng.choice(LANDMARKS),
                "person": rng.choice(PEOPLE)}
        text, behaviour, cues = tmpl.format(**fill), "yield", tuple(c.format(**fill) for c in tcues)
    inter, _ = _chunks([text], at)
    return UiMCase(
        family="UiM", id=f"uim-{reason}-{i:04d}", context=_context(rng), machine=machine,
        interruption=Interruption(reason=reason, chunks=inter),  # type: ignore[arg-type]
        expected=UiMExpected(behaviour=behaviour, reply_cues=list(cues)),  # type: ignore[arg-type]
        source=GENERATOR,
    )


def check_counts(n_miu: int, n_uim: int) -> None:
    """The set's size: counts >= 0, not both 0, at most MAX_CASES cases in all (about 1 KB and 1.5 ms each)."""
    if n_miu < 0 or n_uim < 0 or n_miu + n_uim == 0:
        raise InputError(f"--n-miu and --n-uim must be non-negative and not both 0, got {n_miu} and {n_uim}")
    total = n_miu + len(REASONS) * n_uim
    if total > MAX_CASES:
        raise InputError(f"--n-miu {n_miu} and --n-uim {n_uim} make {total:,} cases ({n_miu:,} MiU + {len(REASONS)} x "
                         f"{n_uim:,} UiM); at most {MAX_CASES:,} are made in one set")


def generate(seed: int = 0, n_miu: int = DEFAULT_MIU, n_uim: int = DEFAULT_UIM_PER_REASON,
             advance: Callable[[], None] | None = None) -> list[MiUCase | UiMCase]:
    """`n_miu` MiU cases, then `n_uim` UiM cases per reason; the same seed gives the same cases. `advance` is
    called after each case (a progress bar)."""
    check_counts(n_miu, n_uim)
    tick = advance or (lambda: None)
    rng = random.Random(seed)
    cases: list[MiUCase | UiMCase] = []
    for i in range(n_miu):
        cases.append(make_miu(rng, i))
        tick()
    for reason in REASONS:
        for i in range(n_uim):
            cases.append(make_uim(rng, reason, i))
            tick()
    return cases


def caseset_header(seed: int, n_miu: int, n_uim: int) -> JsonObject:
    """The header line of a generated case file: what made it (ours, not the paper's data)."""
    return {
        **header(CASESET_KIND, CASESET_SCHEMA),
        "generator": GENERATOR,
        "seed": seed,
        "n_miu": n_miu,
        "n_uim_per_reason": n_uim,
        "note": "built-in synthetic cases made by duplexeval from templates; not the paper's duplex-dialogue-3k",
    }


def caseset_text(seed: int = 0, n_miu: int = DEFAULT_MIU, n_uim: int = DEFAULT_UIM_PER_REASON,
                 progress: bool = False) -> str:
    """The JSONL text of a generated case set (header line, then one case per line); `progress`: a bar on stderr."""
    check_counts(n_miu, n_uim)
    with progress_bar(n_miu + len(REASONS) * n_uim, "synth", progress) as advance:
        cases = generate(seed, n_miu, n_uim, advance)
    lines = [dumps_line(caseset_header(seed, n_miu, n_uim))]
    lines.extend(dumps_line(case_to_json(c)) for c in cases)
    return "".join(lines)


def caseset_identity(head: Mapping[str, Any]) -> JsonObject:
    """A case set's header in the shape `duplexeval.reruns` compares: the generator and its settings."""
    if not head:
        return {}
    settings = {k: head.get(k) for k in ("seed", "n_miu", "n_uim_per_reason")}
    return {"kind": head.get("kind"), "signature": {"definitions": head.get("generator"),
                                                    "components": [{"name": "synth", "settings": settings}]}}


def check_caseset_out(path: Path, head: Mapping[str, Any], force: bool) -> None:
    """Before generating: refuse to replace a case set made with another seed or size (or a file that is not one)
    unless `force`; `head` is the new set's `caseset_header`."""
    old = read_header(path)
    if old is not None:
        check_replace(path, caseset_identity(head), force, old=caseset_identity(old))
