#!/usr/bin/env python3
"""Writes the clause-gate corpus for the two example scores (docs/design.md section 4).

    python3 corpus/generate.py

writes corpus/score-ko/*.jsonl (examples/score-ko/contract.toml, seed 000) and
corpus/score-en/*.jsonl (examples/score-en/contract.toml), one case per line:

    {"kind", "text", "expect": [ops...] | "expect_error": code, "reason"?: code, "why"}

`expect: []` is a negative control: the reply must perform nothing. The cases are generated
rather than typed so that invisible characters, decomposed Hangul, CR LF and the like are
exactly what the case says; in the files every character that is not plainly visible is
written as a \\u escape so that a reader can see it. Check them with

    warrant corpus run --contract examples/score-ko/contract.toml corpus/score-ko
    warrant corpus run --contract examples/score-en/contract.toml corpus/score-en
"""

import json
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent

MODEL = "model_reply"
UNREG = "unregistered_sentence"
NOT_PERMITTED = "clause_not_permitted_for_source"
EMPTY = "empty_response"


def ok(text, expect, why, kind=MODEL):
    """A reply that must perform exactly `expect`, in order."""
    return {"kind": kind, "text": text, "expect": list(expect), "why": why}


def inert(text, reason, why, kind=MODEL):
    """A negative control: performs nothing; `reason` is the rejection it must report (or
    None where the reply is rejected for no reason, e.g. passive-only)."""
    case = {"kind": kind, "text": text, "expect": []}
    if reason is not None:
        case["reason"] = reason
    case["why"] = why
    return case


def bad_kind(kind, text, why):
    """An entry whose source kind the contract does not declare: an input error."""
    return {"kind": kind, "text": text, "expect_error": "unknown_source_kind", "why": why}


def nfd(text):
    out = unicodedata.normalize("NFD", text)
    assert out != text, f"NFD leaves {text!r} unchanged; the case would test nothing"
    return out


# Characters written raw in the files; everything else outside printable ASCII and precomposed
# Hangul syllables is written as a \u escape.
READABLE = set("“”‘’「」『』«»…。😊")


def visible(c):
    o = ord(c)
    return 0x20 <= o < 0x7F or 0xAC00 <= o <= 0xD7A3 or c in READABLE


def escape(c):
    o = ord(c)
    if o <= 0xFFFF:
        return f"\\u{o:04x}"
    o -= 0x10000
    return f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}"


def line(case):
    # json.dumps only emits non-ASCII characters inside strings, so escaping them is safe.
    raw = json.dumps(case, ensure_ascii=False)
    return "".join(c if visible(c) else escape(c) for c in raw)


def write(folder, name, cases):
    assert cases, name
    for case in cases:
        assert len(case["why"]) >= 30, case["why"]
        assert ("expect" in case) != ("expect_error" in case), case
    path = HERE / folder / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line(c) + "\n" for c in cases), encoding="utf-8")
    return len(cases)


# --------------------------------------------------------------------------------------------
# Korean: seed 000's score. Only `model_reply` may perform the four clauses.

JOIN = "같이 결정해보자."
RESERVE = "내가 쓴 부분을 토대로 이야기의 방향을 정해볼 수 있어."
UNDERTAKE = "좋아, 내가 초안을 해줄게."
DELEGATE = "마지막 방향은 네가 정해도 돼."
KO_ALL = [JOIN, RESERVE, UNDERTAKE, DELEGATE]
KO_OPS = ["join", "reserve", "undertake", "delegate"]
THANKS = "고마워."
GOOD = "좋아."
THINK = "잠깐 생각해볼게."
FUN = "이야기가 재미있어지고 있어."
KO_PASSIVE = [THANKS, GOOD, THINK, FUN]


def ko_positives():
    return [
        ok(JOIN, ["join"], "The authored join clause, exactly, from a model reply."),
        ok(RESERVE, ["reserve"], "The authored reserve clause, exactly, from a model reply."),
        ok(UNDERTAKE, ["undertake"], "The authored undertake clause, exactly; its inner comma is part of the clause."),
        ok(DELEGATE, ["delegate"], "The authored delegate clause, exactly, from a model reply."),
        ok(" ".join(KO_ALL), KO_OPS,
           "All four clauses on one line: each is its own sentence, and the operations come in sentence order."),
        ok("\n".join(reversed(KO_ALL)), list(reversed(KO_OPS)),
           "All four clauses, one per line, in reverse: operations follow the order of the reply, not of the contract."),
        ok(f"{JOIN} {RESERVE}", ["join", "reserve"],
           "Seed 000's first checkpoint: the recorded reply produces joint and reserve, labor and delegation stay zero."),
        ok(f"{JOIN} {THANKS}", ["join"], "A registered clause followed by a passive clause still performs its operation."),
        ok(f"{THANKS} {JOIN}", ["join"], "A passive clause before a registered clause does not disable it."),
        ok(f"{GOOD} {UNDERTAKE}", ["undertake"],
           "The passive 좋아. next to the clause that starts with 좋아, : two whole sentences, one passive, one scored."),
        ok(f"{FUN} {RESERVE} {THINK} {DELEGATE}", ["reserve", "delegate"],
           "Scored clauses interleaved with passive ones: only the scored ones perform, in order."),
        ok(f"{JOIN} {JOIN}", ["join", "join"],
           "The same clause twice is two scored sentences; the gate reports each (deduplication is the ledger's job, not the gate's)."),
        ok(f"{THANKS}\n{UNDERTAKE}\n{DELEGATE}\n{GOOD}", ["undertake", "delegate"],
           "Seed 000's later checkpoint shape: registered responses line by line, passive lines around them."),
    ]


def ko_passive():
    return [
        inert(THANKS, None, "A passive clause alone is allowed text that performs nothing."),
        inert(GOOD, None, "좋아. is passive; it must not be confused with the undertake clause that starts with 좋아, ."),
        inert(f"{THINK} {FUN}", None, "Two passive clauses: the reply is well formed and performs nothing."),
        inert("\n".join(KO_PASSIVE), None, "Every passive clause, one per line: nothing is performed."),
        inert(f"{GOOD} {GOOD} {THANKS}", None, "Repeated passive clauses still perform nothing."),
    ]


def ko_questions():
    return [
        inert("같이 결정해볼까?", UNREG, "Seed 000: a question with the right words once executed join; it must stay inert."),
        inert("같이 결정해보자?", UNREG, "The join clause's words with a question mark instead of a full stop is a question, not the clause."),
        inert("같이 결정해볼래?", UNREG, "An invitation phrased as a question is not the authored offer."),
        inert("같이 결정해보는 건 어때?", UNREG, "A suggestion-question containing 같이 결정 must not join."),
        inert("마지막 방향은 네가 정해도 돼?", UNREG, "The delegate clause turned into a question asks for permission; it does not grant it."),
        inert("마지막 방향은 내가 정해도 돼?", UNREG, "The speaker asking to decide is the opposite of delegating."),
        inert("내가 쓴 부분을 토대로 이야기의 방향을 정해볼 수 있어?", UNREG,
              "The reserve clause as a question (can I?) must not reserve."),
        inert("좋아, 내가 초안을 해줄까?", UNREG, "Offering to draft as a question is not undertaking it."),
        inert("좋아, 내가 초안을 해줄게?", UNREG, "The undertake clause with a question mark is a different sentence."),
        inert(f"{THANKS} 같이 결정해볼까?", UNREG, "A passive clause does not launder the question that follows it."),
        inert(f"같이 결정해볼까? {JOIN}", UNREG, "A question before the registered clause disables the whole reply."),
        inert(f"{JOIN} 괜찮아?", UNREG, "A registered clause followed by a question: one unregistered sentence and nothing is performed."),
        inert("정말 같이 결정해보자고?", UNREG, "An incredulous echo of the clause is a question about it, not the offer."),
    ]


