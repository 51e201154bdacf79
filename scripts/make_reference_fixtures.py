#!/usr/bin/env python3
"""Generate Hearth's reference fixtures under Tests/Fixtures/.

This script is run ONCE, BY HAND, by a developer (never in CI); its outputs are
committed. Set up the reference stack with

    python -m venv /opt/hearth-ref
    /opt/hearth-ref/bin/pip install -r scripts/requirements-reference.txt
    /opt/hearth-ref/bin/python scripts/make_reference_fixtures.py

Nothing is downloaded: the corpus below is original text written for Hearth,
the SentencePiece model is trained on it here, and the checkpoints are tiny
random-weight Phi3ForCausalLM models. Every random choice is seeded, so a re-run
with the pinned versions rewrites byte-identical files (the last digit of a
logit may differ across CPUs/BLAS builds; the Swift tests compare with a
tolerance anyway).

Outputs (paths relative to the repository root):

    Tests/Fixtures/corpus.txt                    training text for the tokenizer
    Tests/Fixtures/tokenizer-cases.json          sentencepiece vs HF tokenizer ids
    Tests/Fixtures/phi3-mha/                     F32, 1 file, classic rope keys
    Tests/Fixtures/phi3-gqa-longrope/            F16, 2 shards, longrope, rope_parameters form
    Tests/Fixtures/phi3-partial-tied/            BF16, partial rotary 0.75, tied embeddings

Each checkpoint dir holds config.json, generation_config.json, the safetensors
weights (+ index when sharded), tokenizer.model, tokenizer_config.json,
added_tokens.json, special_tokens_map.json and reference.json (prompts, their
input ids, f32 logits at every position, greedy continuations, chat-template ids).
scripts/make_tokenizer_fixtures.py, run afterwards, adds phi3-mha/tokenizer.json
(transformers' conversion of tokenizer.model); re-running this script removes it.
"""

import argparse
import copy
import json
import math
import os
import random
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import sentencepiece as spm
import tokenizers
import torch
import transformers
from safetensors import safe_open
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaTokenizer, Phi3Config, Phi3ForCausalLM

transformers.utils.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "Tests" / "Fixtures"
SCRIPT_NAME = "scripts/make_reference_fixtures.py"

SP_VOCAB_SIZE = 1000
MODEL_VOCAB_SIZE = 1024  # padded, like Phi-3's 32064
# Fraction of corpus characters that must be covered by single-character pieces.
# Characters in the rarest tail (and any character absent from the corpus, such
# as rare CJK ideographs and most emoji) are encoded through <0xXX> byte pieces.
SP_CHARACTER_COVERAGE = 0.995

# Phi-3's added tokens, in Phi-3's order, moved down to start right after the
# SentencePiece vocabulary (Phi-3 itself starts them at 32000).
ADDED_TOKENS = [
    ("<|endoftext|>", 1000),
    ("<|assistant|>", 1001),
    ("<|placeholder1|>", 1002),
    ("<|placeholder2|>", 1003),
    ("<|placeholder3|>", 1004),
    ("<|placeholder4|>", 1005),
    ("<|system|>", 1006),
    ("<|end|>", 1007),
    ("<|placeholder5|>", 1008),
    ("<|placeholder6|>", 1009),
    ("<|user|>", 1010),
]
BOS_ID = 1
EOS_ID = 1000  # <|endoftext|>
END_ID = 1007  # <|end|>
GENERATION_EOS = [EOS_ID, END_ID]
MAX_NEW_TOKENS = 16
MIN_GREEDY_MARGIN = 1e-3

PHI3_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}"
    "{{'<|system|>\n' + message['content'] + '<|end|>\n'}}"
    "{% elif message['role'] == 'user' %}"
    "{{'<|user|>\n' + message['content'] + '<|end|>\n'}}"
    "{% elif message['role'] == 'assistant' %}"
    "{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}"
    "{{ '<|assistant|>\n' }}"
    "{% else %}"
    "{{ eos_token }}"
    "{% endif %}"
)

# Checkpoint recipes. Common dims: hidden 64, head_dim 16, 2 layers, intermediate 128.
CHECKPOINTS = [
    {
        "name": "phi3-mha",
        "num_key_value_heads": 4,
        "rope_theta": 10000.0,
        "partial_rotary_factor": 1.0,
        "tie_word_embeddings": False,
        "longrope": False,
        "save_dtype": torch.float32,
        "shards": 1,
        "config_form": "classic",  # rope_theta / rope_scaling: null at top level
        "seed": 1001,
    },
    {
        "name": "phi3-gqa-longrope",
        "num_key_value_heads": 2,
        "rope_theta": 10000.0,
        "partial_rotary_factor": 1.0,
        "tie_word_embeddings": False,
        "longrope": True,
        "save_dtype": torch.float16,
        "shards": 2,
        "config_form": "rope_parameters",  # as transformers 5 writes it
        "seed": 2002,
    },
    {
        "name": "phi3-partial-tied",
        "num_key_value_heads": 4,
        "rope_theta": 500000.0,
        "partial_rotary_factor": 0.75,
        "tie_word_embeddings": True,
        "longrope": False,
        "save_dtype": torch.bfloat16,
        "shards": 1,
        "config_form": "rope_parameters",  # as transformers 5 writes it (plus top-level partial_rotary_factor)
        "seed": 3003,
    },
]
HIDDEN = 64
HEADS = 4
HEAD_DIM = 16
LAYERS = 2
INTERMEDIATE = 128
INIT_STD = 0.2
# LongRoPE factors: one per rotary frequency pair (head_dim / 2 = 8).
SHORT_FACTOR = [1.0, 1.05, 1.1, 1.15, 1.25, 1.3, 1.4, 1.5]
LONG_FACTOR = [2.0, 2.5, 3.0, 3.75, 4.5, 5.5, 6.75, 8.0]
LONGROPE_ORIGINAL_MAX = 16
MAX_POSITIONS = 128

PROMPTS = [
    # 22 tokens + BOS: longer than LONGROPE_ORIGINAL_MAX, so the longrope fixture uses the long factors.
    ("english", "The fire is a small promise that you have to keep all day."),
    # 龘 is absent from the corpus: three <0xXX> byte pieces.
    ("chinese", "我们一边喝茶一边聊天，奶奶写了一个字：龘。"),
    # 13 tokens + BOS: prefill with the short factors; greedy decoding crosses 16 and switches to long.
    ("russian", "В деревне рано темнеет."),
    ("digits", "Order 4821: 3 boxes at 12.50 = 37.50"),
]

CHATS = [
    [{"role": "user", "content": "How do I bake a plain loaf of bread at home?"}],
    [
        {"role": "system", "content": "你是一个有帮助的助手。Отвечай кратко."},
        {"role": "user", "content": "今天天气怎么样？"},
        {"role": "assistant", "content": "Сегодня холодно, идёт снег。"},
        {"role": "user", "content": "那我们在家喝茶吧。А ты что будешь делать?"},
    ],
    [{"role": "user", "content": "  two leading spaces\n\nthen a blank line\n\tand a tab\n\n\nthree newlines \n"}],
]

TOKENIZER_CASES = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "hearth",
    "The fire is a small promise that you have to keep all day.",
    "antidisestablishmentarianism",
    "你好，世界",
    "今天天气很好，我们去公园散步吧。",
    "龘",
    "饕餮大餐",
    "我的名字是鑫淼。",
    "Привет, мир!",
    "Зимой в деревне рано темнеет.",
    "ЁЛКА и ёлка",
    "12345",
    "3.14159",
    "2024-03-17 09:35",
    "-42 + 7 = -35",
    "def f(x):\n    return x * 2\n",
    "if (a != b && c <= d) { return a->next; }",
    "col1\tcol2\tcol3",
    "🙂",
    "🔥🍞",
    "👩‍💻",
    "👨‍👩‍👧‍👦 family",
    "❤️ love",
    " leading space",
    "trailing space ",
    "multiple   spaces   here",
    "   ",
    " ",
    "\n",
    "line1\nline2\n\nline4",
    "\ttabbed",
    "",
    "Hello\r\nWorld",
    "naïve café",
    "U+2581 is ▁ the meta symbol",
    "Mixed: Hello 你好 Привет 123!",
    "<|user|>\nHi<|end|>\n<|assistant|>\n",
    "a<|end|>b",
    "<|endoftext|>",
    "<|system|>\nYou are helpful.<|end|>\n<|user|>\n 你好 <|end|>\n<|assistant|>\n",
    "<|placeholder1|><|placeholder6|> x",
    "text with <s> and </s> inside",
    "<unk>",
]
# ---------------------------------------------------------------------------
# Corpus: original prose written for Hearth's fixtures. Kept inside this script
# so that the whole fixture set is reproducible from one file.
# ---------------------------------------------------------------------------

