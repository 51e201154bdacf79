"""Drives Hearth's fake DashScope servers with the official `dashscope` SDK, and its fake OpenAI
chat and Anthropic messages servers with the official `openai` and `anthropic` SDKs (tool
calling), and checks the SDKs are satisfied: the fakes speak the protocols as the SDKs expect
them (streamed tool calls reassemble to the calls the fakes made), and the SDKs' own requests
pass the fakes' checks — the same checks Hearth's providers' requests pass in the Swift tests
(the fake exits 3 when any frame or request broke the protocol).

    python scripts/check_dashscope_fakes.py --fake .build/debug/dashscope-fake

It starts the fake, points the SDK at it with DASHSCOPE_WEBSOCKET_BASE_URL and
DASHSCOPE_HTTP_BASE_URL (read by the SDK when it is imported), runs MultiModalDialog and
Generation.call through the scenarios Hearth's tests use, and prints one line per check.
Reasoning (issue 57): the official clients read the fakes' reasoning as they read the real
services' — openai's `reasoning_content` (whole and streamed, and the `reasoning` alias),
anthropic's thinking blocks with signatures and redacted_thinking blocks (and a tool round trip
that sends them back, which the fake verifies; an altered signature is refused), and the
dashscope SDK's `reasoning_content` with `enable_thinking`; and openai's Responses API reasoning
items (summary, reasoning_text, encrypted content) whole and through its stream helper, with a
tool round trip that sends the reasoning item back (verified; refused without it or altered).

Run by scripts/check-dashscope-fakes.sh, which makes the venv.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

KEY = "sk-fake-dashscope-key"
APP = "fake-app"
WORKSPACE = "llm-fake-workspace"
ANSWERS = {
    "你好，介绍一下杭州": "杭州是浙江省的省会，西湖🌊闻名天下。春天的苏堤，桃红柳绿；Café 与茶馆并存。",
    "用一句话总结": "一句话：杭州＝西湖＋龙井🍵。",
}
FFFD = "\ufffd"

passed = 0
failed = 0
# Violations the checks provoke on purpose (a refused request), as substrings of the fake's
# report: the fake must report exactly these.
EXPECTED_VIOLATIONS = []


def thought(prompt):
    """The reasoning the fakes give for `prompt` (FakeReasoning.thought in Tests/HearthFakeServers)."""
    topic = prompt.replace("#", "")[:40]
    return f"The user asks about \u201c{topic}\u201d. 先想一想：西湖在杭州 🌸, Ça marche — answer briefly."


def check(condition, what, detail=""):
    global passed, failed
    if condition:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what} {detail}")


def start_fake(binary, answers_file):
    process = subprocess.Popen(
        [binary, "--api-key", KEY, "--app-id", APP, "--workspace-id", WORKSPACE,
         "--answers", answers_file, "--lifetime", "240"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if not line:
        sys.exit("the fake did not start: " + process.stderr.read())
    return process, json.loads(line)


class Recorder:
    """A MultiModalCallback that records everything and lets the checks wait for events."""

    def __init__(self, base):
        self.base = base
        self.lock = threading.Condition()
        self.events = []
        self.texts = []
        self.states = []
        self.audio = 0
        self.errors = []
        self.dialog_id = None
        self.closed = None

    def wait(self, predicate, timeout=10):
        with self.lock:
            return self.lock.wait_for(predicate, timeout)

    def note(self, name):
        with self.lock:
            self.events.append(name)
            self.lock.notify_all()

    def make(self):
        recorder = self

        class Callback(self.base):
            def on_started(self, dialog_id):
                recorder.dialog_id = dialog_id
                recorder.note("started")

            def on_stopped(self):
                recorder.note("stopped")

            def on_state_changed(self, state):
                with recorder.lock:
                    recorder.states.append(state.value)
                recorder.note("state:" + state.value)

            def on_speech_audio_data(self, data):
                with recorder.lock:
                    recorder.audio += len(data)

            def on_error(self, error):
                with recorder.lock:
                    recorder.errors.append(str(error))
                recorder.note("error")

            def on_responding_started(self):
                recorder.note("responding_started")

            def on_responding_ended(self, payload):
                recorder.note("responding_ended")

            def on_responding_content(self, payload):
                with recorder.lock:
                    recorder.texts.append(payload["output"]["text"])
                recorder.note("content")

            def on_request_accepted(self):
                recorder.note("request_accepted")

            def on_close(self, code, message):
                recorder.closed = code
                recorder.note("closed")

        return Callback()

    def count(self, name):
        with self.lock:
            return self.events.count(name)


def cumulative_ok(texts, answer):
    """Every text is a prefix of the answer, once a trailing U+FFFD (a character still incomplete) is cut."""
    for text in texts:
        if not answer.startswith(text.rstrip(FFFD)):
            return False
    return bool(texts) and texts[-1] == answer


def dialog_checks(dashscope):
    from dashscope.multimodal.multimodal_dialog import MultiModalCallback, MultiModalDialog
    from dashscope.multimodal.multimodal_request_params import (
        ClientInfo, Downstream, RequestParameters, Upstream)

    params = RequestParameters(
        upstream=Upstream(type="AudioOnly", mode="push2talk"),
        downstream=Downstream(intermediate_text="transcript,dialog"),
        client_info=ClientInfo(user_id="sdk-check"))

    def open_dialog(dialog_id=None, api_key=KEY):
        recorder = Recorder(MultiModalCallback)
        dialog = MultiModalDialog(
            app_id=APP, workspace_id=WORKSPACE, request_params=params, multimodal_callback=recorder.make(),
            api_key=api_key, model="multimodal-dialog", dialog_id=dialog_id)
        dialog.start(dialog_id)
        return dialog, recorder

    def ask(dialog, recorder, text):
        before = recorder.count("responding_ended")
        with recorder.lock:
            recorder.texts = []
        dialog.request_to_respond("prompt", text)
        return recorder.wait(lambda: recorder.events.count("responding_ended") > before
                             or recorder.events.count("error") > 0)

    def back_to_listening(dialog, recorder):
        listening = recorder.count("state:Listening")
        dialog.local_responding_started()
        dialog.local_responding_ended()
        return recorder.wait(lambda: recorder.events.count("state:Listening") > listening)

    dialog, recorder = open_dialog()
    check(recorder.wait(lambda: "state:Listening" in recorder.events), "dialog: Started, then Listening")
    check(bool(recorder.dialog_id), "dialog: Started carries a dialog_id", recorder.dialog_id)
    dialog.dialog_id = recorder.dialog_id  # the SDK's callers carry it themselves
    first = "你好，介绍一下杭州"
    check(ask(dialog, recorder, first), "dialog: RequestToRespond is answered and RespondingEnded arrives")
    check(cumulative_ok(recorder.texts, ANSWERS[first]), "dialog: RespondingContent.text is cumulative and exact",
          recorder.texts[-3:])
    check(recorder.states[-2:] == ["Thinking", "Responding"], "dialog: Thinking, then Responding", recorder.states)
    check(recorder.audio > 0, "dialog: binary audio frames reach on_speech_audio_data")
    check("responding_started" in recorder.events, "dialog: RespondingStarted")
    check(back_to_listening(dialog, recorder), "dialog: LocalRespondingStarted/Ended return it to Listening")

    dialog.send_heart_beat()
    time.sleep(0.2)
    check(not recorder.errors, "dialog: HeartBeat is answered without an error", recorder.errors)

    accepted = recorder.count("request_accepted")
    dialog.request_to_respond("prompt", "讲一个很长的故事 #slow")
    recorder.wait(lambda: len(recorder.texts) >= 3)
    dialog.interrupt()
    check(recorder.wait(lambda: recorder.events.count("request_accepted") > accepted), "dialog: RequestToSpeak is accepted")
    check(recorder.wait(lambda: recorder.states[-1] == "Listening"), "dialog: interrupted, it is Listening again")
    check(recorder.count("responding_ended") == 1, "dialog: the interrupted answer sends no RespondingEnded")

    check(ask(dialog, recorder, "还在吗"), "dialog: the next request after an interruption is answered")
    check("第3轮" in recorder.texts[-1], "dialog: the dialog goes on (round 3)", recorder.texts[-1:])
    back_to_listening(dialog, recorder)

    dialog.request_to_respond("prompt", "出错吧 #error")
    check(recorder.wait(lambda: recorder.errors), "dialog: an Error event mid-answer reaches on_error")
    check("InternalLLMError" in "".join(recorder.errors), "dialog: the Error carries error_name", recorder.errors)
    check(recorder.wait(lambda: recorder.states[-1] == "Listening"), "dialog: after the error it is Listening")

    dialog.stop()
    check(recorder.wait(lambda: "stopped" in recorder.events), "dialog: Stop is answered with Stopped")
    check(recorder.wait(lambda: recorder.closed is not None), "dialog: the connection closes after Stopped")
    dialog_id = recorder.dialog_id

    again, recorder2 = open_dialog(dialog_id=dialog_id)
    check(recorder2.wait(lambda: "state:Listening" in recorder2.events), "dialog: a new connection with the dialog_id starts")
    check(recorder2.dialog_id == dialog_id, "dialog: Started keeps the dialog_id", recorder2.dialog_id)
    again.dialog_id = dialog_id
    check(ask(again, recorder2, "我们刚才聊到哪了"), "dialog: reconnected, a request is answered")
    check("第5轮" in recorder2.texts[-1], "dialog: the dialog continues across connections (round 5)", recorder2.texts[-1:])
    back_to_listening(again, recorder2)

    again.request_to_respond("prompt", "失败 #task-failed")
    check(recorder2.wait(lambda: any("task-failed" in e for e in recorder2.errors)), "dialog: task-failed reaches on_error")
    check(recorder2.wait(lambda: recorder2.closed is not None), "dialog: task-failed ends the connection")
    again.cleanup()

    recorder3 = Recorder(MultiModalCallback)
    bad = MultiModalDialog(app_id=APP, workspace_id=WORKSPACE, request_params=params,
                           multimodal_callback=recorder3.make(), api_key="sk-wrong", model="multimodal-dialog")
    try:
        bad.start(None)  # the SDK then fails to send Start on the refused connection
    except Exception as error:  # noqa: BLE001 - whichever exception websocket-client raises
        print(f"     (start raised {type(error).__name__}, as expected)")
    check(recorder3.wait(lambda: recorder3.errors), "dialog: a wrong key is refused at the handshake", recorder3.errors)
    check(any("401" in e and "InvalidApiKey" in e for e in recorder3.errors),
          "dialog: the refusal is HTTP 401 InvalidApiKey", recorder3.errors)
    bad.cleanup()
    dialog.cleanup()


def generation_checks(dashscope):
    from dashscope import Generation

    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "用一句话总结"}]
    answer = ANSWERS["用一句话总结"]

    responses = list(Generation.call(model="qwen-plus", messages=messages, result_format="message",
                                     stream=True, incremental_output=True, api_key=KEY))
    check(all(r.status_code == 200 for r in responses), "generation: every streamed response is 200",
          [r.status_code for r in responses])
    text = "".join(r.output.choices[0].message.content for r in responses)
    check(text == answer, "generation: incremental pieces join to the exact answer", text)
    check(responses[-1].output.choices[0].finish_reason == "stop", "generation: the last finish_reason is stop")
    check(all(r.output.choices[0].finish_reason == "null" for r in responses[:-1]),
          "generation: earlier finish_reasons are the string \"null\"")
    check(responses[-1].usage.output_tokens > 0 and responses[-1].usage.input_tokens > 0,
          "generation: usage has input_tokens and output_tokens")
    check(len({r.request_id for r in responses}) == 1 and responses[0].request_id, "generation: one request_id")

    whole = Generation.call(model="qwen-plus", messages=messages, result_format="message", api_key=KEY)
    check(whole.status_code == 200 and whole.output.choices[0].message.content == answer,
          "generation: without SSE the answer comes as one JSON document")

    text_format = list(Generation.call(model="qwen-plus", messages=messages, stream=True, incremental_output=True,
                                       api_key=KEY))
    check("".join(r.output.text for r in text_format) == answer, "generation: result_format text streams output.text")

    failing = list(Generation.call(model="qwen-plus", messages=[{"role": "user", "content": "坏内容 #error"}],
                                   result_format="message", stream=True, incremental_output=True, api_key=KEY))
    check(failing[0].status_code == 200 and failing[-1].status_code != 200,
          "generation: event:error mid-stream ends the stream with an error response", [r.status_code for r in failing])
    check(failing[-1].code == "DataInspectionFailed", "generation: the error carries its code", failing[-1].code)

    for prompt, status, code in [("#429", 429, "Throttling.RateQuota"), ("#overflow", 400, "InvalidParameter"),
                                 ("#500", 500, "InternalError")]:
        reply = list(Generation.call(model="qwen-plus", messages=[{"role": "user", "content": prompt}],
                                     result_format="message", stream=True, incremental_output=True, api_key=KEY))
        check(reply[-1].status_code == status and reply[-1].code == code,
              f"generation: {prompt} is HTTP {status} {code}", (reply[-1].status_code, reply[-1].code))

    unauthorized = Generation.call(model="qwen-plus", messages=messages, result_format="message", api_key="sk-wrong")
    check(unauthorized.status_code == 401 and unauthorized.code == "InvalidApiKey", "generation: a wrong key is 401 InvalidApiKey",
          (unauthorized.status_code, unauthorized.code))


# Tools as each SDK's users pass them; the fakes call the first two (the named one when
# tool_choice names one) with arguments made from the schema (see FakeToolPlan in
# Tests/HearthFakeServers/FakeToolCalls.swift), so these are the calls every SDK must rebuild.
WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                  "required": ["city"]}
NOW_SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}
EXPECTED_CALLS = [("weather", {"city": "Hangzhou 杭州", "days": 3}), ("now", {})]
TOOL_QUESTION = [{"role": "user", "content": "Weather in Hangzhou, and the time?"}]


def function_tools():
    return [{"type": "function", "function": {"name": "weather", "description": "The forecast for a city.",
                                              "parameters": WEATHER_SCHEMA}},
            {"type": "function", "function": {"name": "now", "description": "The current time.",
                                              "parameters": NOW_SCHEMA}}]


def calls_of(tool_calls):
    """(name, parsed arguments) of OpenAI/DashScope-shaped calls (objects or dicts)."""
    result = []
    for call in tool_calls or []:
        function = call["function"] if isinstance(call, dict) else call.function
        name = function["name"] if isinstance(function, dict) else function.name
        arguments = function["arguments"] if isinstance(function, dict) else function.arguments
        result.append((name, json.loads(arguments)))
    return result


def follow_up(calls):
    """The conversation after the calls, with a result for each, as the SDKs' docs build it."""
    return TOOL_QUESTION + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for call_id, name, args in calls]},
    ] + [{"role": "tool", "tool_call_id": call_id, "content": "晴 25°C" if name == "weather" else "10:00"}
         for call_id, name, _ in calls]


