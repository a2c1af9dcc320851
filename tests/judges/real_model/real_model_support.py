"""What the real-model judge tests share: twenty small RAG samples (question, answer,
context documents), how many are graded, and the judge model on the session's server.

``$GRADEWIRE_REAL_MODEL_SAMPLES`` sets how many samples a judge grades (default 6: the lane
runs on one worker, every sample is one to a dozen model calls on a server that answers
one at a time, and the parsing itself is covered against recorded and faked answers
elsewhere; set 50 for a closer look at a judge's parse rate).
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Awaitable
from typing import Any, TypeVar

import gradewire as gw

N = int(os.environ.get("GRADEWIRE_REAL_MODEL_SAMPLES", "6"))
NEEDED = min(N - 1, math.ceil(0.95 * N))  # one error allowed up to 20 samples, 5% beyond
# Generous: a call takes 0.3-3 s on a quiet machine, far more on a loaded one; a hang
# would take forever.
DEADLINE = 180.0 * N

T = TypeVar("T")


def samples() -> list[gw.StringThread]:
    """N samples, the documents in their metadata."""
    return [
        gw.StringThread([("user", question), ("assistant", answer)], metadata={"documents": docs})
        for question, answer, docs in (SAMPLES * (N // len(SAMPLES) + 1))[:N]
    ]


async def within_deadline(work: Awaitable[T]) -> T:
    """``work``, failed after ``DEADLINE`` seconds (a hang, not a slow machine)."""
    return await asyncio.wait_for(work, DEADLINE)


def judge_model(url: str, **options: Any) -> gw.OpenAIChatModel:
    """The judge's model on the server at ``url``, at its defaults but the timeout.

    The per-attempt timeout is raised: a machine shared with other work can make a 1 s
    call take a minute.
    """
    options.setdefault("attempt_timeout", 300.0)
    return gw.OpenAIChatModel("smollm2", base_url=url, **options)


SAMPLES = [
    (
        "What is the capital of France?",
        "The capital of France is Paris.",
        ["Paris is the capital and largest city of France.", "France is in Western Europe."],
    ),
    (
        "Who wrote Hamlet?",
        "Hamlet was written by Charles Dickens in 1850.",
        ["Hamlet is a tragedy written by William Shakespeare around 1600."],
    ),
    (
        "How many legs does a spider have?",
        "Spiders have eight legs.",
        ["Spiders are arachnids with eight legs.", "Insects have six legs."],
    ),
    ("What is 12 times 12?", "12 times 12 is 144.", ["Multiplication tables list 12 x 12 = 144."]),
    (
        "What gas do plants absorb?",
        "Plants absorb carbon dioxide from the air for photosynthesis.",
        ["During photosynthesis plants take in carbon dioxide and release oxygen."],
    ),
    (
        "When did World War II end?",
        "It ended in 1945.",
        ["World War II ended in 1945 with the surrender of Japan.", "The war began in 1939."],
    ),
    (
        "What is the boiling point of water at sea level?",
        "Water boils at 50 degrees Celsius.",
        ["At sea level water boils at 100 degrees Celsius."],
    ),
    (
        "Who painted the Mona Lisa?",
        "Leonardo da Vinci painted the Mona Lisa.",
        ["The Mona Lisa is a portrait by Leonardo da Vinci.", "It hangs in the Louvre."],
    ),
    (
        "What is the largest planet?",
        "Jupiter is the largest planet in the solar system.",
        ["Jupiter is the largest planet of the solar system.", "Saturn has rings."],
    ),
    (
        "How do I reset my password?",
        "Click 'Forgot password' on the login page and follow the email link.",
        [
            "To reset a password, use the Forgot password link on the login page.",
            "Our office is open 9 to 5.",
        ],
    ),
    (
        "What is the speed of light?",
        "About 300,000 kilometres per second.",
        ["Light travels at about 299,792 kilometres per second in a vacuum."],
    ),
    (
        "What language is spoken in Brazil?",
        "People in Brazil speak Spanish.",
        ["The official language of Brazil is Portuguese."],
    ),
    (
        "What is DNA?",
        "DNA is the molecule that carries genetic information in living things.",
        ["Deoxyribonucleic acid (DNA) carries the genetic instructions of organisms."],
    ),
    (
        "How many continents are there?",
        "There are seven continents.",
        ["Most conventions count seven continents.", "Antarctica is the coldest continent."],
    ),
    (
        "What is the chemical symbol for gold?",
        "The symbol for gold is Au.",
        ["Gold has the chemical symbol Au, from the Latin aurum."],
    ),
    (
        "Who was the first person on the Moon?",
        "Neil Armstrong, in 1969.",
        ["Neil Armstrong was the first person to walk on the Moon, on 20 July 1969."],
    ),
    (
        "What is the tallest mountain?",
        "Mount Everest is the tallest mountain above sea level.",
        ["Mount Everest rises 8,849 metres above sea level."],
    ),
    (
        "How long is a marathon?",
        "A marathon is 10 kilometres long.",
        ["The marathon distance is 42.195 kilometres."],
    ),
    (
        "What do bees make?",
        "Bees make honey and beeswax.",
        ["Honey bees produce honey and beeswax.", "Bees pollinate flowers."],
    ),
    (
        "What is the freezing point of water?",
        "Water freezes at 0 degrees Celsius.",
        ["Pure water freezes at 0 degrees Celsius at standard pressure."],
    ),
]