def ko_negations():
    return [
        inert("같이 결정하지 않을래.", UNREG, "Seed 000: a negated proposal once executed join; it must stay inert."),
        inert("같이 결정하지 말자.", UNREG, "An explicit 'let us not decide together' contains 같이 결정 and must not join."),
        inert("같이 결정해보지 말자.", UNREG, "The negated form of the join clause differs by one word and must not join."),
        inert("마지막 방향은 네가 정하면 안 돼.", UNREG, "Forbidding the other to decide is the opposite of delegate."),
        inert(f"{DELEGATE} 라고 말하진 않을게.", UNREG,
              "Seed 000: a delegation followed by its negation. UAX #29 splits off the exact delegate clause, but the negating sentence after it is unregistered, so nothing is performed."),
        inert("내가 초안을 해줄 수는 없어.", UNREG, "Declining to draft must not undertake."),
        inert(f"{UNDERTAKE} 아니, 못 하겠어.", UNREG, "An undertaking taken back in the next sentence: the retraction is unregistered, so nothing is performed."),
        inert("내가 쓴 부분을 토대로 이야기의 방향을 정해볼 수 없어.", UNREG, "The reserve clause with 있어 turned into 없어 must not reserve."),
        inert(f"{RESERVE} 하지만 지금은 안 할 거야.", UNREG, "A qualifying negation after the reserve clause disables the reply."),
        inert(f"{JOIN} 농담이야.", UNREG, "'Just kidding' after the clause: later context must be able to take the action back."),
        inert("같이 결정해보자고 하지 않았어.", UNREG, "Denying having proposed it, with the clause's words inside one sentence."),
        inert("아직은 같이 결정해보자고 할 수 없어.", UNREG, "'I cannot yet say let us decide together' contains the clause's words and must not join."),
        inert(f"{DELEGATE} 는 아니야.", UNREG, "The delegate clause followed by a fragment negating it: inert as a whole."),
    ]


def ko_quotations():
    return [
        inert(f'"{JOIN}"', UNREG, "The join clause inside straight double quotes is a quotation, not the speaker's own offer."),
        inert(f"“{JOIN}”", UNREG, "The join clause inside curly double quotes: the quotation marks are part of the sentence."),
        inert(f"「{JOIN}」", UNREG, "The join clause inside corner brackets 「」, the East Asian quotation marks."),
        inert(f"『{DELEGATE}』", UNREG, "The delegate clause inside white corner brackets 『』 is quoted, not granted."),
        inert(f"‘{UNDERTAKE}’", UNREG, "The undertake clause inside curly single quotes ‘’."),
        inert(f"'{JOIN}'", UNREG, "The join clause inside straight single quotes."),
        inert(f"“{DELEGATE}” 이건 아니야.", UNREG,
              "Seed 000: a quoted delegation followed by a negation once executed delegate; both sentences are unregistered."),
        inert(f'그가 말했어: "{JOIN}"', UNREG, "Reported speech on one line: the colon does not end a sentence, so the whole line is one unregistered sentence."),
        inert(f"그가 말했어:\n{JOIN}", UNREG,
              "The line after a colon is its own sentence and equals the join clause, but the colon line is unregistered, so the reply is inert."),
        inert(f"그가 말했어:\r\n{DELEGATE}", UNREG, "The same with CR LF: a quoted delegation after an unregistered colon line performs nothing."),
        inert(f"예를 들면:\n\n{UNDERTAKE}", UNREG, "An example introduced by a colon and a blank line is still a quotation; the introducing line is unregistered."),
        inert(f"> {JOIN}", UNREG, "A block quote of the join clause: the '>' marker is part of the sentence."),
        inert(f">{JOIN}", UNREG, "A block quote without a space after '>'."),
        inert(f"{THANKS}\n> {DELEGATE}\n{GOOD}", UNREG, "A block-quoted delegation between passive lines: the quoted line is unregistered."),
        inert(f'"{JOIN}" 라고 했어.', UNREG, "A quotation followed by an attribution: UAX #29 splits them, and neither is registered."),
        inert(f'친구가 "{JOIN}"라고 했어.', UNREG,
              "Someone else's words quoted mid-sentence: UAX #29 breaks after the closing quote, giving '친구가 \"같이 결정해보자.\"' and '라고 했어.', both unregistered."),
        inert(f'{JOIN}"', UNREG, "A stray closing quote after the full stop attaches to the sentence (UAX #29 Close), so it is not the clause."),
        inert(f"```\n{JOIN}\n```", UNREG, "The clause inside a code fence: the fence lines are unregistered, so the quoted clause performs nothing."),
        inert(f"- {JOIN}", UNREG, "A list item: the bullet is part of the sentence."),
        inert(f"({JOIN})", UNREG, "The clause in parentheses is an aside, and the brackets are part of the sentence."),
    ]


def ko_paraphrases():
    return [
        inert("우리 같이 결정해보자.", UNREG, "An extra word before the clause is a paraphrase; only the authored form performs."),
        inert("같이 정해보자.", UNREG, "A synonym for 결정 is an unregistered paraphrase, however close in meaning."),
        inert("함께 결정해보자.", UNREG, "Seed 000: the old matcher accepted 함께 결정 as join; the paraphrase must stay inert."),
        inert("같이 결정해 보자.", UNREG, "The same words spaced as standard orthography allows (해 보자) are a different sentence; spacing is not folded."),
        inert("같이결정해보자.", UNREG, "The clause without its inner space is unregistered."),
        inert("같이 결정하자.", UNREG, "A shorter form of the proposal is an unregistered paraphrase."),
        inert("같이 결정해 봐요.", UNREG, "A polite-register paraphrase is not the authored clause."),
        inert("마지막 방향은 당신이 정해도 돼요.", UNREG, "The delegate clause in polite register is a paraphrase."),
        inert("마지막 방향은 네가 정해도 돼요.", UNREG, "The delegate clause with a polite ending added is not the clause."),
        inert("마지막 방향은 네가 정해도 되.", UNREG, "A common misspelling (되 for 돼) is a different sentence; no spelling correction."),
        inert("최종 방향은 네가 정해도 돼.", UNREG, "최종 for 마지막 means the same to a reader but is not authored."),
        inert("초안은 내가 해줄게.", UNREG, "A reordered undertaking without 좋아, is a paraphrase."),
        inert("좋아 내가 초안을 해줄게.", UNREG, "The undertake clause without its comma is unregistered: punctuation is not stripped."),
        inert(f"{GOOD} 내가 초안을 해줄게.", UNREG,
              "좋아. then the rest of the undertake clause: the first sentence is passive, the second is unregistered, so nothing is performed."),
        inert("내가 초안을 해줄게.", UNREG, "The undertake clause without 좋아, is a fragment of it, not it."),
        inert("내가 쓴 부분을 바탕으로 이야기의 방향을 정해볼 수 있어.", UNREG, "바탕으로 for 토대로 is an unregistered paraphrase of reserve."),
        inert("네가 쓴 부분을 토대로 이야기의 방향을 정해볼 수 있어.", UNREG, "Changing who wrote the part changes the clause; it is unregistered."),
        inert("같이 결정", UNREG, "The bare fragment the old matcher looked for is not a clause."),
        inert("함께 결정", UNREG, "The other fragment the old matcher looked for is not a clause."),
        inert("고마워요.", UNREG, "A politer thanks is not the passive 고마워. and makes the reply unregistered."),
        inert(f"좋아요. {JOIN}", UNREG, "A near-passive (좋아요.) before the clause is unregistered, so join does not happen."),
    ]


