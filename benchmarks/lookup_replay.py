#!/usr/bin/env python3
"""Replays prompt-lookup drafting offline: how many verification steps each draft policy needs
for the greedy replies a model actually gave, priced with measured step costs.

Greedy output does not depend on drafting (a drafted token is kept only when the model picks it),
so the replies of one plain run fix everything but the drafts: for each policy this walks every
reply, drafts at each step as the generator would (the draft length chosen by the same rule as
`DraftControl`: expected tokens per second against the step cost of each width, acceptance per
class of match length, pauses when no length pays), accepts the drafted tokens that equal the
reply's, and adds the step's cost. No timing noise: the policies differ only in their drafts.

Input: the JSON lines `hearth bench --speculative lookup --save-tokens FILE` writes (the prompt's
token ids and the plain run's generated ids, one prompt per line). Costs: milliseconds per decode
step by rows: `--costs host36` (default: what the default model measured on a 36 GB/s host:
1 row 9.05, 2 10.3, 3 11.25, 4 11.9, 5 16.9, 6 17.5, 7 18.7, 8 18.7, then tiles of four rows
costing ~7 ms more each) or `--costs s21` (session 21's host, `hearth bench --parallel 1,2,3,4,5,6,8,12,16
-p 16 -n 64`: 10.4, 10.1, 14.6, 15.3, 22.6, 22.6, 27.6 for 1, 2, 3, 4, 5, 6, 8 rows, 38.5 for 12,
52.8 for 16; 7 rows taken as 25.1, the rest on the line between).

The policies price a draft either with the true cost of each width (what the generator learns
per width, `StepCosts`, once it has timed it) or with a line fitted through them (what it did
before session 21), to show what the staircase is worth.

Usage: benchmarks/lookup_replay.py TOKENS.jsonl [--costs host36|s21]
"""
import json
import sys