ENGLISH_PROSE = """\
The Hearth

In the old house at the end of Willow Lane the hearth was the first thing anyone saw. It was wide and low, built of grey river stones that had been carried up the hill one cart at a time, and above it ran a beam of dark oak that was older than the house itself. Every winter morning my grandmother knelt in front of it with a bundle of kindling and a box of matches, and every winter morning she said the same thing: a fire is a small promise that you have to keep all day.
She meant that a fire needs attention. You cannot light it and walk away. You feed it split wood when it is hungry, you open the damper when the smoke curls back into the room, and you close it again when the flames grow tall and greedy. In return the fire keeps the kettle warm, dries the wet boots by the door, and turns the kitchen into the one room where everybody wants to be.
When I was small I thought the hearth was alive. It breathed when the wind pushed against the chimney, it muttered when the damp logs hissed, and late at night, when the embers turned from orange to deep red, it seemed to be dreaming. My grandmother never laughed at that idea. She said that a house without a fire is only a box for keeping the rain out, and that a house with a fire is a place where stories begin.
Years later, when I moved to a flat in the city with white walls and a radiator that clicked, I missed the hearth more than I expected. The radiator kept the rooms warm, but it never asked for anything, and so it never gave anything back. On the first cold evening I bought a small iron stove, carried it up four flights of stairs, and spent a whole weekend learning how to make it draw. My neighbours thought I was strange. By December they were knocking on my door with mugs in their hands.

Notes from a Lighthouse Keeper

Monday. Wind from the north west, steady, about twenty knots. The sea is the colour of slate and the gulls are sitting on the rocks instead of flying, which usually means rain before evening. I cleaned the lens this morning, all three hundred and sixty prisms, and polished the brass rail until I could see my own tired face in it.
Tuesday. Rain, as the gulls predicted. A fishing boat came round the point at noon and waved, and I waved back from the gallery. There is a strange comfort in being seen by people you will never meet. They know the light is here, and they know somebody keeps it burning, and that is enough for both of us.
Wednesday. The supply boat was late again. I counted what is left in the store room: eleven tins of beans, four bags of flour, two jars of honey, a sack of potatoes that has started to sprout, and more tea than any sensible person could drink in a month. I will not starve, but I may become very tired of beans.
Thursday. Clear skies at last. At night the stars are so bright that the beam of the lamp looks almost shy as it sweeps across the water. I stood outside for an hour and watched a ship far out on the horizon, its lights moving slowly from left to right like a thought that has not yet decided where to go.
Friday. The inspector arrived with the supply boat and a clipboard. He checked the clockwork, the fuel, the log book and the fog signal, and then he sat in my kitchen and ate three slices of bread with honey. He said the station is in good order. I said that the station is always in good order, and he laughed and wrote something down.

How to Bake a Plain Loaf

You need flour, water, salt and yeast, and you need patience more than any of them. Start in the evening. Mix a little yeast with warm water, not hot, because hot water kills the yeast before it has a chance to work. Add the flour slowly and stir with a wooden spoon until the dough is rough and shaggy, then cover the bowl and leave it alone for half an hour.
After the rest, add the salt and begin to knead. Push the dough away with the heel of your hand, fold it back, turn it a quarter, and push again. At first it will stick to your fingers and to the table, and you will want to add more flour. Try not to. After ten minutes the dough changes: it becomes smooth, it stretches without tearing, and it feels like something that wants to rise.
Put the dough back in the bowl, cover it with a damp cloth, and leave it somewhere cool overnight. In the morning it will have doubled in size and the kitchen will smell faintly sour and sweet at the same time. Shape it gently into a round, let it rise once more while the oven heats, and then cut a shallow cross on the top with a sharp knife.
Bake it hot for the first twenty minutes and a little cooler for the rest. The loaf is ready when the crust is deep brown and the bottom sounds hollow when you knock on it. The hardest part of the whole recipe is the last step, which is waiting for the bread to cool before you cut it.

The Night Train

The night train leaves the capital at eleven minutes past ten and arrives at the coast a little after six in the morning. It is not a fast train. It stops at small stations where nobody gets on or off, where a single lamp shines on an empty platform and a station master in a heavy coat lifts a green flag and then goes back inside to his radio.
I like the night train because it makes time feel generous. On a plane you are in a hurry even when you are sitting still. On the night train you can read a whole novel, or write a letter you have been putting off for a year, or simply sit by the window and watch the dark fields go by. Sometimes a village appears, a cluster of yellow windows, a church tower, a dog barking at the noise, and then it is gone again.
The sleeping compartments are narrow and the blankets are scratchy, but the conductor brings tea in glass cups with metal holders, and the tea is always strong and always too hot. Around three in the morning the train stops for a long time in a town near the mountains while they change engines, and if you are awake you can hear the workers calling to each other in the cold air.
By dawn the land is flat and silver, the sea is near, and everyone on the train looks slightly rumpled and slightly happy. We step onto the platform with our bags and our crumpled tickets, and for a moment we are all travellers who have shared the same long night, before we scatter into the ordinary day.

A Short History of Counting Machines

People have always needed to count things: sheep, sacks of grain, days until the harvest, coins in a merchant's purse. The first counting machines were fingers, and the second were pebbles. Later came the abacus, a frame of wooden beads on wires, which let a skilled clerk add and subtract faster than anyone could write the numbers down.
In the seventeenth century inventors built mechanical calculators with gears and wheels. You turned a handle, the wheels moved, and a carry rippled from the ones to the tens to the hundreds. These machines were beautiful and expensive and often broke, but they proved an important idea: arithmetic could be done by something that did not understand arithmetic at all.
The next great step was the idea of a program, a list of instructions that a machine could follow one after another. Punched cards, first used to weave patterns in silk, were borrowed to store instructions and data. A machine that could read a card could be told to do different work without being rebuilt.
In the twentieth century relays gave way to vacuum tubes, tubes gave way to transistors, and transistors shrank until millions of them fit on a chip smaller than a fingernail. Each step made computers faster, cheaper and more reliable. Today a small device in your pocket can multiply two large matrices in less time than it takes you to blink, and it does so by repeating the same humble operations that the first clerks performed with pebbles: add, compare, remember, repeat.
A language model is, in the end, another counting machine. It reads a sequence of tokens, turns each one into a list of numbers, mixes those numbers together through many layers of multiplication and addition, and produces a score for every possible next token. The scores are called logits. The largest score wins when we decode greedily, and the whole process repeats for the next position.

Letters to a Younger Programmer

Dear Sam, you asked me what I wish I had known when I started writing software. The honest answer is that I wish I had known how often I would be wrong. Not wrong in a dramatic way, but wrong in small, quiet ways that only show up later: an off by one error, a cache that was never cleared, a test that passed for the wrong reason.
So the first piece of advice is to write tests, and the second is to make them fail first. A test that has never failed has never proved anything. When you fix a bug, write a test that reproduces it before you touch the code. Then fix the code and watch the test turn green. It is a small ritual, but it will save you many long nights.
The third piece of advice is to read other people's code with kindness. Most strange code was written by someone who was tired, or rushed, or working around a problem you cannot see from where you are standing. Ask why before you ask who. Usually the answer is interesting.
The fourth piece of advice is about numbers. Computers do not store real numbers, they store approximations. Floating point arithmetic is not associative: if you add the same values in a different order, you can get a slightly different result. When you compare two implementations of the same algorithm, compare them with a tolerance, and choose that tolerance carefully. Too strict and your tests will fail for no good reason; too loose and they will pass when something is truly broken.
Finally, take walks. Many of the best ideas I have had arrived when I was far away from a keyboard, walking along the river or waiting for the kettle to boil. The mind keeps working on a problem after you stop staring at it. Give it room.
Yours, with warm regards, Alex.

The Market on Saturday

On Saturday mornings the square in front of the town hall fills with stalls. The baker arrives first, before sunrise, and sets out long rows of loaves and rolls still warm from the oven. Then come the farmers with crates of apples, pears, onions and potatoes, the cheese seller with her wheels of hard yellow cheese, and the old man who sells honey in jars of every size.
By nine o'clock the square is loud and crowded. Children run between the stalls with paper cones of roasted nuts. A musician plays the accordion near the fountain, always the same five songs, and everyone pretends to be tired of them while humming along. People stop to talk to neighbours they have not seen all week, and the conversation is always about the weather, the prices, and whose dog has run away this time.
I go to the market with a list and I always come home with things that were not on it: a bunch of flowers, a jar of plum jam, a second loaf because the first one looked lonely. The list is a plan, and the market is a gentle argument against plans.

Weather Log

The morning began with fog so thick that the trees across the road were only grey shapes. By ten the sun had burned through, and the fields were bright and wet. In the afternoon clouds gathered in the west, the wind turned, and a short heavy shower rattled on the roof. In the evening the sky cleared again and the first frost of the season formed on the car windows.
Spring arrives slowly here. First the days grow longer, then the birds grow louder, and only much later does the air become warm. Summer is short and intense. Autumn is the best season: cool mornings, golden afternoons, and the smell of wood smoke in the evening. Winter is long, dark and quiet, and it is the season when the hearth matters most.
"""