def ko_mixed():
    return [
        inert(f"근데 아직은 아니야. {JOIN}", UNREG, "An unregistered sentence before the clause disables the reply."),
        inert(f"{JOIN} 근데 아직은 아니야.", UNREG, "the design's example (docs/design.md section 4): an unregistered sentence after the clause (index 1) disables the reply."),
        inert(f"{JOIN} 음. {DELEGATE}", UNREG, "An unregistered sentence between two scored clauses disables both."),
        inert(f"{JOIN}\n이건 예시야.", UNREG, "A clause followed on the next line by a remark that it is an example."),
        inert(" ".join(KO_ALL) + " 다 거짓말이야.", UNREG, "All four clauses then one unregistered sentence at the end: nothing at all is performed."),
        inert("잠깐만. " + " ".join(KO_ALL), UNREG, "One unregistered sentence at the start disables all four clauses after it."),
        inert(f"{THANKS} {GOOD} 이건 뭐지? {JOIN}", UNREG, "Passive, passive, unregistered question, clause: the question disables the clause."),
        inert(f"{THANKS} {RESERVE} {GOOD} 그런데 말이야.", UNREG, "Passive, scored, passive, then an unregistered sentence: inert."),
        inert(f"고마워! {JOIN}", UNREG, "고마워! is not the passive 고마워. , so it is unregistered and the clause does not perform."),
        inert(f"{JOIN} OK.", UNREG, "An English aside after a Korean clause is unregistered in this score."),
        inert(f"{JOIN} 😊", UNREG, "An emoji after the clause is its own sentence (UAX #29 breaks after '. ') and is unregistered."),
        inert(f"{DELEGATE} Thank you.", UNREG, "A passive clause from another score is not passive here."),
        inert(f"{JOIN}\n{DELEGATE}\n그리고 또", UNREG, "A trailing unfinished line after two clauses makes the whole reply inert."),
    ]


def ko_punctuation():
    return [
        inert("같이 결정해보자", UNREG, "The join clause without its final full stop is a different sentence."),
        inert("같이 결정해보자..", UNREG, "A doubled full stop: UAX #29 keeps both in one sentence, which is not the clause."),
        inert("같이 결정해보자...", UNREG, "Three full stops (a trailing-off ellipsis) are one sentence that is not the clause."),
        inert("같이 결정해보자\uff0e", UNREG, "A full-width full stop (U+FF0E): no width folding, so not the clause."),
        inert("같이 결정해보자。", UNREG, "An ideographic full stop (U+3002) is a different character from '.'."),
        inert("같이 결정해보자!", UNREG, "An exclamation mark instead of the full stop."),
        inert("같이 결정해보자!!", UNREG, "A doubled exclamation mark is one terminator run and a different sentence from the clause."),
        inert(f"같이 결정해보자?! {THANKS}", UNREG, "'?!' is one terminator run under UAX #29: the first sentence is '같이 결정해보자?!', unregistered."),
        inert("같이 결정해보자…", UNREG, "A trailing ellipsis character (U+2026) instead of the full stop."),
        inert(f"같이 결정해보자… {THANKS}", UNREG,
              "U+2026 is not a sentence terminator in UAX #29, so this is ONE sentence '같이 결정해보자… 고마워.', unregistered."),
        inert("같이 결정해보자.!", UNREG, "A full stop then an exclamation mark stay in one sentence."),
        inert("같이 결정해보자 .", UNREG, "A space before the full stop is inside the sentence, and inner space is not collapsed."),
        inert("같이 결정해보자;", UNREG, "A semicolon instead of the full stop."),
        inert("같이 결정해보자,", UNREG, "A comma instead of the full stop."),
        inert("마지막 방향은 네가 정해도 돼~", UNREG, "A tilde ending, common in casual Korean, is not the authored full stop."),
        inert("좋아, 내가 초안을 해줄게..", UNREG, "The undertake clause with a doubled full stop."),
        inert(f"{JOIN} .", UNREG,
              "A stray full stop after the clause: UAX #29 (SB8a) does not break before another terminator, so the sentence is '같이 결정해보자. .', unregistered."),
        inert(f"같이 결정해보자。{THANKS}", UNREG, "Ideographic full stop then a passive clause: the first sentence is '같이 결정해보자。', unregistered."),
    ]


def ko_whitespace():
    return [
        ok(f"  {JOIN}  ", ["join"], "Leading and trailing spaces are trimmed from each sentence."),
        ok(f"\t{JOIN}\t", ["join"], "Leading and trailing tabs are white space and are trimmed."),
        ok(f"\n\n{JOIN}\n\n", ["join"], "Blank lines before and after: empty sentences are dropped."),
        ok(f"{JOIN}\r\n{DELEGATE}", ["join", "delegate"], "CR LF between two clauses is a line break and a sentence boundary."),
        ok(f"{JOIN}\n\n\n\n{RESERVE}", ["join", "reserve"], "Several blank lines between clauses are dropped."),
        ok(f"{JOIN}\r\n\r\n\r\n{UNDERTAKE}\r\n", ["join", "undertake"], "Blank CR LF lines between clauses and a trailing CR LF."),
        ok(f"{JOIN}\r{DELEGATE}", ["join", "delegate"], "A lone CR (old Mac line ending) is a line break, so the two clauses are separate sentences."),
        ok(f"{JOIN}\u2028{DELEGATE}", ["join", "delegate"], "U+2028 LINE SEPARATOR is a line break."),
        ok(f"{JOIN}\u2029{DELEGATE}", ["join", "delegate"], "U+2029 PARAGRAPH SEPARATOR is a line break."),
        ok(f"{JOIN}\n \t \n{DELEGATE}", ["join", "delegate"], "A line of only spaces and tabs between clauses is an empty sentence, dropped."),
        ok(f"\u3000{JOIN}\u3000", ["join"], "The ideographic space U+3000 is Unicode white space and is trimmed at the edges."),
        ok(f"\u00a0{JOIN}", ["join"], "A leading no-break space is white space and is trimmed."),
        ok(f"{JOIN}     {DELEGATE}", ["join", "delegate"], "Many spaces between two sentences on one line are trimmed from both."),
        ok(f"{THANKS}{JOIN}", ["join"],
           "No space after the full stop: UAX #29 still breaks after '.' before a Hangul letter (SB11), so these are two sentences, passive then join."),
        inert("같이  결정해보자.", UNREG, "A doubled inner space: white space inside a sentence is not collapsed."),
        inert("같이\t결정해보자.", UNREG, "A tab in place of the inner space is a different sentence."),
        inert("같이\u00a0결정해보자.", UNREG, "A no-break space in place of the inner space is a different sentence."),
        inert("같이\u3000결정해보자.", UNREG, "An ideographic space in place of the inner space is a different sentence."),
        inert("같이\n결정해보자.", UNREG, "A line break inside the clause splits it into two unregistered sentences."),
        inert("좋아, 내가\r\n초안을 해줄게.", UNREG, "A CR LF inside the undertake clause splits it; neither half is registered."),
        inert("마지막 방향은  네가 정해도 돼.", UNREG, "A doubled inner space in the delegate clause."),
        inert("좋아,  내가 초안을 해줄게.", UNREG, "Two spaces after the comma in the undertake clause."),
    ]


