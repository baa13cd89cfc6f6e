"""Deterministic long conversations and labelled questions for measuring recall on chat memory.

Assistants keep much of their memory as what was said: one memory per turn of a chat, with
who said it and when (``Maya (1:56 pm on 8 May, 2023): I finally went to the climbing gym
yesterday!``). This script writes such conversations for the benchmark alone: two people
talk over many sessions months apart; each tells of things they did (events drawn from a
pool with varied people, pets, places and objects), introduces relatives and mentions them
again later by name, says what they like, and the other answers, often echoing the words
(turns that share the question's words without answering it). Small talk fills the rest.

Every question is labelled with the turns that answer it, known by construction:

- ``fact``: what someone did, made, bought or named ("What did Omar build for his daughter?");
- ``time``: when something happened ("When did Maya adopt a cat?"), answered by the turn
  whose date and relative time word ("last Saturday") date it;
- ``multi-hop``: two turns, one introducing a relative by name, one later about that name
  ("Where did Maya's brother move to?", where the move is told as "Tom moved to Porto");
- ``open``: what a person likes or would like, told in other words than the question's.

``python bench/memory_eval/conversations.py`` rewrites conversations.jsonl and
conversation_queries.json here. The conversations use their own vocabulary and no public
conversational QA set was read or tuned on: the held-out benchmark stays a fair judge.
"""

from __future__ import annotations

import datetime
import json
import random
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CONVERSATIONS = 5
SESSIONS = 22
SEED = 36

NAMES = [
    ("Maya", "her"), ("Omar", "his"), ("Lena", "her"), ("Jonas", "his"), ("Priya", "her"),
    ("Diego", "his"), ("Hana", "her"), ("Felix", "his"), ("Ines", "her"), ("Kwame", "his"),
    ("Sofia", "her"), ("Tariq", "his"), ("Elena", "her"), ("Marcus", "his"), ("Yuki", "her"),
    ("Bruno", "his"),
]  # fmt: skip
RELATIVE_NAMES = [
    "Tom", "Nora", "Ravi", "Clara", "Jamal", "Ada", "Leo", "Mila", "Sami", "Rosa", "Ivan", "Zoe",
    "Emil", "Lucia", "Arjun", "Greta", "Noah", "Amara", "Otto", "Selma",
]  # fmt: skip
PET_NAMES = [
    "Biscuit",
    "Pepper",
    "Mochi",
    "Waffles",
    "Juniper",
    "Pickles",
    "Ziggy",
    "Luna",
    "Noodle",
    "Basil",
]
CITIES = [
    "Porto",
    "Denver",
    "Osaka",
    "Nairobi",
    "Tallinn",
    "Montreal",
    "Valencia",
    "Hobart",
    "Krakow",
    "Austin",
]
RELATIONS = ["sister", "brother", "daughter", "son", "cousin", "niece", "nephew", "aunt"]
RELATIVE_TIMES = [
    ("yesterday", 1),
    ("last Saturday", 4),
    ("last week", 7),
    ("two days ago", 2),
    ("this morning", 0),
    ("last weekend", 5),
]