ENGLISH_DIALOGUE = """\
"Can you pass the salt?" she asked.
"Of course. Do you want the pepper too?"
"No, thank you. The soup is already quite spicy."
"Is it? I followed the recipe exactly."
"Then the recipe is spicy. It's not a complaint; it's an observation!"
Q: What is the capital of the small country in the story?
A: The story never says, and that is part of its charm.
Q: How long does the bread need to rise?
A: About twelve hours overnight, then one more hour after shaping.
Note: the train leaves at 22:11 (platform 4) and arrives at 06:05.
Warning: do not open the oven door during the first 15 minutes!
TODO: fix the off-by-one error in the loop; see issue #42.
"""

CHINESE_PROSE = """\
春天的早晨

春天来了，城外的小河解冻了，河水慢慢地流向远方。早上六点，天刚刚亮，街上已经有人在跑步，也有老人在公园里打太极拳。卖早点的小店门口排着长队，人们买了包子、豆浆和油条，一边走一边吃。空气里有青草的味道，也有刚出锅的热气。
我喜欢在这样的早晨出门散步。走过桥的时候，可以看见河边的柳树已经长出了嫩绿的叶子，风一吹，长长的枝条就在水面上轻轻地摆动。几只小鸟在树上叫个不停，好像在讨论今天要去哪里找吃的。

茶馆

老城区有一家很小的茶馆，只有六张桌子。老板是一位六十多岁的老人，说话慢，做事更慢。他泡茶的时候从来不着急，先用热水洗杯子，再放茶叶，然后等水温合适了才倒进去。他说，好茶要等，好朋友也要等。
下午的时候，茶馆里总是坐满了人。有人下棋，有人看报纸，有人什么也不做，只是安静地看着窗外的行人。我常常在那里写东西，一坐就是三四个小时。老板从来不催我，只是偶尔走过来给我的杯子里加一点热水。

学习编程

我第一次学习编程是在大学一年级。那时候我连什么是变量都不知道，看到屏幕上的错误信息就紧张。老师告诉我们，写程序就像写文章，先想清楚要说什么，再一句一句地写下来。程序出了问题不要害怕，要耐心地一步一步地找原因。
后来我慢慢发现，编程最重要的不是记住很多语法，而是学会把一个大问题分成很多小问题。每个小问题都解决了，大问题也就解决了。测试也非常重要。一个没有测试的程序，就像一座没有地基的房子，看起来很好，但是不知道什么时候会倒。
现在我每天都写代码，也每天都遇到新的问题。有的问题很简单，几分钟就能解决；有的问题很难，要花好几天的时间。但是每次解决一个难题，我都会觉得很开心，好像爬上了一座小山，看到了更远的风景。

城市的夜晚

晚上八点以后，城市变成了另一个样子。高楼上的灯一盏一盏地亮起来，街上的车流像一条发光的河。年轻人在商场门口拍照，家长带着孩子在广场上散步，饭馆里传出热闹的说话声和笑声。
我住在十二楼，从窗口可以看见半个城市。下雨的夜晚，所有的灯光都在湿的路面上变成长长的影子，很安静，也很漂亮。有时候我会关上房间的灯，一个人坐在窗前，想一想今天做了什么，明天还要做什么。

家里的晚饭

我们家的晚饭一般在六点半开始。妈妈做饭，爸爸洗碗，我负责摆桌子和买东西。桌子上常常有一个汤、两个菜和一大碗米饭。冬天的时候，妈妈会做一锅热热的鸡汤，里面放很多蔬菜，全家人一边喝汤一边聊天。
吃饭的时候，我们会说说今天发生的事情。爸爸讲他工作上的新问题，妈妈讲邻居家的小狗又跑出去了，我讲学校里的考试和朋友。虽然都是一些小事，但是这个时间是一天中最温暖的时候。
奶奶常说，一家人在一起吃饭，比吃什么更重要。以前我不太明白这句话，现在我一个人在外地工作，才知道她说得多么对。

天气和季节

北方的冬天很冷，常常下雪，最低气温可以到零下二十度。南方的冬天不太冷，但是很潮湿，房间里没有暖气，有时候比北方还难过。夏天的时候，南方又热又闷，北方虽然也热，但是早晚比较凉快。
我最喜欢秋天。秋天的天空很高很蓝，树叶变成黄色和红色，果园里的苹果和梨都熟了。这个季节不冷也不热，很适合出去走走，或者在家里看一本好书。
"""

RUSSIAN_PROSE = """\
Зима в деревне

Зимой в нашей деревне рано темнеет. Уже в четыре часа дня на улице зажигаются фонари, а в домах топят печи. Снег лежит высокими сугробами вдоль заборов, и по утрам дети идут в школу по узкой тропинке, которую за ночь протоптали соседи. Воздух такой холодный и чистый, что кажется, будто его можно пить.
Мой дедушка вставал раньше всех. Он растапливал печь, ставил чайник и садился у окна с газетой, хотя газета приходила всего раз в неделю и он давно знал её наизусть. Когда в доме становилось тепло, просыпались остальные, и начинался обычный зимний день: дрова, вода из колодца, горячая каша и длинные разговоры о погоде.
Вечером вся семья собиралась за большим столом. Бабушка пекла пироги с капустой и с яблоками, а мы, дети, спорили, кому достанется самый румяный. После ужина дедушка рассказывал истории о своей молодости, о войне, о реке, которая однажды весной разлилась так широко, что лодки плавали прямо по улицам.

Река

Летом река была главным местом в жизни деревни. Утром на берегу сидели рыбаки с удочками, днём купались дети, а вечером приходили взрослые, чтобы посидеть у воды и посмотреть, как солнце медленно опускается за лес. Вода была тёплой и тёмной, а на середине реки течение становилось быстрым и сильным.
Однажды мы с братом построили плот из старых досок и попытались переплыть на другой берег. Плот развалился на полпути, и нам пришлось возвращаться вплавь, держась за доски. Дома нас сначала отругали, а потом напоили горячим чаем с малиновым вареньем. Это был один из самых счастливых дней моего детства.

Письмо другу

Дорогой Миша! Давно не писал тебе, прости. Работы очень много, но работа интересная. Мы пишем программу, которая должна быстро считать большие таблицы чисел, и каждый день я узнаю что-нибудь новое. Вчера, например, я целый день искал ошибку, а оказалось, что я просто перепутал строки и столбцы в одной маленькой функции.
У нас уже настоящая осень. Листья пожелтели, по утрам туман, а в обед ещё бывает тепло, и можно посидеть на лавочке в парке. Я часто вспоминаю наше лето на реке и думаю, что надо обязательно встретиться. Приезжай в гости, когда будет время. Места у меня мало, но для тебя всегда найдётся диван и горячий ужин.
Передавай привет родителям. Твой друг Андрей.

О вычислениях

Компьютер не думает так, как думает человек. Он выполняет очень простые действия: складывает числа, сравнивает их, переносит из одного места памяти в другое. Но делает он это миллиарды раз в секунду, и поэтому может решать задачи, которые человеку не под силу. Языковая модель тоже состоит из таких простых действий: умножение матриц, сложение векторов, нормализация и выбор следующего слова.
Чтобы проверить, что программа считает правильно, её результаты сравнивают с эталоном. Эталон должен быть надёжным, а сравнение должно учитывать, что числа с плавающей точкой никогда не бывают абсолютно точными. Небольшая разница в последних знаках допустима, большая разница означает ошибку.

Город

Город просыпается медленно. Сначала по пустым улицам проезжают первые трамваи, потом открываются булочные и газетные киоски, и только к восьми часам на остановках собираются толпы людей. Все спешат, все смотрят на часы, но если поднять голову, можно увидеть, как над крышами летят птицы и как солнце отражается в окнах верхних этажей.
"""