def ko_invisible():
    return [
        inert(f"\u200b{JOIN}", UNREG, "A zero-width space (U+200B) at the start is not white space and is never trimmed."),
        inert(f"{JOIN}\u200b", UNREG, "A zero-width space after the full stop attaches to the sentence (UAX #29 Format)."),
        inert("같이\u200b 결정해보자.", UNREG, "A zero-width space beside the inner space makes the sentence differ invisibly."),
        inert("같이 결\u200c정해보자.", UNREG, "A zero-width non-joiner (U+200C) inside a word."),
        inert(f"{JOIN}\u200d", UNREG, "A zero-width joiner (U+200D) at the end."),
        inert(f"\u2060{JOIN}", UNREG, "A word joiner (U+2060) at the start."),
        inert(f"\ufeff{JOIN}", UNREG, "A byte order mark (U+FEFF) at the start is a format character, not white space; it is not trimmed."),
        inert(f"{JOIN}\ufeff", UNREG, "A zero-width no-break space (U+FEFF) at the end."),
        inert("\u202e.자보해정결 이같", UNREG,
              "Right-to-left override (U+202E) before the reversed clause: it renders as the join clause but is not it."),
        inert(f"\u202e{JOIN}", UNREG, "A right-to-left override at the start of the real clause."),
        inert(f"\u2066{JOIN}\u2069", UNREG, "The clause wrapped in a left-to-right isolate (U+2066 ... U+2069)."),
        inert(f"{JOIN}\u200f", UNREG, "A right-to-left mark (U+200F) at the end."),
        inert(f"\u200f{DELEGATE}", UNREG, "A right-to-left mark at the start of the delegate clause."),
        inert(f"{THANKS} \u200b{JOIN}", UNREG,
              "A zero-width space between two sentences: UAX #29 attaches it (Format) to the preceding space, so the first sentence is '고마워. ' plus U+200B, untrimmable and unregistered."),
        inert(f"{JOIN}\n\u200b", UNREG, "A line holding only a zero-width space is not empty: it is an unregistered sentence."),
        inert(f"{JOIN}\u200b {DELEGATE}", UNREG, "A zero-width space between two clauses attaches to the first one, which is then unregistered."),
        inert("같이 결\u00ad정해보자.", UNREG, "A soft hyphen (U+00AD) inside a word is invisible and not ignored."),
        inert("같\u034f이 결정해보자.", UNREG, "A combining grapheme joiner (U+034F) inside a word; NFC keeps it."),
        inert("같이\u3164결정해보자.", UNREG, "The Hangul filler (U+3164) used as a blank in place of the inner space."),
        inert(f"{UNDERTAKE}\ufe0f", UNREG, "A variation selector (U+FE0F) after the full stop."),
    ]


def ko_lookalikes():
    return [
        inert("같\u3147\u3163 결정해보자.", UNREG,
              "이 written with Hangul compatibility jamo (U+3147 U+3163): NFC does not compose compatibility jamo, so this is not the clause."),
        inert("\u3131\u314f\u314c\u3147\u3163 결정해보자.", UNREG, "같이 spelled entirely in compatibility jamo."),
        inert("\u3134\u3150가 쓴 부분을 토대로 이야기의 방향을 정해볼 수 있어.", UNREG,
              "내 in compatibility jamo at the start of the reserve clause."),
        inert("좋아\uff0c 내가 초안을 해줄게.", UNREG, "A full-width comma (U+FF0C) in the undertake clause; width is not folded."),
        inert("좋아\u201a 내가 초안을 해줄게.", UNREG, "A single low-9 quotation mark (U+201A) that looks like a comma."),
        inert("같이 결정해보자\ufe52", UNREG, "A small full stop (U+FE52) that looks like '.'."),
        inert("같이 결정해보자\u2024", UNREG, "A one dot leader (U+2024); only NFKC would fold it to '.', and the gate uses NFC."),
        inert("마지막 방향은 네가 정해도 돼\u00b7", UNREG, "A middle dot (U+00B7) in place of the full stop."),
    ]


def ko_normalization():
    partial = nfd(JOIN[0]) + JOIN[1:]  # only the first syllable decomposed
    assert unicodedata.normalize("NFC", partial) == JOIN
    return [
        ok(nfd(JOIN), ["join"], "The join clause in NFD (decomposed jamo): the gate normalizes to NFC, so it performs."),
        ok(nfd(RESERVE), ["reserve"], "The reserve clause in NFD performs after NFC."),
        ok(nfd(UNDERTAKE), ["undertake"], "The undertake clause in NFD performs after NFC."),
        ok(nfd(DELEGATE), ["delegate"], "The delegate clause in NFD performs after NFC."),
        ok(nfd(" ".join(KO_ALL)), KO_OPS, "All four clauses in NFD on one line: segmentation happens after NFC, each performs."),
        ok(partial, ["join"], "Only the first syllable decomposed: NFC composes it, the clause performs."),
        ok(f"{JOIN} {nfd(DELEGATE)}", ["join", "delegate"], "One clause in NFC and one in NFD in the same reply."),
        ok(nfd(f"{THANKS}\n{UNDERTAKE}"), ["undertake"], "An NFD passive line and an NFD clause."),
        inert(nfd(f"{THANKS} {GOOD}"), None, "Passive clauses in NFD are passive after NFC and perform nothing."),
        inert(nfd(JOIN), NOT_PERMITTED, "NFD does not dodge the source check: from the user the clause is not permitted.", kind="user"),
        inert(nfd("같이 결정해볼까?"), UNREG, "Seed 000's question in NFD is still a question after NFC."),
        inert("같이 결정해보\u11ab자.", UNREG,
              "A trailing jamo (U+11AB) after 보 composes under NFC into 본: normalization can change a syllable, and the result is not the clause."),
        inert(f"{JOIN}\u0301", UNREG, "A combining acute accent after the full stop is kept by NFC and attaches to the sentence."),
    ]


def ko_long():
    many_thanks = " ".join([THANKS] * 200)
    rounds = " ".join(KO_ALL * 25)
    return [
        ok(f"{many_thanks} {JOIN}", ["join"], "200 passive sentences and one clause: performs join once."),
        inert(f"{many_thanks} {JOIN} 근데 아직은 아니야.", UNREG,
              "The same long reply with one unregistered sentence at the end: nothing is performed."),
        inert(f"근데 아직은 아니야. {many_thanks} {JOIN}", UNREG,
              "One unregistered sentence at the start of a long reply disables the clause at the end."),
        ok("\n".join([THANKS] * 200 + [DELEGATE] + [GOOD] * 200), ["delegate"],
           "400 passive lines with one clause in the middle: performs delegate."),
        ok(rounds, KO_OPS * 25, "The four clauses 25 times over: 100 operations, in order."),
        inert(" ".join(KO_ALL * 12 + ["아니야."] + KO_ALL * 13), UNREG,
              "100 scored sentences with one unregistered sentence in the middle: all of them are disabled."),
        inert(", ".join(["같이 결정해보자"] * 100) + ".", UNREG,
              "One very long sentence that repeats the clause's words with commas: a single unregistered sentence."),
        inert("\n".join([FUN] * 300), None, "300 passive lines and nothing else perform nothing."),
    ]


def ko_empty():
    return [
        inert("", EMPTY, "An empty reply performs nothing, with its own reason."),
        inert(" ", EMPTY, "A single space trims to nothing."),
        inert("\n", EMPTY, "A single line break has no sentence."),
        inert("\r\n\r\n", EMPTY, "Only CR LF line breaks: every line is empty, so there is no sentence."),
        inert("\t \t", EMPTY, "Only tabs and spaces: everything is trimmed, so there is no sentence."),
        inert("\u3000", EMPTY, "Only an ideographic space (white space)."),
        inert("\u00a0", EMPTY, "Only a no-break space (white space)."),
        inert("\u2028\u2029", EMPTY, "Only the Unicode line and paragraph separators."),
        inert(" \n\t\r\n \u3000\n", EMPTY, "Several blank lines of mixed white space."),
        inert("", EMPTY, "An empty user entry is an empty response too; the kind is declared, so it is read.", kind="user"),
        inert("", EMPTY, "An empty authored entry is an empty response.", kind="authored"),
        inert("\u200b", UNREG, "Only a zero-width space is NOT empty: it is not white space, so it is an unregistered sentence."),
        inert("\ufeff", UNREG, "Only a byte order mark is not empty either: it is an unregistered sentence."),
        inert(".", UNREG, "A lone full stop is a sentence, not an empty reply."),
    ]