# Things a speaker did. "said": the first-person telling ({when} a relative time word);
# "time": the question of when; "fact": a question whose answer the telling holds (or None);
# "echo": what the other says back, sharing words without answering.
EVENTS: list[dict[str, Any]] = [
    {
        "said": "I finally went to the climbing gym {when}, my arms are still shaking!",
        "time": "When did {s} go to the climbing gym?",
        "fact": None,
        "echo": "A climbing gym sounds intense, I would be terrified of the walls.",
        "again": [
            "Back at the gym again, the bouldering wall is still beating me.",
            "My climbing shoes are falling apart already.",
        ],
    },
    {
        "said": "We adopted a rescue cat {when}! We named her {pet}.",
        "time": "When did {s} adopt a cat?",
        "fact": "What is the name of the cat {s} adopted?",
        "echo": "Cats are the best. Rescue animals are always so grateful.",
        "again": [
            "{pet} knocked a glass off the table again, typical cat.",
            "The cat has claimed my desk chair as her own.",
        ],
    },
    {
        "said": "I built a wooden bookshelf for my {relation} {when}, it took the whole day.",
        "time": "When did {s} build the bookshelf?",
        "fact": "What did {s} build for {pos} {relation}?",
        "echo": "Woodwork takes patience, I could never build furniture myself.",
        "again": [
            "I want to build a bed frame next, the shelf went so well.",
            "The sawdust from my last project is still everywhere.",
        ],
    },
    {
        "said": "I ran my first half marathon in {city} {when}. Two hours and five minutes!",
        "time": "When did {s} run a half marathon?",
        "fact": "Where did {s} run {pos} first half marathon?",
        "echo": "Running that far is amazing. I get tired after a few kilometres.",
        "again": [
            "Went for an easy run by the river, my knees feel fine.",
            "Thinking about signing up for a full marathon next year.",
        ],
    },
    {
        "said": "I started taking pottery classes {when}; my first bowl came out lopsided.",
        "time": "When did {s} start pottery classes?",
        "fact": "What did {s} make in {pos} first pottery class?",
        "echo": "Pottery seems so relaxing, I have always wanted to try a wheel.",
        "again": [
            "The pottery teacher said my bowls are getting less wobbly.",
            "Glazing is the hardest part of pottery for me.",
        ],
    },
    {
        "said": "I painted a sunset over the harbour {when} and hung it in the hallway.",
        "time": "When did {s} paint the harbour sunset?",
        "fact": "What did {s} paint?",
        "echo": "You should show me your paintings sometime!",
        "again": [
            "I am painting again, this time a portrait of my grandmother.",
            "Bought new brushes, the old ones were ruined.",
        ],
    },
    {
        "said": "I bought a secondhand cello {when}. The neighbours are very patient with me.",
        "time": "When did {s} buy a cello?",
        "fact": "What instrument did {s} buy?",
        "echo": "Music is such a nice thing to pick up as an adult.",
        "again": [
            "Practised scales on the cello for an hour, slowly getting there.",
            "My cello teacher is strict but kind.",
        ],
    },
    {
        "said": "We drove up to the mountains {when} and camped by a frozen lake.",
        "time": "When did {s} go camping in the mountains?",
        "fact": "Where did {s} camp on the mountain trip?",
        "echo": "Camping in the cold? You are braver than me.",
        "again": [
            "I keep looking at photos from the mountain trip.",
            "Need a warmer sleeping bag before the next camping trip.",
        ],
    },
    {
        "said": "I baked sourdough bread for the first time {when}, the crust was perfect.",
        "time": "When did {s} bake sourdough?",
        "fact": "What did {s} bake for the first time?",
        "echo": "Fresh bread is the best smell in the world.",
        "again": [
            "My sourdough starter needs feeding twice a day, it is like a pet.",
            "Made pizza with the leftover dough, not bad.",
        ],
    },
    {
        "said": "I volunteered at the animal shelter {when}, walking dogs for four hours.",
        "time": "When did {s} volunteer at the animal shelter?",
        "fact": "What did {s} do while volunteering at the shelter?",
        "echo": "Shelters always need more help, that is kind of you.",
        "again": [
            "Going back to the shelter on Sunday, one dog there stole my heart.",
            "The shelter is running a food drive this month.",
        ],
    },
    {
        "said": "I got promoted to head chef at the restaurant {when}!",
        "time": "When was {s} promoted to head chef?",
        "fact": "What position was {s} promoted to?",
        "echo": "Congratulations! All those late nights at work paid off.",
        "again": [
            "Long shift at the restaurant, we served two hundred dinners.",
            "Designing a new menu for the autumn, lots of mushrooms.",
        ],
    },
    {
        "said": "I planted tomatoes and basil in the garden {when}, hoping for a good summer.",
        "time": "When did {s} plant tomatoes?",
        "fact": "What did {s} plant in the garden?",
        "echo": "Gardening is so rewarding, I kill every plant I touch though.",
        "again": [
            "The garden is overrun with snails, I am losing the battle.",
            "Picked the first tomatoes today, so sweet.",
        ],
    },
    {
        "said": "My {relation} and I went to a jazz concert at the old theatre {when}.",
        "time": "When did {s} go to the jazz concert?",
        "fact": "Who did {s} go to the jazz concert with?",
        "echo": "Live music is the best, I miss going to concerts.",
        "again": [
            "Listening to jazz records all evening after that concert.",
            "The theatre is showing a silent film next month.",
        ],
    },
    {
        "said": "I learned to make dumplings from scratch {when}, folding them is harder than it looks.",
        "time": "When did {s} learn to make dumplings?",
        "fact": "What did {s} learn to cook from scratch?",
        "echo": "Homemade food always tastes better.",
        "again": [
            "Made another batch of dumplings, froze half for later.",
            "Next I want to try hand-pulled noodles.",
        ],
    },
    {
        "said": "I finished reading a novel about a lighthouse keeper {when}, I cried at the end.",
        "time": "When did {s} finish the lighthouse novel?",
        "fact": "What was the novel {s} finished reading about?",
        "echo": "I need a good book recommendation, my reading list is empty.",
        "again": [
            "Started a new book, a mystery set on a train.",
            "Our book club is reading poetry this month, not my thing.",
        ],
    },
    {
        "said": "I signed up for a beginner sailing course {when}; we capsized twice.",
        "time": "When did {s} sign up for sailing lessons?",
        "fact": "What course did {s} sign up for?",
        "echo": "Being out on the water must feel so free.",
        "again": [
            "Sailing again this weekend if the wind is kind.",
            "I finally learned to tie a bowline knot.",
        ],
    },
    {
        "said": "I fixed up an old bicycle {when} and rode it to work for the first time.",
        "time": "When did {s} fix the old bicycle?",
        "fact": "How did {s} get to work after fixing the bicycle?",
        "echo": "Cycling to work is a great way to start the day.",
        "again": [
            "Got a flat tyre on the way home, had to walk the bike.",
            "Bought a bell and a basket for the bike.",
        ],
    },
    {
        "said": "I took my {relation} to the aquarium {when}, the jellyfish tank was magical.",
        "time": "When did {s} visit the aquarium?",
        "fact": "What was {s}'s favourite part of the aquarium?",
        "echo": "Aquariums are so calming, I could watch fish for hours.",
        "again": [
            "They want to go back to see the sharks this time.",
            "Bought a jellyfish poster at the gift shop.",
        ],
    },
    {
        "said": "I moved into a new apartment near the river {when}. Still unpacking boxes!",
        "time": "When did {s} move into the new apartment?",
        "fact": "Where is {s}'s new apartment?",
        "echo": "Moving is exhausting, good luck with the boxes.",
        "again": [
            "The apartment finally has curtains, it feels like home.",
            "My new neighbours host loud parties on Fridays.",
        ],
    },
    {
        "said": "I knitted a green scarf for my {relation} {when}, my first finished project.",
        "time": "When did {s} knit the scarf?",
        "fact": "What did {s} knit for {pos} {relation}?",
        "echo": "Handmade gifts are the most thoughtful.",
        "again": [
            "Knitting a hat now, the pattern is confusing.",
            "I ran out of yarn halfway through a sock.",
        ],
    },
    {
        "said": "I gave a talk about urban beekeeping at the library {when}.",
        "time": "When did {s} give the talk at the library?",
        "fact": "What was {s}'s library talk about?",
        "echo": "Public speaking makes me so nervous, well done.",
        "again": [
            "The bees are calm this week, we might get honey soon.",
            "Got stung twice checking the hives today.",
        ],
    },
    {
        "said": "I went scuba diving off the coast of {city} {when} and saw a sea turtle.",
        "time": "When did {s} go scuba diving?",
        "fact": "What animal did {s} see while diving?",
        "echo": "The ocean is full of surprises.",
        "again": [
            "I want to get my advanced diving certificate.",
            "My diving mask fogged up the whole time, so annoying.",
        ],
    },
]

