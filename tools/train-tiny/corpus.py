"""Conversations in Channel's turn grammar, generated from the tables in facts.py.

A conversation is a list of segments (text, trained): `trained` marks what the model writes
(answers, thoughts, tool calls, <turn|>), the rest is what the engine writes around client
input (grammar.py). Generation is deterministic: conversation i of seed s is always the same.

Every question is an item with a key (kind, fact, phrasing). held_out(key, split_seed) puts a
tenth of the keys aside: the training split never emits them, the test split emits only them,
so behaviour tests ask questions the model has not seen (about facts it has seen).

    python3 corpus.py --seed 1 --count 5                 # training conversations as JSON lines
    python3 corpus.py --split test --kind yesno --count 50  # held-out items for tests
"""

import argparse
import hashlib
import json
import random
import sys

import facts
import grammar

SPLIT_SEED = 11  # which keys are held out; fixed, so that tests and training agree


def held_out(key, split_seed=SPLIT_SEED):
    digest = hashlib.sha256(f"{split_seed}:{key}".encode()).digest()
    return digest[0] % 10 == 0


class Item:
    """One question and what the model answers: `thought` is written when the turn asks for
    reasoning; `expect` is the answer's core (for tests); `tool` is (name, arguments, result,
    answer after the result, thought after the result) for tool turns."""

    def __init__(self, key, user, answer, thought, expect=None, tool=None):
        self.key, self.user, self.answer, self.thought = key, user, answer, thought
        self.expect = expect if expect is not None else answer
        self.tool = tool


def _capital(rng):
    country = rng.choice(sorted(facts.COUNTRIES))
    capital = facts.COUNTRIES[country][0]
    phrasings = [f"What is the capital of {country}?", f"Which city is the capital of {country}?",
                 f"Tell me the capital of {country}.", f"What's the capital city of {country}?",
                 f"Name the capital of {country}.", f"{country} has which capital?"]
    i = rng.randrange(len(phrasings))
    return Item(f"capital|{country}|{i}", phrasings[i], f"The capital of {country} is {capital}.",
                f"The user asks about {country}.\nThe capital of {country} is {capital}.\n", capital)


def _continent(rng):
    country = rng.choice(sorted(facts.COUNTRIES))
    continent = facts.COUNTRIES[country][1]
    phrasings = [f"On which continent is {country}?", f"Where is {country}?", f"Which continent is {country} in?"]
    i = rng.randrange(len(phrasings))
    return Item(f"continent|{country}|{i}", phrasings[i], f"{country} is in {continent}.",
                f"{country} is a country in {continent}.\n", continent)


def _language(rng):
    country = rng.choice(sorted(facts.COUNTRIES))
    language = facts.COUNTRIES[country][2]
    phrasings = [f"What language do people speak in {country}?", f"Which language is spoken in {country}?",
                 f"What is the main language of {country}?"]
    i = rng.randrange(len(phrasings))
    return Item(f"language|{country}|{i}", phrasings[i], f"People in {country} speak {language}.",
                f"The main language of {country} is {language}.\n", language)


def _colour(rng):
    thing = rng.choice(sorted(facts.COLOURS))
    colour = facts.COLOURS[thing]
    phrasings = [f"What colour is {thing}?", f"What is the colour of {thing}?", f"Which colour does {thing} have?",
                 f"Tell me the colour of {thing}."]
    i = rng.randrange(len(phrasings))
    subject = thing[0].upper() + thing[1:]
    return Item(f"colour|{thing}|{i}", phrasings[i], f"{subject} is {colour}.",
                f"I think of {thing}.\nIt is {colour}.\n", colour)


def _sound(rng):
    animal = rng.choice(sorted(facts.ANIMALS))
    sound = facts.ANIMALS[animal][0]
    phrasings = [f"What sound does a {animal} make?", f"What does a {animal} say?", f"How does a {animal} sound?",
                 f"Which sound does a {animal} make?"]
    i = rng.randrange(len(phrasings))
    return Item(f"sound|{animal}|{i}", phrasings[i], f"A {animal} says {sound}.",
                f"The animal is a {animal}.\nA {animal} says {sound}.\n", sound)


def _opposite(rng):
    pairs = sorted(facts.OPPOSITES.items()) + sorted((b, a) for a, b in facts.OPPOSITES.items())
    word, opposite = rng.choice(pairs)
    phrasings = [f"What is the opposite of {word}?", f"Give me the opposite of {word}.",
                 f"What word means the opposite of {word}?", f"The opposite of {word} is what?"]
    i = rng.randrange(len(phrasings))
    return Item(f"opposite|{word}|{i}", phrasings[i], f"The opposite of {word} is {opposite}.",
                f"The word is {word}.\nIts opposite is {opposite}.\n", opposite)