def openai_checks(base_url):
    import openai
    client = openai.OpenAI(api_key=KEY, base_url=base_url, max_retries=0)
    print(f"openai {openai.__version__} against {base_url}")
    tools = function_tools()

    chunks = list(client.chat.completions.create(
        model="gpt-test", messages=TOOL_QUESTION, tools=tools, tool_choice="required", parallel_tool_calls=True,
        stream=True, stream_options={"include_usage": True}))
    # Reassembled as OpenAI's docs do it: by index, the first delta naming id and function.
    assembled = {}
    finish = None
    for chunk in chunks:
        for choice in chunk.choices:
            for delta in choice.delta.tool_calls or []:
                entry = assembled.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] += delta.id or ""
                entry["name"] += (delta.function.name or "") if delta.function else ""
                entry["arguments"] += (delta.function.arguments or "") if delta.function else ""
            finish = choice.finish_reason or finish
    calls = [(entry["name"], json.loads(entry["arguments"])) for _, entry in sorted(assembled.items())]
    check(calls == EXPECTED_CALLS, "openai: streamed tool-call deltas reassemble by index to two calls", calls)
    check(finish == "tool_calls", "openai: the streamed finish_reason is tool_calls", finish)
    check(all(entry["id"].startswith("call_") for entry in assembled.values()), "openai: each call has its id")
    check(chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens > 0, "openai: the last chunk carries usage")

    stream_helper = getattr(client.chat.completions, "stream", None) or client.beta.chat.completions.stream
    with stream_helper(model="gpt-test", messages=TOOL_QUESTION, tools=tools, tool_choice="required") as stream:
        final = stream.get_final_completion()
    check(calls_of(final.choices[0].message.tool_calls) == EXPECTED_CALLS,
          "openai: the SDK's stream helper rebuilds the calls", final.choices[0].message.tool_calls)

    whole = client.chat.completions.create(
        model="gpt-test", messages=TOOL_QUESTION, tools=tools,
        tool_choice={"type": "function", "function": {"name": "now"}})
    check(calls_of(whole.choices[0].message.tool_calls) == [("now", {})]
          and whole.choices[0].finish_reason == "tool_calls", "openai: a named tool_choice, not streamed, is one call")

    answer = client.chat.completions.create(
        model="gpt-test", tools=tools,
        messages=follow_up([(entry["id"], entry["name"], json.loads(entry["arguments"]))
                            for _, entry in sorted(assembled.items())]))
    check(answer.choices[0].finish_reason == "stop" and "10:00" in (answer.choices[0].message.content or ""),
          "openai: after the tool results the answer is text", answer.choices[0].message.content)

    none = client.chat.completions.create(model="gpt-test", messages=TOOL_QUESTION, tools=tools, tool_choice="none")
    check(not none.choices[0].message.tool_calls and none.choices[0].message.content,
          "openai: tool_choice none answers with text")