# A relative introduced by name, then a later turn about that name (the relation unsaid).
RELATIVE_INTRO = [
    "My {relation} {name} is staying with us this month, it is nice to have family around.",
    "Did I tell you about my {relation} {name}? Always full of surprises.",
    "My {relation} {name} called me today, we talk every Sunday.",
]
RELATIVE_LATER: list[dict[str, str]] = [
    {
        "said": "{name} just moved to {city} for a new job, I am going to miss {name}.",
        "question": "Where did {s}'s {relation} move to?",
    },
    {
        "said": "{name} won the regional chess tournament {when}, we are all so proud.",
        "question": "What tournament did {s}'s {relation} win?",
    },
    {
        "said": "{name} is getting married in the spring, the wedding will be by the sea.",
        "question": "Where will {s}'s {relation} get married?",
    },
    {
        "said": "{name} opened a small bakery downtown {when}, the cinnamon rolls sell out by noon.",
        "question": "What kind of shop did {s}'s {relation} open?",
    },
]

# Likes told in other words than the question's (open questions).
PREFERENCES: list[dict[str, str]] = [
    {
        "said": "Honestly, nothing beats a long hike with no phone signal, just trees and silence.",
        "question": "What does {s} do to unwind?",
    },
    {
        "said": "I could eat spicy noodles every single day, the hotter the better.",
        "question": "What food would {s} probably order at a restaurant?",
    },
    {
        "said": "Crowds wear me out, I would much rather have a quiet evening with a board game.",
        "question": "Would {s} enjoy a big festival?",
    },
    {
        "said": "Old maps fascinate me, I spend hours looking at how cities used to look.",
        "question": "What hobby might {s} enjoy related to history?",
    },
    {
        "said": "Mornings are my favourite time, I am up at five with coffee and a sketchbook.",
        "question": "Is {s} an early riser?",
    },
    {
        "said": "Rainy days are perfect for me: a blanket, tea and a detective story.",
        "question": "How does {s} like to spend a rainy day?",
    },
]