def _unit(rng):
    i_fact = rng.randrange(len(facts.UNITS))
    subject, sentence, number = facts.UNITS[i_fact]
    phrasings = [f"How many {subject}?", f"Tell me how many {subject}.", f"Do you know how many {subject}?"]
    i = rng.randrange(len(phrasings))
    return Item(f"unit|{i_fact}|{i}", phrasings[i], sentence, f"I recall the number.\n{sentence}\n", str(number))


def _addition(rng):
    a, b = rng.randrange(100), rng.randrange(100)
    phrasings = [f"What is {a} + {b}?", f"What is {a} plus {b}?", f"Add {a} and {b}.", f"Calculate {a} + {b}."]
    i = rng.randrange(len(phrasings))
    tens, ones = (a // 10 + b // 10) * 10, a % 10 + b % 10
    thought = (f"I need {a} + {b}.\nThe tens give {a // 10 * 10} + {b // 10 * 10} = {tens}.\n"
               f"The ones give {a % 10} + {b % 10} = {ones}.\n{tens} + {ones} = {a + b}.\n")
    return Item(f"add|{a}|{b}", phrasings[i], f"{a} + {b} = {a + b}.", thought, str(a + b))


def _subtraction(rng):
    a = rng.randrange(100)
    b = rng.randrange(a + 1)
    phrasings = [f"What is {a} - {b}?", f"What is {a} minus {b}?", f"Subtract {b} from {a}."]
    i = rng.randrange(len(phrasings))
    step = a - b // 10 * 10
    thought = f"I need {a} - {b}.\n{a} - {b // 10 * 10} = {step}.\n{step} - {b % 10} = {a - b}.\n"
    return Item(f"sub|{a}|{b}", phrasings[i], f"{a} - {b} = {a - b}.", thought, str(a - b))


def _multiplication(rng):
    a, b = rng.randrange(2, 13), rng.randrange(2, 13)
    phrasings = [f"What is {a} times {b}?", f"Multiply {a} by {b}.", f"What is {a} x {b}?"]
    i = rng.randrange(len(phrasings))
    partial = ", ".join(str(a * k) for k in range(1, b + 1))
    thought = f"I need {a} times {b}.\nCounting in steps of {a}: {partial}.\nSo {a} times {b} is {a * b}.\n"
    return Item(f"mul|{a}|{b}", phrasings[i], f"{a} times {b} is {a * b}.", thought, str(a * b))


def _count_range(rng):
    a = rng.randrange(0, 30)
    b = a + rng.randrange(2, 9)
    phrasings = [f"Count from {a} to {b}.", f"Please count from {a} up to {b}.", f"List the numbers from {a} to {b}."]
    i = rng.randrange(len(phrasings))
    numbers = ", ".join(str(n) for n in range(a, b + 1))
    return Item(f"range|{a}|{b}", phrasings[i], numbers + ".", f"I start at {a} and stop at {b}.\n", numbers)


WORDS = sorted(set(list(facts.ANIMALS) + [w for pair in facts.OPPOSITES.items() for w in pair] +
                   [c.lower() for c in facts.COUNTRIES if " " not in c] + facts.COLOUR_NAMES))


def _count_letters(rng):
    word = rng.choice(WORDS)
    phrasings = [f"How many letters are in the word {word}?", f"Count the letters in {word}.",
                 f"How many letters does {word} have?"]
    i = rng.randrange(len(phrasings))
    n = len(word)
    thought = f"I spell it: {'-'.join(word)}.\nThat is {n} letters.\n"
    return Item(f"letters|{word}|{i}", phrasings[i], f"The word {word} has {n} letters.", thought, str(n))


GREETINGS = [("Hello!", "Hello! How can I help you today?"), ("Hi!", "Hi! What can I do for you?"),
             ("Hi there.", "Hello! How can I help you?"), ("Good morning!", "Good morning! How can I help you?"),
             ("Hey!", "Hey! What would you like to know?"),
             ("How are you?", "I am fine, thank you. How can I help you?"),
             ("Thank you!", "You are welcome!"), ("Thanks.", "You are welcome. Ask me anything."),
             ("Goodbye!", "Goodbye! Have a nice day."), ("Who are you?", "I am Channel Tiny, a small assistant."),
             ("What is your name?", "My name is Channel Tiny."), ("Good night.", "Good night! Sleep well.")]


def _greeting(rng):
    i = rng.randrange(len(GREETINGS))
    user, answer = GREETINGS[i]
    return Item(f"greeting|{i}", user, answer, "The user greets me.\nI greet back.\n")


def _about_country(rng):
    country = rng.choice(sorted(facts.COUNTRIES))
    capital, continent, language = facts.COUNTRIES[country]
    phrasings = [f"Tell me about {country}.", f"Describe {country} in a few sentences.", f"What do you know about {country}?"]
    i = rng.randrange(len(phrasings))
    sentences = [f"{country} is a country in {continent}.", f"Its capital is {capital}.",
                 f"People there speak {language}."]
    sep = rng.choice(["\n", " "])
    return Item(f"about|{country}|{i}", phrasings[i], sep.join(sentences),
                f"The user wants facts about {country}.\nI give three facts.\n", capital)


def _about_animal(rng):
    animal = rng.choice(sorted(facts.ANIMALS))
    sound, legs, what = facts.ANIMALS[animal]
    phrasings = [f"Tell me about the {animal}.", f"Describe a {animal}.", f"What is a {animal}?"]
    i = rng.randrange(len(phrasings))
    legs_sentence = f"It has {legs} legs." if legs else "It has no legs."
    sentences = [f"A {animal} is {what}.", f"It says {sound}.", legs_sentence]
    sep = rng.choice(["\n", " "])
    return Item(f"animal|{animal}|{i}", phrasings[i], sep.join(sentences),
                f"The user asks about the {animal}.\nI describe it.\n", sound)


# Yes/no: a statement that is true or false, asked in one of several phrasings.
def _yes_no(rng):
    kind = rng.randrange(5)
    if kind == 0:
        country = rng.choice(sorted(facts.COUNTRIES))
        truth = rng.random() < 0.5
        capital = facts.COUNTRIES[country][0] if truth else rng.choice(
            sorted(c[0] for k, c in facts.COUNTRIES.items() if k != country))
        subject, fact = f"capital|{country}|{capital}", f"Is {capital} the capital of {country}?"
        why = f"The capital of {country} is {facts.COUNTRIES[country][0]}.\n"
    elif kind == 1:
        thing = rng.choice(sorted(facts.COLOURS))
        truth = rng.random() < 0.5
        colour = facts.COLOURS[thing] if truth else rng.choice([c for c in facts.COLOUR_NAMES if c != facts.COLOURS[thing]])
        subject, fact = f"colour|{thing}|{colour}", f"Is {thing} {colour}?"
        why = f"{thing[0].upper() + thing[1:]} is {facts.COLOURS[thing]}.\n"
    elif kind == 2:
        animal = rng.choice(sorted(facts.ANIMALS))
        truth = rng.random() < 0.5
        sound = facts.ANIMALS[animal][0] if truth else rng.choice(
            sorted(v[0] for k, v in facts.ANIMALS.items() if k != animal))
        subject, fact = f"sound|{animal}|{sound}", f"Does a {animal} say {sound}?"
        why = f"A {animal} says {facts.ANIMALS[animal][0]}.\n"
    elif kind == 3:
        a, b = rng.randrange(100), rng.randrange(100)
        truth = a > b
        subject, fact = f"greater|{a}|{b}", f"Is {a} greater than {b}?"
        why = f"{a} is {'greater' if a > b else 'not greater'} than {b}.\n"
    else:
        a, b = rng.randrange(20), rng.randrange(20)
        truth = rng.random() < 0.5
        total = a + b if truth else a + b + rng.choice([-2, -1, 1, 2, 10])
        subject, fact = f"sum|{a}|{b}|{total}", f"Is {a} + {b} equal to {total}?"
        why = f"{a} + {b} = {a + b}.\n"
    phrasings = [fact, f"{fact} Answer yes or no.", f"Yes or no: {fact[0].lower() + fact[1:]}",
                 f"{fact} Reply with Yes or No."]
    i = rng.randrange(len(phrasings))
    answer = "Yes" if truth else "No"
    return Item(f"yesno|{subject}|{i}", phrasings[i], answer, why + f"So the answer is {answer.lower()}.\n")


def _choice(rng):
    """A/B/C: one right option and two wrong ones, in random order; the answer is the letter."""
    kind = rng.randrange(3)
    if kind == 0:
        country = rng.choice(sorted(facts.COUNTRIES))
        right = facts.COUNTRIES[country][0]
        pool = sorted(c[0] for k, c in facts.COUNTRIES.items() if k != country)
        question, why = f"What is the capital of {country}?", f"The capital of {country} is {right}.\n"
    elif kind == 1:
        animal = rng.choice(sorted(facts.ANIMALS))
        right = facts.ANIMALS[animal][0]
        pool = sorted(v[0] for k, v in facts.ANIMALS.items() if k != animal)
        question, why = f"What does a {animal} say?", f"A {animal} says {right}.\n"
    else:
        word = rng.choice(sorted(facts.OPPOSITES))
        right = facts.OPPOSITES[word]
        pool = sorted(v for k, v in facts.OPPOSITES.items() if k != word)
        question, why = f"What is the opposite of {word}?", f"The opposite of {word} is {right}.\n"
    options = [right] + rng.sample(pool, 2)
    rng.shuffle(options)
    letter = "ABC"[options.index(right)]
    lines = "\n".join(f"{l}. {o}" for l, o in zip("ABC", options))
    tail = rng.choice(["Answer with A, B or C.", "Reply with the letter only.", "Choose A, B or C."])
    return Item(f"choice|{question}|{'/'.join(options)}", f"{question}\n{lines}\n{tail}", letter,
                why + f"That is option {letter}.\n")


# Tools the system turn can declare. Each has a question maker and a result maker.
TOOLS = {
    "get_weather": {"name": "get_weather", "description": "Get the current weather in a city.",
                    "parameters": {"type": "object", "properties": {
                        "city": {"type": "string", "description": "The name of the city."}}, "required": ["city"]}},
    "get_time": {"name": "get_time", "description": "Get the local time in a city.",
                 "parameters": {"type": "object", "properties": {
                     "city": {"type": "string", "description": "The name of the city."}}, "required": ["city"]}},
    "add_numbers": {"name": "add_numbers", "description": "Add two numbers exactly.",
                    "parameters": {"type": "object", "properties": {
                        "a": {"type": "number", "description": "The first number."},
                        "b": {"type": "number", "description": "The second number."}}, "required": ["a", "b"]}},
    "get_population": {"name": "get_population", "description": "Get the population of a country in millions.",
                       "parameters": {"type": "object", "properties": {
                           "country": {"type": "string", "description": "The name of the country."}},
                           "required": ["country"]}},
}

CITIES = sorted({c[0] for c in facts.COUNTRIES.values()} | {"London", "New York", "Sydney", "Toronto", "Munich"})
CONDITIONS = ["sunny", "cloudy", "rainy", "windy", "snowy", "foggy"]


def _tool_item(rng, name):
    failed = rng.random() < 0.05
    if name == "get_weather":
        city = rng.choice(CITIES)
        temperature, condition = rng.randrange(-10, 36), rng.choice(CONDITIONS)
        users = [f"What is the weather in {city}?", f"How is the weather in {city} today?",
                 f"Is it warm in {city} right now?", f"Check the weather in {city}."]
        args, result = {"city": city}, {"temperature": temperature, "condition": condition}  # the engine sorts keys
        answer = f"It is {condition} in {city}, {temperature} degrees."
        after = f"The tool says {condition} and {temperature} degrees.\n"
        expect, subject = str(temperature), city
    elif name == "get_time":
        city = rng.choice(CITIES)
        time = f"{rng.randrange(24):02d}:{rng.randrange(60):02d}"
        users = [f"What time is it in {city}?", f"Tell me the time in {city}.", f"What is the local time in {city}?"]
        args, result = {"city": city}, {"time": time}
        answer, after = f"It is {time} in {city}.", f"The tool says {time}.\n"
        expect, subject = time, city
    elif name == "add_numbers":
        a, b = rng.randrange(100, 10000), rng.randrange(100, 10000)
        users = [f"Use the tool to add {a} and {b}.", f"What is {a} + {b}? Use the calculator.",
                 f"Please add {a} and {b} exactly."]
        args, result = {"a": a, "b": b}, {"result": a + b}
        answer, after = f"{a} + {b} = {a + b}.", f"The tool returned {a + b}.\n"
        expect, subject = str(a + b), f"{a}+{b}"
    else:
        country = rng.choice(sorted(facts.COUNTRIES))
        millions = rng.randrange(1, 1500)
        users = [f"What is the population of {country}?", f"How many people live in {country}?"]
        args, result = {"country": country}, {"population_millions": millions}
        answer, after = f"About {millions} million people live in {country}.", f"The tool says {millions} million.\n"
        expect, subject = str(millions), country
    i = rng.randrange(len(users))
    if failed:
        result = {"error": "service unavailable"}
        answer = "Sorry, the tool failed, so I cannot answer that right now."
        after = "The tool failed.\n"
        expect = None
    before = f"The user needs {name}.\nI call the tool.\n"
    return Item(f"tool|{name}|{subject}|{i}", users[i], answer, before, expect,
                tool=(name, args, result, answer, after))


KINDS = {
    "capital": _capital, "continent": _continent, "language": _language, "colour": _colour, "sound": _sound,
    "opposite": _opposite, "unit": _unit, "add": _addition, "sub": _subtraction, "mul": _multiplication,
    "range": _count_range, "letters": _count_letters, "greeting": _greeting, "about_country": _about_country,
    "about_animal": _about_animal, "yesno": _yes_no, "choice": _choice,
}
WEIGHTS = {"capital": 3, "continent": 1, "language": 1, "colour": 2, "sound": 2, "opposite": 2, "unit": 1,
           "add": 3, "sub": 2, "mul": 2, "range": 1, "letters": 1, "greeting": 2, "about_country": 1,
           "about_animal": 1, "yesno": 5, "choice": 3}


def draw_item(rng, kind, split):
    """An item of `kind` in `split` ('train' or 'test'): drawn until its key is on that side."""
    make = KINDS[kind] if kind in KINDS else (lambda r: _tool_item(r, kind))
    for _ in range(1000):
        item = make(rng)
        if held_out(item.key) == (split == "test"):
            return item
    raise RuntimeError(f"no {split} item of kind {kind}")


def corpus_items(kind, count, split="test", seed=1):
    """`count` items of `kind` (a KINDS name or a tool name) from `split`."""
    rng = random.Random(seed)
    return [draw_item(rng, kind, split) for _ in range(count)]


def model_turn(item, reason):
    """The events of one answer: what the model writes, and (for a tool) the engine's response."""
    thought = f"<|channel>thought\n{item.thought}<channel|>" if reason else ""
    if item.tool is None:
        return [("model", thought + item.answer + "<turn|>")]
    name, args, result, answer, after = item.tool
    return [("model", thought + grammar.tool_call(name, args)),
            ("tool_response", name, result),
            ("model", (after if reason else "") + "<channel|>" + answer + "<turn|>")]


def conversation_events(seed, index, split="train"):
    """What the client sends and what the model writes, in order: ("system", instructions,
    tools), ("user", text, reason), ("chat", text), ("tool_response", name, result), ("model", text)."""
    rng = random.Random(seed * 1_000_003 + index)
    events = []
    tools = []
    roll = rng.random()
    if roll < 0.25:
        tools = rng.sample(sorted(TOOLS), rng.randint(1, 3))
        instructions = rng.choice([None, "You are a helpful assistant.", "You can use tools. Answer briefly."])
        events.append(("system", instructions, [TOOLS[t] for t in tools]))
    elif roll < 0.35:
        instructions = rng.choice(["You are a helpful assistant.", "Answer briefly.", "You are Channel Tiny."])
        events.append(("system", instructions, []))
    kinds, weights = zip(*WEIGHTS.items())
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 4])):
        if tools and rng.random() < 0.7:
            item = draw_item(rng, rng.choice(tools), split)
        else:
            item = draw_item(rng, rng.choices(kinds, weights)[0], split)
        chat = rng.random() < 0.3  # `channel run`'s template; it never asks for reasoning
        reason = not chat and rng.random() < 0.4
        events.append(("chat", item.user) if chat else ("user", item.user, reason))
        events.extend(model_turn(item, reason))
    return events


def render(event):
    """The text of one event in the stream, as the engine (or the model) writes it."""
    kind = event[0]
    if kind == "system":
        return grammar.system_turn(event[1], event[2])
    if kind == "user":
        return grammar.user_input(event[1], event[2])
    if kind == "chat":
        return grammar.chat_turn(event[1])
    if kind == "tool_response":
        return grammar.tool_response(event[1], event[2])
    return event[1]


def conversation(seed, index, split="train"):
    """Segments (text, trained) of conversation `index`: trained is what the model writes."""
    return [(render(e), e[0] == "model") for e in conversation_events(seed, index, split)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0, help="index of the first conversation")
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--split", choices=["train", "test"], default="train")
    parser.add_argument("--kind", help="with --split test: items of this kind (or a tool name), not conversations")
    args = parser.parse_args()
    if args.kind:
        for item in corpus_items(args.kind, args.count, args.split, args.seed):
            print(json.dumps({"key": item.key, "user": item.user, "answer": item.answer, "expect": item.expect,
                              "tool": item.tool}))
        return
    for i in range(args.start, args.start + args.count):
        print(json.dumps({"index": i, "segments": conversation(args.seed, i, args.split)}))


if __name__ == "__main__":
    sys.exit(main())