def anthropic_checks(base_url):
    import anthropic
    client = anthropic.Anthropic(api_key=KEY, base_url=base_url.removesuffix("/v1"), max_retries=0)
    print(f"anthropic {anthropic.__version__} against {base_url}")
    tools = [{"name": "weather", "description": "The forecast for a city.", "input_schema": WEATHER_SCHEMA},
             {"name": "now", "description": "The current time.", "input_schema": NOW_SCHEMA}]

    with client.messages.stream(model="claude-test", max_tokens=256, messages=TOOL_QUESTION, tools=tools,
                                tool_choice={"type": "any"}) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_message()
    uses = [(block.name, block.input) for block in final.content if block.type == "tool_use"]
    check(uses == EXPECTED_CALLS, "anthropic: input_json_delta pieces rebuild both inputs (the empty one as {})", uses)
    check(final.stop_reason == "tool_use", "anthropic: stop_reason is tool_use", final.stop_reason)
    check(events.count("content_block_stop") == 2, "anthropic: one content block per call", events)

    whole = client.messages.create(model="claude-test", max_tokens=256, messages=TOOL_QUESTION, tools=tools,
                                   tool_choice={"type": "tool", "name": "now", "disable_parallel_tool_use": True})
    check([(b.name, b.input) for b in whole.content if b.type == "tool_use"] == [("now", {})],
          "anthropic: tool_choice tool, not streamed, is one tool_use")

    serial = client.messages.create(model="claude-test", max_tokens=256, messages=TOOL_QUESTION, tools=tools,
                                    tool_choice={"type": "auto", "disable_parallel_tool_use": True})
    check(len([b for b in serial.content if b.type == "tool_use"]) == 1, "anthropic: disable_parallel_tool_use is one call")

    conversation = TOOL_QUESTION + [
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in final.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": block.id,
                                      "content": "晴 25°C" if block.name == "weather" else "10:00"}
                                     for block in final.content if block.type == "tool_use"]},
    ]
    with client.messages.stream(model="claude-test", max_tokens=256, messages=conversation, tools=tools) as stream:
        answer = stream.get_final_message()
    check(answer.stop_reason == "end_turn" and "晴 25°C" in answer.content[0].text,
          "anthropic: after the tool_result blocks the answer is text", answer.content)

    none = client.messages.create(model="claude-test", max_tokens=256, messages=TOOL_QUESTION, tools=tools,
                                  tool_choice={"type": "none"})
    check(none.stop_reason == "end_turn" and none.content[0].type == "text", "anthropic: tool_choice none answers with text")