OPENERS = ["", "", "", "Oh, guess what? ", "So, ", "Quick update: ", "Honestly, ", "You won't believe it, "]
SMALL_TALK = [
    "Hey! How have you been?",
    "It has been a while, how is everything going?",
    "Good to hear from you again!",
    "Work has been really busy lately, but I am hanging in there.",
    "That sounds wonderful, I am so happy for you.",
    "Wow, tell me more about that!",
    "Haha, that is so you.",
    "I have mostly been resting and catching up on sleep.",
    "The weather has been awful here, rain every day.",
    "I hope things calm down for you soon.",
    "Thanks, it means a lot that you asked.",
    "We should meet up when things are less hectic.",
    "Anyway, I should get going, talk soon!",
    "Take care, and say hi to everyone for me.",
    "I know what you mean, some weeks just fly by.",
    "That reminds me, I still owe you a coffee.",
    "Not much new on my side, just the usual routine.",
    "I have been trying to drink more water and sleep earlier.",
    "Did you watch anything good recently?",
    "I am proud of you, seriously.",
    "Same here, it was a long week at work.",
    "Let me know how it goes!",
]


def stamp(moment: datetime.datetime) -> str:
    hour = moment.hour % 12 or 12
    part = "am" if moment.hour < 12 else "pm"
    return f"{hour}:{moment.minute:02d} {part} on {moment.day} {moment.strftime('%B')}, {moment.year}"