CODE_SNIPPETS = r'''
// Swift
struct Vector {
    var values: [Float]

    func dot(_ other: Vector) -> Float {
        precondition(values.count == other.values.count, "length mismatch")
        var sum: Float = 0
        for i in 0..<values.count {
            sum += values[i] * other.values[i]
        }
        return sum
    }
}

func softmax(_ x: [Float]) -> [Float] {
    let m = x.max() ?? 0
    let e = x.map { expf($0 - m) }
    let s = e.reduce(0, +)
    return e.map { $0 / s }
}

# Python
def rms_norm(x, weight, eps=1e-5):
    scale = 1.0 / (sum(v * v for v in x) / len(x) + eps) ** 0.5
    return [v * scale * w for v, w in zip(x, weight)]

def greedy(logits):
    best = 0
    for i, value in enumerate(logits):
        if value > logits[best]:
            best = i
    return best

if __name__ == "__main__":
    print(greedy([0.1, 2.5, -1.0, 2.4]))  # prints 1

/* C */
#include <stdio.h>
int main(void) {
    int total = 0;
    for (int i = 1; i <= 100; i++) {
        total += i;
    }
    printf("sum = %d\n", total);
    return 0;
}

{"name": "hearth", "version": "0.1.0", "layers": 2, "heads": [4, 4], "ok": true, "ratio": 0.75}

$ ls -la /tmp && echo "done" | tee log.txt
$ git commit -m "Add tokenizer tests" && git push origin main
SELECT id, name, price FROM products WHERE price > 10.5 ORDER BY name LIMIT 20;
x = [i ** 2 for i in range(10) if i % 3 != 0]
let url = "https://example.com/api/v1/items?page=2&limit=50"
if (a != b && c <= d || e >= f) { return a->next; }
'''

PUNCTUATION_AND_EMOJI = """\
Good morning! ☀️ The bread is ready 🍞 and the fire is lit 🔥.
Coffee? ☕ Yes, please... and maybe a biscuit :-)
She wrote «ёлка» in quotes — and then “tree” — and finally 「树」.
Brackets (round), [square], {curly} and <angle>; slashes / and \\ backslashes.
Math: 2 + 2 = 4, 3 × 4 = 12, 10 ÷ 2 = 5, π ≈ 3.14159, 5% of 200 is 10.
Money: $19.99, €5.50, £3, ¥1200, ₽350.
Developers at work 👩‍💻👨‍💻 and a family 👨‍👩‍👧 on holiday 🏖️.
Mixed: Hello 你好 Привет 123!
"""

ENGLISH_MORE = """\
The Library on the Hill

The town library stands on a small hill behind the post office, and to reach it you climb forty two stone steps that are worn smooth in the middle. Inside it smells of paper, floor polish and rain, because the roof has leaked in the same corner for as long as anyone can remember. There is a bucket under the leak, and the bucket has its own name, which the children chose by vote many years ago.
The librarian knows every reader by the books they borrow. She can tell you that the retired doctor reads only sea stories, that the twins from the bakery fight over the same comic every week, and that the quiet student by the window has read every book on astronomy twice. When a new book arrives she holds it for a moment before she puts it on the shelf, as if she were introducing it to the others.
On winter afternoons the reading room is full. People come to read, but they also come because the room is warm and the lamps are bright and nobody asks them to buy anything. An old clock ticks above the door. Somebody turns a page. Outside the snow falls on the steps, and for an hour or two the whole world seems to be holding its breath.

On Learning a Second Language

Learning a new language is a lesson in humility. For months you understand only a few words, and you smile and nod while the real conversation flows past you like a river. You make mistakes that a child would not make. You ask for a spoon when you want a key. You greet your teacher with a phrase that turns out to be quite rude, and she is kind enough to laugh.
Then one day something changes. You overhear two strangers on a bus and you understand the joke. You read a street sign without translating it in your head. You dream, for the first time, in the new language, and when you wake up you are not sure whether to feel proud or confused.
The words that are hardest to learn are often the smallest ones: the little particles that change the mood of a sentence, the prepositions that refuse to follow any rule, the polite forms that depend on who is listening. A dictionary cannot teach them. Only time, patience and many small embarrassing conversations can.

The Garden in July

In July the garden grows faster than I can keep up with it. The beans climb their poles and then keep climbing into the air, waving their tendrils as if they were looking for a ladder. The tomatoes turn from green to orange to red in a few hot days. The courgettes hide under their huge leaves and grow into monsters if you forget to look for a week.
Every evening I walk along the rows with a watering can and a basket. I pull a few weeds, pick whatever is ripe, and listen to the bees working in the lavender. It is a slow, simple routine, and it makes the long days feel orderly. By the end of the month the kitchen table is covered with vegetables, and the neighbours have learned to close their curtains when they see me coming with another bag of courgettes.

The Workshop

My uncle kept a workshop in the shed behind his house. It was full of tools hanging on nails, jars of screws sorted by size, coils of wire, old radios waiting to be repaired, and a radio that actually worked, tuned forever to a station that played music from fifty years ago. He could fix almost anything, and when he could not fix something he took it apart to see how it had been made.
He taught me to measure twice and cut once, to keep the blade sharp, and to clean the bench at the end of every day no matter how tired I was. He also taught me that a good repair is one that the next person can understand. He labelled every wire and wrote notes in pencil on the inside of every case he opened: the date, what was wrong, and what he had done about it.
Much later, when I began to write software, I realised that he had been teaching me to write comments and commit messages all along.

A Walk by the Sea

The tide was out, and the beach stretched wide and flat to the edge of the water. Small birds ran along the wet sand in quick bursts, stopping to peck and then running again, always just ahead of the waves. The wind smelled of salt and seaweed, and somewhere out of sight a dog was barking at the gulls with great enthusiasm and no success.
We walked as far as the rocks at the end of the bay and sat down to eat our sandwiches. The sea was calm and grey, and the horizon was so soft that it was hard to tell where the water ended and the sky began. On the way back the tide turned, and we had to hurry across the last stretch of sand while the water crept in around our boots.
"""

