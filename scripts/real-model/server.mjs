// The real-model tier's endpoint: a small OpenAI-compatible HTTP server of the tests' own over
// node-llama-cpp (prebuilt llama.cpp from npm, nothing compiled), serving one GGUF model on
// 127.0.0.1 to scripts/real-model-tier.sh and the provider tests behind it.
//
//   node server.mjs --model FILE [--alias NAME] [--port N] [--context N] [--threads N]
//
// Routes: `GET /v1/models`; `POST /v1/chat/completions` with `messages`, `max_tokens` (or
// `max_completion_tokens`), `temperature`, `seed`, `response_format` (`text`, `json_schema` as
// OpenAI sends it, or `json_object` with or without a `schema`, as llama.cpp's servers take it),
// and `stream` (Server-Sent Events in OpenAI's `chat.completion.chunk` format, ending with
// `data: [DONE]`; `stream_options.include_usage` adds the usage chunk). A schema is enforced
// while the model writes, by node-llama-cpp's JSON-schema grammar. Bad requests get OpenAI's
// error object with status 400 naming the field. Requests are answered one at a time, each from
// a cleared context, so an answer depends on its request alone.
//
// With `--port 0` (the default) the kernel picks a free port; the server prints
// `listening on http://127.0.0.1:PORT/v1` on stdout once it answers.
import http from "node:http";
import { getLlama, LlamaChat, LlamaLogLevel } from "node-llama-cpp";

function options(argv) {
  const known = { "--model": "model", "--alias": "alias", "--port": "port", "--context": "context", "--threads": "threads" };
  const out = { alias: "smollm2", port: "0", context: "2048", threads: "1" };
  for (let i = 0; i < argv.length; i += 2) {
    const key = known[argv[i]];
    if (!key || argv[i + 1] === undefined) {
      throw new Error(`unknown or incomplete argument \`${argv[i]}\` (usage: --model FILE [--alias NAME] [--port N] [--context N] [--threads N])`);
    }
    out[key] = argv[i + 1];
  }
  if (!out.model) throw new Error("--model FILE is required");
  for (const key of ["port", "context", "threads"]) {
    if (!/^\d+$/.test(out[key])) throw new Error(`--${key} must be a whole number, got \`${out[key]}\``);
    out[key] = Number(out[key]);
  }
  return out;
}

const opts = options(process.argv.slice(2));
// CPU only and never a source build: a missing prebuilt binary fails here, loudly.
const llama = await getLlama({ gpu: false, build: "never", maxThreads: opts.threads, logLevel: LlamaLogLevel.warn });
const model = await llama.loadModel({ modelPath: opts.model });
const context = await model.createContext({ contextSize: opts.context, sequences: 1, threads: opts.threads });
const sequence = context.getSequence();
const chat = new LlamaChat({ contextSequence: sequence });

/** A request the server refuses: OpenAI's error object, with the field it is about. */
class BadRequest extends Error {
  constructor(param, message, status = 400, code = null) {
    super(message);
    Object.assign(this, { param, status, code });
  }
}

const ROLES = { system: "system", developer: "system", user: "user", assistant: "model" };

/** The chat history node-llama-cpp reads, from OpenAI's `messages`, ending with the model's turn to write. */
function history(messages) {
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new BadRequest("messages", "`messages` must be a non-empty array");
  }
  const items = messages.map((m, i) => {
    const type = m && ROLES[m.role];
    if (!type) throw new BadRequest(`messages[${i}].role`, `\`messages[${i}].role\` must be system, developer, user or assistant`);
    let text = m.content;
    // Content parts: text parts only (the model reads nothing else).
    if (Array.isArray(text)) {
      if (!text.every((p) => p && p.type === "text" && typeof p.text === "string")) {
        throw new BadRequest(`messages[${i}].content`, `\`messages[${i}].content\` parts must all be of type text`);
      }
      text = text.map((p) => p.text).join("");
    }
    if (typeof text !== "string") throw new BadRequest(`messages[${i}].content`, `\`messages[${i}].content\` must be a string`);
    return type === "model" ? { type, response: [text] } : { type, text };
  });
  items.push({ type: "model", response: [] });
  return items;
}

/** The grammar the answer is held to, from `response_format`; undefined for free text. */
async function grammar(format) {
  if (format === undefined || format === null) return undefined;
  if (typeof format !== "object") throw new BadRequest("response_format", "`response_format` must be an object");
  const schemaGrammar = async (schema, param) => {
    if (!schema || typeof schema !== "object" || Array.isArray(schema)) {
      throw new BadRequest(param, `\`${param}\` must be a JSON schema object`);
    }
    try {
      return await llama.createGrammarForJsonSchema(schema);
    } catch (e) {
      throw new BadRequest(param, `\`${param}\` cannot be made a grammar: ${e.message}`);
    }
  };
  switch (format.type) {
    case "text":
      return undefined;
    case "json_schema":
      return schemaGrammar(format.json_schema && format.json_schema.schema, "response_format.json_schema.schema");
    case "json_object":
      return format.schema === undefined ? llama.getGrammarFor("json") : schemaGrammar(format.schema, "response_format.schema");
    default:
      throw new BadRequest("response_format.type", "`response_format.type` must be text, json_schema or json_object");
  }
}

function number(body, field, { min, max, integer }) {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < min || v > max) {
    throw new BadRequest(field, `\`${field}\` must be ${integer ? "a whole number" : "a number"} from ${min} to ${max}`);
  }
  return v;
}