KO_UNKNOWN_KINDS = [
    ("bot", "A kind the contract does not declare is an input error, not a guess."),
    ("Model_Reply", "Kinds are matched exactly: no case folding."),
    ("MODEL_REPLY", "Upper-case model_reply is not the declared kind."),
    ("", "An empty kind is an input error."),
    (" user", "A leading space is not trimmed from a kind."),
    ("user ", "A trailing space is not trimmed from a kind."),
    ("model-reply", "A hyphen for the underscore is another kind."),
    ("model reply", "A space for the underscore is another kind."),
    ("tool_result", "tool_result exists in other contracts but is not declared in this one."),
    ("assistant", "A chat-API role name is not a declared source kind."),
    ("model_reply\u200b", "A zero-width space after the kind makes it another kind."),
    ("\uff55\uff53\uff45\uff52", "Full-width 'user' is not the declared kind."),
]


def ko_kinds():
    cases = [
        inert(JOIN, NOT_PERMITTED, "The join clause typed by the user performs nothing: only model_reply may join.", kind="user"),
        inert(RESERVE, NOT_PERMITTED, "The reserve clause from the user is not permitted.", kind="user"),
        inert(UNDERTAKE, NOT_PERMITTED, "The undertake clause from the user is not permitted.", kind="user"),
        inert(DELEGATE, NOT_PERMITTED, "The delegate clause from the user is not permitted.", kind="user"),
        inert(JOIN, NOT_PERMITTED, "An authored line carrying the join clause: authored is declared but not in the clause's from list.", kind="authored"),
        inert(DELEGATE, NOT_PERMITTED, "The delegate clause from an authored line is not permitted.", kind="authored"),
        inert(" ".join(KO_ALL), NOT_PERMITTED, "All four clauses from the user: the first is already not permitted.", kind="user"),
        inert(f"{JOIN} {THANKS}", NOT_PERMITTED, "A clause plus a passive from the user: the clause is not permitted.", kind="user"),
        inert(f"{THANKS} {JOIN}", NOT_PERMITTED, "Passive then clause from an authored line: the clause is not permitted.", kind="authored"),
        inert(f"{THANKS} {GOOD}", None, "Passive clauses from the user are allowed and perform nothing.", kind="user"),
        inert(THINK, None, "A passive clause from an authored line performs nothing.", kind="authored"),
        inert("같이 결정해볼까?", UNREG, "A user's question is unregistered, whatever its kind.", kind="user"),
        bad_kind("bot", "", "An unknown kind is an input error even when the text is empty: the kind is checked first."),
    ]
    cases += [bad_kind(kind, JOIN, why) for kind, why in KO_UNKNOWN_KINDS]
    return cases


# --------------------------------------------------------------------------------------------
# English: our own support score. close_ticket may also come from an authored line.

ESCALATE = "I'll pass this to a colleague who can help."
HOLD = "I'll put the order on hold while we sort this out."
CALLBACK = "I'll call you back tomorrow morning."
CLOSE = "We can close this ticket now."
EN_ALL = [ESCALATE, HOLD, CALLBACK, CLOSE]
EN_OPS = ["escalate", "hold_order", "schedule_callback", "close_ticket"]
THANK_YOU = "Thank you."
UNDERSTAND = "I understand."
SORRY = "Sorry about the trouble."
ANYTHING = "Is there anything else?"
EN_PASSIVE = [THANK_YOU, UNDERSTAND, SORRY, ANYTHING]


def en_positives():
    return [
        ok(ESCALATE, ["escalate"], "The authored escalate clause, exactly, from a model reply."),
        ok(HOLD, ["hold_order"], "The authored hold clause, exactly, from a model reply."),
        ok(CALLBACK, ["schedule_callback"], "The authored callback clause, exactly, from a model reply."),
        ok(CLOSE, ["close_ticket"], "The authored close clause, exactly, from a model reply."),
        ok(" ".join(EN_ALL), EN_OPS, "All four clauses on one line, each its own sentence, operations in order."),
        ok("\n".join(reversed(EN_ALL)), list(reversed(EN_OPS)), "All four clauses one per line in reverse order."),
        ok(f"{SORRY} {HOLD} {CALLBACK} {THANK_YOU}", ["hold_order", "schedule_callback"],
           "A typical reply: passive apology, two clauses, passive thanks."),
        ok(f"{ANYTHING} {CLOSE}", ["close_ticket"],
           "The passive question is registered text; a question mark by itself never disables a reply."),
        ok(f"{UNDERSTAND}\n{ESCALATE}", ["escalate"], "A passive line then the escalate clause."),
        ok(f"{CALLBACK} {CALLBACK}", ["schedule_callback", "schedule_callback"],
           "The same clause twice is two operations at the gate; idempotency is enforced later, not here."),
        ok(f"{THANK_YOU}  {CLOSE}", ["close_ticket"], "Two spaces after the full stop are between sentences and are trimmed."),
    ]


def en_passive():
    return [
        inert(THANK_YOU, None, "A passive clause alone performs nothing."),
        inert(ANYTHING, None, "The passive question alone performs nothing."),
        inert(f"{UNDERSTAND} {SORRY}", None, "Two passive clauses perform nothing."),
        inert("\n".join(EN_PASSIVE), None, "Every passive clause, one per line: nothing is performed."),
        inert(f"{THANK_YOU} {THANK_YOU}", None, "A repeated passive clause performs nothing."),
    ]


def en_questions():
    return [
        inert("Can we close this ticket now?", UNREG, "A question made of the close clause's words must not close the ticket."),
        inert("We can close this ticket now?", UNREG, "The close clause with a question mark asks; it does not state."),
        inert("Shall I pass this to a colleague who can help?", UNREG, "Offering to escalate as a question is not escalating."),
        inert("Should I put the order on hold while we sort this out?", UNREG, "Asking whether to hold is not holding."),
        inert("I'll call you back tomorrow morning?", UNREG, "The callback clause with a question mark."),
        inert("Could I call you back tomorrow morning?", UNREG, "Asking permission to call back does not book the callback."),
        inert(f"{ANYTHING} Can we close this ticket now?", UNREG, "The passive question does not launder the unregistered one after it."),
        inert("Would you like me to pass this to a colleague who can help?", UNREG, "A question that contains the whole escalate clause's words."),
        inert("We can close this ticket now, right?", UNREG, "A tag question is one sentence and is not the clause."),
        inert(f"{CLOSE} Right?", UNREG, "A clause followed by a tag question: the question is unregistered, so nothing is performed."),
        inert("Why would I call you back tomorrow morning?", UNREG, "A rhetorical question containing the callback words."),
    ]


def en_negations():
    return [
        inert("We can't close this ticket now.", UNREG, "The negated close clause must not close the ticket."),
        inert("We cannot close this ticket now.", UNREG, "cannot for can turns the clause into a refusal; it must not close the ticket."),
        inert("We can not close this ticket now.", UNREG, "can not (two words) for can is a negation and an unregistered sentence."),
        inert("I won't pass this to a colleague who can help.", UNREG, "Refusing to escalate must not escalate."),
        inert("I'll not call you back tomorrow morning.", UNREG, "The callback clause with 'not' inserted."),
        inert("I won't put the order on hold while we sort this out.", UNREG, "Refusing to hold the order contains most of the hold clause and must not hold it."),
        inert(f"{CALLBACK} Actually, I can't.", UNREG, "A retraction in the next sentence disables the clause."),
        inert(f"{CLOSE} Just kidding.", UNREG, "Later context takes the action back: one unregistered sentence disables the reply."),
        inert(f"{CLOSE} Not.", UNREG, "A one-word negation after the clause."),
        inert("I'm not saying I'll call you back tomorrow morning.", UNREG, "The callback words inside a denial."),
        inert(f"{HOLD} No, wait.", UNREG, "An interruption after the hold clause."),
        inert("Don't worry, I'll not put the order on hold while we sort this out.", UNREG, "A negated hold with a reassurance before it."),
        inert(f"{ESCALATE} That won't happen today.", UNREG, "A negating follow-up after the escalate clause."),
        inert(f"{CLOSE} or not.", UNREG,
              "A lower-case continuation: UAX #29 (SB8) does not break before a lower-case word, so the clause and 'or not.' are one unregistered sentence."),
    ]