CHINESE_MORE = """\
图书馆

学校的图书馆在一座安静的小楼里。一楼是报纸和杂志，二楼是中文书，三楼是外文书和电脑。每天下午，很多学生在这里看书、写作业、准备考试。图书馆里很安静，只能听见翻书的声音和窗外的风声。
我最喜欢三楼靠窗的位置。从那里可以看见学校的操场和远处的山。累了的时候，我就抬头看看外面的天空，休息一会儿，然后继续学习。有一次我在那里看书看得太认真，连图书馆关门了都不知道。

做饭

我刚开始一个人生活的时候，完全不会做饭。第一次做西红柿炒鸡蛋，鸡蛋炒糊了，西红柿还是生的。后来我给妈妈打电话，她在电话里一步一步地教我：先把鸡蛋打散，油热了再放进去，炒好了先盛出来，再炒西红柿，最后放在一起，加一点盐和糖。
现在我已经会做很多菜了。周末的时候，我常常请朋友来家里吃饭。大家一起洗菜、切菜、做饭，一边做一边聊天，比去饭馆吃饭有意思多了。

数字和时间

今天是星期三，现在是下午三点二十分。我们的会议在四点开始，大概一个小时。火车票是明天早上七点的，从北京到上海要四个多小时。这本书一共有三百二十页，我已经看了一百五十页。
一年有十二个月，一个星期有七天，一天有二十四个小时。时间过得很快，我们要好好地利用每一天。

旅行

去年夏天，我和两个朋友一起去了西南的一个小城。那里的山很高，水很清，人们说话的声音很好听。我们住在一家老房子改成的小旅馆里，每天早上吃一碗米线，然后出去走路、拍照、看风景。
有一天我们在山上迷路了，走了很久也找不到下山的路。后来遇到一位放羊的老人，他不但给我们指了路，还请我们去他家喝茶。那杯茶的味道，我到现在都记得。
"""

RUSSIAN_MORE = """\
Библиотека

В нашей школе была маленькая библиотека на втором этаже. Библиотекарь, Анна Петровна, знала каждую книгу и каждого ученика. Она могла посоветовать книгу, которая подходит именно тебе, даже если ты сам не знал, что хочешь прочитать. Я брал у неё книги о путешествиях, о море и о далёких странах, и каждый раз обещал себе, что когда-нибудь обязательно там побываю.
Зимой в библиотеке было тепло и тихо. За окном падал снег, на столах горели лампы, и время шло медленно. Мне кажется, именно там я научился любить тишину.

Дорога

Мы выехали рано утром, когда город ещё спал. Дорога шла через поля и леса, мимо маленьких деревень с деревянными домами и синими заборами. В одной деревне мы остановились у колодца, чтобы набрать воды, и старушка вынесла нам корзинку с яблоками. Она не хотела брать деньги и только сказала, чтобы мы ехали осторожно.
К вечеру мы добрались до озера. Вода была совершенно неподвижной, и в ней отражались облака и верхушки сосен. Мы поставили палатку, развели костёр и долго сидели молча, слушая, как потрескивают дрова.

Учёба

Учиться трудно, но интересно. Сначала кажется, что новая тема совсем непонятна, что формулы и определения никогда не сложатся в одну картину. Потом ты решаешь первую задачу, вторую, десятую, и вдруг всё становится ясно. Главное не бросать на полпути и не бояться задавать вопросы.
Наш учитель математики говорил, что ошибка это не поражение, а подсказка. Каждая ошибка показывает, где именно нужно подумать ещё раз. Я до сих пор вспоминаю эти слова, когда что-то не получается.
"""

CODE_MORE = r'''
// Swift: reading a little-endian header
func readUInt64(_ bytes: [UInt8], at offset: Int) -> UInt64 {
    var value: UInt64 = 0
    for k in 0..<8 {
        value |= UInt64(bytes[offset + k]) << (8 * UInt64(k))
    }
    return value
}

enum DType: String { case f32 = "F32", f16 = "F16", bf16 = "BF16" }

# Python: a tiny tokenizer loop
def encode(text, vocab):
    ids = []
    for word in text.split(" "):
        ids.append(vocab.get(word, 0))
    return ids

class Counter:
    def __init__(self):
        self.count = 0

    def tick(self, step=1):
        self.count += step
        return self.count

// JavaScript
const total = [1, 2, 3, 4].reduce((a, b) => a + b, 0);
console.log(`total: ${total}`);

<!-- HTML -->
<p class="note">Hello, <b>world</b>!</p>
'''


# ---------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------

def generated_number_lines() -> str:
    """Deterministic lines full of digits, dates, prices and arithmetic."""
    rng = random.Random(20240617)
    units = ["kg", "km", "ml", "cm", "MB", "ms", "°C", "%"]
    lines = []
    for _ in range(45):
        n = rng.randint(1000, 9999)
        y, mo, d = rng.randint(1990, 2030), rng.randint(1, 12), rng.randint(1, 28)
        hh, mi = rng.randint(0, 23), rng.randint(0, 59)
        q = rng.randint(1, 12)
        p = rng.randint(50, 9999) / 100
        lines.append(
            f"Order {n} shipped on {y}-{mo:02d}-{d:02d} at {hh:02d}:{mi:02d}: "
            f"{q} items at {p:.2f} each, total {q * p:.2f}."
        )
    for _ in range(40):
        a, b = rng.randint(0, 999), rng.randint(1, 99)
        lines.append(f"{a} + {b} = {a + b}; {a} - {b} = {a - b}; {a} × {b} = {a * b}; {a} / {b} ≈ {a / b:.3f}")
    for i in range(1, 31):
        t, h, s = rng.randint(-20, 38), rng.randint(10, 99), rng.randint(800, 25000)
        lines.append(f"第{i}天：气温{t}度，湿度{h}%，今天走了{s}步。")
    for _ in range(30):
        y = rng.randint(1900, 2024)
        pop, k = rng.randint(1200, 980000), rng.randint(40, 1500)
        lines.append(f"В {y} году в городе жили {pop} человек, а в школе училось {k} детей.")
    for _ in range(30):
        v = f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 99)}"
        x = rng.uniform(-1000, 1000)
        u = rng.choice(units)
        lines.append(f"version {v}, build {rng.randint(100, 99999)}, value {x:.4f} {u}, id 0x{rng.getrandbits(32):08x}")
    return "\n".join(lines) + "\n"


def build_corpus() -> str:
    sections = [
        ENGLISH_PROSE,
        CHINESE_PROSE,
        RUSSIAN_PROSE,
        ENGLISH_DIALOGUE,
        CODE_SNIPPETS,
        ENGLISH_MORE,
        CHINESE_MORE,
        RUSSIAN_MORE,
        CODE_MORE,
        PUNCTUATION_AND_EMOJI,
        generated_number_lines(),
    ]
    return "\n".join(s.strip("\n") + "\n" for s in sections)


# ---------------------------------------------------------------------------
# SentencePiece
# ---------------------------------------------------------------------------

def train_sentencepiece(corpus_path: Path, work: Path) -> bytes:
    prefix = work / "sp"
    with open(os.devnull, "w") as devnull:
        spm.SentencePieceTrainer.train(
            input=str(corpus_path),
            model_prefix=str(prefix),
            model_type="bpe",
            vocab_size=SP_VOCAB_SIZE,
            byte_fallback=True,
            character_coverage=SP_CHARACTER_COVERAGE,
            unk_id=0,
            bos_id=1,
            eos_id=2,
            pad_id=-1,
            add_dummy_prefix=True,
            split_digits=True,
            allow_whitespace_only_pieces=True,
            remove_extra_whitespaces=False,
            normalization_rule_name="identity",
            max_sentence_length=16384,
            shuffle_input_sentence=False,
            num_threads=1,
            logstream=devnull,
        )
    # The trainer records the absolute input path and the (temporary) output prefix in
    # the model; replace them with stable names so re-runs give byte-identical files.
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString((work / "sp.model").read_bytes())
    del proto.trainer_spec.input[:]
    proto.trainer_spec.input.append("Tests/Fixtures/corpus.txt")
    proto.trainer_spec.model_prefix = "tokenizer"
    return proto.SerializeToString()