def build_conversation(number: int, rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One conversation: its turns as memories, and its labelled questions."""
    (a, a_pos), (b, b_pos) = rng.sample(NAMES, 2)
    speakers = {a: a_pos, b: b_pos}
    pets = dict(zip(speakers, rng.sample(PET_NAMES, 2), strict=True))
    conversation = f"conv-{number}"
    start = datetime.datetime(2022 + rng.randrange(3), 1 + rng.randrange(10), 1 + rng.randrange(27), 9)
    events = rng.sample(EVENTS, len(EVENTS))
    relatives = rng.sample(RELATIVE_NAMES, 4)
    relations = rng.sample(RELATIONS, 4)
    later = rng.sample(RELATIVE_LATER, 4)
    preferences = rng.sample(PREFERENCES, 4)
    # What each session holds beyond small talk: (speaker, kind, item).
    plans: list[list[tuple[str, str, Any]]] = [[] for _ in range(SESSIONS)]
    owners = [a, b]
    for index, event in enumerate(events[:16]):
        told = (index * 5 + 1) % SESSIONS
        plans[told].append((owners[index % 2], "event", event))
        for line in event["again"]:  # the topic comes back later, in other words
            plans[min(SESSIONS - 1, told + 1 + rng.randrange(8))].append((owners[index % 2], "again", line))
    for index in range(4):
        owner = owners[index % 2]
        intro_session = rng.randrange(0, SESSIONS - 8)
        plans[intro_session].append((owner, "intro", index))
        plans[intro_session + 3 + rng.randrange(5)].append((owner, "later", index))
    for index, preference in enumerate(preferences):
        plans[rng.randrange(SESSIONS)].append((owners[index % 2], "preference", preference))

    memories: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    intro_uri: dict[int, str] = {}
    moment = start
    for session, plan in enumerate(plans):
        moment += datetime.timedelta(days=3 + rng.randrange(18), minutes=rng.randrange(600))
        turns: list[tuple[str, str, dict[str, Any] | None]] = []  # (speaker, text, label)
        first = rng.choice(owners)
        other = {a: b, b: a}
        turns.append((first, rng.choice(SMALL_TALK[:3]), None))
        turns.append((other[first], rng.choice(SMALL_TALK[3:9]), None))
        for owner, kind, item in plan:
            listener = other[owner]
            when, _ = rng.choice(RELATIVE_TIMES)
            relation = relations[len(turns) % 4]
            if kind == "event":
                text = item["said"].format(
                    when=when, pet=pets[owner], city=rng.choice(CITIES), relation=relation
                )
                text = rng.choice(OPENERS) + text
                label = {"event": item, "speaker": owner, "relation": relation}
                turns.append((owner, text, label))
                turns.append((listener, item["echo"], None))
            elif kind == "again":
                turns.append((owner, rng.choice(OPENERS) + item.format(pet=pets[owner]), None))
                turns.append((listener, rng.choice(SMALL_TALK[4:8]), None))
            elif kind == "intro":
                text = rng.choice(RELATIVE_INTRO).format(relation=relations[item], name=relatives[item])
                turns.append((owner, text, {"intro": item}))
                turns.append((listener, rng.choice(SMALL_TALK[4:8]), None))
            elif kind == "later":
                text = later[item]["said"].format(name=relatives[item], city=rng.choice(CITIES), when=when)
                turns.append((owner, text, {"later": item, "speaker": owner}))
                turns.append((listener, rng.choice(SMALL_TALK[4:8]), None))
            else:
                turns.append((owner, item["said"], {"preference": item, "speaker": owner}))
                turns.append((listener, rng.choice(SMALL_TALK[13:20]), None))
        while len(turns) < 14:
            turns.insert(
                2 + rng.randrange(len(turns) - 1), (rng.choice(owners), rng.choice(SMALL_TALK), None)
            )
        turns.append((first, rng.choice(SMALL_TALK[12:14]), None))
        for number_in_session, (speaker, text, label) in enumerate(turns):
            said_at = moment + datetime.timedelta(minutes=number_in_session)
            uri = f"chat://{conversation}/session-{session + 1}/turn-{number_in_session + 1}"
            memories.append(
                {
                    "conversation": conversation,
                    "uri": uri,
                    "content": f"{speaker} ({stamp(said_at)}): {text}",
                    "priority": 5,
                    "disclosure": "",
                }
            )
            if label is None:
                continue
            s = label.get("speaker", speaker)
            if "event" in label:
                event = label["event"]
                fill = {"s": s, "pos": speakers[s], "relation": label["relation"]}
                questions.append(
                    {"query": event["time"].format(**fill), "category": "time", "evidence": [uri]}
                )
                if event["fact"]:
                    questions.append(
                        {"query": event["fact"].format(**fill), "category": "fact", "evidence": [uri]}
                    )
            elif "intro" in label:
                intro_uri[label["intro"]] = uri
            elif "later" in label:
                index = label["later"]
                questions.append(
                    {
                        "query": later[index]["question"].format(s=s, relation=relations[index]),
                        "category": "multi-hop",
                        "evidence": [intro_uri[index], uri],
                    }
                )
            else:
                questions.append(
                    {
                        "query": label["preference"]["question"].format(s=s),
                        "category": "open",
                        "evidence": [uri],
                    }
                )
    for question in questions:
        question["conversation"] = conversation
    return memories, questions


def build(
    conversations: int = CONVERSATIONS, seed: int = SEED
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    memories: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for number in range(1, conversations + 1):
        turns, asked = build_conversation(number, rng)
        memories += turns
        questions += asked
    return memories, questions


def load() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    memories = [
        json.loads(line) for line in (HERE / "conversations.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    questions = json.loads((HERE / "conversation_queries.json").read_text(encoding="utf-8"))
    return memories, questions


def main() -> None:
    memories, questions = build()
    with (HERE / "conversations.jsonl").open("w", encoding="utf-8") as out:
        for memory in memories:
            out.write(json.dumps(memory, ensure_ascii=False) + "\n")
    (HERE / "conversation_queries.json").write_text(
        json.dumps(questions, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    by_category: dict[str, int] = {}
    for question in questions:
        by_category[question["category"]] = by_category.get(question["category"], 0) + 1
    print(f"{len(memories)} turns, {len(questions)} questions: {by_category}")


if __name__ == "__main__":
    main()