def en_quotations():
    return [
        inert(f'"{CLOSE}"', UNREG, "The close clause inside straight double quotes is quoted, not said."),
        inert(f"“{CLOSE}”", UNREG, "The close clause inside curly double quotes."),
        inert(f"‘{CALLBACK}’", UNREG, "The callback clause inside curly single quotes."),
        inert(f"'{ESCALATE}'", UNREG, "The escalate clause inside straight single quotes."),
        inert(f"«{HOLD}»", UNREG, "The hold clause inside guillemets."),
        inert(f"「{CLOSE}」", UNREG, "The close clause inside corner brackets."),
        inert(f"He said:\n{CLOSE}", UNREG,
              "The line after the colon equals the close clause, but the colon line is unregistered, so the reply is inert."),
        inert(f"The customer wrote:\r\n{CALLBACK}", UNREG, "Reported text after a colon line with CR LF: inert."),
        inert(f"The template reads:\n\n{ESCALATE}", UNREG, "A template quoted after a colon and a blank line: inert."),
        inert(f"Note: {CLOSE}", UNREG, "On one line a colon does not end the sentence, so 'Note: ...' is one unregistered sentence."),
        inert(f"> {CLOSE}", UNREG, "A block quote of the close clause."),
        inert(f"{THANK_YOU}\n> {CALLBACK}", UNREG, "A block-quoted callback after a passive line."),
        inert(f'He said "{CLOSE}" and left.', UNREG, "A quotation inside a sentence: UAX #29 does not break before lower-case 'and'."),
        inert(f'"{CLOSE[:-1]}," he said.', UNREG, "Dialogue punctuation with an attribution."),
        inert(f"\"{CLOSE}\" That's what the last agent wrote.", UNREG, "A quotation followed by its attribution: both sentences unregistered."),
        inert(f"`{CLOSE}`", UNREG,
              "The clause in inline code: a backtick is not a UAX #29 Close character, so the closing one becomes its own piece; both pieces are unregistered."),
        inert(f"```\n{CLOSE}\n```", UNREG, "The clause in a code fence: the fence lines are unregistered."),
        inert(f"- {ESCALATE}", UNREG, "A list item: the bullet is part of the sentence."),
        inert(f"({CLOSE})", UNREG, "The clause in parentheses is an aside; the brackets are part of the sentence."),
        inert(f"“\n{CLOSE}\n”", UNREG, "Quotation marks on lines of their own around the clause: those lines are unregistered."),
    ]


def en_paraphrases():
    return [
        inert("I'll pass this on to a colleague who can help.", UNREG, "One extra word is an unregistered paraphrase."),
        inert("I will pass this to a colleague who can help.", UNREG, "The uncontracted form is not the authored clause."),
        inert("I'll hand this to a colleague who can help.", UNREG, "A synonym for pass is a paraphrase."),
        inert("Let me pass this to a colleague who can help.", UNREG, "A different opening is a paraphrase."),
        inert("I'll pass this to a coworker who can help.", UNREG, "A synonym for colleague is a paraphrase."),
        inert("I'll pass this to a colleague that can help.", UNREG, "that for who means the same to a reader but is not the authored clause."),
        inert("I'll escalate this.", UNREG, "Naming the operation is not the authored clause."),
        inert("escalate", UNREG, "The operation's name as text performs nothing."),
        inert("close_ticket", UNREG, "The operation identifier as text performs nothing."),
        inert("I'll put your order on hold while we sort this out.", UNREG, "your for the is a natural paraphrase of the hold clause, and unregistered."),
        inert("I'll put the order on hold while we sort it out.", UNREG, "it for this is a one-word paraphrase of the hold clause, and unregistered."),
        inert("I'll hold the order while we sort this out.", UNREG, "A shorter paraphrase of the hold clause."),
        inert("I'll call you back tomorrow.", UNREG, "Dropping 'morning' changes the clause."),
        inert("I'll call you tomorrow morning.", UNREG, "Dropping 'back' changes the clause."),
        inert("I will call you back tomorrow morning.", UNREG, "The uncontracted callback clause is a paraphrase."),
        inert("We can close the ticket now.", UNREG, "the for this is a one-word paraphrase of the close clause, and unregistered."),
        inert("We can close this ticket.", UNREG, "Dropping 'now' changes the clause."),
        inert("We can now close this ticket.", UNREG, "A reordered clause is a paraphrase."),
        inert("Let's close this ticket now.", UNREG, "A hortative paraphrase (Let's ...) of the close clause is unregistered."),
        inert("This ticket can be closed now.", UNREG, "A passive-voice paraphrase of the close clause is unregistered."),
        inert("Thanks.", UNREG, "A paraphrase of a passive clause is not passive."),
        inert(f"Thank you very much. {CLOSE}", UNREG, "A longer thanks is unregistered and disables the clause."),
    ]


def en_mixed():
    return [
        inert(f"Let me check. {CLOSE}", UNREG, "An unregistered sentence before the clause."),
        inert(f"{CLOSE} Bye.", UNREG, "An unregistered sentence after the clause."),
        inert(f"{HOLD} Meanwhile, relax. {CALLBACK}", UNREG, "An unregistered sentence between two clauses disables both."),
        inert(f"Sorry about the trouble! {HOLD}", UNREG, "The apology with '!' is not the passive one, so the reply is inert."),
        inert(f"{THANK_YOU}\n{CLOSE}\nBye.", UNREG, "Three lines, the last unregistered."),
        inert(" ".join(EN_ALL) + " Or maybe not.", UNREG, "All four clauses and one unregistered sentence at the end."),
        inert("OK. " + " ".join(EN_ALL), UNREG, "One unregistered sentence at the start disables all four."),
        inert(f"{UNDERSTAND} {CALLBACK} Talk soon.", UNREG, "A friendly sign-off is unregistered."),
        inert(f"{CLOSE} 😊", UNREG, "An emoji after the clause is its own unregistered sentence."),
        inert(f"{CLOSE} {THANK_YOU} {ANYTHING} Bye!", UNREG, "Clause and passives, then an unregistered farewell."),
        inert(f"{CLOSE} 고마워.", UNREG, "A passive clause of another score is not passive here."),
        inert(f"{ESCALATE} (They're great.)", UNREG, "A parenthetical remark after the clause."),
    ]


def en_punctuation():
    return [
        inert("We can close this ticket now", UNREG, "The close clause without its final full stop is a different sentence."),
        inert("We can close this ticket now..", UNREG, "A doubled full stop is one sentence that is not the clause."),
        inert("We can close this ticket now...", UNREG, "Three full stops (a trailing-off ellipsis) are one sentence that is not the clause."),
        inert("We can close this ticket now\uff0e", UNREG, "A full-width full stop; no width folding."),
        inert("We can close this ticket now。", UNREG, "An ideographic full stop (U+3002) is a different character from '.'."),
        inert("We can close this ticket now!", UNREG, "An exclamation mark instead of the full stop."),
        inert("We can close this ticket now!!", UNREG, "A doubled exclamation mark is one terminator run and a different sentence from the clause."),
        inert("We can close this ticket now…", UNREG, "An ellipsis character instead of the full stop."),
        inert(f"Thank you… {CLOSE}", UNREG,
              "U+2026 is not a terminator in UAX #29, so this is one sentence 'Thank you… We can close this ticket now.', unregistered."),
        inert(f"Thank you?! {CLOSE}", UNREG, "'?!' is one terminator run: the first sentence is 'Thank you?!', unregistered."),
        inert("I'll call you back tomorrow morning?!", UNREG, "The callback clause ending in '?!'."),
        inert("We can close this ticket now .", UNREG, "A space before the full stop stays inside the sentence."),
        inert("We can close this ticket now;", UNREG, "A semicolon instead of the full stop."),
        inert("I'll call you back tomorrow morning,", UNREG, "A comma instead of the full stop."),
        inert(f"{CLOSE} .", UNREG,
              "A stray full stop after the clause: UAX #29 (SB8a) does not break before another terminator, so the sentence is 'We can close this ticket now. .', unregistered."),
        inert("Thank you!", UNREG, "The passive clause with '!' is unregistered."),
        inert("Is there anything else.", UNREG, "The passive question with a full stop is unregistered."),
    ]