def check_sentencepiece(sp: spm.SentencePieceProcessor) -> dict:
    assert sp.get_piece_size() == SP_VOCAB_SIZE, sp.get_piece_size()
    assert (sp.id_to_piece(0), sp.id_to_piece(1), sp.id_to_piece(2)) == ("<unk>", "<s>", "</s>")
    assert sp.bos_id() == 1 and sp.eos_id() == 2 and sp.unk_id() == 0 and sp.pad_id() == -1
    byte_ids = [i for i in range(SP_VOCAB_SIZE) if sp.is_byte(i)]
    assert len(byte_ids) == 256 and byte_ids == list(range(3, 259)), "byte pieces must be ids 3..258"
    pieces = [sp.id_to_piece(i) for i in range(SP_VOCAB_SIZE)]
    single_cjk = sorted(p for p in pieces if len(p) == 1 and "\u4e00" <= p <= "\u9fff")
    single_cyr = sorted(p for p in pieces if len(p) == 1 and "\u0400" <= p <= "\u04ff")
    # Common Chinese characters must be whole pieces; rare ones (and emoji) must fall back to bytes.
    for ch in "我们天的是一":
        assert sp.piece_to_id(ch) != 0, f"common character {ch!r} is not in the vocabulary"
    for ch in ["龘", "饕", "🙂", "🔥"]:
        ids = sp.encode(ch)
        assert all(sp.is_byte(i) for i in ids[-len(ch.encode('utf-8')):]), f"{ch!r} should use byte fallback"
    merges = [p for p in pieces[259:] if len(p) > 1]
    return {
        "cjk_chars": len(single_cjk),
        "cyrillic_chars": len(single_cyr),
        "multi_char_pieces": len(merges),
    }


# ---------------------------------------------------------------------------
# Tokenizer side files (written the way Phi-3-mini-4k-instruct's are)
# ---------------------------------------------------------------------------

def added_token_entry(content: str, rstrip: bool, special: bool) -> dict:
    return {
        "content": content,
        "lstrip": False,
        "normalized": False,
        "rstrip": rstrip,
        "single_word": False,
        "special": special,
    }


def tokenizer_config() -> dict:
    decoder = {
        "0": added_token_entry("<unk>", False, True),
        "1": added_token_entry("<s>", False, True),
        # Phi-3 marks </s> rstrip=true, special=false; kept as-is.
        "2": added_token_entry("</s>", True, False),
    }
    for content, idx in ADDED_TOKENS:
        # Phi-3: <|endoftext|> has rstrip=false, every other added token rstrip=true.
        decoder[str(idx)] = added_token_entry(content, content != "<|endoftext|>", True)
    return {
        "add_bos_token": True,
        "add_eos_token": False,
        "added_tokens_decoder": decoder,
        "bos_token": "<s>",
        "chat_template": PHI3_CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|endoftext|>",
        "legacy": False,
        "model_max_length": 4096,
        "pad_token": "<|endoftext|>",
        "padding_side": "left",
        "sp_model_kwargs": {},
        "tokenizer_class": "LlamaTokenizer",
        "unk_token": "<unk>",
        "use_default_system_prompt": False,
    }


def special_tokens_map() -> dict:
    def tok(content):
        return {"content": content, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False}

    return {
        "bos_token": tok("<s>"),
        "eos_token": tok("<|endoftext|>"),
        "pad_token": tok("<|endoftext|>"),
        "unk_token": tok("<unk>"),
    }


def dumps_compact(obj, indent=1, level=0) -> str:
    """JSON with objects one key per line but lists of scalars (ids, pieces) on one line."""
    pad, inner = " " * (indent * level), " " * (indent * (level + 1))
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {dumps_compact(v, indent, level + 1)}"
                 for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        items = [inner + dumps_compact(v, indent, level + 1) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))


def write_json(path: Path, obj, indent=2):
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=indent) + "\n", encoding="utf-8")


def write_tokenizer_files(out: Path, sp_model: bytes):
    (out / "tokenizer.model").write_bytes(sp_model)
    write_json(out / "tokenizer_config.json", tokenizer_config())
    write_json(out / "added_tokens.json", {content: idx for content, idx in ADDED_TOKENS})
    write_json(out / "special_tokens_map.json", special_tokens_map())


def load_hf_tokenizer(path: Path):
    """The reference HF tokenizer: transformers.LlamaTokenizer built from tokenizer.model.

    transformers 5 has no sentencepiece-backed ("slow") LlamaTokenizer any more:
    LlamaTokenizer is the `tokenizers`-backed class, converted on load from
    tokenizer.model (BPE + byte_fallback, Metaspace pre-tokenizer with
    prepend_scheme="first" because legacy=false). It is loaded explicitly: for a
    directory whose config.json says model_type "phi3", AutoTokenizer ignores
    tokenizer_class and returns the generic TokenizersBackend, which, without a
    tokenizer.json, drops the dummy-prefix "▁" and so does not match sentencepiece.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok = LlamaTokenizer.from_pretrained(str(path))
    assert type(tok).__name__ == "LlamaTokenizer", type(tok)
    return tok


def load_auto_tokenizer(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AutoTokenizer.from_pretrained(str(path))


def chat_ids(tok, messages):
    out = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if hasattr(out, "keys") and "input_ids" in out:  # transformers 5 may return a BatchEncoding
        out = out["input_ids"]
    out = list(out)
    if out and isinstance(out[0], list):
        assert len(out) == 1
        out = out[0]
    return [int(i) for i in out]


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------

def make_config(recipe: dict) -> Phi3Config:
    kwargs = dict(
        vocab_size=MODEL_VOCAB_SIZE,
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=recipe["num_key_value_heads"],
        max_position_embeddings=MAX_POSITIONS,
        original_max_position_embeddings=LONGROPE_ORIGINAL_MAX if recipe["longrope"] else MAX_POSITIONS,
        initializer_range=INIT_STD,
        rms_norm_eps=1e-5,
        tie_word_embeddings=recipe["tie_word_embeddings"],
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
        pad_token_id=EOS_ID,
        hidden_act="silu",
    )
    rope = {"rope_type": "default", "rope_theta": recipe["rope_theta"]}
    if recipe["longrope"]:
        rope = {
            "rope_type": "longrope",
            "rope_theta": recipe["rope_theta"],
            "short_factor": list(SHORT_FACTOR),
            "long_factor": list(LONG_FACTOR),
        }
    if recipe["partial_rotary_factor"] != 1.0:
        kwargs["partial_rotary_factor"] = recipe["partial_rotary_factor"]
        rope["partial_rotary_factor"] = recipe["partial_rotary_factor"]
    kwargs["rope_parameters"] = rope
    config = Phi3Config(**kwargs)
    return config


def randomize_weights(model: Phi3ForCausalLM, seed: int):
    """N(0, INIT_STD) matrices, 1 + 0.1*N(0,1) norm weights, damped padded vocab rows."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            if name.endswith("norm.weight"):
                param.copy_(1.0 + 0.1 * torch.randn(param.shape, generator=gen))
            else:
                param.copy_(INIT_STD * torch.randn(param.shape, generator=gen))
        # Ids 1011..1023 exist only as padding (like Phi-3's 32011..32063); keep their
        # output rows small so greedy decoding never lands on an id with no token.
        out_rows = model.get_output_embeddings().weight
        out_rows[len_vocab_with_added():] *= 0.05
    if model.config.tie_word_embeddings:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()


def len_vocab_with_added() -> int:
    return ADDED_TOKENS[-1][1] + 1


def save_checkpoint(model: Phi3ForCausalLM, recipe: dict, out: Path):
    model = copy.deepcopy(model).to(recipe["save_dtype"])
    total_bytes = sum(p.numel() * p.element_size() for p in model.state_dict().values())
    if recipe["shards"] == 1:
        model.save_pretrained(str(out), max_shard_size="1GB")
    else:
        # A little over half the weights per shard -> exactly two shards.
        model.save_pretrained(str(out), max_shard_size=int(total_bytes * 0.6))
    # generation_config.json like Phi-3's, with <|end|> as a second stop token.
    write_json(
        out / "generation_config.json",
        {
            "_from_model_config": True,
            "bos_token_id": BOS_ID,
            "eos_token_id": list(GENERATION_EOS),
            "pad_token_id": EOS_ID,
            "transformers_version": transformers.__version__,
        },
    )
    cfg_path = out / "config.json"
    cfg = json.loads(cfg_path.read_text())
    if recipe["config_form"] == "classic":
        cfg = to_classic_config(cfg)
    else:
        assert "rope_parameters" in cfg, "expected transformers 5 to write rope_parameters"
    write_json(cfg_path, cfg)