def openai_reasoning_checks(base_url):
    import openai
    client = openai.OpenAI(api_key=KEY, base_url=base_url, max_retries=0)
    prompt = "Why is the sky blue?"
    question = [{"role": "user", "content": prompt}]

    whole = client.chat.completions.create(model="deepseek-reasoner", messages=question, reasoning_effort="high")
    message = whole.choices[0].message
    check(getattr(message, "reasoning_content", None) == thought(prompt),
          "openai reasoning: a whole reply's message.reasoning_content", message)
    check(message.content and "先想一想" not in message.content, "openai reasoning: the content has no reasoning")
    details = whole.usage.completion_tokens_details
    check(details is not None and details.reasoning_tokens == len(thought(prompt)),
          "openai reasoning: usage.completion_tokens_details.reasoning_tokens", whole.usage)

    chunks = list(client.chat.completions.create(
        model="deepseek-reasoner", messages=question, stream=True, stream_options={"include_usage": True}))
    order = []
    reasoning = content = ""
    for chunk in chunks:
        for choice in chunk.choices:
            piece = getattr(choice.delta, "reasoning_content", None)
            if piece:
                reasoning += piece
                order.append("r")
            if choice.delta.content:
                content += choice.delta.content
                order.append("c")
    check(reasoning == thought(prompt), "openai reasoning: streamed delta.reasoning_content pieces join", reasoning)
    check(content and "先想一想" not in content, "openai reasoning: streamed content has no reasoning")
    check("".join(order).startswith("r") and "cr" not in "".join(order), "openai reasoning: reasoning streams before the answer")
    check(chunks[-1].usage.completion_tokens_details.reasoning_tokens == len(thought(prompt)),
          "openai reasoning: the usage chunk counts reasoning tokens")

    alias = "#think-alias " + prompt
    chunks = list(client.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": alias}], stream=True))
    joined = "".join(getattr(c.choices[0].delta, "reasoning", None) or "" for c in chunks if c.choices)
    check(joined == thought(alias), "openai reasoning: the `reasoning` alias (vLLM, Ollama) streams", joined)

    try:
        client.chat.completions.create(model="gpt-test", messages=question, reasoning_effort="extreme")
        check(False, "openai reasoning: an unknown reasoning_effort is refused")
    except openai.BadRequestError:
        check(True, "openai reasoning: an unknown reasoning_effort is refused")
        EXPECTED_VIOLATIONS.append("reasoning_effort must be one of")


def responses_reasoning_checks(base_url):
    """The official openai client against the fake Responses API (FakeOpenAIResponses): reasoning
    items (summary, reasoning_text, encrypted content) whole and through the SDK's stream helper,
    and a tool round trip that sends the reasoning item back (the fake verifies it, and refuses
    the turn without it or with its encrypted content altered)."""
    import openai
    client = openai.OpenAI(api_key=KEY, base_url=base_url, max_retries=0)
    prompt = "Why is the sky blue?"
    reasoning = {"effort": "low", "summary": "auto"}
    include = ["reasoning.encrypted_content"]

    whole = client.responses.create(model="gpt-5-fake", input=prompt, reasoning=reasoning, include=include, store=False)
    kinds = [item.type for item in whole.output]
    item = whole.output[0]
    check(kinds == ["reasoning", "message"], "responses reasoning: a reasoning item, then the message", kinds)
    check([s.text for s in item.summary] == [thought(prompt)], "responses reasoning: the item's summary", item.summary)
    check((item.encrypted_content or "").startswith("gAAAAB"), "responses reasoning: encrypted_content with include", item)
    check(whole.output_text and "先想一想" not in whole.output_text, "responses reasoning: output_text has no reasoning")
    check(whole.usage.output_tokens_details.reasoning_tokens == len(thought(prompt))
          and whole.usage.input_tokens_details.cached_tokens == 8, "responses reasoning: reasoning and cached tokens", whole.usage)

    summary = ""
    with client.responses.stream(model="gpt-5-fake", input=prompt, reasoning=reasoning, include=include, store=False) as stream:
        for event in stream:
            if event.type == "response.reasoning_summary_text.delta":
                summary += event.delta
        final = stream.get_final_response()
    check(summary == thought(prompt), "responses reasoning: streamed summary deltas join (the SDK's stream helper)", summary)
    check([i.type for i in final.output] == kinds and final.output_text == whole.output_text
          and (final.output[0].encrypted_content or "").startswith("gAAAAB"),
          "responses reasoning: the stream helper's final response has the same items", final.output)

    text_prompt = "#reasoning-text " + prompt
    content = ""
    with client.responses.stream(model="gpt-5-fake", input=text_prompt) as stream:
        for event in stream:
            if event.type == "response.reasoning_text.delta":
                content += event.delta
    check(content == thought(text_prompt), "responses reasoning: reasoning_text deltas (gpt-oss servers) join", content)

    tools = [{"type": "function", "name": "weather", "strict": False,
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
    question = [{"role": "user", "content": "Weather in Hangzhou?"}]
    first = client.responses.create(model="gpt-5-fake", input=question, tools=tools, tool_choice="required",
                                    reasoning=reasoning, include=include, store=False)
    calls = [i for i in first.output if i.type == "function_call"]
    check([i.type for i in first.output] == ["reasoning", "function_call"] and calls[0].name == "weather",
          "responses reasoning: reasoning, then a function_call", first.output)
    sent = [i.model_dump(exclude_none=True) for i in first.output]
    result = [{"type": "function_call_output", "call_id": calls[0].call_id, "output": "晴 25°C"}]
    second = client.responses.create(model="gpt-5-fake", input=question + sent + result, tools=tools,
                                     reasoning=reasoning, include=include, store=False)
    check("晴 25°C" in second.output_text, "responses reasoning: a tool round trip with the reasoning item sent back is answered",
          second.output_text)
    for what, items, expected in [
        ("without its reasoning item", [i for i in sent if i["type"] != "reasoning"], "without its required 'reasoning' item"),
        ("with altered encrypted content", [dict(i, encrypted_content="gAAAAB-altered") if i["type"] == "reasoning" else i
                                            for i in sent], "could not be verified"),
    ]:
        try:
            client.responses.create(model="gpt-5-fake", input=question + items + result, tools=tools,
                                    reasoning=reasoning, include=include, store=False)
            check(False, f"responses reasoning: the follow-up {what} is refused")
        except openai.BadRequestError:
            check(True, f"responses reasoning: the follow-up {what} is refused")
            EXPECTED_VIOLATIONS.append(expected)


def anthropic_reasoning_checks(base_url):
    import anthropic
    client = anthropic.Anthropic(api_key=KEY, base_url=base_url.removesuffix("/v1"), max_retries=0)
    tools = [{"name": "weather", "description": "The forecast for a city.", "input_schema": WEATHER_SCHEMA}]
    prompt = "#redacted Weather in Hangzhou?"
    question = [{"role": "user", "content": prompt}]
    thinking = {"type": "enabled", "budget_tokens": 1024}

    with client.messages.stream(model="claude-test", max_tokens=2048, messages=question, tools=tools,
                                thinking=thinking) as stream:
        deltas = [event.delta.type for event in stream if event.type == "content_block_delta"]
        final = stream.get_final_message()
    types = [block.type for block in final.content]
    check(types == ["thinking", "redacted_thinking", "tool_use"],
          "anthropic reasoning: a thinking block, a redacted_thinking block, then tool_use", types)
    check(final.content[0].thinking == thought(prompt), "anthropic reasoning: thinking_delta pieces join", final.content[0])
    check(bool(final.content[0].signature), "anthropic reasoning: signature_delta gives the block its signature")
    check("thinking_delta" in deltas and deltas.count("signature_delta") == 1, "anthropic reasoning: the delta types", deltas)
    check(bool(final.content[1].data), "anthropic reasoning: the redacted block's data is opaque and kept")

    def follow_up(content):
        return question + [
            {"role": "assistant", "content": content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": final.content[2].id, "content": "晴 25°C"}]},
        ]

    sent_back = [block.model_dump(exclude_none=True) for block in final.content]
    answer = client.messages.create(model="claude-test", max_tokens=2048, messages=follow_up(sent_back), tools=tools,
                                    thinking=thinking)
    check(answer.stop_reason == "end_turn" and "晴 25°C" in answer.content[-1].text,
          "anthropic reasoning: a tool round trip that sends the thinking blocks back is answered", answer.content)

    altered = [dict(block) for block in sent_back]
    altered[0]["thinking"] += " (edited)"
    try:
        client.messages.create(model="claude-test", max_tokens=2048, messages=follow_up(altered), tools=tools,
                               thinking=thinking)
        check(False, "anthropic reasoning: an altered thinking block is refused")
    except anthropic.BadRequestError as error:
        check("signature" in str(error), "anthropic reasoning: an altered thinking block is refused", error)
        EXPECTED_VIOLATIONS.append("Invalid `signature` in `thinking` block")
    try:
        client.messages.create(model="claude-test", max_tokens=2048, messages=follow_up(sent_back[2:]), tools=tools,
                               thinking=thinking)
        check(False, "anthropic reasoning: a tool_result turn without its thinking block is refused")
    except anthropic.BadRequestError as error:
        check("must start with a thinking block" in str(error),
              "anthropic reasoning: a tool_result turn without its thinking block is refused", error)
        EXPECTED_VIOLATIONS.append("must start with a thinking block")

    whole = client.messages.create(model="claude-test", max_tokens=2048, messages=[{"role": "user", "content": "Hi"}],
                                   thinking=thinking)
    check([b.type for b in whole.content] == ["thinking", "text"] and whole.content[0].signature,
          "anthropic reasoning: a whole reply has its signed thinking block first")
    off = client.messages.create(model="claude-test", max_tokens=256, messages=[{"role": "user", "content": "Hi"}],
                                 thinking={"type": "disabled"})
    check([b.type for b in off.content] == ["text"], "anthropic reasoning: thinking disabled has no thinking block")


def generation_reasoning_checks(dashscope):
    from dashscope import Generation

    prompt = "用一句话总结"
    messages = [{"role": "user", "content": prompt}]
    responses = list(Generation.call(model="qwen-plus", messages=messages, result_format="message", stream=True,
                                     incremental_output=True, enable_thinking=True, thinking_budget=1024, api_key=KEY))
    check(all(r.status_code == 200 for r in responses), "generation reasoning: every streamed response is 200")
    reasoning = "".join(r.output.choices[0].message.get("reasoning_content") or "" for r in responses)
    content = "".join(r.output.choices[0].message.content or "" for r in responses)
    check(reasoning == thought(prompt), "generation reasoning: reasoning_content pieces join", reasoning)
    check(content == ANSWERS[prompt], "generation reasoning: the content is exactly the answer", content)
    details = responses[-1].usage.get("output_tokens_details") or {}
    check(details.get("reasoning_tokens", 0) > 0, "generation reasoning: usage.output_tokens_details.reasoning_tokens",
          responses[-1].usage)

    merged = list(Generation.call(model="qwen-plus", messages=messages, result_format="message", stream=True,
                                  incremental_output=False, enable_thinking=True, api_key=KEY))
    last = merged[-1].output.choices[0].message
    check(last.get("reasoning_content") == thought(prompt) and last.content == ANSWERS[prompt],
          "generation reasoning: without increments the last response has the whole reasoning and answer", last)

    whole = Generation.call(model="qwen-plus", messages=messages, result_format="message", enable_thinking=True,
                            api_key=KEY)
    check(whole.output.choices[0].message.get("reasoning_content") == thought(prompt),
          "generation reasoning: a whole reply carries message.reasoning_content")
    off = Generation.call(model="qwen-plus", messages=messages, result_format="message", enable_thinking=False,
                          api_key=KEY)
    check(not off.output.choices[0].message.get("reasoning_content"), "generation reasoning: enable_thinking false has none")


def generation_tool_checks(dashscope):
    from dashscope import Generation

    tools = function_tools()
    responses = list(Generation.call(model="qwen-plus", messages=TOOL_QUESTION, tools=tools, result_format="message",
                                     stream=True, incremental_output=True, parallel_tool_calls=True, api_key=KEY))
    check(all(r.status_code == 200 for r in responses), "generation tools: every streamed response is 200")
    assembled = {}
    for response in responses:
        for call in response.output.choices[0].message.get("tool_calls") or []:
            entry = assembled.setdefault(call["index"], {"id": "", "name": "", "arguments": ""})
            entry["id"] = call.get("id") or entry["id"]
            entry["name"] += call.get("function", {}).get("name", "")
            entry["arguments"] += call.get("function", {}).get("arguments", "")
    calls = [(entry["name"], json.loads(entry["arguments"])) for _, entry in sorted(assembled.items())]
    check(calls == EXPECTED_CALLS, "generation tools: incremental tool_calls pieces join by index", calls)
    check(responses[-1].output.choices[0].finish_reason == "tool_calls", "generation tools: the last finish_reason is tool_calls")

    # incremental_output=False: the SDK asks for increments and merges them itself
    # (dashscope.utils.message_utils.merge_single_response) — its merge of the fake's pieces.
    merged = list(Generation.call(model="qwen-plus", messages=TOOL_QUESTION, tools=tools, result_format="message",
                                  stream=True, incremental_output=False, api_key=KEY))
    check(calls_of(merged[-1].output.choices[0].message.tool_calls) == EXPECTED_CALLS,
          "generation tools: the SDK's own merge of the pieces gives the two calls")

    whole = Generation.call(model="qwen-plus", messages=TOOL_QUESTION, tools=tools, result_format="message",
                            tool_choice={"type": "function", "function": {"name": "now"}}, api_key=KEY)
    check(calls_of(whole.output.choices[0].message.tool_calls) == [("now", {})],
          "generation tools: a named tool_choice, not streamed, is one whole call")

    history = follow_up([(entry["id"], entry["name"], json.loads(entry["arguments"]))
                         for _, entry in sorted(assembled.items())])
    history[1]["content"] = ""
    for message in history[2:]:
        message["name"] = "weather" if "晴" in message["content"] else "now"
    answer = Generation.call(model="qwen-plus", messages=history, tools=tools, result_format="message", api_key=KEY)
    check(answer.status_code == 200 and "10:00" in answer.output.choices[0].message.content,
          "generation tools: after the tool results the answer is text", answer.output)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fake", required=True, help="the dashscope-fake binary")
    args = parser.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as file:
        json.dump(ANSWERS, file, ensure_ascii=False)
    fake, urls = start_fake(args.fake, file.name)
    try:
        os.environ["DASHSCOPE_WEBSOCKET_BASE_URL"] = urls["websocket"]
        os.environ["DASHSCOPE_HTTP_BASE_URL"] = urls["http"]
        os.environ["DASHSCOPE_API_KEY"] = KEY
        import dashscope  # reads the two URLs now
        print(f"dashscope {dashscope.__version__} against {urls['websocket']} and {urls['http']}")
        check(dashscope.base_websocket_api_url == urls["websocket"], "sdk: DASHSCOPE_WEBSOCKET_BASE_URL is used")
        check(dashscope.base_http_api_url == urls["http"], "sdk: DASHSCOPE_HTTP_BASE_URL is used")
        dialog_checks(dashscope)
        generation_checks(dashscope)
        generation_tool_checks(dashscope)
        openai_checks(urls["openai"])
        anthropic_checks(urls["anthropic"])
        generation_reasoning_checks(dashscope)
        openai_reasoning_checks(urls["openai"])
        anthropic_reasoning_checks(urls["anthropic"])
        responses_reasoning_checks(urls["responses"])
    finally:
        fake.send_signal(signal.SIGTERM)
        try:
            _, err = fake.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            fake.kill()
            _, err = fake.communicate()
        os.unlink(file.name)
    sys.stderr.write(err)
    reported = [line for line in err.splitlines() if line.startswith("violation: ")]
    unexpected = [line for line in reported if not any(expected in line for expected in EXPECTED_VIOLATIONS)]
    check(not unexpected and len(reported) == len(EXPECTED_VIOLATIONS)
          and fake.returncode == (3 if EXPECTED_VIOLATIONS else 0),
          "fake: no frame or request from the SDK broke the protocol (but the refusals provoked on purpose)",
          f"exit {fake.returncode}, unexpected {unexpected}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