def en_whitespace():
    return [
        ok(f"  {CLOSE}  ", ["close_ticket"], "Leading and trailing spaces are trimmed."),
        ok(f"\t{CLOSE}\t", ["close_ticket"], "Leading and trailing tabs are trimmed."),
        ok(f"\n\n{CLOSE}\n\n\n", ["close_ticket"], "Blank lines around the clause are dropped."),
        ok(f"{HOLD}\r\n{CALLBACK}", ["hold_order", "schedule_callback"], "CR LF between clauses is a boundary."),
        ok(f"{HOLD}\n\n\n\n{CALLBACK}", ["hold_order", "schedule_callback"], "Several blank lines between clauses."),
        ok(f"{ESCALATE}\r\n\r\n\r\n{CLOSE}\r\n", ["escalate", "close_ticket"], "Blank CR LF lines and a trailing CR LF."),
        ok(f"{ESCALATE}\r{CLOSE}", ["escalate", "close_ticket"], "A lone CR (old Mac line ending) is a line break, so the two clauses are separate sentences."),
        ok(f"{ESCALATE}\u2028{CLOSE}", ["escalate", "close_ticket"], "U+2028 LINE SEPARATOR is a line break."),
        ok(f"{ESCALATE}\u2029{CLOSE}", ["escalate", "close_ticket"], "U+2029 PARAGRAPH SEPARATOR is a line break."),
        ok(f"{THANK_YOU}\n   \n\t\n{CLOSE}", ["close_ticket"], "White-space-only lines between sentences are dropped."),
        ok(f"\u00a0{CLOSE}\u00a0", ["close_ticket"], "No-break spaces at the edges are white space and are trimmed."),
        ok(f"\u2003{CLOSE}", ["close_ticket"], "An em space (U+2003) at the start is white space and is trimmed."),
        inert("We can  close this ticket now.", UNREG, "A doubled inner space is not collapsed."),
        inert("We can\tclose this ticket now.", UNREG, "A tab in place of an inner space."),
        inert("I'll call you back tomorrow\u00a0morning.", UNREG, "A no-break space inside the clause, as typesetting tools insert."),
        inert("We can close this\u2009ticket now.", UNREG, "A thin space (U+2009) inside the clause."),
        inert("I'll call you back\ntomorrow morning.", UNREG, "A line break inside the clause splits it into two unregistered sentences."),
        inert("We can close this ticket\r\nnow.", UNREG, "A CR LF inside the clause splits it."),
        inert(f"Thank you.{CLOSE}", UNREG,
              "No space after 'you.': UAX #29 does not break between lower-case, '.', upper-case (SB7), so this is one unregistered sentence."),
    ]


def en_invisible():
    return [
        inert(f"\u200b{CLOSE}", UNREG, "A zero-width space at the start is never trimmed."),
        inert(f"{CLOSE}\u200b", UNREG, "A zero-width space after the full stop attaches to the sentence."),
        inert("We can close this\u200b ticket now.", UNREG, "A zero-width space inside the clause."),
        inert("We can cl\u200cose this ticket now.", UNREG, "A zero-width non-joiner inside a word."),
        inert("We can close this tick\u200det now.", UNREG, "A zero-width joiner inside a word."),
        inert(f"\u2060{CLOSE}", UNREG, "A word joiner (U+2060) at the start is invisible and never trimmed."),
        inert(f"\ufeff{CLOSE}", UNREG, "A byte order mark at the start of a reply is not trimmed."),
        inert("\u202e.won tekcit siht esolc nac eW", UNREG,
              "A right-to-left override before the reversed clause renders as the clause but is not it."),
        inert(f"\u202e{CLOSE}\u202c", UNREG, "The clause between a right-to-left override and a pop."),
        inert(f"\u2066{CALLBACK}\u2069", UNREG, "The clause inside a left-to-right isolate."),
        inert(f"{HOLD}\u200f", UNREG, "A right-to-left mark at the end."),
        inert(f"\u200e{ESCALATE}", UNREG, "A left-to-right mark at the start."),
        inert("I'll pass this to a col\u00adleague who can help.", UNREG, "A soft hyphen (U+00AD) inside a word is invisible and not ignored."),
        inert(f"{THANK_YOU} \u200b{CLOSE}", UNREG,
              "A zero-width space between two sentences: UAX #29 attaches it (Format) to the preceding space, so the first sentence is 'Thank you. ' plus U+200B, untrimmable and unregistered."),
        inert(f"{CLOSE}\n\u2060", UNREG, "A line holding only a word joiner is an unregistered sentence, not an empty one."),
        inert(f"{CLOSE}" + "".join(chr(0xE0000 + ord(c)) for c in "ok"), UNREG,
              "Unicode tag characters (U+E0000 block) hiding text after the clause, as in ASCII smuggling."),
        inert(f"{THANK_YOU}\u200b", UNREG, "An invisible character turns even a passive clause into an unregistered sentence."),
        inert("I'll call you back tomorrow mor\u2061ning.", UNREG, "An invisible function application (U+2061) inside a word."),
    ]


def en_lookalikes():
    return [
        inert("We c\u0430n close this ticket now.", UNREG, "Cyrillic а (U+0430) for Latin a."),
        inert("W\u0435 can close this ticket now.", UNREG, "Cyrillic е (U+0435) for Latin e."),
        inert("We can cl\u043ese this ticket now.", UNREG, "Cyrillic о (U+043E) for Latin o."),
        inert("I'll pass this to a colleague who can hel\u0440.", UNREG, "Cyrillic р (U+0440) for Latin p."),
        inert("We can \u0441lose this ticket now.", UNREG, "Cyrillic с (U+0441) for Latin c."),
        inert("\u0406'll call you back tomorrow morning.", UNREG, "Cyrillic І (U+0406) for Latin I."),
        inert("I'll pass this t\u03bf a colleague who can help.", UNREG, "Greek omicron (U+03BF) for Latin o looks the same and is a different sentence."),
        inert("\uff37e can close this ticket now.", UNREG, "A full-width W; width is not folded."),
        inert("".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" for c in CLOSE), UNREG,
              "The whole clause in full-width forms."),
        inert("I\u2019ll call you back tomorrow morning.", UNREG,
              "A curly apostrophe (U+2019), as models and word processors often write, is not the authored straight apostrophe."),
        inert("I\u02bcll call you back tomorrow morning.", UNREG, "A modifier letter apostrophe (U+02BC)."),
        inert("I`ll call you back tomorrow morning.", UNREG, "A backtick for the apostrophe."),
        inert("l'll call you back tomorrow morning.", UNREG, "Lower-case L for capital I looks alike in many fonts and is a different sentence."),
        inert("\U0001d416e can close this ticket now.", UNREG, "Mathematical bold W (U+1D416); only NFKC would fold it."),
        inert("We can close th\u0131s ticket now.", UNREG, "Dotless i (U+0131) for i is a different letter, not a variant of it."),
        inert("Thank y\u043eu.", UNREG, "A Cyrillic о makes the passive clause unregistered."),
    ]