def to_classic_config(cfg: dict) -> dict:
    """Rewrite a transformers-5 config.json to the pre-5 Phi-3 form (rope_theta / rope_scaling)."""
    cfg = dict(cfg)
    rope = cfg.pop("rope_parameters")
    if "dtype" in cfg:  # transformers < 5 spelled it torch_dtype
        cfg["torch_dtype"] = cfg.pop("dtype")
    cfg["rope_theta"] = rope["rope_theta"]
    prf = rope.get("partial_rotary_factor", 1.0)
    if prf != 1.0:
        cfg["partial_rotary_factor"] = prf
    else:
        cfg.pop("partial_rotary_factor", None)
    if rope.get("rope_type", "default") == "default":
        cfg["rope_scaling"] = None
    else:
        cfg["rope_scaling"] = {
            "type": rope["rope_type"],
            "short_factor": rope["short_factor"],
            "long_factor": rope["long_factor"],
        }
    return dict(sorted(cfg.items()))


def to_rope_parameters_config(cfg: dict) -> dict:
    """Rewrite a classic Phi-3 config.json to the transformers-5 rope_parameters form."""
    cfg = dict(cfg)
    scaling = cfg.pop("rope_scaling", None)
    rope = {"rope_theta": cfg.pop("rope_theta"), "rope_type": "default"}
    if "partial_rotary_factor" in cfg:
        rope["partial_rotary_factor"] = cfg["partial_rotary_factor"]
    if scaling:
        rope["rope_type"] = scaling.get("rope_type", scaling.get("type"))
        rope["short_factor"] = scaling["short_factor"]
        rope["long_factor"] = scaling["long_factor"]
        rope["original_max_position_embeddings"] = cfg["original_max_position_embeddings"]
    cfg["rope_parameters"] = rope
    if "torch_dtype" in cfg:
        cfg["dtype"] = cfg.pop("torch_dtype")
    return dict(sorted(cfg.items()))


def load_reference_model(path: Path) -> Phi3ForCausalLM:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32, attn_implementation="eager")
    assert type(model).__name__ == "Phi3ForCausalLM", type(model)
    model.eval()
    for p in model.parameters():
        assert p.dtype == torch.float32
    return model


@torch.no_grad()
def prompt_logits(model, ids) -> np.ndarray:
    out = model(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False)
    return out.logits[0].float().numpy().astype(np.float32)


@torch.no_grad()
def greedy(model, ids):
    """model.generate greedy continuation + per-step top1-top2 margins of the raw logits."""
    inp = torch.tensor([ids], dtype=torch.long)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model.generate(
            input_ids=inp,
            attention_mask=torch.ones_like(inp),
            do_sample=False,
            max_new_tokens=MAX_NEW_TOKENS,
            output_logits=True,
            return_dict_in_generate=True,
        )
    new = [int(t) for t in out.sequences[0, len(ids):]]
    margins = []
    for step_logits in out.logits:
        top2 = torch.topk(step_logits[0].float(), 2).values
        margins.append(float(top2[0] - top2[1]))
    stopped = bool(new) and new[-1] in GENERATION_EOS
    return new, stopped, margins


@torch.no_grad()
def greedy_without_cache(model, ids, steps):
    """Reference for `greedy`: full forward pass over the whole sequence at every step."""
    seq = list(ids)
    new = []
    for _ in range(steps):
        logits = prompt_logits(model, seq)[-1]
        nxt = int(np.argmax(logits))
        new.append(nxt)
        seq.append(nxt)
        if nxt in GENERATION_EOS:
            break
    return new


def format_logits(rows: np.ndarray) -> str:
    return "[" + ",\n".join("[" + ",".join("%.9g" % float(v) for v in row) + "]" for row in rows) + "]"


def write_reference(path: Path, header: dict, prompts: list, chats: list):
    """reference.json with logits printed as 9-significant-digit floats (exact for f32)."""
    placeholders = {}
    doc_prompts = []
    for i, p in enumerate(prompts):
        key = f"@@LOGITS{i}@@"
        placeholders[key] = format_logits(p["logits"])
        entry = dict(p)
        entry["logits"] = key
        doc_prompts.append(entry)
    doc = dict(header)
    doc["prompts"] = doc_prompts
    doc["chat"] = chats
    text = dumps_compact(doc)
    for key, value in placeholders.items():
        text = text.replace(json.dumps(key), value)
    json.loads(text)  # must stay valid JSON
    path.write_text(text + "\n", encoding="utf-8")


def generator_string(tok_class: str) -> str:
    return (
        f"{SCRIPT_NAME} (torch {torch.__version__}, transformers {transformers.__version__}, "
        f"sentencepiece {spm.__version__}, tokenizers {tokenizers.__version__}; "
        f"HF tokenizer: transformers.{tok_class}.from_pretrained, tokenizers-backed, converted from tokenizer.model)"
    )


# ---------------------------------------------------------------------------
# Building one checkpoint
# ---------------------------------------------------------------------------

def build_checkpoint(recipe: dict, sp_model: bytes, sp, prompts_ids, work: Path, max_attempts=20):
    out = FIXTURES / recipe["name"]
    for attempt in range(max_attempts):
        seed = recipe["seed"] + 100 * attempt
        torch.manual_seed(seed)
        config = make_config(recipe)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = Phi3ForCausalLM(config)
        randomize_weights(model, seed)
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        save_checkpoint(model, recipe, out)
        write_tokenizer_files(out, sp_model)

        ref = load_reference_model(out)
        results = []
        ok = True
        for (name, text), ids in zip(PROMPTS, prompts_ids):
            logits = prompt_logits(ref, ids)
            new, stopped, margins = greedy(ref, ids)
            if min(margins) <= MIN_GREEDY_MARGIN or any(t >= len_vocab_with_added() for t in new):
                ok = False
                break
            if greedy_without_cache(ref, ids, len(new)) != new:
                raise AssertionError(f"{recipe['name']}/{name}: cached generate disagrees with full recompute")
            results.append({
                "name": name,
                "text": text,
                "input_ids": ids,
                "logits": logits,
                "greedy": new,
                "greedy_stopped_on_eos": stopped,
                "_margins": margins,
            })
        if ok:
            return out, seed, results
        print(f"  {recipe['name']}: seed {seed} has a greedy step with margin <= {MIN_GREEDY_MARGIN} or a padding id; re-seeding")
    raise RuntimeError(f"no suitable seed for {recipe['name']}")


def generate(args):
    FIXTURES.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="hearth-fixtures-"))
    try:
        corpus = build_corpus()
        corpus_path = FIXTURES / "corpus.txt"
        corpus_path.write_text(corpus, encoding="utf-8")
        sp_model = train_sentencepiece(corpus_path, work)
        sp = spm.SentencePieceProcessor(model_proto=sp_model)
        sp_stats = check_sentencepiece(sp)
        print(f"corpus.txt: {len(corpus.encode('utf-8'))} bytes; sentencepiece: {sp_stats}")

        # HF tokenizer built from the same files that go into every checkpoint dir.
        tok_dir = work / "tok"
        tok_dir.mkdir()
        write_tokenizer_files(tok_dir, sp_model)
        tok = load_hf_tokenizer(tok_dir)
        tok_class = type(tok).__name__

        prompts_ids = []
        for name, text in PROMPTS:
            ids = [BOS_ID] + sp.encode(text)
            hf = tok.encode(text)
            assert hf == ids, f"HF ids differ from BOS + sp.encode for prompt {name}: {hf} vs {ids}"
            assert 10 <= len(ids) - 1 <= 30 or name == "english", (name, len(ids))
            prompts_ids.append(ids)
        assert len(prompts_ids[0]) > LONGROPE_ORIGINAL_MAX, "english prompt must exceed the longrope original length"
        zh = dict(PROMPTS)["chinese"]
        assert any(sp.is_byte(i) for i in sp.encode(zh)), "chinese prompt must contain a byte-fallback character"

        chats = []
        for messages in CHATS:
            rendered = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            chats.append({"messages": messages, "text": rendered, "input_ids": chat_ids(tok, messages)})

        summary = []
        for recipe in CHECKPOINTS:
            out, seed, results = build_checkpoint(recipe, sp_model, sp, prompts_ids, work)
            header = {"generator": generator_string(tok_class)}
            margins = [min(r.pop("_margins")) for r in results]
            write_reference(out / "reference.json", header, results, chats)
            summary.append((recipe["name"], seed, margins, [len(r["greedy"]) for r in results],
                            [r["greedy_stopped_on_eos"] for r in results]))
            print(f"{recipe['name']}: seed {seed}, min greedy margins {['%.4f' % m for m in margins]}")

        cases = []
        for text in TOKENIZER_CASES:
            sp_ids = sp.encode(text)
            cases.append({
                "text": text,
                "sp_ids": sp_ids,
                "hf_ids": [int(i) for i in tok.encode(text)],
                "sp_pieces": sp.encode(text, out_type=str),
                "decoded": sp.decode(sp_ids),
            })
        doc = {"generator": generator_string(tok_class), "cases": cases}
        (FIXTURES / "tokenizer-cases.json").write_text(dumps_compact(doc) + "\n", encoding="utf-8")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return summary