/** The parsed parts of a chat-completions request, or a BadRequest naming the field. */
async function completionRequest(body) {
  if (!body || typeof body !== "object" || Array.isArray(body)) throw new BadRequest(null, "the body must be a JSON object");
  if (body.model !== undefined && body.model !== opts.alias) {
    throw new BadRequest("model", `the model \`${body.model}\` does not exist: this server has \`${opts.alias}\``, 404, "model_not_found");
  }
  if (body.n !== undefined && body.n !== 1) throw new BadRequest("n", "`n` must be 1");
  if (body.stream !== undefined && typeof body.stream !== "boolean") throw new BadRequest("stream", "`stream` must be true or false");
  const maxTokens =
    number(body, "max_completion_tokens", { min: 1, max: opts.context, integer: true }) ??
    number(body, "max_tokens", { min: 1, max: opts.context, integer: true });
  return {
    items: history(body.messages),
    grammar: await grammar(body.response_format),
    maxTokens,
    temperature: number(body, "temperature", { min: 0, max: 2 }) ?? 1,
    seed: number(body, "seed", { min: 0, max: 2 ** 32 - 1, integer: true }),
    stream: body.stream === true,
    usageInStream: Boolean(body.stream_options && body.stream_options.include_usage),
  };
}

// One request at a time: the context has one sequence, and the model is small enough that a
// queue costs less than a second context's memory.
let queue = Promise.resolve();
function oneAtATime(job) {
  const run = queue.then(job, job);
  queue = run.catch(() => {});
  return run;
}

/** Generates the answer to `request`, calling `onText` with each piece as it is written. */
async function generate(request, onText, signal) {
  await sequence.clearHistory();
  const before = sequence.tokenMeter.getState();
  const answer = await chat.generateResponse(request.items, {
    grammar: request.grammar,
    maxTokens: request.maxTokens,
    temperature: request.temperature,
    seed: request.seed,
    onTextChunk: onText,
    signal,
    stopOnAbortSignal: true,
  });
  const after = sequence.tokenMeter.getState();
  const prompt = after.usedInputTokens - before.usedInputTokens;
  const completion = after.usedOutputTokens - before.usedOutputTokens;
  return {
    text: answer.response,
    finish: answer.metadata.stopReason === "maxTokens" ? "length" : "stop",
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  };
}

let served = 0;
function send(res, status, value) {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function error(res, e) {
  if (e instanceof BadRequest) {
    send(res, e.status, { error: { message: e.message, type: "invalid_request_error", param: e.param, code: e.code } });
  } else {
    console.error(`real-model server: ${e && e.stack ? e.stack : e}`);
    if (res.headersSent) {
      res.end();
    } else {
      send(res, 500, { error: { message: String(e && e.message ? e.message : e), type: "server_error", param: null, code: null } });
    }
  }
}

async function completions(req, res, raw) {
  let body;
  try {
    body = JSON.parse(raw);
  } catch (e) {
    throw new BadRequest(null, `the body is not JSON: ${e.message}`);
  }
  const request = await completionRequest(body);
  const id = `chatcmpl-${process.pid}-${++served}`;
  const created = Math.floor(Date.now() / 1000);
  const aborted = new AbortController();
  res.on("close", () => aborted.abort());
  if (!request.stream) {
    const answer = await oneAtATime(() => generate(request, undefined, aborted.signal));
    send(res, 200, {
      id,
      object: "chat.completion",
      created,
      model: opts.alias,
      choices: [{ index: 0, message: { role: "assistant", content: answer.text }, logprobs: null, finish_reason: answer.finish }],
      usage: answer.usage,
    });
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  const chunk = (delta, finish, extra = {}) => {
    const value = { id, object: "chat.completion.chunk", created, model: opts.alias, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...extra };
    res.write(`data: ${JSON.stringify(value)}\n\n`);
  };
  chunk({ role: "assistant", content: "" }, null);
  const answer = await oneAtATime(() => generate(request, (text) => text && chunk({ content: text }, null), aborted.signal));
  chunk({}, answer.finish);
  if (request.usageInStream) {
    res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: opts.alias, choices: [], usage: answer.usage })}\n\n`);
  }
  res.end("data: [DONE]\n\n");
}

// Bodies larger than this are refused: every request of the tier is a few kilobytes.
const MAX_BODY = 1 << 20;
const server = http.createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on("data", (c) => {
    size += c.length;
    if (size <= MAX_BODY) chunks.push(c);
  });
  req.on("end", () => {
    const route = `${req.method} ${(req.url || "").split("?")[0]}`;
    const handle = async () => {
      if (size > MAX_BODY) throw new BadRequest(null, `the body is over ${MAX_BODY} bytes`, 413);
      switch (route) {
        case "GET /v1/models":
          return send(res, 200, { object: "list", data: [{ id: opts.alias, object: "model", created: 0, owned_by: "warrant-tests" }] });
        case "POST /v1/chat/completions":
          return completions(req, res, Buffer.concat(chunks).toString("utf8"));
        default:
          throw new BadRequest(null, `no route ${route}: this server has GET /v1/models and POST /v1/chat/completions`, 404);
      }
    };
    handle().catch((e) => error(res, e));
  });
});

server.listen(opts.port, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}/v1`);
});
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => {
    server.close();
    process.exit(0);
  });
}
