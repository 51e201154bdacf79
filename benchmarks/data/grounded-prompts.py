#!/usr/bin/env python3
"""Writes benchmarks/data/grounded-prompts.jsonl: input-grounded prompts (summarise, extract,
rewrite, edit, answer from a pasted document) for the speculative-decoding benchmark. The
passages were written for this benchmark (no third-party text). Run from the repository root."""
import json

MEMO = """To: All staff
From: Facilities
Subject: Building closure on Saturday

The north building will be closed this Saturday from 7 a.m. to 6 p.m. while the electrical
contractor replaces the main distribution panel. During the closure there will be no power,
no network and no heating in the north building. The south building stays open as usual.
Staff who need to work on Saturday should book a desk in the south building through the
room booking system before Thursday at noon. The car park entrance on Mill Road will be
closed; please use the entrance on Station Street. Servers in the north building's machine
room will be shut down at 6:30 a.m. and restarted by the IT team once power is back.
Questions go to facilities@example.org or extension 4410."""

RECIPE = """Lentil soup for four. Rinse 250 grams of red lentils until the water runs clear. Dice
one onion, two carrots and two sticks of celery. Warm two tablespoons of olive oil in a large
pot over medium heat, add the vegetables and cook them for eight minutes, stirring now and
then, until the onion is soft. Stir in two cloves of crushed garlic, one teaspoon of ground
cumin and half a teaspoon of smoked paprika and cook for one more minute. Add the lentils,
one tin of chopped tomatoes and 1.2 litres of vegetable stock. Bring it to the boil, then
lower the heat and simmer for 25 minutes, until the lentils have fallen apart. Season with
salt, pepper and the juice of half a lemon. Blend half of the soup and stir it back in."""

INCIDENT = """Incident report 2291. On 14 March at 09:12 the payment service began returning errors for
about 30 percent of requests. The on-call engineer, Priya Natarajan, was paged at 09:15 and
found that the database connection pool was exhausted after a configuration change deployed
at 08:55 lowered the pool size from 50 to 5. The change was rolled back at 09:41 and error
rates returned to normal by 09:47. Roughly 4,100 payments failed and were retried
automatically; 37 needed manual follow-up by the support team. Follow-up actions: add a
check to the deployment pipeline that rejects pool sizes below 20, and add an alert on pool
saturation above 80 percent. Owner of the follow-up actions: Tomasz Wilk."""

PYTHON = '''def load_users(path):
    users = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, email, age = line.split(",")
            users.append({"name": name, "email": email, "age": int(age)})
    return users


def adults(users):
    result = []
    for user in users:
        if user["age"] >= 18:
            result.append(user)
    return result


def emails(users):
    return [user["email"] for user in users]
'''

SWIFT = '''struct Account {
    var owner: String
    var balance: Double

    mutating func deposit(amount: Double) {
        balance = balance + amount
    }

    mutating func withdraw(amount: Double) -> Bool {
        if amount > balance {
            return false
        }
        balance = balance - amount
        return true
    }
}
'''

CONFIG = """server:
  host: 0.0.0.0
  port: 8080
  timeout_seconds: 30
database:
  host: db.internal
  port: 5432
  name: orders
  user: orders_app
  pool_size: 20
logging:
  level: info
  format: json
  file: /var/log/orders/app.log
"""

LETTER = """dear mr henderson, thank you for you're letter of the 3rd. i have spoke with our warehouse
team and they confirm that the order was shiped on the 28th but it was sent to you're old
address. we has arranged for a new parcel to be send by courier tomorow, and the old one will
be returned to us. we are very sorry for the trouble this have caused. yours sincerly, anna
berg, customer service"""

MINUTES = """Project Falcon weekly meeting, 2 June. Present: Lena, Omar, Ravi, Sofia. Lena reported that
the mobile app beta reached 1,200 testers and the crash rate fell to 0.4 percent after the
image cache fix. Omar said the payments integration is blocked until the bank sends the test
certificates, expected on 9 June. Ravi presented the new onboarding screens; the group agreed
to drop the third screen and move the privacy settings into the second. Sofia will prepare
the release notes for version 2.3 by Friday. Decision: the public launch moves from 16 June to
23 June because of the payments delay. Next meeting: 9 June at 10:00."""