def en_normalization():
    return [
        inert("we can close this ticket now.", UNREG, "The close clause in lower case: the gate does no case folding."),
        inert("WE CAN CLOSE THIS TICKET NOW.", UNREG, "The close clause in upper case: the gate does no case folding."),
        inert("We Can Close This Ticket Now.", UNREG, "The close clause in title case: the gate does no case folding."),
        inert("i'll call you back tomorrow morning.", UNREG, "Lower-case i: no case folding."),
        inert("We can close this ticke\u0301t now.", UNREG,
              "e followed by a combining acute composes to é under NFC; the result is not the clause."),
        inert(f"{CLOSE}\u0301", UNREG, "A combining mark after the full stop is kept by NFC and attaches to the sentence."),
        inert("Is there anything else\u037e", UNREG,
              "The Greek question mark (U+037E) is canonically equivalent to ';', so NFC turns it into a semicolon, not '?'."),
        inert("We can close this ticket now\u037e", UNREG, "A Greek question mark (NFC ';') at the end of the close clause."),
    ]


def en_long():
    many = " ".join([THANK_YOU] * 200)
    return [
        ok(f"{many} {CLOSE}", ["close_ticket"], "200 passive sentences and one clause: performs once."),
        inert(f"{many} {CLOSE} Bye.", UNREG, "The same with one unregistered sentence at the end: inert."),
        inert(f"Hmm. {many} {CLOSE}", UNREG, "One unregistered sentence at the start of a long reply: inert."),
        ok("\n".join([UNDERSTAND] * 200 + [HOLD] + [SORRY] * 200), ["hold_order"],
           "400 passive lines with one clause in the middle."),
        ok(" ".join(EN_ALL * 25), EN_OPS * 25, "The four clauses 25 times: 100 operations in order."),
        inert(" ".join(EN_ALL * 12 + ["Wait."] + EN_ALL * 13), UNREG,
              "100 scored sentences with one unregistered sentence in the middle."),
        inert(" and ".join([CLOSE[:-1]] * 100) + ".", UNREG, "One very long sentence repeating the clause's words."),
        inert("\n".join([SORRY] * 300), None, "300 passive lines perform nothing."),
    ]


def en_empty():
    return [
        inert("", EMPTY, "An empty reply performs nothing, with its own reason."),
        inert(" ", EMPTY, "A single space trims to nothing: no sentence, an empty response."),
        inert("\n", EMPTY, "A single line break has no sentence: an empty response."),
        inert("\r\n", EMPTY, "A single CR LF has no sentence: an empty response."),
        inert("\t", EMPTY, "A single tab trims to nothing: an empty response."),
        inert("\u00a0", EMPTY, "Only a no-break space, which is Unicode white space: an empty response."),
        inert("\u3000", EMPTY, "Only an ideographic space, which is Unicode white space: an empty response."),
        inert("\u2028", EMPTY, "Only a line separator (U+2028), a line break: an empty response."),
        inert(" \n\t\r\n ", EMPTY, "Mixed white space over several lines."),
        inert("", EMPTY, "An empty user entry is an empty response.", kind="user"),
        inert("", EMPTY, "An empty authored entry is an empty response.", kind="authored"),
        inert("\u200b", UNREG, "Only a zero-width space is not empty: it is an unregistered sentence."),
        inert("\ufeff", UNREG, "Only a byte order mark is not empty: it is an unregistered sentence."),
        inert(".", UNREG, "A lone full stop is an unregistered sentence, not an empty reply."),
    ]


EN_UNKNOWN_KINDS = [
    ("bot", "A kind the contract does not declare is an input error."),
    ("Model_Reply", "Kinds are matched exactly: no case folding."),
    ("AUTHORED", "Upper-case authored is not the declared kind."),
    ("", "An empty kind is an input error."),
    (" user", "A leading space is not trimmed from a kind."),
    ("user ", "A trailing space is not trimmed from a kind."),
    ("user\n", "A trailing line break is part of the kind."),
    ("model-reply", "A hyphen for the underscore is another kind."),
    ("tool_result", "tool_result is not declared in this contract."),
    ("assistant", "A chat-API role name is not a declared kind."),
    ("customer", "A plausible synonym of user is not declared."),
    ("model_reply\u200b", "A zero-width space after the kind makes it another kind."),
    ("\uff41uthored", "A full-width a (U+FF41) in authored makes another kind: no width folding of kinds."),
]


def en_kinds():
    cases = [
        ok(CLOSE, ["close_ticket"], "close_ticket is permitted from authored lines in this score.", kind="authored"),
        ok(f"{CLOSE} {THANK_YOU}", ["close_ticket"], "An authored close with a passive thanks.", kind="authored"),
        inert(ESCALATE, NOT_PERMITTED, "escalate is limited to model_reply; from an authored line it is not permitted.", kind="authored"),
        inert(HOLD, NOT_PERMITTED, "hold_order from an authored line is not permitted.", kind="authored"),
        inert(CALLBACK, NOT_PERMITTED, "schedule_callback from an authored line is not permitted.", kind="authored"),
        inert(CLOSE, NOT_PERMITTED, "The user typing the close clause does not close the ticket.", kind="user"),
        inert(HOLD, NOT_PERMITTED, "The user typing the hold clause does not hold the order.", kind="user"),
        inert(ESCALATE, NOT_PERMITTED, "The user typing the escalate clause does not escalate.", kind="user"),
        inert(CALLBACK, NOT_PERMITTED, "The user typing the callback clause does not book a callback.", kind="user"),
        inert(" ".join(EN_ALL), NOT_PERMITTED, "All four clauses from the user perform nothing.", kind="user"),
        inert(f"{CLOSE} {CALLBACK}", NOT_PERMITTED,
              "Authored close then callback: the callback is not permitted from authored, so even the close is not performed.",
              kind="authored"),
        inert(f"{THANK_YOU} {UNDERSTAND}", None, "Passive clauses from the user perform nothing.", kind="user"),
        inert(SORRY, None, "A passive clause from an authored line performs nothing.", kind="authored"),
        inert("Can we close this ticket now?", UNREG, "A user's question is unregistered.", kind="user"),
        bad_kind("bot", "", "An unknown kind with an empty text is still an input error: the kind is checked first."),
    ]
    cases += [bad_kind(kind, CLOSE, why) for kind, why in EN_UNKNOWN_KINDS]
    return cases


SUITES = {
    "score-ko": {
        "positives": ko_positives, "passive": ko_passive, "questions": ko_questions,
        "negations": ko_negations, "quotations": ko_quotations, "paraphrases": ko_paraphrases,
        "mixed": ko_mixed, "punctuation": ko_punctuation, "whitespace": ko_whitespace,
        "invisible": ko_invisible, "lookalikes": ko_lookalikes, "normalization": ko_normalization,
        "long": ko_long, "empty": ko_empty, "kinds": ko_kinds,
    },
    "score-en": {
        "positives": en_positives, "passive": en_passive, "questions": en_questions,
        "negations": en_negations, "quotations": en_quotations, "paraphrases": en_paraphrases,
        "mixed": en_mixed, "punctuation": en_punctuation, "whitespace": en_whitespace,
        "invisible": en_invisible, "lookalikes": en_lookalikes, "normalization": en_normalization,
        "long": en_long, "empty": en_empty, "kinds": en_kinds,
    },
}


def main():
    for folder, files in SUITES.items():
        total = 0
        for name, make in files.items():
            n = write(folder, name, make())
            print(f"{folder}/{name}.jsonl: {n}")
            total += n
        print(f"{folder}: {total} cases")


if __name__ == "__main__":
    main()
