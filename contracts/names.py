"""Look-alike names: a tool name's skeleton, and the characters no name may hold because nobody can see them.

Two names an agent (or a person reading a reply) cannot tell apart are one name to them: ``send_email`` and
``ѕend_email`` (a Cyrillic ``ѕ``), ``ｓend_email`` (full width), ``send_email`` with a zero-width joiner inside. A
name's skeleton (the idea of Unicode TR39's, with a compact table of the common confusables: no library for it is
installed) is the same for all of them, so names whose skeletons agree but whose text differs are look-alikes.
ASCII is read as written: ``get_user`` and ``get_users``, ``tool_1`` and ``tool_l`` stay apart.
"""

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

IGNORABLE: Final = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian variation selectors and vowel separator
    (0x2065, 0x2065),
    (0x2800, 0x2800),  # Braille pattern blank: not in the property, but it prints as a space that is none
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # half-width Hangul filler
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0FFF),  # tags and the variation selectors supplement
)
"""Code points that print as nothing, beyond the format characters (Unicode's Default_Ignorable_Code_Point
property, DerivedCoreProperties.txt, less the ``Cf`` ones, which ``HIDDEN_CATEGORIES`` holds)."""
HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Zl", "Zp"})
"""Control and format characters (zero-width space and joiners, bidi overrides, soft hyphen, ...) and line and
paragraph separators: nothing a reader sees, or a break of the line they read."""
MARKS: Final = frozenset({"Mn", "Me"})
"""Combining marks: an accent (``é``, ``ė``) is easy to miss in a list of tools, so a skeleton leaves it out."""

LOOKALIKES: Final = {
    "a": "\u0430\u03b1\u0251",  # Cyrillic a, Greek alpha, Latin alpha
    "A": "\u0410\u0391",  # Cyrillic A, Greek Alpha
    "B": "\u0412\u0392",  # Cyrillic Ve, Greek Beta
    "C": "\u0421",  # Cyrillic Es
    "c": "\u0441",  # Cyrillic es
    "d": "\u0501",  # Cyrillic Komi de
    "E": "\u0415\u0395",  # Cyrillic Ie, Greek Epsilon
    "e": "\u0435",  # Cyrillic ie
    "g": "\u0261",  # Latin script g
    "H": "\u041d\u0397\u04ba",  # Cyrillic En, Greek Eta, Cyrillic Shha
    "h": "\u04bb\u0570",  # Cyrillic shha, Armenian ho
    "I": "\u0406\u0399",  # Cyrillic Byelorussian-Ukrainian I, Greek Iota
    "i": "\u0456\u03b9\u0131\u0269",  # Cyrillic i, Greek iota, Latin dotless i, Latin iota
    "J": "\u0408\u037f",  # Cyrillic Je, Greek Yot
    "j": "\u0458\u03f3\u0237",  # Cyrillic je, Greek yot, Latin dotless j
    "K": "\u041a\u039a",  # Cyrillic Ka, Greek Kappa
    "k": "\u03ba",  # Greek kappa
    "l": "\u04c0\u04cf",  # Cyrillic palochka (both cases)
    "M": "\u041c\u039c",  # Cyrillic Em, Greek Mu
    "N": "\u039d",  # Greek Nu
    "n": "\u03b7\u0578",  # Greek eta, Armenian vo
    "O": "\u041e\u039f\u0555",  # Cyrillic O, Greek Omicron, Armenian Oh
    "o": "\u043e\u03bf\u0585",  # Cyrillic o, Greek omicron, Armenian oh
    "P": "\u0420\u03a1",  # Cyrillic Er, Greek Rho
    "p": "\u0440\u03c1",  # Cyrillic er, Greek rho
    "Q": "\u051a",  # Cyrillic Qa
    "q": "\u051b\u0566",  # Cyrillic qa, Armenian za
    "S": "\u0405",  # Cyrillic Dze
    "s": "\u0455",  # Cyrillic dze
    "T": "\u0422\u03a4",  # Cyrillic Te, Greek Tau
    "u": "\u03c5\u057d",  # Greek upsilon, Armenian seh
    "v": "\u03bd\u0475",  # Greek nu, Cyrillic izhitsa
    "W": "\u051c",  # Cyrillic We
    "w": "\u051d",  # Cyrillic we
    "X": "\u0425\u03a7",  # Cyrillic Ha, Greek Chi
    "x": "\u0445\u03c7",  # Cyrillic ha, Greek chi
    "Y": "\u0423\u04ae\u03a5",  # Cyrillic U, Cyrillic straight U, Greek Upsilon
    "y": "\u0443\u03b3",  # Cyrillic u, Greek gamma
    "Z": "\u0396",  # Greek Zeta
    "-": "\u2010\u2012\u2013\u2212\u02d7",  # hyphen, figure dash, en dash, minus sign, modifier minus
    "_": "\u02cd",  # modifier letter low macron
}
"""Each ASCII character and the letters of other scripts that look like it (TR39's confusables.txt, the common
ones). Full-width, mathematical and other compatibility forms need no entry: NFKC makes them ASCII."""
_TABLE: Final = str.maketrans({source: ascii_ for ascii_, sources in LOOKALIKES.items() for source in sources})
_LEFT_OUT: Final = MARKS | HIDDEN_CATEGORIES
_IGNORED: Final = frozenset(point for lo, hi in IGNORABLE for point in range(lo, hi + 1))
_ASCII_CONTROLS: Final = str.maketrans("", "", "".join(map(chr, [*range(0x20), 0x7F])))


