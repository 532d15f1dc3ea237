"""weft serve against the official `openai` Python client, streaming and not.

Run by scripts/serve-test (which installs `openai`, starts the server and
passes its URL): python3 openai_client.py http://127.0.0.1:PORT/v1
"""

import sys
import traceback

import openai

BASE = sys.argv[1]
client = openai.OpenAI(base_url=BASE, api_key="unused")
MODEL = "SmolLM2-135M-Instruct"
MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]


def test_models_list():
    ids = [m.id for m in client.models.list().data]
    assert MODEL in ids, ids


def test_chat_not_streaming():
    r = client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=12, temperature=0)
    assert r.object == "chat.completion"
    assert "Paris" in r.choices[0].message.content, r
    assert r.choices[0].finish_reason in ("stop", "length")
    assert r.usage.completion_tokens >= 1 and r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_chat_streaming_matches_and_reports_usage():
    whole = client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=12, temperature=0)
    chunks = list(client.chat.completions.create(
        model=MODEL, messages=MESSAGES, max_tokens=12, temperature=0,
        stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content, (text, whole)
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens


def test_chat_logprobs():
    r = client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=4, temperature=0,
                                       logprobs=True, top_logprobs=2)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens and len(content[0].top_logprobs) == 2


def test_completions_streaming_and_not():
    r = client.completions.create(model=MODEL, prompt="The sky is", max_tokens=8, temperature=0)
    s = "".join(c.choices[0].text for c in client.completions.create(
        model=MODEL, prompt="The sky is", max_tokens=8, temperature=0, stream=True) if c.choices)
    assert s == r.choices[0].text and r.usage.prompt_tokens > 0


def test_embeddings():
    e = client.embeddings.create(model="all-MiniLM-L6-v2", input=["weft runs from any thread", "so do streams"])
    assert len(e.data) == 2 and len(e.data[0].embedding) == 384
    assert abs(sum(x * x for x in e.data[0].embedding) - 1) < 1e-3


def test_errors_raise_the_right_exceptions():
    try:
        client.chat.completions.create(model="no-such-model", messages=MESSAGES)
        raise AssertionError("no error")
    except openai.NotFoundError:
        pass
    try:
        client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=-3)
        raise AssertionError("no error")
    except openai.BadRequestError as e:
        assert e.body["param"] == "max_tokens", e.body


if __name__ == "__main__":
    tests = [(n, f) for n, f in sorted(globals().items()) if n.startswith("test_") and callable(f)]
    failed = 0
    for name, f in tests:
        try:
            f()
            print(f"ok      {name}")
        except Exception:
            failed += 1
            print(f"FAILED  {name}")
            traceback.print_exc()
    print(f"{len(tests) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