TABLE = """Station, Line, Opened, Daily passengers
Harbour Street, Blue, 1998, 14200
Market Square, Blue, 1998, 22900
Old Town, Red, 2004, 9800
University, Red, 2004, 18300
Riverside, Green, 2011, 7600
Airport, Green, 2015, 12100
Central, Blue, 1998, 41500
"""

def p(kind, text):
    return {"kind": kind, "prompt": text}

prompts = [
    p("summarise", "Summarise this memo in three bullet points, keeping the times and places:\n\n" + MEMO),
    p("summarise", "Summarise this incident report for a status page, in one paragraph that keeps every time and figure:\n\n" + INCIDENT),
    p("summarise", "Summarise these meeting minutes as a list of decisions and action items with owners:\n\n" + MINUTES),
    p("summarise", "Rewrite this recipe as a numbered list of steps, keeping every quantity:\n\n" + RECIPE),
    p("summarise", "Give a short summary of this memo for staff who only work in the south building:\n\n" + MEMO),
    p("extract", "List every time mentioned in this incident report with what happened at that time, one per line:\n\n" + INCIDENT),
    p("extract", "Extract the ingredients and their quantities from this recipe as a list:\n\n" + RECIPE),
    p("extract", "Extract the names of the people in these minutes and what each of them reported or will do:\n\n" + MINUTES),
    p("extract", "Convert this table to JSON: an array of objects with the keys station, line, opened and daily_passengers:\n\n" + TABLE),
    p("extract", "Extract every setting from this YAML file as lines of the form section.key = value:\n\n" + CONFIG),
    p("rewrite", "Correct the spelling, grammar and capitalisation of this letter and return the corrected letter:\n\n" + LETTER),
    p("rewrite", "Rewrite this memo in a friendlier tone, keeping all the facts:\n\n" + MEMO),
    p("rewrite", "Translate this YAML configuration into an equivalent JSON document:\n\n" + CONFIG),
    p("rewrite", "Rewrite the following table as Markdown, with the same rows in the same order:\n\n" + TABLE),
    p("edit", "Rename the function load_users to read_users everywhere in this Python code and return the whole file:\n\n" + PYTHON),
    p("edit", "Add type hints to every function in this Python code and return the whole file:\n\n" + PYTHON),
    p("edit", "Add a docstring to each function in this Python code and return the whole file:\n\n" + PYTHON),
    p("edit", "Change the balance in this Swift code from Double to Decimal and return the whole code:\n\n" + SWIFT),
    p("edit", "Add documentation comments to this Swift struct and its methods and return the whole code:\n\n" + SWIFT),
    p("edit", "Change the database port to 6432 and the logging level to debug in this YAML file, and return the whole file:\n\n" + CONFIG),
    p("answer", "Using only this memo, answer: which entrance should staff use on Saturday, and how do they book a desk? Quote the relevant sentences.\n\n" + MEMO),
    p("answer", "Using only this incident report, answer: what caused the errors, and what are the follow-up actions? Quote the report.\n\n" + INCIDENT),
    p("answer", "Using only this table, which Blue line stations are there and how many daily passengers does each have?\n\n" + TABLE),
    p("answer", "Using only these minutes, why did the public launch move, and to when? Quote the minutes.\n\n" + MINUTES),
]

with open("benchmarks/data/grounded-prompts.jsonl", "w") as f:
    for item in prompts:
        f.write(json.dumps(item) + "\n")
print(len(prompts), "prompts")

# Free chat: open questions with nothing to copy from, for the check that speculation does not
# slow ordinary replies (benchmarks/data/free-prompts.jsonl).
free = [
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain why the sky changes colour at sunset.",
    "What are some good habits for learning a new language?",
    "Describe how bread rises and why oven temperature matters.",
    "Give me ideas for a birthday party for a seven-year-old.",
    "What is the difference between weather and climate?",
    "Write a poem about autumn in a small town.",
    "How does a bicycle stay upright when it is moving?",
    "Suggest a plan for a weekend trip to the mountains.",
    "Explain what a database index is to a beginner.",
]
with open("benchmarks/data/free-prompts.jsonl", "w") as f:
    for text in free:
        f.write(json.dumps(p("free", text)) + "\n")
print(len(free), "free prompts")