def default_costs():
    costs = {1: 9.05, 2: 10.3, 3: 11.25, 4: 11.9, 5: 16.9, 6: 17.5, 7: 18.7, 8: 18.7}
    for rows in range(9, 34):
        costs[rows] = 18.7 + 7.0 * ((rows - 5) // 4)
    return costs


def ngram_latest(history, limit, shortest=2, longest=4):
    """Before session 17: the latest earlier occurrence of the last 4, else 3, else 2 tokens."""
    count = len(history)
    for n in range(longest, shortest - 1, -1):
        if count <= n:
            continue
        suffix = history[count - n:]
        for f in range(count - 1, n - 1, -1):
            if history[f - n:f] == suffix:
                return history[f:f + limit], n
    return [], 0


def s21_costs():
    costs = {1: 10.4, 2: 10.1, 3: 14.6, 4: 15.3, 5: 22.6, 6: 22.6, 7: 25.1, 8: 27.6}
    for rows in range(9, 34):
        costs[rows] = 27.6 + (rows - 8) * (52.8 - 27.6) / 8
    return costs


def fitted_line(costs, widths=range(1, 9)):
    """The least-squares line through the costs of `widths`, as a cost table."""
    xs = list(widths)
    ys = [costs[r] for r in xs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    a = my - b * mx
    return {r: a + b * r for r in costs}


def longest_match(history, limit, longest=32, searched=64, shortest=2):
    """Session 17: of the latest `searched` earlier occurrences of the last token, the one whose
    preceding tokens match the sequence's own longest (up to `longest`, at least `shortest`;
    latest on ties)."""
    count = len(history)
    best = (0, -1)
    seen = 0
    for p in range(count - 2, -1, -1):
        if history[p] != history[-1]:
            continue
        seen += 1
        m = 1
        while m < longest and p - m >= 0 and history[p - m] == history[count - 1 - m]:
            m += 1
        if m > best[0]:
            best = (m, p + 1)
        if m == longest or seen >= searched:
            break
    if best[1] < 0 or best[0] < shortest:
        return [], 0
    return history[best[1]:best[1] + limit], best[0]


def rate_class(n):
    return n if n <= 4 else (5 if n < 8 else 8)


class Control:
    """DraftControl: acceptance per drafted position (decayed), the length with the most
    expected tokens per second, pauses of 4, 8, … 64 steps when none pays. `prior_weight`:
    how many drafted tokens the prior rate (0.5) counts as (2 before session 21, 1 since)."""

    def __init__(self, prior_weight=1.0):
        self.accepted = self.tried = 0.0
        self.pause = self.pauses = 0
        self.prior_weight = prior_weight

    def length(self, limit, costs):
        if self.pause > 0:
            self.pause -= 1
            if self.pause == 0:
                self.accepted *= 0.5
                self.tried *= 0.5
            return 0
        alpha = (self.accepted + 0.5 * self.prior_weight) / (self.tried + self.prior_weight)
        best_k, best_rate = 0, 1.0 / costs[1]
        term = total = 1.0
        for k in range(1, min(limit, 16) + 1):
            term *= alpha
            total += term
            rate = total / costs[k + 1]
            if rate > best_rate:
                best_k, best_rate = k, rate
        if best_k == 0:
            self.pauses += 1
            self.pause = min(64, 2 << min(self.pauses, 5))
        return best_k

    def record(self, drafted, taken):
        if drafted <= 0:
            return
        self.accepted = 0.8 * self.accepted + taken
        self.tried = 0.8 * self.tried + min(taken + 1, drafted)
        if taken > 0:
            self.pauses = 0


def replay(replies, policy, classes, costs, priced=None, prior_weight=1.0):
    """Walks the replies; each step costs `costs[rows]`, drafts are chosen by `priced` (default
    the same table)."""
    priced = priced or costs
    steps = accepted = drafted = 0
    plain = spec = 0.0
    for prompt, out in replies:
        history = list(prompt) + out[:1]
        controls = {}
        i = 1
        while i < len(out):
            limit = min(len(out) - i - 1, 16)
            drafts, n = policy(history, limit) if limit > 0 else ([], 0)
            key = classes(n)
            if drafts:
                control = controls.setdefault(key, Control(prior_weight))
                drafts = drafts[:control.length(len(drafts), priced)]
            taken = 0
            while taken < len(drafts) and drafts[taken] == out[i + taken]:
                taken += 1
            if drafts:
                controls[key].record(len(drafts), taken)
            spec += costs[1 + len(drafts)]
            history += out[i:i + taken + 1]
            i += taken + 1
            steps += 1
            accepted += taken
            drafted += len(drafts)
        plain += costs[1] * (len(out) - 1)
    return steps, accepted, drafted, plain / spec


def main():
    args = sys.argv[1:]
    names = {"host36": default_costs, "s21": s21_costs}
    costs = default_costs()
    if "--costs" in args:
        i = args.index("--costs")
        if i + 1 >= len(args) or args[i + 1] not in names:
            sys.exit(__doc__)
        costs = names[args[i + 1]]()
        del args[i:i + 2]
    if len(args) != 1:
        sys.exit(__doc__)
    replies = []
    with open(args[0]) as f:
        for line in f:
            item = json.loads(line)
            replies.append((item["prompt"], item["generated"]))
    line = fitted_line(costs)
    tokens = sum(len(out) - 1 for _, out in replies)
    print(f"{len(replies)} replies, {tokens} tokens after the first of each")
    for name, policy, classes, priced, weight in [
        ("latest 4/3/2-gram, one rate, priced by a line, prior weight 2 (before session 17)", ngram_latest,
         lambda n: 0, line, 2.0),
        ("longest match of 32 … 2 tokens, rates per match-length class, priced by a line, prior weight 2 "
         "(sessions 17–20)", longest_match, rate_class, line, 2.0),
        ("the same priced per width", longest_match, rate_class, costs, 2.0),
        ("the same, prior weight 1", longest_match, rate_class, costs, 1.0),
        ("the same down to 1 token (session 21)", lambda h, L: longest_match(h, L, shortest=1), rate_class,
         costs, 1.0),
        ("the same priced by a line", lambda h, L: longest_match(h, L, shortest=1), rate_class, line, 1.0),
    ]:
        steps, accepted, drafted, ratio = replay(replies, policy, classes, costs, priced, weight)
        print(f"{name}: {steps} steps, {accepted} of {drafted} drafted tokens accepted, "
              f"modelled speed-up {ratio:.2f}x")


if __name__ == "__main__":
    main()