def hidden(char: str) -> bool:
    """Whether ``char`` prints as nothing (or breaks the line): a control or format character, a line or paragraph
    separator, or another default-ignorable code point."""
    return ord(char) in _IGNORED or unicodedata.category(char) in HIDDEN_CATEGORIES


def _bare(text: str) -> str:
    """``text`` decomposed (NFD), without its hidden characters and combining marks."""
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(c for c in decomposed if unicodedata.category(c) not in _LEFT_OUT and ord(c) not in _IGNORED)


def skeleton(name: str) -> str:
    """What ``name`` looks like: NFKC, without hidden characters and combining marks, look-alike letters as the ASCII
    ones they resemble (``LOOKALIKES``), case folded. Mapped before case folding (Greek ``Η`` looks like ``H``, its
    lower case ``η`` like ``n``) and again after (a capital of no entry whose lower case has one). An ASCII name,
    the common case (a sync compares every name its tenant sees), is its lower case without control characters."""
    if name.isascii():
        return name.translate(_ASCII_CONTROLS).lower()
    mapped = _bare(unicodedata.normalize("NFKC", name)).translate(_TABLE)
    return _bare(mapped.casefold()).translate(_TABLE)


def visible(name: str) -> str:
    """Refuse a name holding a character nobody sees (a zero-width joiner, a bidi override, a soft hyphen, ...):
    two names that differ only in one read the same."""
    for at, char in enumerate(name):
        if hidden(char):
            what = unicodedata.name(char, "unnamed")
            raise ValueError(
                f"invisible character U+{ord(char):04X} ({what}) at {at} is not allowed in a name: names that"
                " differ only in it read the same"
            )
    return name


def first_lookalikes(names: Sequence[str]) -> tuple[int, int] | None:
    """The first pair of ``names`` (their positions, earlier first) that differ but look alike; None if none do."""
    seen: dict[str, tuple[int, str]] = {}
    for at, name in enumerate(names):
        earlier = seen.setdefault(skeleton(name), (at, name))
        if earlier[1] != name:
            return earlier[0], at
    return None


def lookalike_of(names: Mapping[int, str], others: Iterable[tuple[str, str]]) -> tuple[int, str] | None:
    """The first of ``names`` (by position) that looks like, without being, the name of one of ``others`` (label,
    name): its position and that label; None if none does. The same name is not a look-alike."""
    wanted: dict[str, list[tuple[int, str]]] = {}
    for at, name in names.items():
        wanted.setdefault(skeleton(name), []).append((at, name))
    clashes = [(at, label) for label, other in others for at, name in wanted.get(skeleton(other), ()) if name != other]
    return min(clashes, default=None)
