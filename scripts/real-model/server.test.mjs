// The real-model tier's server (server.mjs) against the real model, as scripts/real-model-tier.sh
// runs it before the Rust tests: its routes, a JSON schema held while the model writes (in both
// forms of `response_format`), streaming in OpenAI's chunk format with the same answer as
// without, requests answered one at a time when sent together, and every kind of bad request
// refused with the field it is about.
//
//   WARRANT_REAL_MODEL_URL=http://127.0.0.1:PORT/v1 node --test server.test.mjs
import assert from "node:assert/strict";
import test from "node:test";

const base = process.env.WARRANT_REAL_MODEL_URL;
if (!base) throw new Error("WARRANT_REAL_MODEL_URL is unset: run this through scripts/real-model-tier.sh");

const schema = {
  type: "object",
  properties: { answer: { enum: ["yes", "no", "unsure"] } },
  required: ["answer"],
  additionalProperties: false,
};
const question = {
  model: "smollm2",
  messages: [
    { role: "system", content: "Answer with JSON." },
    { role: "user", content: "Is the sky blue? Answer yes, no or unsure." },
  ],
  max_tokens: 24,
  temperature: 0,
};

async function post(body, raw) {
  const res = await fetch(`${base}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: raw ?? JSON.stringify(body),
  });
  return res;
}

function checkAnswer(content) {
  const parsed = JSON.parse(content);
  assert.deepEqual(Object.keys(parsed), ["answer"], content);
  assert.ok(schema.properties.answer.enum.includes(parsed.answer), content);
}

test("GET /v1/models lists the served model", async () => {
  const res = await fetch(`${base}/models`);
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.object, "list");
  assert.deepEqual(body.data.map((m) => m.id), ["smollm2"]);
});

test("a json_schema response format holds the answer to the schema", async () => {
  const res = await post({ ...question, response_format: { type: "json_schema", json_schema: { name: "a", schema, strict: true } } });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.object, "chat.completion");
  assert.equal(body.choices.length, 1);
  assert.equal(body.choices[0].message.role, "assistant");
  assert.ok(["stop", "length"].includes(body.choices[0].finish_reason));
  checkAnswer(body.choices[0].message.content);
  assert.ok(body.usage.prompt_tokens > 0 && body.usage.completion_tokens > 0, JSON.stringify(body.usage));
  assert.equal(body.usage.total_tokens, body.usage.prompt_tokens + body.usage.completion_tokens);
});

test("a json_object response format with a schema holds it too", async () => {
  const res = await post({ ...question, response_format: { type: "json_object", schema } });
  assert.equal(res.status, 200);
  checkAnswer((await res.json()).choices[0].message.content);
});

test("max_tokens ends an answer with finish_reason length", async () => {
  const res = await post({ ...question, max_tokens: 2 });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.choices[0].finish_reason, "length");
  assert.equal(body.usage.completion_tokens, 2);
});

/** The events of a Server-Sent Events body: each `data:` payload, in order. */
function events(text) {
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      assert.ok(block.startsWith("data: "), `not a data event: ${JSON.stringify(block)}`);
      return block.slice("data: ".length);
    });
}

test("stream: true sends OpenAI's chunks, ending with [DONE], and the same answer", async () => {
  const format = { type: "json_schema", json_schema: { name: "a", schema, strict: true } };
  const whole = await (await post({ ...question, response_format: format })).json();
  const res = await post({ ...question, response_format: format, stream: true, stream_options: { include_usage: true } });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type"), /^text\/event-stream/);
  const data = events(await res.text());
  assert.equal(data.at(-1), "[DONE]");
  const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
  for (const c of chunks) {
    assert.equal(c.object, "chat.completion.chunk");
    assert.equal(c.id, chunks[0].id);
  }
  const usage = chunks.at(-1);
  assert.deepEqual(usage.choices, []);
  assert.ok(usage.usage.completion_tokens > 0);
  const choices = chunks.slice(0, -1).map((c) => c.choices[0]);
  assert.equal(choices[0].delta.role, "assistant");
  assert.ok(["stop", "length"].includes(choices.at(-1).finish_reason));
  assert.ok(choices.slice(0, -1).every((c) => c.finish_reason === null));
  const content = choices.map((c) => c.delta.content ?? "").join("");
  assert.ok(choices.length > 3, "the answer came in pieces");
  checkAnswer(content);
  // Each request starts from a cleared context: at temperature 0, the same request is the same answer.
  assert.equal(content, whole.choices[0].message.content);
});

test("requests sent together are all answered, one at a time", async () => {
  const answers = await Promise.all([1, 2, 3].map(() => post({ ...question, max_tokens: 4 })));
  assert.deepEqual(answers.map((r) => r.status), [200, 200, 200]);
  const bodies = await Promise.all(answers.map((r) => r.json()));
  assert.equal(new Set(bodies.map((b) => b.id)).size, 3);
});

test("every bad request is refused with the field it is about", async () => {
  const cases = [
    [{ ...question, messages: [] }, 400, "messages"],
    [{ ...question, messages: [{ role: "robot", content: "hi" }] }, 400, "messages[0].role"],
    [{ ...question, messages: [{ role: "user", content: 7 }] }, 400, "messages[0].content"],
    [{ ...question, max_tokens: 0 }, 400, "max_tokens"],
    [{ ...question, max_tokens: 1.5 }, 400, "max_tokens"],
    [{ ...question, temperature: "hot" }, 400, "temperature"],
    [{ ...question, n: 2 }, 400, "n"],
    [{ ...question, stream: "yes" }, 400, "stream"],
    [{ ...question, response_format: { type: "xml" } }, 400, "response_format.type"],
    [{ ...question, response_format: { type: "json_schema", json_schema: { name: "a" } } }, 400, "response_format.json_schema.schema"],
    [{ ...question, model: "gpt-5" }, 404, "model"],
  ];
  for (const [body, status, param] of cases) {
    const res = await post(body);
    assert.equal(res.status, status, JSON.stringify(body));
    const { error } = await res.json();
    assert.equal(error.param, param, JSON.stringify(error));
    assert.ok(error.message.includes(param.split(".").at(-1).replace(/\[\d+\]/, "")), error.message);
  }
  const notJson = await post(undefined, "{not json");
  assert.equal(notJson.status, 400);
  assert.match((await notJson.json()).error.message, /not JSON/);
  const noRoute = await fetch(`${base}/completions`, { method: "POST", body: "{}" });
  assert.equal(noRoute.status, 404);
});