# ---------------------------------------------------------------------------
# Validation (also available alone with --check)
# ---------------------------------------------------------------------------

def config_form(cfg: dict) -> str:
    if "rope_parameters" in cfg:
        return "rope_parameters(" + cfg["rope_parameters"].get("rope_type", "?") + ")"
    scaling = cfg.get("rope_scaling")
    return "classic(rope_scaling=" + (scaling.get("type", "?") if scaling else "null") + ")"


def safetensors_dtypes(path: Path) -> dict:
    files = sorted(path.glob("*.safetensors"))
    dtypes, names = set(), []
    for f in files:
        with safe_open(str(f), framework="pt") as fh:
            for k in fh.keys():
                dtypes.add(str(fh.get_slice(k).get_dtype()))
                names.append(k)
    return {"files": [f.name for f in files], "dtypes": sorted(dtypes), "tensors": names}


def logits_with_config(path: Path, cfg: dict, prompts) -> list:
    """Load the checkpoint's weights with an alternative config.json, return logits per prompt."""
    with tempfile.TemporaryDirectory(prefix="hearth-altcfg-") as tmp:
        tmp = Path(tmp)
        for f in path.iterdir():
            if f.name != "config.json":
                os.symlink(f.resolve(), tmp / f.name)
        write_json(tmp / "config.json", cfg)
        model = load_reference_model(tmp)
        return [prompt_logits(model, p["input_ids"]) for p in prompts]


def validate():
    ok = True
    sp_bytes = None
    total = 0
    print("\nvalidation")
    for recipe in CHECKPOINTS:
        path = FIXTURES / recipe["name"]
        ref = json.loads((path / "reference.json").read_text(encoding="utf-8"))
        cfg = json.loads((path / "config.json").read_text())
        model = load_reference_model(path)
        tok = load_hf_tokenizer(path)
        sp = spm.SentencePieceProcessor(model_file=str(path / "tokenizer.model"))
        if sp_bytes is None:
            sp_bytes = (path / "tokenizer.model").read_bytes()
        assert (path / "tokenizer.model").read_bytes() == sp_bytes, "tokenizer.model copies differ"

        max_diff, margins, greedy_ok = 0.0, [], True
        for p in ref["prompts"]:
            ids = p["input_ids"]
            assert ids == [BOS_ID] + sp.encode(p["text"]) == tok.encode(p["text"])
            want = np.array(p["logits"], dtype=np.float32)
            assert want.shape == (len(ids), MODEL_VOCAB_SIZE), want.shape
            got = prompt_logits(model, ids)
            max_diff = max(max_diff, float(np.abs(got - want).max()))
            new, stopped, m = greedy(model, ids)
            margins.append(min(m))
            greedy_ok &= new == p["greedy"] and stopped == p["greedy_stopped_on_eos"]
        for c in ref["chat"]:
            greedy_ok &= chat_ids(tok, c["messages"]) == c["input_ids"]

        # The other config spelling must give the very same logits.
        if recipe["config_form"] == "classic":
            alt = to_rope_parameters_config(cfg)
        else:
            alt = to_classic_config(cfg)
        alt_logits = logits_with_config(path, alt, ref["prompts"])
        alt_diff = max(float(np.abs(a - np.array(p["logits"], dtype=np.float32)).max())
                       for a, p in zip(alt_logits, ref["prompts"]))

        st = safetensors_dtypes(path)
        want_dtype = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}[recipe["save_dtype"]]
        files_ok = st["dtypes"] == [want_dtype] and len(st["files"]) == recipe["shards"]
        if recipe["shards"] > 1:
            index = json.loads((path / "model.safetensors.index.json").read_text())
            files_ok &= sorted(index["weight_map"]) == sorted(st["tensors"])
            files_ok &= st["files"] == [f"model-0000{i + 1}-of-0000{recipe['shards']}.safetensors"
                                        for i in range(recipe["shards"])]
        else:
            files_ok &= st["files"] == ["model.safetensors"]
        files_ok &= ("lm_head.weight" in st["tensors"]) != recipe["tie_word_embeddings"]

        size = sum(f.stat().st_size for f in path.iterdir())
        total += size
        ref_size = (path / "reference.json").stat().st_size
        line = (f"  {recipe['name']:<18} {size / 1e6:6.3f} MB (reference.json {ref_size / 1e6:.3f} MB) "
                f"config={config_form(cfg)} weights={st['dtypes']}x{len(st['files'])} "
                f"max|dlogit|={max_diff:.2e} alt-config |dlogit|={alt_diff:.2e} "
                f"greedy/chat reproduce={greedy_ok} min margins={['%.4f' % m for m in margins]}")
        print(line)
        if recipe["longrope"]:
            factor = MAX_POSITIONS / LONGROPE_ORIGINAL_MAX
            print(f"    longrope attention factor sqrt(1+ln({factor:g})/ln({LONGROPE_ORIGINAL_MAX})) = "
                  f"{math.sqrt(1 + math.log(factor) / math.log(LONGROPE_ORIGINAL_MAX)):.9f}; "
                  f"model uses {model.model.rotary_emb.attention_scaling:.9f}; prompt lengths "
                  f"{[len(p['input_ids']) for p in ref['prompts']]} (> {LONGROPE_ORIGINAL_MAX} => long factors)")
        ok &= max_diff <= 1e-5 and alt_diff <= 1e-5 and greedy_ok and files_ok and size < 5e6
        ok &= all(m > MIN_GREEDY_MARGIN for m in margins)

    cases = json.loads((FIXTURES / "tokenizer-cases.json").read_text(encoding="utf-8"))["cases"]
    tok = load_hf_tokenizer(FIXTURES / CHECKPOINTS[0]["name"])
    sp = spm.SentencePieceProcessor(model_file=str(FIXTURES / CHECKPOINTS[0]["name"] / "tokenizer.model"))
    differ = []
    for c in cases:
        assert c["sp_ids"] == sp.encode(c["text"]) and c["hf_ids"] == tok.encode(c["text"])
        if c["hf_ids"] != [BOS_ID] + c["sp_ids"]:
            differ.append(c["text"])
    print(f"  tokenizer-cases.json: {len(cases)} cases, HF != BOS+sp for {len(differ)}: {differ!r}")
    auto = load_auto_tokenizer(FIXTURES / CHECKPOINTS[0]["name"])
    auto_differ = sum(auto.encode(c["text"]) != c["hf_ids"] for c in cases)
    print(f"  (AutoTokenizer on a phi3 dir gives {type(auto).__name__}; it differs from LlamaTokenizer "
          f"on {auto_differ}/{len(cases)} cases and is NOT used)")
    corpus_size = (FIXTURES / "corpus.txt").stat().st_size
    cases_size = (FIXTURES / "tokenizer-cases.json").stat().st_size
    total += corpus_size + cases_size
    print(f"  corpus.txt {corpus_size / 1e3:.1f} KB, tokenizer-cases.json {cases_size / 1e3:.1f} KB, "
          f"Tests/Fixtures total {total / 1e6:.3f} MB")
    print("validation " + ("PASSED" if ok else "FAILED"))
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only validate the existing fixtures")
    args = parser.parse_args()
    torch.set_num_threads(1)  # keeps the f32 reductions in one fixed order
    torch.use_deterministic_algorithms(True)
    if not args.check:
        generate(args)
    sys.exit(0 if validate() else 1)


if __name__ == "__main__":
    main()
